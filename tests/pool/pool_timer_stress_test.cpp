// Timers under load: 100,000 timers with random delays each fire exactly once and never early; cancel() racing the
// timer's firing 100,000 times, exactly one side winning each time; two threads cancelling the same timers (posts and
// submit_at futures) while they fire, exactly one of the three winning each time. Scaled down under the sanitizers.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
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
  return stress_count(weft::test::reduced_runs() ? plain / 10 : kAddressSanitizer ? plain / 4 : plain);
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

TEST_CASE("two threads cancel the same timers as they fire: run, or one cancel, exactly one of the three") {
  const std::uint64_t n = sized(60'000);
  const Watchdog watchdog("two cancellers", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  RunCounts runs(n);
  // Each timer's winning cancel: 1 this thread, 2 the helper; both set means both won.
  std::vector<std::atomic<std::uint8_t>> cancelled(n);
  std::mt19937_64 random(seed_for("two cancellers"));
  std::uniform_int_distribution<int> offset_us(-30, 150);
  constexpr std::uint64_t kBatch = 100;
  // Odd timers are submit_at futures: their outcome is also read from the future (value, or task_cancelled).
  std::vector<weft::Timer> timers(n);
  std::vector<weft::Future<std::uint64_t>> futures(n);

  // The helper cancels each batch from its end while this thread cancels it from its start, both from the same
  // moment: they meet in the middle, and both meet the timer thread's firing somewhere in the batch.
  std::atomic<std::uint64_t> batch_go{0};    // the batch's end + 1, published with its timers
  std::atomic<std::uint64_t> batch_done{0};  // the helper's last finished batch end + 1
  std::atomic<Clock::rep> start_at{0};
  std::thread helper([&] {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t end = 0;
      while ((end = batch_go.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
      if (end == ~std::uint64_t{0}) return;
      seen = end;
      const Clock::time_point start{Clock::duration(start_at.load(std::memory_order_relaxed))};
      while (Clock::now() < start) {
      }
      const std::uint64_t first = end - std::min(end, kBatch);
      for (std::uint64_t i = end; i-- > first;) {
        if (timers[i].cancel()) cancelled[i].fetch_or(2, std::memory_order_relaxed);
      }
      batch_done.store(end, std::memory_order_release);
    }
  });

  for (std::uint64_t first = 0; first < n; first += kBatch) {
    const std::uint64_t end = std::min(n, first + kBatch);
    const auto due = Clock::now() + 100us;
    for (std::uint64_t i = first; i < end; ++i) {
      if (i % 2 == 0) {
        timers[i] = pool.post_at(due, [&runs, i] { runs.ran(i); });
      } else {
        auto delayed = pool.submit_at(due, [&runs, i] {
          runs.ran(i);
          return i;
        });
        timers[i] = std::move(delayed.timer);
        futures[i] = std::move(delayed.future);
      }
    }
    const auto start = due + std::chrono::microseconds(offset_us(random));
    start_at.store(start.time_since_epoch().count(), std::memory_order_relaxed);
    batch_go.store(end, std::memory_order_release);
    while (Clock::now() < start) {
    }
    for (std::uint64_t i = first; i < end; ++i) {
      if (timers[i].cancel()) cancelled[i].fetch_or(1, std::memory_order_relaxed);
    }
    while (batch_done.load(std::memory_order_acquire) != end) std::this_thread::yield();
  }
  batch_go.store(~std::uint64_t{0}, std::memory_order_release);
  helper.join();

  std::uint64_t cancels = 0;
  for (std::uint64_t i = 0; i < n; ++i) cancels += cancelled[i].load() != 0 ? 1 : 0;
  await_fired(pool, n - cancels);
  std::uint64_t both = 0;
  std::uint64_t neither = 0;
  std::uint64_t future_wrong = 0;
  std::uint64_t by_helper = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const unsigned ran = runs.count(i);
    const std::uint8_t c = cancelled[i].load();
    const unsigned wins = ran + (c & 1U) + ((c >> 1U) & 1U);
    if (wins == 0) ++neither;
    if (wins > 1) ++both;
    if ((c & 2U) != 0) ++by_helper;
    if (i % 2 == 1) {
      try {
        if (futures[i].get() != i || c != 0) ++future_wrong;
      } catch (const weft::task_cancelled&) {
        if (c == 0) ++future_wrong;
      } catch (...) {
        ++future_wrong;
      }
    }
  }
  CHECK(both == 0);
  CHECK(neither == 0);
  CHECK(future_wrong == 0);
  CHECK(pool.stats().timers_fired == n - cancels);
  MESSAGE("cancelled " << cancels << " of " << n << " (" << by_helper << " by the second thread)");
}

}  // namespace
