// Exactly-once resumption of coroutines (weft/task.hpp): in each round many coroutines suspend on one Event
// (Manual and Auto), one WaitGroup, one promise-backed Future each, and one TaskScope job, and outside threads
// complete them all at the same moment. Every coroutine resumes exactly once (its counter is 1, never 2) and none
// is lost (the round ends). Pools of 1 and 8 workers, fibers on
// and off; sized so that ThreadSanitizer's run stays within seconds.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "tests/coro/coro_configs.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "weft/weft.hpp"

namespace coro_stress_test {
namespace {

using weft::Task;

using weft::test::coro::Config;
using weft::test::coro::kConfigs;

std::uint64_t rounds() {
  const std::uint64_t base = weft::test::reduced_runs() ? 20 : 100;
  return weft::test::stress_count(base);
}
constexpr int kCoroutines = 24;

// Suspends on `awaitable` (on a worker), then counts its resumption.
template <class A>
Task<void> count_after(weft::Pool& pool, A& awaitable, std::atomic<int>& resumed) {
  co_await pool.schedule();
  co_await awaitable;
  resumed.fetch_add(1, std::memory_order_relaxed);
}

Task<void> count_future(weft::Pool& pool, weft::Future<int> future, std::atomic<int>& resumed) {
  co_await pool.schedule();
  const int v = co_await std::move(future);
  resumed.fetch_add(v, std::memory_order_relaxed);
}

}  // namespace

TEST_CASE("stress: coroutines awaiting events, groups, futures and jobs resume exactly once") {
  for (const Config& config : kConfigs) {
    CAPTURE(config.threads);
    CAPTURE(config.fibers);
    weft::PoolOptions options;
    options.threads = config.threads;
    options.fibers = config.fibers;
    weft::Pool pool(options);
    const std::uint64_t n = rounds();
    // The futures complete on another pool's threads, released together by `go`.
    weft::Pool other(weft::PoolOptions{.threads = 2});
    for (std::uint64_t round = 0; round < n; ++round) {
      weft::Event manual;
      weft::Event automatic(weft::Event::Mode::Auto);
      weft::WaitGroup group(1);
      std::atomic<bool> go{false};
      std::vector<weft::Future<int>> futures;
      for (int i = 0; i < kCoroutines; ++i) {
        futures.push_back(other.submit([&go] {
          while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
          return 1;
        }));
      }
      // Four counters per coroutine: Manual event, Auto event, group, future.
      std::vector<std::atomic<int>> counts(4 * kCoroutines);
      std::vector<std::atomic<int>> finished_once(kCoroutines);
      weft::WaitGroup finished(kCoroutines);
      // Outside the loop: a lambda coroutine reads its captures through the lambda, which must outlive it.
      auto all = [&](std::size_t j, weft::Future<int> future) -> Task<void> {
        co_await weft::when_all(count_after(pool, manual, counts[4 * j]),
                                count_after(pool, automatic, counts[4 * j + 1]),
                                count_after(pool, group, counts[4 * j + 2]),
                                count_future(pool, std::move(future), counts[4 * j + 3]));
        finished_once[j].fetch_add(1, std::memory_order_relaxed);
        finished.done();
      };
      for (int i = 0; i < kCoroutines; ++i) {
        const auto k = static_cast<std::size_t>(i);
        pool.spawn(all(k, std::move(futures[k])));
      }
      // Outside threads complete everything at once.
      std::vector<std::thread> completers;
      completers.emplace_back([&] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        manual.signal();
        group.done();
      });
      completers.emplace_back([&] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        // An Auto event keeps at most one signal for waits not started yet: signal whenever it is not set,
        // until every coroutine took one (each resumes once: its counter says so).
        auto released = [&] {
          int n = 0;
          for (int i = 0; i < kCoroutines; ++i) n += counts[4 * static_cast<std::size_t>(i) + 1].load();
          return n;
        };
        while (released() < kCoroutines) {
          if (!automatic.is_signaled()) automatic.signal();
          std::this_thread::yield();
        }
      });
      go.store(true, std::memory_order_release);
      for (std::thread& t : completers) t.join();
      finished.wait();
      for (std::atomic<int>& c : finished_once) REQUIRE(c.load() == 1);
      for (std::atomic<int>& c : counts) REQUIRE(c.load() == 1);
      pool.wait_idle();
      other.wait_idle();
    }
  }
}

TEST_CASE("stress: coroutines awaiting a scope's jobs and its run resume exactly once, cancelled or not") {
  weft::PoolOptions options;
  options.threads = 8;
  weft::Pool pool(options);
  const std::uint64_t n = rounds();
  for (std::uint64_t round = 0; round < n; ++round) {
    const bool cancel = round % 2 == 1;
    auto scope = std::make_unique<weft::TaskScope>(pool);
    weft::Event release;
    weft::Job<int> gate = scope->submit([&release] {
      release.wait();
      return 1;
    });
    std::vector<weft::Job<int>> jobs;
    for (int i = 0; i < kCoroutines; ++i) jobs.push_back(scope->then(gate, [i](int x) { return x + i; }));
    scope->run();
    std::vector<std::atomic<int>> outcome(kCoroutines);
    weft::WaitGroup finished(kCoroutines);
    // Outside the loop: a lambda coroutine reads its captures through the lambda, which must outlive it.
    auto one = [&](int i) -> Task<void> {
      const auto k = static_cast<std::size_t>(i);
      try {
        const int v = co_await jobs[k];
        outcome[k].fetch_add(v == 1 + i ? 1 : 100, std::memory_order_relaxed);
      } catch (const weft::job_cancelled&) {
        outcome[k].fetch_add(1, std::memory_order_relaxed);
      }
      finished.done();
    };
    for (int i = 0; i < kCoroutines; ++i) {
      pool.spawn(one(i));
    }
    std::thread completer([&] {
      if (cancel) scope->cancel();
      release.signal();
    });
    completer.join();
    finished.wait();
    for (std::atomic<int>& o : outcome) REQUIRE(o.load() == 1);
    try {
      (void)scope->wait();
    } catch (...) {
    }
    scope.reset();
    pool.wait_idle();
  }
}

}  // namespace coro_stress_test
