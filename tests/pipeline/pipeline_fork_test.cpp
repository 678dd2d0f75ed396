// Streams that fork (TaskScope::broadcast, split): every item reaches every branch of a broadcast exactly once
// and exactly one branch of a split (the one its route names, or the next in turn); a branch with Order::Input
// sees the fork's order; the slowest branch bounds the pipeline (the documented bound is never exceeded); an
// exception or a cancel in one branch stops the whole pipeline and destroys every item and copy once; and every
// mistake in building a fork is refused with a message naming it.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"

namespace weft::test {
namespace {

// How often each branch saw each item.
class Seen {
 public:
  Seen(std::size_t branches, std::uint64_t items) : items_(items), counts_(branches * items) {}
  void see(std::size_t branch, std::uint64_t item) noexcept {
    counts_[branch * items_ + item].fetch_add(1, std::memory_order_relaxed);
  }
  [[nodiscard]] unsigned count(std::size_t branch, std::uint64_t item) const noexcept {
    return counts_[branch * items_ + item].load(std::memory_order_relaxed);
  }

 private:
  std::uint64_t items_;
  std::vector<std::atomic<unsigned>> counts_;
};

TEST_CASE("broadcast: every branch gets every item exactly once, through parallel stages") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  const std::uint64_t seed = seed_for("pipeline_fork broadcast");
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("broadcast exactly once", workers), patience(60));
    Census census;
    Seen seen(3, items);
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items), {.name = "numbers"});
      auto branches = scope.broadcast<3>(values, {.name = "tee", .capacity = 2});
      for (std::size_t b = 0; b < 3; ++b) {
        auto staged = scope.stage(branches[b],
                                  [seed, b](Copied c) {
                                    random_spin(seed + b, c.value(), 200);
                                    return c;
                                  },
                                  {.concurrency = kUnlimited, .capacity = 2});
        (void)scope.sink(staged, [&seen, b](const Copied& c) { seen.see(b, c.value()); });
      }
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    for (std::size_t b = 0; b < 3; ++b) {
      for (std::uint64_t i = 0; i < items; ++i) {
        if (seen.count(b, i) != 1) {
          FAIL_CHECK("branch " << b << " saw item " << i << " " << seen.count(b, i) << " times");
          return;
        }
      }
    }
    check_balanced(census);
  });
}

TEST_CASE("broadcast: a branch with Order::Input sees the items in the fork's order") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 2'000);
  const std::uint64_t seed = seed_for("pipeline_fork broadcast order");
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("broadcast order", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(items));
    // A serial fork in the source's order, then parallel stages that reorder, then in-order sinks.
    auto [left, right] = scope.broadcast<2>(values, {.order = Order::Input});
    std::array<std::vector<std::uint64_t>, 2> got;
    std::array<Stream<std::uint64_t>, 2> branches{left, right};
    for (std::size_t b = 0; b < 2; ++b) {
      auto staged = scope.stage(branches[b],
                                [seed, b](std::uint64_t v) -> std::optional<std::uint64_t> {
                                  random_spin(seed + b, v, 100);
                                  if (b == 1 && v % 5 == 0)
                                    return std::nullopt;  // a filter: the Input sink skips its place
                                  return v;
                                },
                                {.concurrency = kUnlimited});
      (void)scope.sink(staged, [&got, b](std::uint64_t v) { got[b].push_back(v); }, {.order = Order::Input});
    }
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    std::vector<std::uint64_t> all;
    std::vector<std::uint64_t> kept;
    for (std::uint64_t v = 0; v < items; ++v) {
      all.push_back(v);
      if (v % 5 != 0) kept.push_back(v);
    }
    CHECK(got[0] == all);
    CHECK(got[1] == kept);
  });
}

TEST_CASE("split round-robin: item k of a serial in-order fork goes to branch k mod N, each once") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("split round-robin", workers), patience(60));
    Census census;
    std::array<std::vector<std::uint64_t>, 3> got;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(counted_below(census, items));
      auto branches = scope.split<3>(values, {.name = "deal", .order = Order::Input});
      for (std::size_t b = 0; b < 3; ++b) {
        auto staged = scope.stage(branches[b], [](Counted c) { return c; }, {.concurrency = 2, .capacity = 1});
        (void)scope.sink(staged, [&got, b](Counted c) { got[b].push_back(c.value()); }, {.order = Order::Input});
      }
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    for (std::size_t b = 0; b < 3; ++b) {
      std::vector<std::uint64_t> expected;
      for (std::uint64_t v = b; v < items; v += 3) expected.push_back(v);
      CHECK(got[b] == expected);
    }
    check_balanced(census);
  });
}

TEST_CASE("split by route: each item reaches the branch its route names, exactly once; move-only items") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("split by route", workers), patience(60));
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::uint64_t next = 0;
    auto values = scope.source([&]() -> std::optional<std::unique_ptr<std::uint64_t>> {
      if (next == items) return std::nullopt;
      return std::make_unique<std::uint64_t>(next++);
    });
    auto routed = scope.split<4>(values,
                                 [](const std::unique_ptr<std::uint64_t>& v) { return static_cast<int>(*v % 7 % 4); },
                                 {.concurrency = kUnlimited});
    Seen seen(4, items);
    std::atomic<bool> misrouted{false};
    for (std::size_t b = 0; b < 4; ++b) {
      (void)scope.sink(routed[b],
                       [&, b](std::unique_ptr<std::uint64_t> v) {
                         if (*v % 7 % 4 != b) misrouted.store(true);
                         seen.see(b, *v);
                       },
                       {.concurrency = 2});
    }
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_FALSE(misrouted.load());
    for (std::uint64_t i = 0; i < items; ++i) CHECK(seen.count(i % 7 % 4, i) == 1);
  });
}

TEST_CASE("a split route's index out of range fails the run, naming the stage and the value") {
  for (const int bad : {3, -1}) {
    for_each_mode_and_worker_count([&](unsigned workers) {
      const Watchdog watchdog(named("split out of range", workers), patience(60));
      Census census;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        auto values = scope.source(counted_below(census, 200), {.name = "jobs"});
        auto branches = scope.split<3>(values,
                                       [bad](const Counted& c) {
                                         return c.value() == 57 ? bad : static_cast<int>(c.value() % 3);
                                       },
                                       {.name = "router"});
        for (auto& branch : branches) (void)scope.sink(branch, [](Counted) {});
        check_throws_naming<std::out_of_range>([&] { (void)scope.run_and_wait(); },
                                               {"stage 'router'", "pipeline 'jobs'", "returned " + std::to_string(bad),
                                                "3 branches (0 .. 2)"});
      }
      check_balanced(census);
    });
  }
}

// The bound of a broadcast into a fast and a slow branch: the source's segment (1 + the fork's share) plus the
// branches' shared segment (every stage of both branches).
TEST_CASE("the slowest branch bounds the pipeline: items and copies alive never exceed the documented bound") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 200 : 2'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("fork bound", workers), patience(60));
    const StageOptions fork{.name = "tee", .capacity = 2};
    const StageOptions fast{.concurrency = kUnlimited, .capacity = 1};
    const StageOptions slow{.capacity = 3};
    const StageOptions quick_sink{.capacity = 1};
    const std::int64_t bound = segment_bound({fork}, workers, true) +
                               segment_bound({fast, quick_sink, slow}, workers, false);
    Census census;
    std::atomic<std::uint64_t> slow_sum{0};
    std::atomic<std::uint64_t> fast_sum{0};
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items));
      auto [a, b] = scope.broadcast<2>(values, fork);
      auto passed = scope.stage(
          a, [](Copied c) { return c; }, fast);
      (void)scope.sink(
          passed, [&](const Copied& c) { fast_sum.fetch_add(c.value()); }, quick_sink);
      (void)scope.sink(
          b,
          [&](const Copied& c) {
            busy_work(300);
            slow_sum.fetch_add(c.value());
          },
          slow);
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    CHECK(fast_sum.load() == items * (items - 1) / 2);
    CHECK(slow_sum.load() == items * (items - 1) / 2);
    INFO("peak " << census.peak() << ", bound " << bound);
    CHECK(census.peak() <= bound);
    check_balanced(census);
  });
}

TEST_CASE("forks nest: a broadcast branch split again, every item reaching each of its places once") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 300 : 2'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("nested forks", workers), patience(60));
    Census census;
    Seen seen(3, items);
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto values = scope.source(copied_below(census, items));
      auto [whole, dealt] = scope.broadcast<2>(values, {.concurrency = 2});
      (void)scope.sink(whole, [&](const Copied& c) { seen.see(0, c.value()); }, {.concurrency = kUnlimited});
      auto [even, odd] = scope.split<2>(dealt, [](const Copied& c) { return c.value() % 2; });
      (void)scope.sink(even, [&](const Copied& c) { seen.see(1, c.value()); });
      (void)scope.sink(odd, [&](const Copied& c) { seen.see(2, c.value()); }, {.capacity = 1});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
    }
    for (std::uint64_t i = 0; i < items; ++i) {
      CHECK(seen.count(0, i) == 1);
      CHECK(seen.count(1 + i % 2, i) == 1);
      CHECK(seen.count(2 - i % 2, i) == 0);
    }
    check_balanced(census);
  });
}

TEST_CASE("an exception in one branch stops the whole pipeline; every item and copy is destroyed once") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("fork exception", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      std::uint64_t next = 0;
      // Endless: only the exception ends the run.
      auto values = scope.source([&]() -> std::optional<Copied> { return Copied(census, next++); });
      auto [a, b, c] = scope.broadcast<3>(values);
      Job<void> done = scope.sink(a, [](const Copied&) {}, {.concurrency = 2});
      (void)scope.sink(b, [](const Copied& item) {
        if (item.value() == 300) throw StageFailure("branch b failed at 300");
      });
      auto staged = scope.stage(c, [](Copied item) { return item; }, {.concurrency = kUnlimited});
      (void)scope.sink(staged, [](const Copied&) { busy_work(20); });
      Job<void> after = scope.then(done, [] {});
      check_throws_naming<StageFailure>([&] { (void)scope.run_and_wait(); }, {"branch b failed at 300"});
      CHECK_THROWS_AS(done.get(), StageFailure);
      CHECK_THROWS_AS(after.get(), job_cancelled);
    }
    check_balanced(census);
  });
}

TEST_CASE("cancel from one branch stops the whole pipeline; every item and copy is destroyed once") {
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("fork cancel", workers), patience(60));
    Census census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      std::atomic<bool> started{false};
      std::uint64_t next = 0;
      auto values = scope.source([&]() -> std::optional<Copied> { return Copied(census, next++); });
      auto [a, b] = scope.broadcast<2>(values);
      Job<void> done = scope.sink(a, [](const Copied&) {});
      auto routed = scope.split<2>(b);
      (void)scope.sink(routed[0], [&](const Copied& item) {
        if (item.value() >= 200 && started.load(std::memory_order_acquire)) scope.cancel();
      });
      (void)scope.sink(routed[1], [](const Copied&) {}, {.concurrency = 3});
      scope.run();
      started.store(true, std::memory_order_release);
      CHECK(scope.wait() == RunStatus::Cancelled);
      CHECK_THROWS_AS(done.get(), job_cancelled);
    }
    check_balanced(census);
  });
}

TEST_CASE("building a fork: every mistake is refused, naming it") {
  Pool pool(PoolOptions{.threads = 2});
  SUBCASE("a stream consumed after it was forked") {
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(10), {.name = "numbers"});
    auto branches = scope.broadcast<2>(values, {.name = "tee"});
    check_throws_naming<invalid_graph>([&] { (void)scope.sink(values, [](std::uint64_t) {}); },
                                       {"weft::TaskScope::sink", "stage 'numbers'", "forked by stage 'tee'"});
    check_throws_naming<invalid_graph>([&] { (void)scope.split<2>(values); },
                                       {"weft::TaskScope::split", "forked by stage 'tee'"});
    for (auto& branch : branches) (void)scope.sink(branch, [](std::uint64_t) {});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
  }
  SUBCASE("a branch consumed twice") {
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(10));
    auto [a, b] = scope.split<2>(values, {.name = "deal"});
    (void)scope.sink(b, [](std::uint64_t) {}, {.name = "end"});
    check_throws_naming<invalid_graph>([&] { (void)scope.sink(b, [](std::uint64_t) {}); },
                                       {"stage 'deal' (branch 1)", "already feeds stage 'end'"});
    (void)scope.sink(a, [](std::uint64_t) {});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
  }
  SUBCASE("a branch that feeds nothing") {
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(10), {.name = "numbers"});
    auto [a, b] = scope.broadcast<2>(values, {.name = "tee"});
    (void)scope.sink(a, [](std::uint64_t) {});
    static_cast<void>(b);
    check_throws_naming<invalid_graph>([&] { scope.run(); }, {"pipeline 'numbers'", "stage 'tee'", "feeds nothing"});
  }
  SUBCASE("a stream of another scope, and an empty stream") {
    TaskScope other{pool};
    auto foreign = other.source(numbers_below(10), {.name = "elsewhere"});
    (void)other.sink(foreign, [](std::uint64_t) {});
    TaskScope scope{pool};
    check_throws_naming<invalid_graph>([&] { (void)scope.broadcast<2>(foreign); },
                                       {"weft::TaskScope::broadcast", "another TaskScope"});
    check_throws_naming<invalid_graph>([&] { (void)scope.split<2>(Stream<int>{}, {.name = "s"}); },
                                       {"weft::TaskScope::split", "empty"});
    CHECK(other.run_and_wait() == RunStatus::Completed);
  }
  SUBCASE("bad options on a fork stage") {
    TaskScope scope{pool};
    auto values = scope.source(numbers_below(10));
    check_throws_naming<invalid_option>([&] { (void)scope.broadcast<2>(values, {.name = "tee", .capacity = 0}); },
                                        {"weft::TaskScope::broadcast", "stage 'tee'", "capacity = 0"});
    check_throws_naming<invalid_option>([&] { (void)scope.split<2>(values, {.live_tokens = 4}); },
                                        {"weft::TaskScope::split", "live_tokens = 4"});
    // Refused options leave the stream open.
    auto [a, b] = scope.broadcast<2>(values);
    (void)scope.sink(a, [](std::uint64_t) {});
    (void)scope.sink(b, [](std::uint64_t) {});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
  }
}

}  // namespace
}  // namespace weft::test
