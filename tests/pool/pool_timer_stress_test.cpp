// Timers under load: 100,000 timers with random delays each fire exactly once and never early; cancel() racing the
// timer's firing 100,000 times, exactly one side winning each time. Scaled down under the sanitizers.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/stress.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::uint64_t sized(std::uint64_t plain) {
  return stress_count(kThreadSanitizer ? plain / 10 : kAddressSanitizer ? plain / 4 : plain);
}

// Until the timer thread has handed `count` tasks to the pool, then until they all ran.
void await_fired(weft::Pool& pool, std::uint64_t count) {
  while (pool.stats().timers_fired < count) std::this_thread::sleep_for(200us);
  pool.wait_idle();
}

TEST_CASE("random timers each fire exactly once, never before their deadline") {
  const std::uint64_t n = sized(100'000);
  for (const unsigned workers : {4U}) {
    const Watchdog watchdog(named("random timers", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    RunCounts runs(n);
    std::atomic<std::uint64_t> early{0};
    std::mt19937_64 random(seed_for("random timers"));
    std::uniform_int_distribution<int> delay_us(0, 20'000);
    std::vector<weft::Timer> timers;
    timers.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto due = Clock::now() + std::chrono::microseconds(delay_us(random));
      timers.push_back(pool.post_at(due, [&runs, &early, due, i] {
        if (Clock::now() < due) early.fetch_add(1, std::memory_order_relaxed);
        runs.ran(i);
      }));
    }
    await_fired(pool, n);
    check_exactly_once(runs);
    CHECK(early.load() == 0);
    CHECK(pool.stats().timers_fired == n);
  }
}

TEST_CASE("cancel racing the timer's firing: exactly one of them wins, every time") {
  const std::uint64_t n = sized(100'000);
  const Watchdog watchdog("cancel race", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  RunCounts runs(n);
  std::vector<std::uint8_t> cancelled(n, 0);
  std::uint64_t cancels = 0;
  std::mt19937_64 random(seed_for("cancel race"));
  std::uniform_int_distribution<int> offset_us(-30, 150);
  // Batches of timers due together: the timer thread fires them one after another while this thread cancels them
  // in the same order, starting at a random moment around the due time (the thread wakes somewhat after it), so the two
  // meet somewhere in the batch.
  constexpr std::uint64_t kBatch = 100;
  std::vector<weft::Timer> batch;
  for (std::uint64_t first = 0; first < n; first += kBatch) {
    const std::uint64_t end = std::min(n, first + kBatch);
    const auto due = Clock::now() + 100us;
    batch.clear();
    for (std::uint64_t i = first; i < end; ++i) batch.push_back(pool.post_at(due, [&runs, i] { runs.ran(i); }));
    const auto start_cancelling = due + std::chrono::microseconds(offset_us(random));
    while (Clock::now() < start_cancelling) {
    }
    for (std::uint64_t i = first; i < end; ++i) {
      if (batch[i - first].cancel()) {
        cancelled[i] = 1;
        ++cancels;
      }
    }
  }
  await_fired(pool, n - cancels);
  std::uint64_t both = 0;
  std::uint64_t neither = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const unsigned ran = runs.count(i);
    if (ran + cancelled[i] == 0) ++neither;
    if (ran + cancelled[i] > 1) ++both;
  }
  CHECK(both == 0);
  CHECK(neither == 0);
  CHECK(pool.stats().timers_fired == n - cancels);
  MESSAGE("cancel won " << cancels << " of " << n);
}

}  // namespace
