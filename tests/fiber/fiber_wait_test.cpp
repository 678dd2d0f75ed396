// Waits that suspend on fibers (scheduler/engine/fiber_worker.hpp): a task that waits on a worker suspends, the worker
// runs other tasks, and the task resumes (on any worker) as soon as what it waits for is done. Each case also
// runs with fibers off where the property should hold both ways.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"
#include "weft/weft.hpp"

namespace {

using namespace std::chrono_literals;
using weft::test::kAddressSanitizer;
using weft::test::kThreadSanitizer;
using weft::test::patience;
using weft::test::stress_count;
using weft::test::Watchdog;

constexpr unsigned kWorkerCounts[] = {1, 2, 4, 8};

// Spins (yielding) until `done()` or `limit`; returns done().
template <class Done>
bool eventually(Done done, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return done();
    std::this_thread::yield();
  }
  return true;
}

TEST_CASE("fibers are built in, and a pool uses them unless told not to") {
  REQUIRE(weft::fibers_available());
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::Event event;
  pool.post([&] { event.wait(); });
  // The task suspends: the stack pool shows its stack (and the loop's), and the count shows the task.
  CHECK(eventually([&] { return pool.stats().suspended == 1; }, patience(10)));
  CHECK(pool.stats().fiber_stacks >= 2);
  event.signal();
  pool.wait_idle();
  CHECK(pool.stats().suspended == 0);
}

TEST_CASE("one worker: a task waits on a nested scope that needs that worker") {
  for (const bool fibers : {true, false}) {
    INFO("fibers = " << fibers);
    const Watchdog watchdog("nested scope on one worker", patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = 1, .fibers = fibers}};
    auto outer = pool.submit([&pool] {
      weft::TaskScope scope{pool};
      auto a = scope.submit([] { return 20; });
      auto b = scope.then(a, [](int v) { return v + 22; });
      scope.run_and_wait();
      return b.get();
    });
    CHECK(outer.get() == 42);
  }
}

TEST_CASE("one worker: a pipeline stage waits on a future whose task needs the same worker") {
  for (const bool fibers : {true, false}) {
    INFO("fibers = " << fibers);
    const Watchdog watchdog("stage waits on a future", patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = 1, .fibers = fibers}};
    weft::TaskScope scope{pool};
    int next = 0;
    auto numbers = scope.source([&]() -> std::optional<int> {
      if (next == 100) return std::nullopt;
      return next++;
    });
    auto doubled = scope.stage(numbers, [&pool](int v) { return pool.submit([v] { return 2 * v; }).get(); },
                               {.concurrency = weft::kUnlimited, .capacity = 4, .overflow = weft::Overflow::Block});
    long long sum = 0;
    scope.sink(doubled, [&sum](int v) { sum += v; });
    scope.run_and_wait();
    CHECK(sum == 2 * (99 * 100 / 2));
  }
}

TEST_CASE("10,000 tasks suspended at once on an Event, then released; the stacks stay within the bound") {
  // Fewer where every stack's mapping costs many times its price (reduced_runs(): TSan, an emulator) or its
  // shadow does (ASan): still a thousand stacks held at once, far past any cache of free ones.
  const std::size_t tasks = weft::test::reduced_runs() ? 1000 : 10000;
  const std::size_t bound = tasks + 64;
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("10,000 suspended", patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers,
                                      .fiber_stack_size = weft::PoolOptions::min_fiber_stack_size,
                                      .max_fibers = bound}};
    weft::Event go;
    std::atomic<std::size_t> released{0};
    for (std::size_t i = 0; i < tasks; ++i) {
      pool.post([&] {
        go.wait();
        released.fetch_add(1, std::memory_order_relaxed);
      });
    }
    REQUIRE(eventually([&] { return pool.stats().suspended == tasks; }, patience(30)));
    CHECK(released.load() == 0);
    go.signal();
    pool.wait_idle();
    CHECK(released.load() == tasks);
    const weft::PoolStats stats = pool.stats();
    CHECK(stats.suspended == 0);
    CHECK(stats.fiber_stacks_peak <= bound);
    CHECK(stats.fiber_stacks_peak >= tasks);  // each suspended task held a stack of its own
    // The rest went back: per worker its loop fiber, at most FiberWorker::kMaxIdle idle ones and a spare, and the
    // pool keeps 4 free stacks per worker mapped.
    CHECK(stats.fiber_stacks <= 10 * workers);
  }
}

TEST_CASE("at the stack pool's bound a wait still suspends, past the bound, and the pool comes back under it") {
  for (const unsigned workers : {1u, 2u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("stack bound", patience(60));
    // Room for each worker's loop and 3 suspended tasks: the other waits suspend on stacks past the bound.
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_fibers = workers + 3}};
    // Every worker holds its loop's stack once the pool is built, whichever thread started last: the tasks
    // below cannot take the stack a late worker needs.
    CHECK(pool.stats().fiber_stacks == workers);
    weft::Event go;
    std::atomic<int> released{0};
    constexpr int kTasks = 40;
    for (int i = 0; i < kTasks; ++i) {
      pool.post([&] {
        go.wait();
        released.fetch_add(1);
      });
    }
    CHECK(eventually([&] { return pool.stats().suspended == kTasks; }, patience(10)));
    go.signal();
    pool.wait_idle();
    CHECK(released.load() == kTasks);
    const weft::PoolStats stats = pool.stats();
    CHECK(stats.fiber_stacks_peak >= static_cast<std::size_t>(kTasks) + workers);
    CHECK(stats.fiber_overshoot >= stats.fiber_stacks_peak - (workers + 3));
    CHECK(stats.fiber_waits_unsuspended == 0);
    CHECK(stats.fiber_stacks <= 2 * workers + 3);  // back under the bound (a spare per worker aside)
  }
}

TEST_CASE("ping-pong between two tasks through auto-reset events") {
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 20'000
                                            : kAddressSanitizer        ? 100'000
                                                                       : 1'000'000);
  // Fibers only: without them a waiting task runs other tasks on its stack, and the one it picks up may be its
  // partner, which then waits for a signal that only the task beneath it can send.
  for (const unsigned workers : {1u, 2u, 4u}) {
    {
      INFO("workers = " << workers);
      const Watchdog watchdog("ping-pong", patience(120));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      weft::Event ping{weft::Event::Mode::Auto};
      weft::Event pong{weft::Event::Mode::Auto};
      std::uint64_t ball = 0;  // handed over through the events, never touched by both at once
      pool.post([&] {
        for (std::uint64_t i = 0; i < rounds; ++i) {
          ping.signal();
          pong.wait();
          ++ball;
        }
      });
      pool.post([&] {
        for (std::uint64_t i = 0; i < rounds; ++i) {
          ping.wait();
          ++ball;
          pong.signal();
        }
      });
      pool.wait_idle();
      CHECK(ball == 2 * rounds);
    }
  }
}

// Each level submits a task bound to the worker it runs on, and waits for it, `depth` levels deep.
struct BoundChain {
  weft::Pool* pool;
  unsigned operator()(unsigned depth) const {
    if (depth == 0) return 0;
    weft::TaskOptions here;
    here.affinity = pool->current_worker();
    return pool->submit_with(here, *this, depth - 1).get() + 1;
  }
};

TEST_CASE("every worker deep in nested waits, each waiting on a task bound to itself, completes") {
  // Without fibers, waits past Engine::kMaxWaitDepth run only their own deque, so a task bound to the worker
  // (in its mailbox) can be stranded when every worker is that deep; with fibers the waiting task suspends
  // and the worker's loop takes the mailbox task.
  // Past Engine::kMaxWaitDepth (64) either way; half as deep where each level costs many times its price.
  const unsigned depth = weft::test::reduced_runs() ? 100 : 200;
  for (const unsigned workers : kWorkerCounts) {
    INFO("workers = " << workers);
    const Watchdog watchdog("bound chains", patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
    std::vector<weft::Future<unsigned>> chains;
    for (unsigned w = 0; w < workers; ++w) {
      weft::TaskOptions on_w;
      on_w.affinity = w;
      chains.push_back(pool.submit_with(on_w, BoundChain{&pool}, depth));
    }
    for (auto& chain : chains) CHECK(chain.get() == depth);
  }
}

TEST_CASE("a short wait is not held behind a long unrelated task picked up by its worker") {
  // W waits on an event; its worker then takes a long task L (the other worker is held busy until L starts).
  // The event is signalled while L runs. Without fibers W's wait would sit under L on the same stack until L
  // returns; with fibers W resumes on the other worker while L still runs. L runs until W is done, or for its
  // patience (then the check fails).
  const Watchdog watchdog("short wait behind long task", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::Event event;
  std::atomic<int> w_worker{-1};
  std::atomic<bool> w_done{false};
  std::atomic<bool> l_started{false};
  std::atomic<bool> w_done_while_l_ran{false};
  pool.post([&] {
    w_worker.store(static_cast<int>(*pool.current_worker()));
    event.wait();
    w_done.store(true);
  });
  REQUIRE(eventually([&] { return pool.stats().suspended == 1; }, patience(10)));
  weft::TaskOptions other;
  other.affinity = 1u - static_cast<unsigned>(w_worker.load());
  pool.post([&] { (void)eventually([&] { return l_started.load(); }, patience(10)); }, other);  // holds it
  pool.post([&] {
    l_started.store(true);
    w_done_while_l_ran.store(eventually([&] { return w_done.load(); }, patience(10)));
  });
  REQUIRE(eventually([&] { return l_started.load(); }, patience(10)));
  event.signal();
  pool.wait_idle();
  CHECK(w_done.load());
  CHECK(w_done_while_l_ran.load());
}

TEST_CASE("a worker woken for new work that resumes a suspended task first still gets the work run") {
  // Every worker asleep, one task suspended. The test thread resumes the task (which wakes one worker) and at
  // once posts three tasks: their posts skip the wake-up, since one is in flight. The woken worker resumes the
  // suspended task first, which then waits for the three to run, so the worker must hand over the promise of
  // its search to a sleeper before it resumes the task (a hang otherwise, until the task's patience runs out).
  constexpr unsigned kWorkers = 4;
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 5 : 20);
  const Watchdog watchdog("woken worker resumes first", patience(120));
  weft::Pool pool{weft::PoolOptions{.threads = kWorkers}};
  const auto all_asleep = [&pool] {
    const weft::PoolStats stats = pool.stats();
    for (const weft::WorkerStats& worker : stats.workers) {
      if (worker.parks == worker.wakeups) return false;
    }
    return stats.suspended == 1;
  };
  for (std::uint64_t round = 0; round < rounds; ++round) {
    INFO("round " << round);
    weft::Event event;
    std::atomic<int> ran{0};
    std::atomic<bool> all_ran{false};
    pool.post([&] {
      event.wait();
      all_ran.store(eventually([&] { return ran.load() == 3; }, patience(5)));
    });
    REQUIRE(eventually(all_asleep, patience(10)));
    event.signal();
    for (int i = 0; i < 3; ++i) pool.post([&ran] { ran.fetch_add(1); });
    pool.wait_idle();
    REQUIRE(all_ran.load());
  }
}

TEST_CASE("a WaitGroup counts, suspends its waiter, and refuses a done() too many") {
  for (const unsigned workers : kWorkerCounts) {
    INFO("workers = " << workers);
    const Watchdog watchdog("wait group", patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kItems = 1000;
    std::atomic<int> processed{0};
    auto outer = pool.submit([&] {
      weft::WaitGroup pending;
      for (int i = 0; i < kItems; ++i) {
        pending.add();
        pool.post([&] {
          processed.fetch_add(1, std::memory_order_relaxed);
          pending.done();
        });
      }
      pending.wait();
      return processed.load();
    });
    CHECK(outer.get() == kItems);
  }
  weft::WaitGroup group{1};
  group.done();
  CHECK_THROWS_WITH_AS(group.done(), doctest::Contains("weft::WaitGroup::done"), std::logic_error);
  CHECK(group.count() == 0);
  constexpr std::uint32_t kMost = (std::uint32_t{1} << 31) - 1;
  group.add(kMost);
  CHECK_THROWS_WITH_AS(group.add(1), doctest::Contains("2147483647"), std::overflow_error);
  CHECK(group.count() == kMost);
  CHECK_THROWS_WITH_AS(weft::WaitGroup{kMost + 1}, doctest::Contains("weft::WaitGroup(2147483648)"),
                       std::overflow_error);
  CHECK_FALSE(group.wait_for(1ms));
}

TEST_CASE("a ConditionVariable hands items from producers to consumer tasks through a std::mutex") {
  for (const unsigned workers : kWorkerCounts) {
    for (const bool fibers : {true, false}) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog("condition variable", patience(60));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      std::mutex mutex;
      weft::ConditionVariable cv;
      std::deque<int> queue;
      bool closed = false;
      constexpr int kItems = 2000;
      constexpr int kConsumers = 3;
      std::atomic<long long> sum{0};
      for (int c = 0; c < kConsumers; ++c) {
        pool.post([&] {
          std::unique_lock lock(mutex);
          for (;;) {
            cv.wait(lock, [&] { return !queue.empty() || closed; });
            if (queue.empty()) return;
            const int item = queue.front();
            queue.pop_front();
            lock.unlock();
            sum.fetch_add(item);
            lock.lock();
          }
        });
      }
      // Producers: outside threads and tasks both.
      std::thread outside([&] {
        for (int i = 0; i < kItems / 2; ++i) {
          {
            const std::lock_guard lock(mutex);
            queue.push_back(i);
          }
          cv.notify_one();
        }
      });
      pool.post([&] {
        for (int i = kItems / 2; i < kItems; ++i) {
          {
            const std::lock_guard lock(mutex);
            queue.push_back(i);
          }
          cv.notify_one();
        }
      });
      outside.join();
      // Close once everything is consumed (the consumers leave on an empty, closed queue).
      REQUIRE(
          eventually([&] { return sum.load() == static_cast<long long>(kItems) * (kItems - 1) / 2; }, patience(30)));
      {
        const std::lock_guard lock(mutex);
        closed = true;
      }
      cv.notify_all();
      pool.wait_idle();
      CHECK(sum.load() == static_cast<long long>(kItems) * (kItems - 1) / 2);
    }
  }
  weft::ConditionVariable cv;
  std::mutex mutex;
  std::unique_lock lock(mutex, std::defer_lock);
  CHECK_THROWS_WITH_AS(cv.wait(lock), doctest::Contains("weft::ConditionVariable::wait"), std::logic_error);
  lock.lock();
  CHECK(cv.wait_for(lock, 1ms) == std::cv_status::timeout);
  CHECK(lock.owns_lock());
}

TEST_CASE("Event: manual and auto reset, timed waits, and signals before waits") {
  weft::Event manual;
  CHECK_FALSE(manual.is_signaled());
  CHECK_FALSE(manual.wait_for(1ms));
  manual.signal();
  CHECK(manual.wait_for(1ms));
  manual.wait();  // stays signalled
  CHECK(manual.is_signaled());
  manual.clear();
  CHECK_FALSE(manual.wait_for(1ms));

  weft::Event automatic{weft::Event::Mode::Auto, true};
  CHECK(automatic.wait_for(1ms));        // takes the signal
  CHECK_FALSE(automatic.wait_for(1ms));  // gone
  automatic.signal();
  automatic.signal();  // a flag, not a count
  automatic.wait();
  CHECK_FALSE(automatic.is_signaled());
  CHECK(automatic.mode() == weft::Event::Mode::Auto);

  // Auto: n signals to n waiting tasks release each exactly once.
  for (const unsigned workers : kWorkerCounts) {
    INFO("workers = " << workers);
    const Watchdog watchdog("auto event", patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Event one{weft::Event::Mode::Auto};
    constexpr int kWaiters = 200;
    std::atomic<int> released{0};
    for (int i = 0; i < kWaiters; ++i) {
      pool.post([&] {
        one.wait();
        released.fetch_add(1);
      });
    }
    for (int i = 0; i < kWaiters; ++i) {
      const int before = released.load();
      one.signal();
      REQUIRE(eventually([&] { return released.load() == before + 1 && !one.is_signaled(); }, patience(10)));
    }
    pool.wait_idle();
    CHECK(released.load() == kWaiters);
  }
}

TEST_CASE("exceptions cross a suspension, and thread-bound state follows the task") {
  for (const unsigned workers : kWorkerCounts) {
    INFO("workers = " << workers);
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Event go;
    std::vector<weft::Future<int>> results;
    for (int i = 0; i < 64; ++i) {
      results.push_back(pool.submit([&go, i]() -> int {
        go.wait();
        if (i % 2 == 0) throw std::runtime_error("task " + std::to_string(i));
        return i;
      }));
    }
    go.signal();
    for (int i = 0; i < 64; ++i) {
      if (i % 2 == 0) {
        CHECK_THROWS_WITH_AS(results[i].get(), ("task " + std::to_string(i)).c_str(), std::runtime_error);
      } else {
        CHECK(results[i].get() == i);
      }
    }
    // A graph node that suspends keeps its run's marks: waiting on its own run from inside still refuses.
    weft::TaskGraph graph;
    std::atomic<int> refused{0};
    graph.add_node([&] {
      weft::Event later;
      pool.post([&later] { later.signal(); });
      later.wait();  // suspends; may resume on another worker
      try {
        (void)weft::TaskGraph{}.run(pool).wait();  // a different run: fine
      } catch (...) {
        refused.fetch_add(100);
      }
    });
    graph.run(pool).wait();
    CHECK(refused.load() == 0);
  }
}

TEST_CASE("a wait inside a catch block does not suspend, and still finishes") {
  for (const unsigned workers : {1u, 2u}) {
    INFO("workers = " << workers);
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    auto outer = pool.submit([&pool] {
      try {
        throw std::runtime_error("outer");
      } catch (const std::runtime_error&) {
        const std::size_t before = pool.stats().suspended;
        auto inner = pool.submit([] { return 7; });
        const int value = inner.get();  // runs the task inline or other work: never suspends here
        return value + static_cast<int>(before);
      }
    });
    CHECK(outer.get() == 7);
  }
}

TEST_CASE("a shutdown that drops resumes every suspended task: its wait throws task_dropped, destructors run") {
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("drop with suspended tasks", patience(60));
    std::atomic<int> destroyed{0};
    struct Counted {
      std::atomic<int>* count;
      ~Counted() { count->fetch_add(1); }
    };
    weft::Event never;
    std::vector<weft::Future<int>> on_event;
    std::vector<weft::Future<int>> on_future;
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
      for (int i = 0; i < 20; ++i) {
        on_event.push_back(pool.submit([&] {
          const Counted counted{&destroyed};
          never.wait();  // never signalled: only the shutdown ends it
          return 1;
        }));
      }
      REQUIRE(eventually([&] { return pool.stats().suspended == 20; }, patience(10)));
      // Tasks waiting on futures whose tasks are still pending when the shutdown drops them: bound to worker 0,
      // which a spinning task holds (affinity_patience keeps the others from taking them).
      std::atomic<bool> release{false};
      weft::TaskOptions on_0;
      on_0.affinity = 0;
      pool.post(
          [&release] {
            while (!release.load()) std::this_thread::yield();
          },
          on_0);
      for (int i = 0; i < 10; ++i) {
        on_future.push_back(pool.submit([&pool, &destroyed, on_0] {
          const Counted counted{&destroyed};
          return pool.submit_with(on_0, [] { return 2; }).get();
        }));
      }
      // With one worker the parents cannot start either: they are dropped unrun.
      const std::size_t parents = workers > 1 ? 10 : 0;
      REQUIRE(eventually([&] { return pool.stats().suspended == 20 + parents; }, patience(10)));
      // Released once the shutdown has begun (closed() says so once the DropPending state is up): the tasks bound
      // to worker 0 can no longer start then, whatever the threads' timing (a fixed delay let a late shutdown find
      // them run).
      std::thread releaser([&release, &pool] {
        (void)eventually([&] { return pool.closed(); }, patience(30));
        release.store(true);
      });
      pool.shutdown(weft::Shutdown::DropPending);
      releaser.join();
      CHECK(pool.stats().suspended == 0);
      CHECK(destroyed.load() == 20 + static_cast<int>(parents));  // every started task unwound its frame
    }
    for (auto& f : on_event) {
      CHECK_THROWS_WITH_AS(f.get(), doctest::Contains("weft::Event::wait"), weft::task_dropped);
    }
    for (auto& f : on_future) CHECK_THROWS_AS(f.get(), weft::task_dropped);
  }
}

TEST_CASE("a pool destroyed with tasks suspended on futures lets each finish (Drain)") {
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("destroy with suspended tasks", patience(60));
    std::atomic<int> finished{0};
    weft::Event go;
    // Joined after the pool's end, never detached: the tasks can finish while signal() is still inside `go`,
    // which must outlive that call.
    std::jthread signaller;
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      for (int i = 0; i < 50; ++i) {
        pool.post([&] {
          go.wait();
          finished.fetch_add(1);
        });
      }
      REQUIRE(eventually([&] { return pool.stats().suspended == 50; }, patience(10)));
      signaller = std::jthread([&go] {
        std::this_thread::sleep_for(20ms);  // while the destructor drains
        go.signal();
      });
    }  // Drain: waits for the suspended tasks, which the signal resumes
    signaller.join();
    CHECK(finished.load() == 50);
  }
}

TEST_CASE("task hooks: one start and one end per task, each with the worker it is called on") {
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    std::atomic<int> starts{0};
    std::atomic<int> ends{0};
    std::atomic<int> wrong_worker{0};
    weft::Pool* self = nullptr;
    const auto check = [&](const weft::TaskEvent& event) {
      const std::optional<unsigned> here = self->current_worker();
      if (!here || *here != event.worker) wrong_worker.fetch_add(1);
    };
    weft::Pool pool{weft::PoolOptions{.threads = workers,
                                      .on_task_start =
                                          [&](const weft::TaskEvent& e) {
                                            check(e);
                                            starts++;
                                          },
                                      .on_task_end =
                                          [&](const weft::TaskEvent& e) {
                                            check(e);
                                            ends++;
                                          }}};
    self = &pool;
    weft::Event go;
    constexpr int kTasks = 100;
    for (int i = 0; i < kTasks; ++i) pool.post([&] { go.wait(); });  // each suspends, then may move
    REQUIRE(eventually([&] { return pool.stats().suspended == kTasks; }, patience(10)));
    go.signal();
    pool.wait_idle();
    CHECK(starts.load() == kTasks);
    CHECK(ends.load() == kTasks);
    CHECK(wrong_worker.load() == 0);
  }
}

TEST_CASE("timed waits suspend too, and end at their deadline or when signalled") {
  for (const unsigned workers : {1u, 2u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("timed waits", patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    // Times out: the task is suspended meanwhile (the pool counts it), and wait_for says false.
    weft::Event never;
    std::atomic<int> timed_out{0};
    pool.post([&] {
      if (!never.wait_for(50ms)) timed_out.fetch_add(1);
    });
    CHECK(eventually([&] { return pool.stats().suspended == 1; }, patience(10)));
    pool.wait_idle();
    CHECK(timed_out.load() == 1);
    // Signalled before the deadline, by a task on the same (possibly single) worker, which runs because the
    // waiter is suspended.
    weft::Event soon;
    std::atomic<int> woken{0};
    pool.post([&] {
      if (soon.wait_for(60s)) woken.fetch_add(1);
    });
    REQUIRE(eventually([&] { return pool.stats().suspended == 1; }, patience(10)));
    pool.post([&] { soon.signal(); });
    pool.wait_idle();
    CHECK(woken.load() == 1);
    // WaitGroup, ConditionVariable and Future, timed, from tasks.
    auto results = pool.submit([&pool] {
      weft::WaitGroup group{1};
      const bool group_timed_out = !group.wait_for(20ms);
      std::mutex mutex;
      weft::ConditionVariable cv;
      std::unique_lock lock(mutex);
      const bool cv_timed_out = cv.wait_for(lock, 20ms) == std::cv_status::timeout && lock.owns_lock();
      lock.unlock();
      weft::Event gate;
      auto slow = pool.submit([&gate] {
        gate.wait();
        return 5;
      });
      const bool future_timed_out = !slow.wait_for(20ms);
      gate.signal();
      const bool future_value = slow.get() == 5;
      return group_timed_out && cv_timed_out && future_timed_out && future_value;
    });
    CHECK(results.get());
  }
}

TEST_CASE("stress: wake-ups racing deadlines resume every timed waiter exactly once") {
  // Each round, tasks wait on an auto-reset Event with a deadline close to when other tasks signal it, so that
  // the lot's expiry and the wake-ups take entries out at the same moments. Every waiter must return exactly
  // once (counted), signals consumed never exceed signals sent, and nothing hangs.
  const int rounds = static_cast<int>(stress_count(kThreadSanitizer || kAddressSanitizer ? 20 : 100));
  constexpr int kWaiters = 64;
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("timed wake race", patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (int round = 0; round < rounds; ++round) {
      weft::Event event{weft::Event::Mode::Auto};
      std::atomic<int> returned{0};
      std::atomic<int> consumed{0};
      std::atomic<int> sent{0};
      for (int i = 0; i < kWaiters; ++i) {
        pool.post([&, i] {
          if (event.wait_for(std::chrono::microseconds(50 + 10 * (i % 16)))) consumed.fetch_add(1);
          returned.fetch_add(1);
        });
        if (i % 2 == 0) {
          pool.post([&] {
            event.signal();
            sent.fetch_add(1);
          });
        }
      }
      pool.wait_idle();
      CHECK(returned.load() == kWaiters);
      CHECK(consumed.load() <= sent.load());
      CHECK(pool.stats().suspended == 0);
    }
  }
}

}  // namespace
