// Idle workers: they park, a task posted when all of them sleep still runs (no lost wake-up), and a parked
// pool burns no CPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/platform.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// Every worker is asleep right now: it parked once more than it woke up.
bool all_parked(const weft::Pool& pool) {
  for (const auto& w : pool.stats().workers) {
    if (w.parks != w.wakeups + 1) return false;
  }
  return true;
}

// All parked, and still so 100 ms later with no park or wake-up in between: a worker that was notified but
// has not run yet (its wake-up not counted) would otherwise look asleep.
bool quiet(const weft::Pool& pool) {
  if (!all_parked(pool)) return false;
  const auto before = pool.stats();
  std::this_thread::sleep_for(100ms);
  const auto after = pool.stats();
  for (std::size_t i = 0; i < before.workers.size(); ++i) {
    if (after.workers[i].parks != before.workers[i].parks || after.workers[i].wakeups != before.workers[i].wakeups)
      return false;
  }
  return all_parked(pool);
}

std::chrono::microseconds process_cpu_time() { return weft::test::process_cpu_time(); }

TEST_CASE("a task posted after every worker has parked wakes one and runs") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("wake-up after parking", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::chrono::nanoseconds slowest{0};
    for (int round = 0; round < 20; ++round) {
      REQUIRE(eventually([&pool] { return all_parked(pool); }, patience(10)));
      std::atomic<bool> ran{false};
      std::atomic<std::chrono::steady_clock::time_point> started{};
      const auto task = [&ran, &started] {
        started.store(std::chrono::steady_clock::now());
        ran.store(true);
      };
      const auto posted = std::chrono::steady_clock::now();
      if (round % 2 == 0) {
        pool.post(task);
      } else {
        weft::TaskOptions high;  // through another queue
        high.priority = weft::Priority::High;
        pool.post(task, high);
      }
      // A lost wake-up leaves the task queued with everyone asleep: this would time out.
      REQUIRE(eventually([&ran] { return ran.load(); }, patience(10)));
      slowest = std::max(slowest, std::chrono::nanoseconds(started.load() - posted));
    }
    MESSAGE("slowest post-to-start latency from all-parked: "
            << std::chrono::duration_cast<std::chrono::microseconds>(slowest).count() << " us");
    // The worker that ran the last task is still searching: count once it has parked again too.
    REQUIRE(eventually([&pool] { return all_parked(pool); }, patience(10)));
    std::uint64_t parks = 0;
    for (const auto& w : pool.stats().workers) parks += w.parks;
    CHECK(parks >= 20 + workers);
  });
}

TEST_CASE("an idle pool uses no CPU") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("idle CPU", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (int i = 0; i < 1000; ++i) pool.post([] {});  // some work first, so the pool really went idle
    pool.wait_idle();
    REQUIRE(eventually([&pool] { return quiet(pool); }, patience(10)));
    const auto before = pool.stats();
    const auto cpu_before = process_cpu_time();
    std::this_thread::sleep_for(1s);
    const auto cpu_used = process_cpu_time() - cpu_before;
    const auto after = pool.stats();
    MESSAGE("process CPU time over one idle second: " << cpu_used.count() << " us");
    // A CPU-usage check, not a speed one: a spinning or periodically waking worker would use far more.
    CHECK(cpu_used < 50ms);
    std::uint64_t wakeups = 0;
    for (std::size_t i = 0; i < after.workers.size(); ++i)
      wakeups += after.workers[i].wakeups - before.workers[i].wakeups;
    CHECK(wakeups == 0);  // nobody even woke up
  });
}

}  // namespace
