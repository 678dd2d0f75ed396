// StageOptions::live_tokens, the pipeline-wide limit on items alive: with live_tokens = N on the source, never
// more than N items alive at once (a high-water mark of the items that exist), whatever the stages' concurrency
// and capacities; exactly N reached when stages hold on; the stages' own bound still applies when smaller; a
// token comes back when its item is filtered out or dropped, and an exception or a cancel still destroys every
// item once; N = 0, or a limit on a stage other than the source, is refused naming the option and the value.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <ranges>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// The support's counted item, by a name of this file's own: in the area's unity build another file's anonymous
// namespace has a Counted of its own.
using Item = weft::test::Counted;

constexpr std::uint64_t kTokenCounts[] = {1, 2, 8};

TEST_CASE("live_tokens = N: never more than N items alive, whatever the stages' concurrency and capacities") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const std::uint64_t tokens : kTokenCounts) {
      INFO("live_tokens = " << tokens);
      const Watchdog watchdog(named("live_tokens bound", workers), patience(60));
      Census census;
      std::uint64_t sum = 0;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        auto source = scope.source(counted_below(census, items), {.name = "numbers", .live_tokens = tokens});
        // Stages far wider than N: the tokens alone bound the items alive.
        auto wide = scope.stage(source,
                                [](Item c) {
                                  random_spin(7, c.value(), 200);
                                  return c;
                                },
                                {.concurrency = kUnlimited, .capacity = 64});
        auto ordered = scope.stage(wide, [](Item c) { return c; },
                                   {.concurrency = 16, .capacity = 64, .order = Order::Input});
        Job<void> done = scope.sink(ordered,
                                    [&sum](Item c) {
                                      busy_work(300);  // slow: the source outruns it
                                      sum += c.value();
                                    },
                                    {.capacity = 64, .order = Order::Input});
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        CHECK_NOTHROW(done.get());
      }
      CHECK(sum == items * (items - 1) / 2);
      INFO("peak items alive = " << census.peak());
      CHECK(census.peak() <= static_cast<std::int64_t>(tokens));
      check_balanced(census);
    }
  });
}

TEST_CASE("live_tokens = N is reached: N items at once in a stage of concurrency above N, never N + 1") {
  // The first items wait in the stage's body until N of them are inside at once; then all go on. Each waiting
  // body holds a worker (it blocks), so the pool has N + 1: the last one calls the source. The shared mode is
  // forced: in the others a cheap item's carrier keeps the source's turn while it takes the item through.
  const ForcedMode shared(TestMode::shared);
  for (const std::uint64_t tokens : kTokenCounts) {
    INFO("live_tokens = " << tokens);
    const auto workers = static_cast<unsigned>(tokens + 1);
    const Watchdog watchdog(named("live_tokens reached", workers), patience(60));
    Census census;
    std::atomic<std::uint64_t> inside{0};
    std::atomic<std::uint64_t> most_inside{0};
    std::atomic<bool> reached{false};
    std::atomic<bool> all_waited{true};
    constexpr std::uint64_t kItems = 200;
    std::uint64_t arrived = 0;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto source = scope.source(counted_below(census, kItems), {.live_tokens = tokens});
      auto held = scope.stage(source,
                              [&](Item c) {
                                const std::uint64_t now = inside.fetch_add(1) + 1;
                                std::uint64_t seen = most_inside.load();
                                while (now > seen && !most_inside.compare_exchange_weak(seen, now)) {
                                }
                                if (now == tokens) reached.store(true);
                                if (!eventually([&] { return reached.load(); }, patience(10))) all_waited.store(false);
                                inside.fetch_sub(1);
                                return c;
                              },
                              {.concurrency = static_cast<unsigned>(4 * tokens), .capacity = 64});
      Job<void> done = scope.sink(held, [&arrived](Item) { ++arrived; }, {.capacity = 64});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
    }
    CHECK(arrived == kItems);
    CHECK(reached.load());
    CHECK(all_waited.load());
    CHECK(most_inside.load() == tokens);
    CHECK(census.peak() == static_cast<std::int64_t>(tokens));
    check_balanced(census);
  }
}

TEST_CASE("the smaller bound wins: live_tokens below the stages' bound, and above it") {
  // A sink that holds its first item until the pipeline is full: it fills to exactly min(N, the stages' bound).
  const ForcedMode shared(TestMode::shared);
  const StageOptions middle{.concurrency = 3, .capacity = 2};
  const StageOptions sink{.capacity = 4};
  const unsigned workers = 2;
  const std::int64_t stage_bound = segment_bound({middle, sink}, workers, true);  // 1 + 5 + 5
  for (const std::uint64_t tokens : {std::uint64_t{3}, std::uint64_t{1'000}}) {
    INFO("live_tokens = " << tokens);
    const std::int64_t bound = std::min<std::int64_t>(stage_bound, static_cast<std::int64_t>(tokens));
    const Watchdog watchdog(named("smaller bound", workers), patience(60));
    Census census;
    bool reached = false;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto source = scope.source(counted_below(census, 100), {.live_tokens = tokens});
      auto passed = scope.stage(
          source, [](Item c) { return c; }, middle);
      bool first = true;
      std::uint64_t arrived = 0;
      Job<void> done = scope.sink(
          passed,
          [&](Item) {
            ++arrived;
            if (std::exchange(first, false))
              reached = eventually([&] { return census.alive() == bound; }, patience(10));
          },
          sink);
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      CHECK(arrived == 100);
    }
    INFO("bound = " << bound << ", peak items alive = " << census.peak());
    CHECK(reached);
    CHECK(census.peak() == bound);
    check_balanced(census);
  }
}

TEST_CASE("a token comes back when its item is filtered out or dropped: one token carries the whole stream") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 200 : 2'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("tokens back on filter and drop", workers), patience(60));
    // Filtered out: with one token, a lost one would stop the source for good (the watchdog would fire).
    {
      Census census;
      std::uint64_t kept = 0;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        auto source = scope.source(counted_below(census, items), {.live_tokens = 1});
        auto even = scope.stage(source,
                                [](Item c) -> std::optional<Item> {
                                  if (c.value() % 2 == 1) return std::nullopt;
                                  return c;
                                },
                                {.concurrency = kUnlimited});
        Job<void> done = scope.sink(even, [&kept](Item) { ++kept; }, {.order = Order::Input});
        CHECK(scope.run_and_wait() == RunStatus::Completed);
      }
      CHECK(kept == items / 2);
      CHECK(census.peak() == 1);
      check_balanced(census);
    }
    // Dropped (Overflow::Drop), before an Order::Input sink that skips their places: four tokens, a slow serial
    // stage with room for one waiting item, so the third and fourth items alive may be dropped.
    {
      Census census;
      std::uint64_t handled = 0;
      RunStats stats;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        auto source = scope.source(counted_below(census, items), {.live_tokens = 4});
        auto slow = scope.stage(source,
                                [](Item c) {
                                  busy_work(2'000);
                                  return c;
                                },
                                {.name = "slow", .capacity = 1, .overflow = Overflow::Drop});
        Job<void> done = scope.sink(slow, [&handled](Item) { ++handled; }, {.order = Order::Input});
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        stats = scope.stats();
      }
      CHECK(handled + stats.dropped == items);
      CHECK(census.peak() <= 4);
      check_balanced(census);
    }
  });
}

TEST_CASE("with live_tokens, an exception or a cancel still stops the pipeline and destroys every item once") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("tokens on exception and cancel", workers), patience(60));
    for (const std::uint64_t tokens : kTokenCounts) {
      INFO("live_tokens = " << tokens);
      {
        Census census;
        {
          Pool pool(PoolOptions{.threads = workers});
          TaskScope scope{pool};
          auto source = scope.source(counted_below(census, 1'000), {.live_tokens = tokens});
          auto checked = scope.stage(source,
                                     [](Item c) {
                                       if (c.value() == 37) throw StageFailure("item 37");
                                       return c;
                                     },
                                     {.concurrency = kUnlimited});
          Job<void> done = scope.sink(checked, [](Item) {}, {.order = Order::Input});
          CHECK_THROWS_AS(scope.run_and_wait(), StageFailure);
          CHECK_THROWS_AS(done.get(), StageFailure);
        }
        CHECK(census.peak() <= static_cast<std::int64_t>(tokens));
        check_balanced(census);
      }
      {
        Census census;
        {
          Pool pool(PoolOptions{.threads = workers});
          TaskScope scope{pool};
          std::uint64_t next = 0;
          // Endless: only the cancel ends it.
          auto source = scope.source([&]() -> std::optional<Item> { return Item(census, next++); },
                                     {.live_tokens = tokens});
          std::atomic<std::uint64_t> received{0};
          Job<void> done = scope.sink(source, [&received](Item) { received.fetch_add(1, std::memory_order_relaxed); },
                                      {.concurrency = kUnlimited});
          scope.run();
          while (received.load(std::memory_order_relaxed) < 200) std::this_thread::yield();
          scope.cancel();
          CHECK(scope.wait() == RunStatus::Cancelled);
          CHECK_THROWS_AS(done.get(), job_cancelled);
        }
        CHECK(census.peak() <= static_cast<std::int64_t>(tokens));
        check_balanced(census);
      }
    }
  });
}

TEST_CASE("with a fan_out stage, the source's items and the fan_out's elements each keep to live_tokens") {
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 100 : 1'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("live_tokens with fan_out", workers), patience(60));
    Census inputs_census;
    Census elements_census;
    std::uint64_t arrived = 0;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto source = scope.source(counted_below(inputs_census, inputs), {.live_tokens = 2});
      auto elements = scope.fan_out(source,
                                    [&elements_census](const Item& c) {
                                      // Lazy: each element is made when it goes on, so the fan state holds none of
                                      // them.
                                      const std::uint64_t base = c.value() * 5;
                                      return std::views::iota(std::uint64_t{0}, std::uint64_t{5}) |
                                             std::views::transform([&elements_census, base](std::uint64_t j) {
                                               return Item(elements_census, base + j);
                                             });
                                    },
                                    {.concurrency = kUnlimited});
      Job<void> done = scope.sink(elements,
                                  [&arrived](Item) {
                                    busy_work(200);
                                    ++arrived;
                                  },
                                  {.order = Order::Input});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    CHECK(arrived == inputs * 5);
    CHECK(inputs_census.peak() <= 2);
    CHECK(elements_census.peak() <= 2);
    check_balanced(inputs_census);
    check_balanced(elements_census);
  });
}

TEST_CASE("live_tokens = 0, or a limit on a stage other than the source, throws invalid_option naming it") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  check_throws_naming<invalid_option>(
      [&] { static_cast<void>(scope.source(numbers_below(10), {.name = "lines", .live_tokens = 0})); },
      {"weft::TaskScope::source", "stage 'lines' of pipeline 'lines'", "StageOptions::live_tokens = 0",
       "at least 1, or weft::kUnbounded"});
  CHECK(scope.size() == 0);
  auto numbers = scope.source(numbers_below(10), {.name = "numbers", .live_tokens = 3});
  const auto identity = [](std::uint64_t x) { return x; };
  const auto widen = [](std::uint64_t x) { return std::vector<std::uint64_t>{x, x}; };
  check_throws_naming<invalid_option>(
      [&] { static_cast<void>(scope.stage(numbers, identity, {.name = "bad", .live_tokens = 8})); },
      {"weft::TaskScope::stage", "stage 'bad' of pipeline 'numbers'", "StageOptions::live_tokens = 8",
       "only the source's is used"});
  check_throws_naming<invalid_option>([&] { static_cast<void>(scope.fan_out(numbers, widen, {.live_tokens = 1})); },
                                      {"weft::TaskScope::fan_out", "StageOptions::live_tokens = 1"});
  check_throws_naming<invalid_option>(
      [&] { static_cast<void>(scope.sink(numbers, [](std::uint64_t) {}, {.live_tokens = 2})); },
      {"weft::TaskScope::sink", "StageOptions::live_tokens = 2"});
  // Nothing was added: the stream is still open, and the pipeline runs with its three tokens.
  std::uint64_t sum = 0;
  Job<void> done = scope.sink(numbers, [&sum](std::uint64_t x) { sum += x; });
  CHECK(scope.run_and_wait() == RunStatus::Completed);
  CHECK(sum == 45);
}

}  // namespace
}  // namespace weft::test
