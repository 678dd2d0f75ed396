// Priority buffers (TaskScope::priority_buffer, StreamGraph::priority_buffer): items waiting for the buffer leave
// highest first, every item exactly once, run after run of a StreamGraph too; items beyond the capacity act
// by the overflow (Fail: inbox_full naming the stage); the comparison's exception fails the run; Order::Input is
// refused.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "weft/stream_graph.hpp"

namespace weft::test {
namespace {

// Item i's value: a permutation of 0 .. n - 1 (n not a multiple of 37), so the source's order is not the rank's.
[[nodiscard]] std::uint64_t shuffled(std::uint64_t i, std::uint64_t n) noexcept { return (i * 37) % n; }

TEST_CASE("items waiting in a priority buffer leave highest first, every item exactly once") {
  const std::uint64_t items = weft::test::reduced_runs() ? 200 : 1'000;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("priority buffer", workers), patience(60));
    Census census;
    std::vector<std::uint64_t> seen;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      // One input fanned out to every item: the fan_out stage hands them all to the buffer in one go, and all but
      // the first find its slot taken and wait, so every later one leaves as the highest of those waiting.
      auto one = scope.source(numbers_below(1));
      auto numbers = scope.fan_out(one, [&](std::uint64_t) {
        std::vector<Counted> out;
        for (std::uint64_t i = 0; i < items; ++i) out.emplace_back(census, shuffled(i, items));
        return out;
      });
      auto ranked = scope.priority_buffer(numbers,
                                          [](const Counted& a, const Counted& b) { return a.value() < b.value(); },
                                          {.name = "ranked", .capacity = items});
      scope.sink(ranked, [&](Counted c) { seen.push_back(c.value()); }, {.capacity = 1});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    check_balanced(census);
    REQUIRE(seen.size() == items);
    std::vector<bool> once(items, false);
    for (const std::uint64_t v : seen) {
      CHECK_FALSE(once[v]);
      once[v] = true;
    }
    CHECK(seen[0] == shuffled(0, items));  // it found the buffer free
    std::size_t out_of_rank = 0;
    for (std::size_t k = 2; k < seen.size(); ++k) {
      if (seen[k] > seen[k - 1]) ++out_of_rank;
    }
    CHECK(out_of_rank == 0);
  });
}

TEST_CASE("a StreamGraph's priority buffer passes every item of every run exactly once") {
  const std::uint64_t seed = seed_for("pipeline priority reuse");
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("priority buffer reused", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    StreamGraph pipe;
    std::uint64_t n = 0;
    auto items = pipe.source([&n](std::size_t i) -> std::optional<std::uint64_t> {
      if (i == n) return std::nullopt;
      return shuffled(i, n);
    });
    auto ranked = pipe.priority_buffer(items, std::greater<>(), {.capacity = 4});  // lowest first
    auto slow = pipe.stage(ranked,
                           [seed](std::uint64_t x) {
                             random_spin(seed, x, 1'000);
                             return x;
                           },
                           {.concurrency = 2, .capacity = 1});
    std::vector<std::uint64_t> seen;
    pipe.sink(slow, [&](std::uint64_t x) { seen.push_back(x); });
    for (std::uint64_t round = 1; round <= 4; ++round) {
      INFO("round " << round);
      n = 100 * round + 1;
      seen.clear();
      CHECK(pipe.run(pool).wait() == RunStatus::Completed);
      std::vector<bool> once(n, false);
      std::size_t repeated = 0;
      for (const std::uint64_t v : seen) {
        if (v < n && once[v]) ++repeated;
        if (v < n) once[v] = true;
      }
      CHECK(seen.size() == n);
      CHECK(repeated == 0);
    }
  });
}

// One input fanned out to 50 items -> priority buffer (options) -> sink: the run must fail with E, its message
// naming `parts`, and every item must be destroyed.
template <class E, class Less>
void check_priority_fails(Less less, StageOptions options, std::initializer_list<std::string> parts) {
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("priority buffer fails", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto one = scope.source(numbers_below(1), {.name = "numbers"});
      auto numbers = scope.fan_out(one, [&](std::uint64_t) {
        std::vector<Counted> out;
        for (std::uint64_t i = 0; i < 50; ++i) out.emplace_back(census, i);
        return out;
      });
      auto ranked = scope.priority_buffer(numbers, less, options);
      scope.sink(ranked, [](const Counted&) {}, {.capacity = 1});
      check_throws_naming<E>([&] { scope.run_and_wait(); }, parts);
    }
    check_balanced(census);
  });
}

TEST_CASE("a full priority buffer with Overflow::Fail fails the run naming the stage") {
  const auto less = [](const Counted& a, const Counted& b) { return a.value() < b.value(); };
  check_priority_fails<inbox_full>(less, {.name = "ranked", .capacity = 2, .overflow = Overflow::Fail},
                                   {"weft::TaskScope", "stage 'ranked'", "pipeline 'numbers'", "capacity 2"});
}

TEST_CASE("the comparison's exception fails the run") {
  const auto less = [](const Counted& a, const Counted& b) {
    if (a.value() == 7 || b.value() == 7) throw StageFailure("cannot rank item 7");
    return a.value() < b.value();
  };
  check_priority_fails<StageFailure>(less, {.name = "ranked", .capacity = 64}, {"cannot rank item 7"});
}

TEST_CASE("Order::Input on a priority buffer is refused, naming the call, the stage and the option") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope{pool};
  auto numbers = scope.source(numbers_below(4), {.name = "numbers"});
  check_throws_naming<invalid_option>(
      [&] { (void)scope.priority_buffer(numbers, std::less<>(), {.name = "p", .order = Order::Input}); },
      {"weft::TaskScope::priority_buffer", "stage 'p'", "StageOptions::order = Order::Input", "by their rank"});
  check_throws_naming<invalid_option>(
      [&] { (void)scope.priority_buffer(numbers, std::less<>(), {.name = "p", .capacity = 0}); },
      {"weft::TaskScope::priority_buffer", "capacity = 0"});
  auto fine = scope.priority_buffer(numbers, std::less<>());
  scope.sink(fine, [](std::uint64_t) {});
  CHECK(scope.run_and_wait() == RunStatus::Completed);
}

}  // namespace
}  // namespace weft::test
