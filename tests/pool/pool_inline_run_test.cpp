// Tasks that a waiting thread runs itself (Future::get on a task nobody started, an outside thread's own slot,
// a graph's roots taken over by Run::wait): they behave as on a worker. Pool-level waits from inside them throw
// would_deadlock instead of waiting for themselves, and the task hooks surround them on the thread that runs
// them, exactly once.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"

using weft::test::for_each_worker_count;
using weft::test::Gate;
using weft::test::named;
using weft::test::occupy_all_workers;
using weft::test::patience;
using weft::test::Watchdog;

namespace {

// What a task does to its own pool, and how it is reached.
enum class PoolWait { wait_idle, drain, drop_pending, shutdown_for };

const char* name_of(PoolWait wait) {
  switch (wait) {
    case PoolWait::wait_idle:
      return "wait_idle";
    case PoolWait::drain:
      return "shutdown(Drain)";
    case PoolWait::drop_pending:
      return "shutdown(DropPending)";
    case PoolWait::shutdown_for:
      return "shutdown_for";
  }
  return "?";
}

void call(weft::Pool& pool, PoolWait wait) {
  switch (wait) {
    case PoolWait::wait_idle:
      pool.wait_idle();
      break;
    case PoolWait::drain:
      (void)pool.shutdown(weft::Shutdown::Drain);
      break;
    case PoolWait::drop_pending:
      (void)pool.shutdown(weft::Shutdown::DropPending);
      break;
    case PoolWait::shutdown_for:
      (void)pool.shutdown_for(std::chrono::seconds(1));
      break;
  }
}

constexpr PoolWait kWaits[] = {PoolWait::wait_idle, PoolWait::drain, PoolWait::drop_pending, PoolWait::shutdown_for};

// The pool is still open and runs work: the refused call closed nothing.
void check_still_open(weft::Pool& pool) {
  CHECK(pool.submit([] { return 7; }).get() == 7);
}

}  // namespace

TEST_CASE("a pool-level wait from a task that Future::get runs inline throws would_deadlock") {
  for_each_worker_count([](unsigned workers) {
    for (const PoolWait wait : kWaits) {
      // Normal: the task sits in this thread's own slot, and get() pops it from there. High: it goes to the
      // shared queue, and get() claims it (run_inline). Workers are held, so get() runs it either way.
      for (const weft::Priority priority : {weft::Priority::Normal, weft::Priority::High}) {
        INFO(name_of(wait) << ", priority " << static_cast<int>(priority));
        const Watchdog watchdog(named(name_of(wait), workers), patience(30));
        weft::Pool pool{weft::PoolOptions{.threads = workers}};
        Gate gate;
        occupy_all_workers(pool, gate);
        const auto caller = std::this_thread::get_id();
        std::atomic<bool> ran_here{false};
        auto future = pool.submit_with(weft::TaskOptions{.priority = priority}, [&] {
          ran_here.store(std::this_thread::get_id() == caller);
          call(pool, wait);
        });
        CHECK_THROWS_AS(future.get(), weft::would_deadlock);
        CHECK(ran_here.load());
        gate.open();
        check_still_open(pool);
      }
    }
  });
}

TEST_CASE("a pool-level wait from a task of pool A that a worker of pool B runs inline throws would_deadlock") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("cross-pool inline", workers), patience(30));
    weft::Pool a{weft::PoolOptions{.threads = workers}};
    weft::Pool b{weft::PoolOptions{.threads = 1}};
    Gate gate;
    occupy_all_workers(a, gate);
    // A's task goes to A's shared High queue; B's worker, waiting for it, claims and runs it itself.
    auto outer = b.submit([&] {
      auto inner = a.submit_with(weft::TaskOptions{.priority = weft::Priority::High}, [&] { a.wait_idle(); });
      try {
        inner.get();
      } catch (const weft::would_deadlock&) {
        return true;
      }
      return false;
    });
    CHECK(outer.get());
    gate.open();
    check_still_open(a);
  });
}

TEST_CASE("a pool-level wait from a graph root that Run::wait runs on the waiting thread throws would_deadlock") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("graph root inline", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    occupy_all_workers(pool, gate);
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> ran_here{false};
    weft::TaskGraph graph;
    // The workers are held when the run starts, so the waiting thread takes the roots over. The node lets them
    // go first: without the refusal, wait_idle would then return once the roots' pool task ran, not hang.
    (void)graph.add_node([&] {
      ran_here.store(std::this_thread::get_id() == caller);
      gate.open();
      pool.wait_idle();
    });
    CHECK_THROWS_AS(graph.run(pool).wait(), weft::would_deadlock);
    CHECK(ran_here.load());
    check_still_open(pool);
  });
}

namespace {

// Hooks that record where each task ran relative to them: a task checks that its own thread is inside a start
// hook that has not ended yet (hook_depth), and the test counts hook calls per thread kind.
thread_local int hook_depth = 0;

struct HookLog {
  std::atomic<int> starts{0};
  std::atomic<int> ends{0};
  std::atomic<int> outside_starts{0};  // TaskEvent::not_a_worker
  std::atomic<int> bad_worker{0};      // neither a worker index nor not_a_worker, or unbalanced
  std::atomic<int> tasks_outside_hooks{0};

  void install(weft::PoolOptions& options, unsigned workers) {
    // Without fibers: the log counts hook depth per thread, and a task that suspended on a fiber may end on another
    // thread than it started on (its hooks then run on both; tests/fiber/fiber_wait_test checks that case).
    options.fibers = false;
    options.on_task_start = [this, workers](const weft::TaskEvent& e) {
      ++hook_depth;
      starts.fetch_add(1);
      if (e.worker == weft::TaskEvent::not_a_worker) {
        outside_starts.fetch_add(1);
      } else if (e.worker >= workers) {
        bad_worker.fetch_add(1);
      }
    };
    options.on_task_end = [this](const weft::TaskEvent&) {
      if (--hook_depth < 0) bad_worker.fetch_add(1);
      ends.fetch_add(1);
    };
  }
  // Called from inside a task's body.
  void task_ran() noexcept {
    if (hook_depth <= 0) tasks_outside_hooks.fetch_add(1);
  }
};

}  // namespace

TEST_CASE("the task hooks surround every task on the thread that runs it, a waiter running it itself included") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("hooks inline", workers), patience(30));
    HookLog log;
    weft::PoolOptions options{.threads = workers};
    log.install(options, workers);
    weft::Pool pool{std::move(options)};
    Gate gate;
    occupy_all_workers(pool, gate);
    // Run by this thread while the workers are held: from its slot (Normal), claimed inline (High).
    pool.submit([&] { log.task_ran(); }).get();
    pool.submit_with(weft::TaskOptions{.priority = weft::Priority::High}, [&] { log.task_ran(); }).get();
    // A graph's roots, taken over by the waiting thread (the workers are held when the run starts); the node
    // lets the workers go, so that the run's own roots task can run and the run end.
    weft::TaskGraph graph;
    (void)graph.add_node([&] {
      log.task_ran();
      gate.open();
    });
    graph.run(pool).wait();
    CHECK(log.outside_starts.load() >= 3);
    // And on the workers, with waits nested inside tasks.
    for (int i = 0; i < 50; ++i) {
      pool.post([&] {
        log.task_ran();
        pool.submit([&] { log.task_ran(); }).get();
      });
    }
    pool.wait_idle();
    CHECK(log.tasks_outside_hooks.load() == 0);
    CHECK(log.bad_worker.load() == 0);
    CHECK(log.starts.load() == log.ends.load());
    // Each submitted task ran inside exactly one hook pair: its queued copy, once a waiter has run it, runs none.
    // Tasks: the gate holders, the two futures, the 50 posts and their 50 futures, plus the graph's roots,
    // which count once for the waiter that took them over and once for the roots task (whoever runs it).
    CHECK(log.starts.load() == static_cast<int>(workers) + 2 + 100 + 2);
  });
}

// The claim a waiter and a worker race for (FutureStateBase::try_claim): whoever wins runs the task inside the
// hooks, the loser's queued copy runs none. Outside threads submit and get at once, at High (claimed inline or
// by a worker) and Normal (popped from the thread's slot or stolen), and workers do the same inside tasks.
TEST_CASE("stress: with hooks set, every future's task runs exactly once inside exactly one hook pair") {
  using weft::test::kAddressSanitizer;
  using weft::test::kThreadSanitizer;
  const std::uint64_t per_thread = weft::test::stress_count(kThreadSanitizer    ? 1'000
                                                            : kAddressSanitizer ? 3'000
                                                                                : 20'000);
  for (const unsigned workers : {1u, 2u, 4u}) {
    const Watchdog watchdog(named("hooked futures stress", workers), patience(120));
    HookLog log;
    weft::PoolOptions options{.threads = workers};
    log.install(options, workers);
    weft::Pool pool{std::move(options)};
    constexpr unsigned kThreads = 3;
    weft::test::RunCounts runs(kThreads * per_thread * 2);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (std::uint64_t i = 0; i < per_thread; ++i) {
          const std::size_t id = (t * per_thread + i) * 2;
          const weft::Priority priority = i % 2 == 0 ? weft::Priority::High : weft::Priority::Normal;
          pool.submit_with(weft::TaskOptions{.priority = priority},
                           [&, id] {
                             log.task_ran();
                             runs.ran(id);
                             // And a future waited for on a worker (or inline again, when this runs on the outside
                             // thread).
                             pool.submit([&, id] {
                                   log.task_ran();
                                   runs.ran(id + 1);
                                 })
                                 .get();
                           })
              .get();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    pool.wait_idle();
    weft::test::check_exactly_once(runs);
    CHECK(log.tasks_outside_hooks.load() == 0);
    CHECK(log.bad_worker.load() == 0);
    CHECK(log.starts.load() == log.ends.load());
    CHECK(log.starts.load() == static_cast<int>(runs.size()));
  }
}

namespace {

// A value that counts its live instances: a future's state that is never destroyed (a reference count gone
// wrong) keeps one alive.
struct Counted {
  static inline std::atomic<int> alive{0};
  int value;
  explicit Counted(int v) : value(v) { alive.fetch_add(1); }
  Counted(Counted&& other) noexcept : value(other.value) { alive.fetch_add(1); }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) = delete;
  ~Counted() { alive.fetch_sub(1); }
};

}  // namespace

// Future::get that takes its own task out of a queue (the outside thread's slot, the worker's deque) runs it
// with no claim and no reference count (FutureStateBase::run_exclusive): values and exceptions still arrive,
// every state is freed, and wait_idle still counts the task finished.
TEST_CASE("get() that runs its own task delivers values and exceptions, frees the state, counts it for idle") {
  const int rounds = static_cast<int>(weft::test::stress_count(2'000));
  for_each_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("get runs its own task", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    long sum = 0;
    int errors = 0;
    for (int i = 0; i < rounds; ++i) {
      sum += pool.submit([i] { return Counted(i); }).get().value;
      try {
        pool.submit([i]() -> int { throw std::runtime_error("round " + std::to_string(i)); }).get();
      } catch (const std::runtime_error& error) {
        errors += error.what() == "round " + std::to_string(i) ? 1 : 0;
      }
    }
    // The same on a worker: a task whose gets pop their states from its own deque.
    const auto on_worker = [&pool, rounds] {
      long total = 0;
      for (int i = 0; i < rounds; ++i) total += pool.submit([i] { return Counted(i); }).get().value;
      return total;
    };
    const long inner = pool.submit(on_worker).get();
    pool.wait_idle();  // returns only if every task above counted as finished
    const long expected = static_cast<long>(rounds) * (rounds - 1) / 2;
    CHECK(sum == expected);
    CHECK(inner == expected);
    CHECK(errors == rounds);
    CHECK(Counted::alive.load() == 0);
  });
}
