// Future semantics: who runs a submitted task when someone waits for it, wait_for, and futures dropped
// without get().
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

struct RanWhere {
  std::optional<unsigned> worker;
  std::thread::id thread;
};

TEST_CASE("the submitting thread runs a task no worker has started inline when it waits") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("inline run", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    occupy_all_workers(pool, gate);  // nobody can start the task: only inline running can finish it
    auto f = pool.submit([&pool] { return RanWhere{pool.current_worker(), std::this_thread::get_id()}; });
    const RanWhere where = f.get();
    CHECK_FALSE(where.worker.has_value());
    CHECK(where.thread == std::this_thread::get_id());
    gate.open();
    pool.wait_idle();
    // The waiter took the task out of its own slot: no queued copy is left for a worker to find claimed.
    CHECK(total_executed(pool.stats()) == workers);  // the gate tasks only
  });
}

TEST_CASE("a task with an affinity is never run inline by a waiter") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("affinity not inline", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
    Gate gate;
    occupy_all_workers(pool, gate);
    const unsigned target = workers - 1;
    weft::TaskOptions options;
    options.affinity = target;
    auto f = pool.submit_with(options, [&pool] { return pool.current_worker(); });
    CHECK_FALSE(f.wait_for(20ms));  // it may only run on the (busy) workers
    CHECK_FALSE(f.ready());
    gate.open();
    const auto where = f.get();
    REQUIRE(where.has_value());
    CHECK(*where == target);
  });
}

TEST_CASE("get() on a worker runs other work while it waits instead of deadlocking") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("get on a worker", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
    // Each parent waits for a child bound to the parent's own worker: the child cannot run inline, and no
    // other worker may take it (patience 10 s), so the waiting worker itself must run it from its mailbox.
    // Parents are posted (never run inline by this thread), so each one runs on a worker.
    const unsigned parents = 8 * workers;
    std::vector<std::atomic<int>> results(parents);
    for (unsigned i = 0; i < parents; ++i) {
      results[i].store(-2);
      pool.post([&pool, &results, i] {
        weft::TaskOptions options;
        options.affinity = pool.current_worker().value();
        auto child = pool.submit_with(options,
                                      [&pool, options] { return pool.current_worker() == options.affinity ? 1 : -1; });
        results[i].store(child.get());
      });
    }
    pool.wait_idle();
    int wrong = 0;
    for (auto& r : results) wrong += r.load() == 1 ? 0 : 1;
    CHECK(wrong == 0);
  });
}

TEST_CASE("wait_for and ready report progress without consuming the result") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("wait_for", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    std::atomic<bool> started{false};
    auto f = pool.submit([&] {
      started.store(true);
      gate.enter();
      return 7;
    });
    while (!started.load()) std::this_thread::yield();  // a worker runs it: no inline run is possible now
    const auto before = std::chrono::steady_clock::now();
    CHECK_FALSE(f.wait_for(20ms));
    CHECK(std::chrono::steady_clock::now() - before >= 20ms);
    CHECK_FALSE(f.ready());
    gate.open();
    f.wait();
    CHECK(f.ready());
    CHECK(f.valid());
    CHECK(f.wait_for(0ms));
    CHECK(f.get() == 7);
  });
}

TEST_CASE("a future destroyed without get() does not cancel its task") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("discarded futures", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kTasks = 5000;
    RunCounts runs(kTasks);
    for (std::size_t i = 0; i < kTasks; ++i) {
      (void)pool.submit([&runs, i] {
        runs.ran(i);
        return i;
      });
    }
    pool.wait_idle();
    check_exactly_once(runs);
  });
}

}  // namespace

// A waiter that runs a task inline is counted with the pool: wait_idle (and a draining shutdown) must not
// return while it runs, even though the queued copy of that task already "finished" as a no-op on a worker.
TEST_CASE("wait_idle waits for a task that an outside waiter is running inline") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  std::atomic<bool> release_worker{false};
  std::atomic<bool> inline_started{false};
  std::atomic<bool> inline_done{false};
  pool.post([&] {
    while (!release_worker.load()) std::this_thread::yield();  // holds the only worker
  });
  auto future = pool.submit([&] {
    inline_started.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    inline_done.store(true);
  });
  std::thread waiter([&] { future.get(); });  // the worker is busy: the waiter runs the task itself
  while (!inline_started.load()) std::this_thread::yield();
  release_worker.store(true);  // the worker now pops the claimed copy, a no-op, and runs dry
  pool.wait_idle();
  CHECK(inline_done.load());
  waiter.join();
}
