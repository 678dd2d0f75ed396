// Streams that join (TaskScope::join, join_by_key, merge): a join by position pairs the n-th item of each input
// exactly once, a join by key the items with equal keys, a merge passes every item of every input on exactly
// once; an item lost on one branch takes its partners with it (counted); inputs that end unequally fail the run
// with weft::unmatched_items, a join that fills the bound with items waiting for partners with
// weft::would_deadlock; exceptions and cancels destroy every item once; and every mistake in building is refused
// with a message naming it.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"

namespace weft::test {
namespace {

TEST_CASE("broadcast -> three parallel branches -> join by position: each tuple is of one item, once") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  const std::uint64_t seed = seed_for("pipeline_join position");
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join by position", workers), patience(60));
    Census census;
    std::vector<unsigned> seen(items, 0);
    bool mismatched = false;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items));
      auto [a, b, c] = scope.broadcast<3>(values);
      const StageOptions parallel{.concurrency = kUnlimited, .capacity = 2};
      auto squares = scope.stage(
          a,
          [seed](Copied v) {
            random_spin(seed, v.value(), 150);
            return v.value() * v.value();
          },
          parallel);
      auto cubes = scope.stage(
          b,
          [seed](const Copied& v) {
            random_spin(seed + 1, v.value(), 150);
            return v.value() * v.value() * v.value();
          },
          parallel);
      auto same = scope.stage(
          c,
          [seed](Copied v) {
            random_spin(seed + 2, v.value(), 150);
            return v;
          },
          parallel);
      auto joined = scope.join(std::tuple{squares, cubes, same}, {.name = "triple"});
      (void)scope.sink(joined, [&](const std::tuple<std::uint64_t, std::uint64_t, Copied>& t) {
        const std::uint64_t v = std::get<2>(t).value();
        if (std::get<0>(t) != v * v || std::get<1>(t) != v * v * v) mismatched = true;
        ++seen[v];
      });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    CHECK_FALSE(mismatched);
    std::uint64_t wrong = 0;
    for (const unsigned count : seen) wrong += count != 1 ? 1 : 0;
    CHECK(wrong == 0);
    check_balanced(census);
  });
}

TEST_CASE("join by position: an item filtered out on one branch takes its partners with it, counted") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 2'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join loses partners", workers), patience(60));
    Census census;
    std::vector<std::uint64_t> got;
    RunStats stats;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items), {.name = "numbers"});
      auto [a, b] = scope.broadcast<2>(values, {.order = Order::Input});
      auto odd = scope.stage(a,
                             [](Copied v) -> std::optional<Copied> {
                               if (v.value() % 3 == 0) return std::nullopt;
                               return v;
                             },
                             {.concurrency = kUnlimited});
      auto pairs = scope.join(std::tuple{odd, b}, {.name = "pair"});
      (void)scope.sink(pairs,
                       [&](const std::tuple<Copied, Copied>& t) {
                         if (std::get<0>(t).value() == std::get<1>(t).value()) got.push_back(std::get<0>(t).value());
                       },
                       {.order = Order::Input});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      stats = scope.stats();
    }
    std::vector<std::uint64_t> expected;
    for (std::uint64_t v = 0; v < items; ++v) {
      if (v % 3 != 0) expected.push_back(v);
    }
    // Tuples leave the join in the order they are made: sort what the sink saw.
    std::sort(got.begin(), got.end());
    CHECK(got == expected);
    CHECK(stats.dropped == (items + 2) / 3);
    bool named_join = false;
    for (const auto& [name, count] : stats.dropped_by_stage) {
      named_join = named_join || (name == "numbers/pair" && count == (items + 2) / 3);
    }
    CHECK(named_join);
    check_balanced(census);
  });
}

TEST_CASE("join by key: items with equal keys make one tuple, whatever order they arrive in") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  const std::uint64_t seed = seed_for("pipeline_join key");
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join by key", workers), patience(60));
    std::vector<unsigned> seen(items, 0);
    bool mismatched = false;
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(items));
    auto [a, b] = scope.broadcast<2>(values);
    auto names = scope.stage(a,
                             [seed](std::uint64_t v) {
                               random_spin(seed, v, 200);
                               return std::pair<std::uint64_t, std::string>{v, std::to_string(v)};
                             },
                             {.concurrency = kUnlimited});
    auto doubles = scope.stage(b,
                               [](std::uint64_t v) {
                                 return std::pair<std::uint64_t, std::uint64_t>{v, 2 * v};
                               },
                               {.concurrency = kUnlimited});
    auto matched = scope.join_by_key(std::tuple{names, doubles}, [](const auto& part) { return part.first; },
                                     {.name = "by id"});
    (void)scope.sink(matched, [&](const auto& t) {
      const auto& [name, twice] = t;
      if (name.first != twice.first || name.second != std::to_string(twice.first) || twice.second != 2 * name.first) {
        mismatched = true;
      }
      ++seen[name.first];
    });
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_FALSE(mismatched);
    std::uint64_t wrong = 0;
    for (const unsigned count : seen) wrong += count != 1 ? 1 : 0;
    CHECK(wrong == 0);
  });
}

TEST_CASE("merge: every item of every input goes on exactly once") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("merge", workers), patience(60));
    Census census;
    std::vector<unsigned> seen(items, 0);
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items));
      auto [twice, dealt] = scope.broadcast<2>(values);
      auto parts = scope.split<3>(dealt);
      auto slowed = scope.stage(parts[1], [](Copied v) { return v; }, {.concurrency = 2, .capacity = 1});
      auto all = scope.merge({twice, parts[0], slowed, parts[2]}, {.name = "all"});
      (void)scope.sink(all, [&](const Copied& v) { ++seen[v.value()]; });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    std::uint64_t wrong = 0;
    for (const unsigned count : seen) wrong += count != 2 ? 1 : 0;
    CHECK(wrong == 0);
    check_balanced(census);
  });
}

// docs/pipelines.md's bound for the flow-graph shape (every stage at its default capacity): 1 + (16 + 1) in the
// source's segment; 3 x (16 + W + 1) for the parallel branches, (16 + 1) for the join and (16 + 1) for the sink
// after it in the fork's: 3W + 103. The census counts every item but the two integer results waiting at the join.
TEST_CASE("broadcast -> three branches -> join -> slow sink: items alive never exceed the documented bound") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 200 : 2'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join bound", workers), patience(60));
    const std::int64_t bound = 3 * static_cast<std::int64_t>(workers) + 103;
    Census census;
    std::atomic<std::uint64_t> sum{0};
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items));
      auto [a, b, c] = scope.broadcast<3>(values);
      const StageOptions parallel{.concurrency = kUnlimited};
      auto same = scope.stage(
          a, [](Copied v) { return v; }, parallel);
      auto squares = scope.stage(
          b, [](const Copied& v) { return v.value() * v.value(); }, parallel);
      auto twice = scope.stage(
          c, [](const Copied& v) { return 2 * v.value(); }, parallel);
      auto joined = scope.join(std::tuple{same, squares, twice});
      (void)scope.sink(joined, [&](const std::tuple<Copied, std::uint64_t, std::uint64_t>& t) {
        busy_work(300);
        sum.fetch_add(std::get<0>(t).value() + std::get<2>(t) / 2 -
                      std::get<1>(t) / std::max<std::uint64_t>(1, std::get<0>(t).value()));
      });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    CHECK(sum.load() == items * (items - 1) / 2);  // v + v - v
    INFO("peak " << census.peak() << ", bound " << bound);
    CHECK(census.peak() <= bound);
    check_balanced(census);
  });
}

TEST_CASE("join inputs that end unequally fail the run with unmatched_items, naming what was left") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join unequal", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(counted_below(census, 100), {.name = "jobs"});
      // Items 0 .. 59 alternate; 60 .. 99 all go to branch 0: 70 on input 0, 30 on input 1.
      auto [left, right] = scope.split<2>(values, [](const Counted& c) { return c.value() < 60 ? c.value() % 2 : 0; },
                                          {.name = "deal"});
      auto pairs = scope.join(std::tuple{left, right}, {.name = "pair", .capacity = 64});
      std::atomic<int> made{0};
      (void)scope.sink(pairs, [&](const std::tuple<Counted, Counted>&) { made.fetch_add(1); });
      check_throws_naming<unmatched_items>([&] { (void)scope.run_and_wait(); },
                                           {"join 'pair'", "pipeline 'jobs'", "40 item(s)",
                                            "input 0 (stage 'deal'): 40", "input 1 (stage 'deal'): 0"});
      CHECK(made.load() == 30);
    }
    check_balanced(census);
  });
}

TEST_CASE("a key join with missing keys fails the run at the end with unmatched_items") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("key join missing", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(counted_below(census, 40), {.name = "ids"});
      // Even items to a, odd to b; keys 0 .. 14 then 0 .. 4 again on each: repeated keys match in arrival order.
      auto [a, b] = scope.split<2>(values, {.order = Order::Input});
      auto keyed = scope.join_by_key(std::tuple{a, b}, [](const Counted& c) { return c.value() / 2 % 15; },
                                     {.name = "kj"});
      std::atomic<int> made{0};
      (void)scope.sink(keyed, [&](const std::tuple<Counted, Counted>& t) {
        if (std::get<0>(t).value() / 2 % 15 == std::get<1>(t).value() / 2 % 15) made.fetch_add(1);
      });
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK(made.load() == 20);
    }
    check_balanced(census);
    Census second;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(counted_below(second, 40), {.name = "ids"});
      auto [a, b] = scope.split<2>(values, {.name = "deal"});
      auto fewer = scope.stage(b,
                               [](Counted c) -> std::optional<Counted> {
                                 if (c.value() == 7) return std::nullopt;  // key 3 of input 1 never comes
                                 return c;
                               },
                               {.name = "filter"});
      auto keyed = scope.join_by_key(std::tuple{a, fewer}, [](const Counted& c) { return c.value() / 2; },
                                     {.name = "kj"});
      (void)scope.sink(keyed, [](const std::tuple<Counted, Counted>&) {});
      check_throws_naming<unmatched_items>([&] { (void)scope.run_and_wait(); },
                                           {"join 'kj'", "pipeline 'ids'", "1 item(s)", "input 0 (stage 'deal'): 1",
                                            "input 1 (stage 'filter'): 0"});
    }
    check_balanced(second);
  });
}

TEST_CASE("a join whose waiting items fill the bound fails with would_deadlock instead of hanging") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join stall", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(counted_below(census, 10'000), {.name = "flood"});
      auto [left, right] = scope.split<2>(values, [](const Counted&) { return 0; }, {.name = "all left"});
      auto pairs = scope.join(std::tuple{left, right}, {.name = "pair"});
      (void)scope.sink(pairs, [](const std::tuple<Counted, Counted>&) {});
      check_throws_naming<would_deadlock>([&] { (void)scope.run_and_wait(); },
                                          {"pipeline 'flood'", "join 'pair'", "waiting for partners"});
    }
    check_balanced(census);
  });
}

TEST_CASE("an exception before a join, in a key function, or a cancel stops the run; every item destroyed once") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("join errors", workers), patience(60));
    for (int kind = 0; kind < 3; ++kind) {
      INFO("kind " << kind);
      Census census;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        std::atomic<bool> started{false};
        std::uint64_t next = 0;
        auto values = scope.source([&]() -> std::optional<Copied> { return Copied(census, next++); });
        auto [a, b] = scope.broadcast<2>(values);
        auto checked = scope.stage(a,
                                   [&, kind](Copied v) {
                                     if (kind == 0 && v.value() == 250) throw StageFailure("branch a failed at 250");
                                     if (kind == 2 && v.value() >= 250 && started.load(std::memory_order_acquire))
                                       scope.cancel();
                                     return v;
                                   },
                                   {.concurrency = 3});
        auto keyed = scope.join_by_key(std::tuple{checked, b}, [kind](const Copied& v) {
          if (kind == 1 && v.value() == 250) throw StageFailure("key failed at 250");
          return v.value();
        });
        Job<void> done = scope.sink(keyed, [](const std::tuple<Copied, Copied>&) {});
        scope.run();
        started.store(true, std::memory_order_release);
        if (kind == 2) {
          CHECK(scope.wait() == RunStatus::Cancelled);
          CHECK_THROWS_AS(done.get(), job_cancelled);
        } else {
          check_throws_naming<StageFailure>([&] { (void)scope.wait(); }, {"failed at 250"});
          CHECK_THROWS_AS(done.get(), StageFailure);
        }
      }
      check_balanced(census);
    }
  });
}

TEST_CASE("building a join or merge: every mistake is refused, naming it") {
  Pool pool(PoolOptions{.threads = 2});
  SUBCASE("streams of two pipelines") {
    TaskScope scope{pool};
    auto one = scope.source(numbers_below(10), {.name = "one"});
    auto two = scope.source(numbers_below(10), {.name = "two"});
    check_throws_naming<invalid_graph>(
        [&] {
          (void)scope.join(std::tuple{one, two});
        },
        {"weft::TaskScope::join", "pipeline 'two'", "pipeline 'one'", "one source"});
    check_throws_naming<invalid_graph>(
        [&] {
          (void)scope.merge({one, two});
        },
        {"weft::TaskScope::merge", "one source"});
    (void)scope.sink(one, [](std::uint64_t) {});
    (void)scope.sink(two, [](std::uint64_t) {});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
  }
  SUBCASE("streams of another scope, an empty stream, an empty merge") {
    TaskScope other{pool};
    auto foreign = other.source(numbers_below(10));
    auto [x, y] = other.broadcast<2>(foreign);
    TaskScope scope{pool};
    check_throws_naming<invalid_graph>(
        [&] {
          (void)scope.join(std::tuple{x, y});
        },
        {"weft::TaskScope::join", "another TaskScope"});
    check_throws_naming<invalid_graph>(
        [&] {
          (void)scope.merge({Stream<int>{}, Stream<int>{}});
        },
        {"weft::TaskScope::merge", "stream 0 is empty"});
    check_throws_naming<invalid_graph>([&] { (void)scope.merge(std::span<const Stream<int>>{}); },
                                       {"weft::TaskScope::merge", "no streams"});
    (void)other.sink(other.merge({x, y}), [](std::uint64_t) {});
    CHECK(other.run_and_wait() == RunStatus::Completed);
  }
  SUBCASE("a stream given twice, a stream already consumed, one consumed after the join") {
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(10), {.name = "numbers"});
    auto [a, b, c] = scope.broadcast<3>(values, {.name = "tee"});
    check_throws_naming<invalid_graph>(
        [&] {
          (void)scope.join(std::tuple{a, a});
        },
        {"weft::TaskScope::join", "given twice (inputs 0 and 1)"});
    (void)scope.sink(c, [](std::uint64_t) {}, {.name = "end"});
    check_throws_naming<invalid_graph>([&] { (void)scope.merge({a, c}); }, {"(branch 2)", "already feeds stage 'end'"});
    auto pairs = scope.join(std::tuple{a, b}, {.name = "pair"});
    check_throws_naming<invalid_graph>([&] { (void)scope.sink(b, [](std::uint64_t) {}); },
                                       {"(branch 1)", "already feeds stage 'pair'"});
    check_throws_naming<invalid_option>([&] { (void)scope.merge({pairs}, {.name = "m", .order = Order::Input}); },
                                        {"weft::TaskScope::merge", "stage 'm'", "order = Order::Input",
                                         "as they arrive"});
    (void)scope.sink(pairs, [](const std::tuple<std::uint64_t, std::uint64_t>&) {});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
  }
}

}  // namespace
}  // namespace weft::test
