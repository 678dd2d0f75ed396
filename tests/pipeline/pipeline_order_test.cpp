// Order::Input restores the source's order after parallel stages that reorder items (random short spins), with
// filters before and after them: for a serial Input sink, a serial Input middle stage, and after a serial Input
// fan-out stage (whose elements then come in the source's order, each input's expanded in turn).
#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// The filters: the first drops every fifth item, the second one item in seven (decided by the item's mix).
[[nodiscard]] bool first_keeps(std::uint64_t x) noexcept { return x % 5 != 1; }
[[nodiscard]] bool second_keeps(std::uint64_t x) noexcept { return mix(7, x) % 7 != 0; }

std::vector<std::uint64_t> kept_in_order(std::uint64_t items) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t x = 0; x < items; ++x) {
    if (first_keeps(x) && second_keeps(x)) out.push_back(x);
  }
  return out;
}

// Compares what arrived with what should have, in order; one check, naming the first difference.
template <class T>
void check_sequence(const std::vector<T>& seen, const std::vector<T>& expected) {
  std::size_t first_diff = 0;
  while (first_diff < seen.size() && first_diff < expected.size() && seen[first_diff] == expected[first_diff]) {
    ++first_diff;
  }
  INFO("arrived " << seen.size() << " items, expected " << expected.size() << "; first difference at position "
                  << first_diff);
  CHECK(seen == expected);
}

// source -> filter -> parallel stage (reorders) -> filter -> `tail`: builds the chain up to the second filter.
Stream<std::uint64_t> reordered_chain(TaskScope& scope, std::uint64_t& next, std::uint64_t items, std::uint64_t seed,
                                      StageOptions parallel) {
  auto numbers = scope.source([&next, items]() -> std::optional<std::uint64_t> {
    if (next == items) return std::nullopt;
    return next++;
  });
  auto first = scope.stage(numbers,
                           [](std::uint64_t x) -> std::optional<std::uint64_t> {
                             if (first_keeps(x)) return x;
                             return std::nullopt;
                           },
                           {.concurrency = 2, .capacity = 2});
  auto shuffled = scope.stage(
      first,
      [seed](std::uint64_t x) {
        random_spin(seed, x, 2'000);
        return x;
      },
      std::move(parallel));
  return scope.stage(shuffled,
                     [](std::uint64_t x) -> std::optional<std::uint64_t> {
                       if (second_keeps(x)) return x;
                       return std::nullopt;
                     },
                     {.concurrency = 3, .capacity = 1});
}

const StageOptions kParallelStages[] = {
    {.concurrency = 4, .capacity = 4},
    {.concurrency = kUnlimited, .capacity = 1},
    {.concurrency = 2, .capacity = 64},
};

TEST_CASE("a serial Input sink gets the items in source order after a reordering parallel stage and filters") {
  const std::uint64_t seed = seed_for("pipeline order sink");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 1'000 : 15'000);
  const std::vector<std::uint64_t> expected = kept_in_order(items);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const StageOptions& parallel : kParallelStages) {
      INFO("parallel stage: concurrency " << parallel.concurrency << ", capacity " << parallel.capacity);
      const Watchdog watchdog(named("Input sink", workers), patience(60));
      for (const std::size_t sink_capacity : {std::size_t{1}, kDefaultStageCapacity}) {
        INFO("sink capacity " << sink_capacity);
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        std::uint64_t next = 0;
        auto kept = reordered_chain(scope, next, items, seed, parallel);
        std::vector<std::uint64_t> seen;
        Job<void> done = scope.sink(kept, [&](std::uint64_t x) { seen.push_back(x); },
                                    {.capacity = sink_capacity, .order = Order::Input});
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        CHECK_NOTHROW(done.get());
        check_sequence(seen, expected);
      }
    }
  });
}

TEST_CASE("a serial Input middle stage takes the items in source order, between reordering parallel stages") {
  const std::uint64_t seed = seed_for("pipeline order middle");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 1'000 : 15'000);
  const std::vector<std::uint64_t> expected = kept_in_order(items);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const StageOptions& parallel : kParallelStages) {
      INFO("parallel stage: concurrency " << parallel.concurrency << ", capacity " << parallel.capacity);
      const Watchdog watchdog(named("Input middle stage", workers), patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      std::uint64_t next = 0;
      auto kept = reordered_chain(scope, next, items, seed, parallel);
      std::vector<std::uint64_t> seen;  // only the serial stage touches it
      auto ordered = scope.stage(kept,
                                 [&](std::uint64_t x) {
                                   seen.push_back(x);
                                   return x;
                                 },
                                 {.capacity = 1, .order = Order::Input});
      auto shuffled_again = scope.stage(ordered,
                                        [seed](std::uint64_t x) {
                                          random_spin(seed + 1, x, 2'000);
                                          return x;
                                        },
                                        {.concurrency = 4, .capacity = 2});
      RunCounts arrived(items);
      Job<void> done = scope.sink(shuffled_again, [&](std::uint64_t x) { arrived.ran(x); },
                                  {.concurrency = 2, .capacity = 1});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      check_sequence(seen, expected);
      std::uint64_t total = 0;
      for (std::uint64_t x = 0; x < items; ++x) total += arrived.count(x);
      CHECK(total == expected.size());
    }
  });
}

TEST_CASE("two Input stages in a row, the second after another filter and parallel stage") {
  const std::uint64_t seed = seed_for("pipeline order two Input stages");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 1'000 : 15'000);
  std::vector<std::uint64_t> expected;
  for (const std::uint64_t x : kept_in_order(items)) {
    if (x % 3 != 0) expected.push_back(x);
  }
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("two Input stages", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::uint64_t next = 0;
    auto kept = reordered_chain(scope, next, items, seed, {.concurrency = 4, .capacity = 2});
    std::vector<std::uint64_t> first_seen;
    auto ordered = scope.stage(kept,
                               [&](std::uint64_t x) {
                                 first_seen.push_back(x);
                                 return x;
                               },
                               {.capacity = 2, .order = Order::Input});
    auto thinned = scope.stage(ordered,
                               [seed](std::uint64_t x) -> std::optional<std::uint64_t> {
                                 random_spin(seed + 2, x, 2'000);
                                 if (x % 3 == 0) return std::nullopt;
                                 return x;
                               },
                               {.concurrency = kUnlimited, .capacity = 1});
    std::vector<std::uint64_t> seen;
    Job<void> done = scope.sink(thinned, [&](std::uint64_t x) { seen.push_back(x); }, {.order = Order::Input});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    check_sequence(first_seen, kept_in_order(items));
    check_sequence(seen, expected);
  });
}

TEST_CASE("after a serial Input fan-out, an Input sink gets the source order expanded") {
  const std::uint64_t seed = seed_for("pipeline order fan-out");
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 500 : 10'000);
  // Input x (kept by both filters) expands to (x, 0) .. (x, x % 4 - 1); inputs with x % 4 == 0 expand to nothing.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> expected;
  for (const std::uint64_t x : kept_in_order(inputs)) {
    for (std::uint64_t j = 0; j < x % 4; ++j) expected.emplace_back(x, j);
  }
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const std::size_t capacity : {std::size_t{1}, std::size_t{8}}) {
      INFO("capacities " << capacity);
      const Watchdog watchdog(named("Input fan-out", workers), patience(60));
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      std::uint64_t next = 0;
      auto kept = reordered_chain(scope, next, inputs, seed, {.concurrency = 4, .capacity = capacity});
      auto pairs = scope.fan_out(kept,
                                 [](std::uint64_t x) {
                                   std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
                                   for (std::uint64_t j = 0; j < x % 4; ++j) out.emplace_back(x, j);
                                   return out;
                                 },
                                 {.capacity = capacity, .order = Order::Input});
      // A reordering stage and a filter (that keeps everything but is one) between the fan-out and the sink.
      auto shuffled = scope.stage(pairs,
                                  [seed](std::pair<std::uint64_t, std::uint64_t> p) {
                                    random_spin(seed + 3, p.first * 4 + p.second, 2'000);
                                    return p;
                                  },
                                  {.concurrency = 4, .capacity = capacity});
      auto all = scope.stage(shuffled,
                             [](std::pair<std::uint64_t, std::uint64_t> p)
                                 -> std::optional<std::pair<std::uint64_t, std::uint64_t>> { return p; },
                             {.concurrency = 2, .capacity = capacity});
      std::vector<std::pair<std::uint64_t, std::uint64_t>> seen;
      Job<void> done = scope.sink(all, [&](std::pair<std::uint64_t, std::uint64_t> p) { seen.push_back(p); },
                                  {.capacity = capacity, .order = Order::Input});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      check_sequence(seen, expected);
    }
  });
}

TEST_CASE("an Input stage right after a parallel fan-out gets every element, in the order they were emitted") {
  // A parallel fan-out interleaves the elements of several inputs; an Input stage after it takes them in the
  // order they were emitted, so each input's elements still come in their own order.
  const std::uint64_t seed = seed_for("pipeline order parallel fan-out");
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 500 : 10'000);
  constexpr std::uint64_t kWidth = 6;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("Input after parallel fan-out", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto numbers = scope.source(numbers_below(inputs));
    auto pairs = scope.fan_out(numbers,
                               [seed](std::uint64_t x) {
                                 random_spin(seed, x, 2'000);
                                 std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
                                 for (std::uint64_t j = 0; j < kWidth; ++j) out.emplace_back(x, j);
                                 return out;
                               },
                               {.concurrency = 4, .capacity = 2});
    std::vector<std::uint64_t> next_index(inputs, 0);
    std::uint64_t out_of_order = 0;
    std::uint64_t seen = 0;
    Job<void> done = scope.sink(pairs,
                                [&](std::pair<std::uint64_t, std::uint64_t> p) {
                                  if (next_index[p.first]++ != p.second) ++out_of_order;
                                  ++seen;
                                },
                                {.capacity = 1, .order = Order::Input});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    CHECK(out_of_order == 0);
    CHECK(seen == inputs * kWidth);
  });
}

}  // namespace
}  // namespace weft::test
