// Overflow::Drop and Overflow::Fail at a pipeline stage. Drop: exact counts where the scenario fixes them (a
// fan-out stage floods a serial stage that cannot run meanwhile; a stage held on its first item while the
// source runs to its end), RunStats::dropped and dropped_by_stage ({"pipeline/stage", count}), received +
// dropped (+ filtered) == produced in any case, and an Order::Input stage after a Drop stage never stalls (a
// dropped item leaves a marker). Fail: wait() and the sink's job throw weft::inbox_full naming the stage and
// the pipeline. Every item made is destroyed.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

// The items a test received at its sink, in the order they came (the sinks here are serial).
struct Received {
  std::vector<std::uint64_t> values;
  [[nodiscard]] bool increasing() const {
    for (std::size_t i = 1; i < values.size(); ++i) {
      if (values[i] <= values[i - 1]) return false;
    }
    return true;
  }
};

std::uint64_t drops_named(const RunStats& stats, const std::string& name) {
  std::uint64_t sum = 0;
  for (const auto& [stage, count] : stats.dropped_by_stage) {
    if (stage == name) sum += count;
  }
  return sum;
}

// One input expanded by a fan-out stage into `n` elements 0 .. n-1, all handed to a serial stage of capacity 1
// (`narrow`) while it cannot run: the fan-out's own carrier holds its first element, the second waits in its
// inbox, and the fan-out emits every element before that carrier is free. So the stage sees n - 2 elements
// overflow, whatever the workers.
struct Flood {
  bool given = false;  // the source gave its one input
  Census census;
  Received received;
  Job<void> done;
  Job<void> after;
};

void build_flood(TaskScope& scope, Flood& flood, std::uint64_t n, StageOptions narrow) {
  auto one = scope.source(
      [&given = flood.given, n]() -> std::optional<std::uint64_t> {
        if (std::exchange(given, true)) return std::nullopt;
        return n;
      },
      {.name = "flood"});
  auto elements = scope.fan_out(one,
                                [&census = flood.census](std::uint64_t count) {
                                  std::vector<Counted> out;
                                  out.reserve(count);
                                  for (std::uint64_t j = 0; j < count; ++j) out.emplace_back(census, j);
                                  return out;
                                },
                                {.name = "spread"});
  auto passed = scope.stage(
      elements, [](Counted c) { return c; }, std::move(narrow));
  flood.done = scope.sink(passed, [&received = flood.received](Counted c) { received.values.push_back(c.value()); },
                          {.name = "collect"});
  flood.after = scope.then(flood.done, [] {});
}

TEST_CASE("Drop: a fan-out floods a serial stage of capacity 1: exactly n - 2 dropped, counted by stage") {
  const std::uint64_t n = stress_count(weft::test::reduced_runs() ? 1'000 : 20'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("drop flood", workers), patience(60));
    Flood flood;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      build_flood(scope, flood, n, {.name = "narrow", .capacity = 1, .overflow = Overflow::Drop});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(flood.done.get());
      CHECK_NOTHROW(flood.after.get());
      const RunStats stats = scope.stats();
      CHECK(stats.dropped == n - 2);
      REQUIRE(stats.dropped_by_stage.size() == 1);
      CHECK(stats.dropped_by_stage[0].first == "flood/narrow");
      CHECK(stats.dropped_by_stage[0].second == n - 2);
      CHECK(flood.received.values == std::vector<std::uint64_t>{0, 1});
    }
    check_balanced(flood.census);
  });
}

TEST_CASE("Drop at an Order::Input stage: its dropped items become markers, exactly n - 2 dropped") {
  // The markers wait in the stage's ring (each in its slot) until the items before them pass, so the flood
  // must fit in the segment's bound: (1 + 1) for the stage and (16 + 1) for the sink.
  constexpr std::uint64_t kN = 12;
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("ordered drop flood", workers), patience(60));
    Flood flood;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      build_flood(scope, flood, kN,
                  {.name = "narrow", .capacity = 1, .overflow = Overflow::Drop, .order = Order::Input});
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(flood.done.get());
      const RunStats stats = scope.stats();
      CHECK(stats.dropped == kN - 2);
      CHECK(drops_named(stats, "flood/narrow") == kN - 2);
      CHECK(flood.received.values == std::vector<std::uint64_t>{0, 1});
    }
    check_balanced(flood.census);
  });
}

// source -> `held` (serial, Drop, capacity `capacity`), whose first call waits until the source has returned
// nullopt -> sink. The source meanwhile delivers items 1 .. capacity to the inbox and drops every later one,
// so exactly items - 1 - capacity are dropped and the sink gets 0 .. capacity. Needs a second worker (the held
// stage keeps one).
void run_held_drop(unsigned workers, std::uint64_t items, std::size_t capacity, Order sink_order) {
  Census census;
  Received received;
  {
    Pool pool(PoolOptions{.threads = workers});
    TaskScope scope{pool};
    std::uint64_t next = 0;
    std::atomic<bool> ended{false};
    auto source = scope.source(
        [&]() -> std::optional<Counted> {
          if (next == items) {
            ended.store(true, std::memory_order_release);  // release: pairs with the held stage's acquire
            return std::nullopt;
          }
          return Counted(census, next++);
        },
        {.name = "held pipeline"});
    bool first = true;
    auto held = scope.stage(source,
                            [&](Counted c) {
                              if (std::exchange(first, false)) {
                                while (!ended.load(std::memory_order_acquire)) std::this_thread::yield();
                              }
                              return c;
                            },
                            {.name = "held", .capacity = capacity, .overflow = Overflow::Drop});
    Job<void> done = scope.sink(held, [&](Counted c) { received.values.push_back(c.value()); }, {.order = sink_order});
    CHECK(scope.run_and_wait() == RunStatus::Completed);
    CHECK_NOTHROW(done.get());
    const RunStats stats = scope.stats();
    CHECK(stats.dropped == items - 1 - capacity);
    CHECK(drops_named(stats, "held pipeline/held") == items - 1 - capacity);
    std::vector<std::uint64_t> expected;
    for (std::uint64_t x = 0; x <= capacity; ++x) expected.push_back(x);
    CHECK(received.values == expected);
  }
  check_balanced(census);
}

TEST_CASE("Drop: a stage held on its first item while the source runs to its end drops exactly the excess") {
  // The shared mode is forced: in the automatic mode a cheap item's carrier keeps the source's turn until the
  // item has gone through, so the held stage would hold the source too.
  const ForcedMode shared(TestMode::shared);
  for (const unsigned workers : {2u, 4u, 8u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("held drop", workers), patience(60));
    run_held_drop(workers, stress_count(weft::test::reduced_runs() ? 1'000 : 20'000), 3, Order::Any);
    run_held_drop(workers, 1'000, 1, Order::Any);
    // An Input sink after the Drop stage: the dropped items' markers wait in its ring until item 0 passes, each
    // in its slot, so the source's items must fit in the bound: 1 + (3 + 1) + (16 + 1).
    run_held_drop(workers, 20, 3, Order::Input);
  }
}

TEST_CASE("Drop anywhere in a busy pipeline: received + dropped + filtered == produced, Input order kept") {
  const std::uint64_t seed = seed_for("pipeline drop random");
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 2'000 : 30'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const std::size_t capacity : {std::size_t{1}, std::size_t{4}}) {
      INFO("capacity " << capacity);
      const Watchdog watchdog(named("random drops", workers), patience(60));
      Census census;
      Received received;
      std::atomic<std::uint64_t> filtered{0};
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        auto source = scope.source(counted_below(census, items), {.name = "busy"});
        auto spun = scope.stage(source,
                                [seed](Counted c) {
                                  random_spin(seed, c.value(), 1'000);
                                  return c;
                                },
                                {.name = "spin", .concurrency = 2, .capacity = capacity, .overflow = Overflow::Drop});
        auto thinned = scope.stage(
            spun,
            [&filtered](Counted c) -> std::optional<Counted> {
              if (c.value() % 3 == 0) {
                filtered.fetch_add(1, std::memory_order_relaxed);
                return std::nullopt;
              }
              return c;
            },
            {.name = "thin", .concurrency = 3, .capacity = capacity, .overflow = Overflow::Drop});
        auto ordered = scope.stage(
            thinned,
            [seed](Counted c) {
              random_spin(seed + 1, c.value(), 300);
              return c;
            },
            {.name = "order", .capacity = capacity, .overflow = Overflow::Drop, .order = Order::Input});
        Job<void> done = scope.sink(
            ordered,
            [&](Counted c) {
              busy_work(200);
              received.values.push_back(c.value());
            },
            {.name = "last", .capacity = capacity, .overflow = Overflow::Drop, .order = Order::Input});
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        CHECK_NOTHROW(done.get());
        const RunStats stats = scope.stats();
        INFO("received " << received.values.size() << ", dropped " << stats.dropped << ", filtered "
                         << filtered.load());
        CHECK(received.values.size() + stats.dropped + filtered.load() == items);
        std::uint64_t by_stage = 0;
        for (const auto& [name, count] : stats.dropped_by_stage) {
          INFO("stage " << name);
          CHECK((name == "busy/spin" || name == "busy/thin" || name == "busy/order" || name == "busy/last"));
          CHECK(count > 0);
          by_stage += count;
        }
        CHECK(by_stage == stats.dropped);
        CHECK(received.increasing());
      }
      check_balanced(census);
    }
  });
}

TEST_CASE("Fail: a fan-out floods a serial stage of capacity 1: inbox_full names the stage and the pipeline") {
  for (const Order order : {Order::Any, Order::Input}) {
    INFO("order " << (order == Order::Input ? "Input" : "Any"));
    for_each_mode_and_worker_count([&](unsigned workers) {
      const Watchdog watchdog(named("fail flood", workers), patience(60));
      Flood flood;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        build_flood(scope, flood, 100, {.name = "strict", .capacity = 1, .overflow = Overflow::Fail, .order = order});
        const std::string message = check_throws_naming<inbox_full>([&] { static_cast<void>(scope.run_and_wait()); },
                                                                    {"'strict'", "'flood'", "capacity 1",
                                                                     "Overflow::Fail"});
        CHECK(check_throws_naming<inbox_full>([&] { flood.done.get(); }, {}) == message);
        CHECK_THROWS_AS(flood.after.get(), job_cancelled);
        CHECK(check_throws_naming<inbox_full>([&] { static_cast<void>(scope.wait()); }, {}) == message);
        CHECK(scope.stats().dropped == 0);
      }
      check_balanced(flood.census);
    });
  }
}

TEST_CASE("Fail at a slow stage under a fast source: the run completes or throws inbox_full, items balance") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 1'000 : 10'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const std::size_t capacity : {std::size_t{1}, std::size_t{1'000'000}}) {
      INFO("capacity " << capacity);
      const Watchdog watchdog(named("fail random", workers), patience(60));
      Census census;
      std::uint64_t received = 0;
      bool failed = false;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        auto source = scope.source(counted_below(census, items), {.name = "fast"});
        auto slow = scope.stage(source,
                                [](Counted c) {
                                  busy_work(300);
                                  return c;
                                },
                                {.name = "slow", .concurrency = 2, .capacity = capacity, .overflow = Overflow::Fail});
        Job<void> done = scope.sink(slow, [&](Counted) { ++received; });
        try {
          const RunStatus status = scope.run_and_wait();  // outside CHECK, which would catch inbox_full
          CHECK(status == RunStatus::Completed);
          CHECK_NOTHROW(done.get());
          CHECK(received == items);
        } catch (const inbox_full& e) {
          failed = true;
          const std::string message = e.what();
          CHECK(message.find("'slow'") != std::string::npos);
          CHECK(message.find("'fast'") != std::string::npos);
          CHECK_THROWS_AS(done.get(), inbox_full);
          CHECK(received < items);
        }
      }
      // An inbox of a million never fills: the bound on items alive is far below it.
      if (capacity > items) CHECK_FALSE(failed);
      check_balanced(census);
    }
  });
}

}  // namespace
}  // namespace weft::test
