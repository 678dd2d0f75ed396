// The bound on items alive (weft::StageOptions): under a fast source and a slow sink, the items alive in each
// segment of a pipeline never exceed the sum over its stages of capacity + min(concurrency, workers + 1), plus 1
// for the source; the bound is reached when the sink holds on; the source then waits without holding a thread;
// and every item made is destroyed.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"

namespace weft::test {
namespace {

struct Chain {
  const char* name;
  std::vector<StageOptions> middle;
  StageOptions sink;
};

std::vector<Chain> chains() {
  return {
      {"parallel stage -> serial sink", {{.concurrency = 4, .capacity = 2}}, {.capacity = 1}},
      {"unlimited stage -> serial Input stage -> parallel sink",
       {{.concurrency = kUnlimited, .capacity = 1}, {.capacity = 3, .order = Order::Input}},
       {.concurrency = 2, .capacity = 2}},
      {"serial stages of capacity 1 -> Input sink",
       {{.capacity = 1}, {.concurrency = 2, .capacity = 1}},
       {.capacity = 4, .order = Order::Input}},
      {"default options", {{}, {}}, {}},
      {"wide stage, narrow sink", {{.concurrency = 64, .capacity = 1}}, {.capacity = 1, .order = Order::Input}},
  };
}

// The elements each input of the fan-out test expands to.
constexpr std::uint64_t kWidth = 7;

std::int64_t chain_bound(const Chain& chain, unsigned workers) {
  std::int64_t bound = 1;  // the source's item
  for (const StageOptions& options : chain.middle) bound += segment_bound({options}, workers, false);
  return bound + segment_bound({chain.sink}, workers, false);
}

TEST_CASE("items alive never exceed the documented bound under a fast source and a slow sink") {
  const std::uint64_t items = stress_count(weft::test::reduced_runs() ? 1'000 : 10'000);
  for_each_mode_and_worker_count([&](unsigned workers) {
    for (const Chain& chain : chains()) {
      INFO("chain: " << std::string(chain.name));
      const Watchdog watchdog(named(chain.name, workers), patience(60));
      const std::int64_t bound = chain_bound(chain, workers);
      Census census;
      {
        Pool pool(PoolOptions{.threads = workers});
        TaskScope scope{pool};
        std::uint64_t next = 0;
        Stream<Counted> stream = scope.source([&]() -> std::optional<Counted> {
          if (next == items) return std::nullopt;
          return Counted(census, next++);
        });
        for (const StageOptions& options : chain.middle) {
          stream = scope.stage(
              stream, [](Counted c) { return c; }, options);
        }
        std::atomic<std::uint64_t> sum{0};
        Job<void> done = scope.sink(
            stream,
            [&](Counted c) {
              busy_work(500);  // slow: the source outruns it and fills the pipeline
              sum.fetch_add(c.value(), std::memory_order_relaxed);
            },
            chain.sink);
        CHECK(scope.run_and_wait() == RunStatus::Completed);
        CHECK_NOTHROW(done.get());
        CHECK(sum.load() == items * (items - 1) / 2);
      }
      INFO("bound = " << bound << ", peak items alive = " << census.peak());
      CHECK(census.peak() <= bound);
      check_balanced(census);
    }
  });
}

TEST_CASE("with a fan-out stage, each segment keeps its own bound") {
  // Segment 0: the source's items, consumed by a parallel stage and the fan-out stage; segment 1: the fan-out's
  // elements, made one by one by a lazy range (so the fan state holds none of them), consumed by a stage and a
  // slow sink. Each segment's items are counted apart.
  const std::uint64_t inputs = stress_count(weft::test::reduced_runs() ? 300 : 3'000);
  const StageOptions stage0{.concurrency = 3, .capacity = 2};
  const StageOptions fan{.concurrency = 2, .capacity = 1};
  const StageOptions stage1{.concurrency = kUnlimited, .capacity = 2};
  const StageOptions sink{.capacity = 3, .order = Order::Input};
  for_each_mode_and_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("fan-out segments", workers), patience(60));
    const std::int64_t bound0 = segment_bound({stage0, fan}, workers, true);
    const std::int64_t bound1 = segment_bound({stage1, sink}, workers, false);
    Census inputs_census;
    Census elements_census;
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      auto source = scope.source(counted_below(inputs_census, inputs));
      auto passed = scope.stage(
          source, [](Counted c) { return c; }, stage0);
      auto elements = scope.fan_out(
          passed,
          [&elements_census](const Counted& c) {
            const std::uint64_t base = c.value() * kWidth;
            return std::views::iota(std::uint64_t{0}, kWidth) |
                   std::views::transform(
                       [&elements_census, base](std::uint64_t j) { return Counted(elements_census, base + j); });
          },
          fan);
      auto moved = scope.stage(
          elements, [](Counted c) { return c; }, stage1);
      std::uint64_t arrived = 0;
      Job<void> done = scope.sink(
          moved,
          [&](Counted c) {
            busy_work(300);
            arrived += c.holds() ? 1 : 0;
          },
          sink);
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      CHECK(arrived == inputs * kWidth);
    }
    INFO("segment 0: bound " << bound0 << ", peak " << inputs_census.peak());
    INFO("segment 1: bound " << bound1 << ", peak " << elements_census.peak());
    CHECK(inputs_census.peak() <= bound0);
    CHECK(elements_census.peak() <= bound1);
    check_balanced(inputs_census);
    check_balanced(elements_census);
  });
}

TEST_CASE("a sink that holds on: the pipeline fills up to exactly the bound, and the source holds no thread") {
  // Needs a second worker: the sink's first item holds one until the test has seen the bound reached. Then a
  // task posted to the pool must still run: the source, out of room, waits without holding a worker.
  // The shared mode is forced: in the automatic mode a cheap item's carrier keeps the source's turn until the
  // item has gone through, so a sink that holds its first item holds the source too.
  const ForcedMode shared(TestMode::shared);
  const StageOptions middle{.concurrency = 3, .capacity = 2};
  const StageOptions sink{.capacity = 4};
  for (const unsigned workers : {2u, 4u, 8u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("full pipeline", workers), patience(60));
    const std::int64_t bound = segment_bound({middle, sink}, workers, true);
    Census census;
    bool reached = false;
    bool posted_ran = false;
    std::atomic<bool> ran{false};  // outlives the pool: the posted task may run late if the check failed
    {
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      std::uint64_t next = 0;
      constexpr std::uint64_t kItems = 200;
      auto source = scope.source([&]() -> std::optional<Counted> {
        if (next == kItems) return std::nullopt;
        return Counted(census, next++);
      });
      auto passed = scope.stage(
          source, [](Counted c) { return c; }, middle);
      bool first = true;
      std::uint64_t arrived = 0;
      Job<void> done = scope.sink(
          passed,
          [&](Counted c) {
            ++arrived;
            if (!std::exchange(first, false)) return;
            // Nothing leaves the pipeline while this item is here: the source fills every slot and waits.
            reached = eventually([&] { return census.alive() == bound; }, patience(10));
            pool.post([&ran] { ran.store(true); });
            posted_ran = eventually([&] { return ran.load(); }, patience(10));
            static_cast<void>(c);
          },
          sink);
      CHECK(scope.run_and_wait() == RunStatus::Completed);
      CHECK_NOTHROW(done.get());
      CHECK(arrived == kItems);
    }
    INFO("bound = " << bound << ", peak items alive = " << census.peak());
    CHECK(reached);
    CHECK(posted_ran);
    CHECK(census.peak() == bound);
    check_balanced(census);
  }
}

}  // namespace
}  // namespace weft::test
