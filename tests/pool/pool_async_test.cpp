// Pool::submit_after and weft::AsyncTask: tasks with dependencies on the fly. Order after predecessors that are
// running, queued or finished; a failed predecessor skips its successors (their handles carry its exception);
// bad input is refused with a clear error; waits inside tasks; and memory: a program that keeps submitting keeps
// no finished task alive (the callable is destroyed once run, and the future-state blocks stay flat).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/engine/future_alloc.hpp"
#include "tests/pool/pool_test_support.hpp"
#include "weft/async_task.hpp"
#include "weft/pool.hpp"

namespace {

using weft::test::for_each_worker_count;
using weft::test::kThreadSanitizer;
using weft::test::named;
using weft::test::patience;
using weft::test::stress_count;
using weft::test::Watchdog;

// Counts the callables alive: a copy or move is one more, a destructor one less.
struct Tracked {
  static inline std::atomic<std::int64_t> alive{0};
  Tracked() noexcept { alive.fetch_add(1, std::memory_order_relaxed); }
  Tracked(const Tracked&) noexcept { alive.fetch_add(1, std::memory_order_relaxed); }
  Tracked(Tracked&&) noexcept { alive.fetch_add(1, std::memory_order_relaxed); }
  Tracked& operator=(const Tracked&) = delete;
  ~Tracked() { alive.fetch_sub(1, std::memory_order_relaxed); }
};

}  // namespace

TEST_CASE("submit_after: a diamond and a chain run after their predecessors, queued or finished") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit_after order", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<int> order;  // plain: the edges order every write
    std::atomic<int> step{0};
    weft::AsyncTask a = pool.submit_after({}, [&] { order.push_back(1); });
    weft::AsyncTask b = pool.submit_after({a}, [&] { order.push_back(2); });
    weft::AsyncTask c = pool.submit_after({a}, [&] { (void)step.fetch_add(1); });
    weft::AsyncTask d = pool.submit_after({b, c}, [&] { order.push_back(3); });
    d.get();
    CHECK(b.done());
    CHECK(c.done());
    CHECK(order == std::vector<int>{1, 2, 3});
    // A chain of 1000, each after the one before; the handle of the last is the only one kept.
    int value = 0;
    int out_of_order = 0;
    weft::AsyncTask last = pool.submit_after({}, [&value] { value = 1; });
    for (int i = 2; i <= 1000; ++i) {
      last = pool.submit_after({last}, [&value, &out_of_order, i] {
        if (value != i - 1) ++out_of_order;
        value = i;
      });
    }
    last.wait();
    CHECK(value == 1000);
    CHECK(out_of_order == 0);
    // A predecessor already finished: depending on it costs a load, and the task runs at once.
    REQUIRE(a.done());
    bool ran = false;
    pool.submit_after({a, d, a}, [&ran] { ran = true; }).get();
    CHECK(ran);
  });
}

TEST_CASE("submit_after: copies of a handle and more than two predecessors") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  std::atomic<int> done{0};
  std::vector<weft::AsyncTask> preds;
  for (int i = 0; i < 9; ++i) preds.push_back(pool.submit_after({}, [&done] { done.fetch_add(1); }));
  const weft::AsyncTask copy = preds[3];  // NOLINT(performance-unnecessary-copy-initialization): a copy on purpose
  int seen = -1;
  weft::AsyncTask after_all = pool.submit_after(preds, [&] { seen = done.load(); });  // a span (vector)
  after_all.get();
  CHECK(seen == 9);
  CHECK(copy.done());
  weft::AsyncTask moved = std::move(after_all);
  CHECK_FALSE(after_all.valid());  // NOLINT(bugprone-use-after-move): moved-from is empty, as documented
  CHECK(moved.valid());
  CHECK_NOTHROW(moved.get());  // get() may be called again
}

TEST_CASE("submit_after: a failed predecessor skips its successors, which carry its exception") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit_after failure", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> ran{0};
    weft::AsyncTask ok = pool.submit_after({}, [&ran] { ran.fetch_add(1); });
    weft::AsyncTask bad = pool.submit_after({}, [] { throw std::runtime_error("bad input"); });
    weft::AsyncTask skipped = pool.submit_after({ok, bad}, [&ran] { ran.fetch_add(100); });
    weft::AsyncTask skipped_too = pool.submit_after({skipped}, [&ran] { ran.fetch_add(100); });
    weft::AsyncTask independent = pool.submit_after({ok}, [&ran] { ran.fetch_add(1); });
    CHECK_THROWS_WITH_AS(bad.get(), "bad input", std::runtime_error);
    CHECK_THROWS_WITH_AS(skipped.get(), "bad input", std::runtime_error);
    CHECK_THROWS_WITH_AS(skipped_too.get(), "bad input", std::runtime_error);
    CHECK_NOTHROW(independent.get());
    // A failed predecessor that is already final: the successor is final at once, without being queued.
    REQUIRE(bad.done());
    weft::AsyncTask late = pool.submit_after({ok, bad}, [&ran] { ran.fetch_add(100); });
    CHECK(late.done());
    CHECK_THROWS_WITH_AS(late.get(), "bad input", std::runtime_error);
    pool.wait_idle();
    CHECK(ran.load() == 2);
  });
}

TEST_CASE("submit_after: bad input is refused, naming what was wrong, and nothing runs") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::Pool other{weft::PoolOptions{.threads = 1}};
  std::atomic<int> ran{0};
  const weft::AsyncTask fine = pool.submit_after({}, [] {});
  const weft::AsyncTask empty;
  CHECK_THROWS_WITH_AS((void)pool.submit_after({fine, empty}, [&ran] { ran.fetch_add(1); }),
                       doctest::Contains("after[1] (of 2) is an empty weft::AsyncTask"), std::invalid_argument);
  void (*null_function)() = nullptr;
  CHECK_THROWS_WITH_AS((void)pool.submit_after({fine}, null_function), doctest::Contains("the callable is empty"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS((void)pool.submit_after(
                           {}, [&ran] { ran.fetch_add(1); }, weft::TaskOptions{.affinity = 2}),
                       doctest::Contains("TaskOptions::affinity = 2"), weft::invalid_option);
  CHECK_THROWS_WITH_AS(empty.get(), doctest::Contains("weft::AsyncTask::get: the handle is empty"), std::logic_error);
  CHECK_THROWS_AS(empty.wait(), std::logic_error);
  CHECK_THROWS_AS((void)empty.done(), std::logic_error);
  // A task of another pool that is not final yet cannot be depended on; once final it can.
  std::atomic<bool> open{false};
  const weft::AsyncTask held = other.submit_after({}, [&open] {
    while (!open.load(std::memory_order_acquire)) std::this_thread::yield();
  });
  CHECK_THROWS_WITH_AS((void)pool.submit_after({held}, [&ran] { ran.fetch_add(1); }),
                       doctest::Contains("after[0] is a task of another pool"), std::invalid_argument);
  open.store(true, std::memory_order_release);
  held.get();
  pool.submit_after({held}, [&ran] { ran.fetch_add(10); }).get();
  pool.shutdown();
  CHECK_THROWS_AS((void)pool.submit_after({fine}, [&ran] { ran.fetch_add(1); }), weft::pool_closed);
  CHECK(ran.load() == 10);
}

TEST_CASE("submit_after: a task dropped by a DropPending shutdown skips its successors, a long chain in a loop") {
  for (const unsigned workers : {1U, 2U}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("submit_after dropped", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::test::Probes probes;
    weft::test::hold_workers_until_dropping(pool, probes);
    std::atomic<int> called{0};
    weft::AsyncTask first = pool.submit_after({}, [&called, t = Tracked{}] { called.fetch_add(1); });
    // A chain on the dropped task: settled link by link when it is dropped, never by a recursion.
    weft::AsyncTask last = first;
    const int links = weft::test::reduced_runs() ? 20'000 : 100'000;
    for (int i = 0; i < links; ++i) last = pool.submit_after({last}, [&called, t = Tracked{}] { called.fetch_add(1); });
    (void)pool.shutdown(weft::Shutdown::DropPending);
    CHECK_THROWS_AS(first.get(), weft::task_dropped);
    CHECK_THROWS_AS(last.get(), weft::task_dropped);
    CHECK(called.load() == 0);
    CHECK(Tracked::alive.load() == 0);  // every callable destroyed unrun
  }
}

TEST_CASE("submit_after: a task waits for another inside the pool, with and without fibers") {
  for (const bool fibers : weft::fibers_available() ? std::vector<bool>{true, false} : std::vector<bool>{false}) {
    for (const unsigned workers : {1U, 2U, 4U}) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named("submit_after waits", workers), patience(60));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      std::atomic<int> sum{0};
      weft::AsyncTask outer = pool.submit_after({}, [&pool, &sum] {
        for (int i = 0; i < 20; ++i) {
          weft::AsyncTask inner = pool.submit_after({}, [&sum] { sum.fetch_add(1); });
          weft::AsyncTask next = pool.submit_after({inner}, [&sum] { sum.fetch_add(1); });
          next.wait();  // on a worker: runs other tasks (or suspends) meanwhile
        }
      });
      outer.get();
      CHECK(sum.load() == 40);
    }
  }
}

TEST_CASE("submit_after: a program that keeps submitting keeps no finished task alive") {
  // A loop of on-the-fly tasks, each after the one before and a random one of the last 64 (kept in a ring):
  // the callables are destroyed once run, and the future-state blocks the allocator holds stay flat.
  const std::uint64_t tasks = stress_count(weft::test::reduced_runs() ? 20'000 : 200'000);
  for (const unsigned workers : {1U, 4U}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("submit_after memory", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::mt19937_64 random(workers);
    std::vector<weft::AsyncTask> ring(64);
    weft::AsyncTask last = pool.submit_after({}, [] {});
    std::uint64_t held_after_warm_up = 0;
    std::uint64_t most_held = 0;
    for (std::uint64_t i = 0; i < tasks; ++i) {
      const weft::AsyncTask& other = ring[random() % ring.size()];
      if (other.valid()) {
        last = pool.submit_after({last, other}, [t = Tracked{}] {});
      } else {
        last = pool.submit_after({last}, [t = Tracked{}] {});
      }
      ring[i % ring.size()] = last;
      if (i % 1000 == 999) {
        last.wait();  // the submitter keeps at most ~1000 tasks ahead: what is alive is bounded by that
        const std::uint64_t held = weft::detail::future_state_blocks_held();
        if (i < 10'000) held_after_warm_up = held;
        most_held = std::max(most_held, held);
      }
    }
    last.wait();
    pool.wait_idle();
    // Every callable was destroyed as its task ran: only the handles in the ring keep states, without callables.
    CHECK(Tracked::alive.load() == 0);
    MESSAGE("future-state blocks held: " << held_after_warm_up << " after 10^4 tasks, at most " << most_held << " over "
                                         << tasks);
    // A leak of one block a task would be hundreds of thousands more; the slack covers the per-thread caches.
    CHECK(most_held <= held_after_warm_up + 4096);
  }
}

TEST_CASE("as_async_task: a future's end releases its successors; a failed future skips them") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("as_async_task", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> ran{0};
    std::atomic<bool> open{false};
    auto wait_open = [&open] {
      while (!open.load(std::memory_order_acquire)) std::this_thread::yield();
    };
    // Futures not final yet: the successors wait for them, then run (or are skipped) without a thread waiting.
    auto value = std::make_shared<int>(7);
    weft::Future<std::shared_ptr<int>> pending = pool.submit([&wait_open, value] {
      wait_open();
      return value;
    });
    weft::Future<void> failing = pool.submit([&wait_open] {
      wait_open();
      throw std::runtime_error("future failed");
    });
    weft::Future<int> chained = pool.submit([] { return 20; }).then([](int v) { return v + 1; });
    const weft::AsyncTask from_pending = pool.as_async_task(std::move(pending));
    const weft::AsyncTask from_failing = pool.as_async_task(std::move(failing));
    const weft::AsyncTask from_chained = pool.as_async_task(std::move(chained));
    CHECK(!pending.valid());  // consumed: the AsyncTask is its one consumer now
    CHECK(!failing.valid());
    weft::AsyncTask after_value = pool.submit_after({from_pending, from_chained}, [&ran] { ran.fetch_add(1); });
    weft::AsyncTask skipped = pool.submit_after({from_pending, from_failing}, [&ran] { ran.fetch_add(100); });
    weft::AsyncTask skipped_too = pool.submit_after({skipped}, [&ran] { ran.fetch_add(100); });
    CHECK(!from_pending.done());  // its future's task is held
    CHECK(!after_value.done());
    open.store(true, std::memory_order_release);
    CHECK_NOTHROW(after_value.get());
    CHECK_THROWS_WITH_AS(from_failing.get(), "future failed", std::runtime_error);
    CHECK_THROWS_WITH_AS(skipped.get(), "future failed", std::runtime_error);
    CHECK_THROWS_WITH_AS(skipped_too.get(), "future failed", std::runtime_error);
    CHECK_NOTHROW(from_pending.get());
    pool.wait_idle();
    CHECK(ran.load() == 1);
    CHECK(weft::test::eventually([&value] { return value.use_count() == 1; }, std::chrono::seconds(30)));

    // Futures final already: the AsyncTask is final at once, and so is the release of a successor.
    weft::Future<int> done_ok = pool.submit([] { return 1; });
    weft::Future<void> done_bad = pool.submit([] { throw std::runtime_error("finished failed"); });
    done_ok.wait();
    done_bad.wait();
    const weft::AsyncTask ok = pool.as_async_task(std::move(done_ok));
    const weft::AsyncTask bad = pool.as_async_task(std::move(done_bad));
    CHECK(ok.done());
    CHECK(bad.done());
    weft::AsyncTask late = pool.submit_after({ok, bad}, [&ran] { ran.fetch_add(100); });
    CHECK(late.done());  // skipped at once, never queued
    CHECK_THROWS_WITH_AS(late.get(), "finished failed", std::runtime_error);
    pool.submit_after({ok}, [&ran] { ran.fetch_add(1); }).get();
    CHECK(ran.load() == 2);
  });
}

TEST_CASE("as_async_task: an invalid, consumed or foreign future is refused, naming what was wrong") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::Pool other{weft::PoolOptions{.threads = 1}};
  weft::Future<int> empty;
  CHECK_THROWS_WITH_AS((void)pool.as_async_task(std::move(empty)),
                       doctest::Contains("weft::Pool::as_async_task: the future is invalid"), std::invalid_argument);
  weft::Future<int> consumed = pool.submit([] { return 1; });
  CHECK(consumed.get() == 1);
  CHECK_THROWS_WITH_AS((void)pool.as_async_task(std::move(consumed)),
                       doctest::Contains("consumed already by get() or then()"), std::invalid_argument);
  weft::Future<int> moved = pool.submit([] { return 2; });
  weft::Future<int> taken = std::move(moved);
  CHECK_THROWS_AS((void)pool.as_async_task(std::move(moved)), std::invalid_argument);
  weft::Future<int> chained = pool.submit([] { return 3; });
  weft::Future<int> next = std::move(chained).then([](int v) { return v; });
  CHECK_THROWS_AS((void)pool.as_async_task(std::move(chained)), std::invalid_argument);
  weft::Future<int> foreign = other.submit([] { return 4; });
  CHECK_THROWS_WITH_AS((void)pool.as_async_task(std::move(foreign)),
                       doctest::Contains("the future is of another pool's task"), std::invalid_argument);
  REQUIRE(foreign.valid());  // refused: left unchanged
  CHECK(foreign.get() == 4);
  CHECK(taken.get() == 2);
  CHECK(next.get() == 3);
}

TEST_CASE("as_async_task: a future dropped by a DropPending shutdown fails its AsyncTask with task_dropped") {
  for (const unsigned workers : {1U, 2U}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("as_async_task dropped", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::test::Probes probes;
    weft::test::hold_workers_until_dropping(pool, probes);
    std::atomic<int> called{0};
    weft::Future<int> future = pool.submit([&called] { return called.fetch_add(1); });
    const weft::AsyncTask task = pool.as_async_task(std::move(future));
    weft::AsyncTask successor = pool.submit_after({task}, [&called] { called.fetch_add(1); });
    (void)pool.shutdown(weft::Shutdown::DropPending);
    CHECK_THROWS_WITH_AS(task.get(), doctest::Contains("weft::Pool::as_async_task: the future's task was dropped"),
                         weft::task_dropped);
    CHECK_THROWS_AS(successor.get(), weft::task_dropped);
    CHECK(called.load() == 0);
  }
}
