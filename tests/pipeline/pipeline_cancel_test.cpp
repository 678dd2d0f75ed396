// A pipeline cancelled mid-stream: cancel() from a stage, from the source, or from another thread (while items
// flow, or while the source waits for room). wait() says cancelled, the sink's job and the jobs after it throw
// weft::job_cancelled, every item made is destroyed, and an endless source does not keep the run alive.
//
// The stages here call cancel() only once run() has returned: run() stores the run that cancel() stops after
// the jobs have started (see pipeline_cancel_early_test.cpp for a cancel() that comes sooner).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// An endless source of counted items -> a parallel stage calling on_item(scope, item) -> (a fan-out) -> an Input
// sink. The stage may call scope.cancel() once `started` is set, after run() returned.
template <class OnItem>
void run_cancelled(unsigned workers, OnItem on_item, bool with_fan) {
  Census census;
  {
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::atomic<bool> started{false};
    std::uint64_t next = 0;
    auto source = scope.source([&]() -> std::optional<Counted> { return Counted(census, next++); });
    auto staged = scope.stage(source,
                              [&](Counted c) {
                                on_item(scope, started, c.value());
                                return c;
                              },
                              {.concurrency = 3, .capacity = 2});
    Stream<Counted> tail = staged;
    if (with_fan) {
      tail = scope.fan_out(staged,
                           [&census](Counted c) {
                             std::vector<Counted> out;
                             for (std::uint64_t j = 0; j < 4; ++j) out.emplace_back(census, c.value() * 4 + j);
                             return out;
                           },
                           {.concurrency = 2, .capacity = 1});
    }
    Job<void> done = scope.sink(tail, [](Counted c) { busy_work(static_cast<unsigned>(c.value() % 100)); },
                                {.capacity = 1, .order = Order::Input});
    Job<void> after = scope.then(done, [] {});
    scope.run();
    started.store(true, std::memory_order_release);
    CHECK(scope.wait() == RunStatus::Cancelled);
    CHECK_THROWS_AS(done.get(), job_cancelled);
    CHECK_THROWS_AS(after.get(), job_cancelled);
    CHECK(scope.stats().exceptions == 0);
  }
  check_balanced(census);
}

TEST_CASE("cancel() from a stage stops an endless pipeline: cancelled, the sink's job too, items balance") {
  const std::uint64_t seed = seed_for("pipeline cancel from a stage");
  std::mt19937_64 random(seed);
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 10 : 150);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("cancel from a stage", workers), patience(120));
    for (std::uint64_t round = 0; round < rounds; ++round) {
      const std::uint64_t at = random() % 2'000;
      INFO("round " << round << ": cancel at item " << at);
      run_cancelled(
          workers,
          [at](TaskScope& scope, const std::atomic<bool>& started, std::uint64_t item) {
            if (item != at) return;
            while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
            scope.cancel();
          },
          round % 2 == 1);
    }
  });
}

TEST_CASE("cancel() from another thread while items flow, or while the source waits for room") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("cancel from another thread", workers), patience(60));
    // While items flow: cancelled once the sink has seen some.
    {
      Census census;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        std::uint64_t next = 0;
        auto source = scope.source([&]() -> std::optional<Counted> { return Counted(census, next++); });
        auto staged = scope.stage(source, [](Counted c) { return c; }, {.concurrency = kUnlimited});
        std::atomic<std::uint64_t> received{0};
        Job<void> done = scope.sink(staged, [&](Counted) { received.fetch_add(1, std::memory_order_relaxed); },
                                    {.order = Order::Input});
        scope.run();
        while (received.load(std::memory_order_relaxed) < 1'000) std::this_thread::yield();
        scope.cancel();
        CHECK(scope.wait() == RunStatus::Cancelled);
        CHECK_THROWS_AS(done.get(), job_cancelled);
      }
      check_balanced(census);
    }
    // While the sink holds its first item: the source fills the pipeline and waits for room.
    {
      Census census;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        std::uint64_t next = 0;
        auto source = scope.source([&]() -> std::optional<Counted> { return Counted(census, next++); });
        auto staged = scope.stage(source, [](Counted c) { return c; }, {.concurrency = 2, .capacity = 3});
        std::atomic<bool> entered{false};
        std::atomic<bool> released{false};
        Job<void> done = scope.sink(staged, [&](Counted) {
          entered.store(true);
          while (!released.load()) std::this_thread::yield();
        });
        scope.run();
        while (!entered.load()) std::this_thread::yield();
        scope.cancel();
        released.store(true);
        CHECK(scope.wait() == RunStatus::Cancelled);
        CHECK_THROWS_AS(done.get(), job_cancelled);
      }
      check_balanced(census);
    }
  });
}

TEST_CASE("cancel() from the source itself") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("cancel from the source", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      std::atomic<bool> started{false};
      std::uint64_t next = 0;
      auto source = scope.source([&]() -> std::optional<Counted> {
        if (next == 500) {
          while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
          scope.cancel();
        }
        return Counted(census, next++);
      });
      auto staged = scope.stage(source, [](Counted c) { return c; }, {.concurrency = 2, .capacity = 1});
      Job<void> done = scope.sink(staged, [](Counted) {});
      scope.run();
      started.store(true, std::memory_order_release);
      CHECK(scope.wait() == RunStatus::Cancelled);
      CHECK_THROWS_AS(done.get(), job_cancelled);
    }
    check_balanced(census);
  });
}

}  // namespace
}  // namespace weft::test
