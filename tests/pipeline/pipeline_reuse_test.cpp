// weft::StreamGraph: one pipeline built once and run many times, each run on fresh input. Every run takes each
// item through exactly once, in the order promised, within the documented bound; a run that throws or is
// cancelled leaves the next run correct; overlapping runs queue; bad input is refused by name.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "weft/pool.hpp"
#include "weft/stream_graph.hpp"
#include "weft/task_scope.hpp"
#include "weft/trace.hpp"

namespace weft::test {
namespace {

// The batch of one run: sizes vary from run to run, 0 included.
std::uint64_t batch_size(std::uint64_t run) { return (run * 37) % 71; }

TEST_CASE("a reused pipeline takes each item of each run through once, in order, within the bound") {
  for_each_mode_and_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    Census census;
    std::uint64_t size = 0;
    std::uint64_t seed = 0;
    StreamGraph pipe;
    const StageOptions parse{.concurrency = kUnlimited, .capacity = 4};
    const StageOptions check{.concurrency = 3, .capacity = 2};
    const StageOptions collect{.capacity = 8, .order = Order::Input};
    auto items = pipe.source([&](std::size_t index) -> std::optional<Counted> {
      if (index == size) return std::nullopt;
      return Counted(census, index);
    });
    auto parsed = pipe.stage(
        items,
        [&](Counted item) {
          random_spin(seed, item.value(), 200);
          return item;
        },
        parse);
    auto checked = pipe.stage(
        parsed,
        [&](Counted item) {
          random_spin(seed + 1, item.value(), 100);
          return item;
        },
        check);
    std::vector<std::uint64_t> seen;
    pipe.sink(
        checked, [&](Counted item) { seen.push_back(item.value()); }, collect);
    const std::int64_t bound = segment_bound({parse, check, collect}, workers, true);
    for (std::uint64_t run = 0; run < 40; ++run) {
      INFO("run " << run);
      size = batch_size(run);
      seed = run;
      seen.clear();
      CHECK(pipe.run(pool).wait() == RunStatus::Completed);
      REQUIRE(seen.size() == size);
      for (std::uint64_t i = 0; i < size; ++i) CHECK(seen[i] == i);  // once each, in the source's order
      check_balanced(census);
    }
    CHECK(census.peak() <= bound);
  });
}

TEST_CASE("a reused pipeline with forks and joins starts every run afresh") {
  for_each_mode_and_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    std::uint64_t size = 0;
    StreamGraph pipe;
    auto numbers = pipe.source([&](std::size_t i) -> std::optional<std::uint64_t> {
      if (i == size) return std::nullopt;
      return i;
    });
    auto [a, b] = pipe.broadcast<2>(numbers);
    auto doubled = pipe.stage(a, [](std::uint64_t x) { return 2 * x; }, {.concurrency = kUnlimited});
    auto squared = pipe.stage(b, [](std::uint64_t x) { return x * x; }, {.concurrency = kUnlimited});
    auto pairs = pipe.join(std::tuple{doubled, squared});
    auto [even, odd] = pipe.split<2>(pairs);  // round-robin: the turn restarts with each run
    std::vector<int> even_seen;
    std::uint64_t total = 0;
    std::uint64_t count = 0;
    auto even_tagged = pipe.stage(even, [](std::tuple<std::uint64_t, std::uint64_t> t) { return std::pair{0, t}; });
    auto odd_tagged = pipe.stage(odd, [](std::tuple<std::uint64_t, std::uint64_t> t) { return std::pair{1, t}; });
    auto all = pipe.merge({even_tagged, odd_tagged});
    pipe.sink(all, [&](const std::pair<int, std::tuple<std::uint64_t, std::uint64_t>>& p) {
      const auto [d, s] = p.second;
      total += d + s;
      ++count;
      if (p.first == 0) even_seen.push_back(1);
    });
    for (std::uint64_t run = 0; run < 30; ++run) {
      INFO("run " << run);
      size = batch_size(run);
      total = 0;
      count = 0;
      even_seen.clear();
      CHECK(pipe.run(pool).wait() == RunStatus::Completed);
      std::uint64_t expected = 0;
      for (std::uint64_t i = 0; i < size; ++i) expected += 2 * i + i * i;
      CHECK(count == size);
      CHECK(total == expected);
      CHECK(even_seen.size() == (size + 1) / 2);  // the first tuple of each run goes to branch 0
    }
  });
}

TEST_CASE("an exception in one run stops it, destroys its items once, and the next run is whole") {
  for_each_mode_and_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    Census census;
    std::uint64_t size = 0;
    std::int64_t fail_at = -1;
    StreamGraph pipe;
    auto items = pipe.source(
        [&](std::size_t index) -> std::optional<Counted> {
          if (index == size) return std::nullopt;
          return Counted(census, index);
        },
        {.name = "batch"});
    auto mid = pipe.stage(items,
                          [&](Counted item) {
                            if (static_cast<std::int64_t>(item.value()) == fail_at) throw StageFailure("stage failed");
                            return item;
                          },
                          {.concurrency = kUnlimited});
    auto [x, y] = pipe.split<2>(mid, [](const Counted& c) { return static_cast<int>(c.value() % 2); });
    auto both = pipe.merge({x, y});
    std::uint64_t sunk = 0;
    pipe.sink(both, [&](const Counted&) { ++sunk; }, {.name = "out"});
    for (std::uint64_t run = 0; run < 30; ++run) {
      INFO("run " << run);
      size = 50;
      sunk = 0;
      fail_at = run % 2 == 0 ? static_cast<std::int64_t>(run % 50) : -1;
      Run r = pipe.run(pool);
      if (fail_at >= 0) {
        check_throws_naming<StageFailure>([&] { (void)r.wait(); }, {"stage failed"});
        CHECK(r.stats().exceptions >= 1);
      } else {
        CHECK(r.wait() == RunStatus::Completed);
        CHECK(sunk == size);
      }
      check_balanced(census);
    }
  });
}

TEST_CASE("a cancelled run ends cancelled and the next run is whole") {
  for_each_mode_and_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    Census census;
    std::uint64_t size = 0;
    Run current;
    std::atomic<bool> ready{false};  // `current` holds the run: the stage may cancel it
    std::int64_t cancel_at = -1;
    StreamGraph pipe;
    auto items = pipe.source([&](std::size_t index) -> std::optional<Counted> {
      if (index == size) return std::nullopt;
      return Counted(census, index);
    });
    auto mid = pipe.stage(items,
                          [&](Counted item) {
                            if (static_cast<std::int64_t>(item.value()) == cancel_at) {
                              while (!ready.load(std::memory_order_acquire)) std::this_thread::yield();
                              current.cancel();
                            }
                            return item;
                          },
                          {.concurrency = 2, .order = Order::Input});
    std::vector<std::uint64_t> seen;
    pipe.sink(mid, [&](Counted item) { seen.push_back(item.value()); }, {.order = Order::Input});
    for (std::uint64_t run = 0; run < 20; ++run) {
      INFO("run " << run);
      size = 40;
      seen.clear();
      cancel_at = run % 2 == 0 ? static_cast<std::int64_t>(run) : -1;
      current = pipe.run(pool);
      ready.store(true, std::memory_order_release);
      const RunStatus status = current.wait();
      if (cancel_at >= 0) {
        CHECK(status == RunStatus::Cancelled);
        CHECK(seen.size() < size);
      } else {
        CHECK(status == RunStatus::Completed);
        REQUIRE(seen.size() == size);
      }
      for (std::uint64_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i);
      check_balanced(census);
      ready.store(false, std::memory_order_relaxed);
    }
  });
}

TEST_CASE("a run started while the previous one is in flight is queued behind it") {
  for_each_scope_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    std::atomic<int> in_source{0};
    std::atomic<int> overlap{0};
    std::vector<std::uint64_t> indexes;
    std::atomic<std::uint64_t> total{0};
    std::atomic<bool> hold{false};  // while set, a run's source waits before its first item
    StreamGraph pipe;
    auto items = pipe.source([&](std::size_t i) -> std::optional<std::uint64_t> {
      if (i == 0) {
        while (hold.load()) std::this_thread::yield();
      }
      if (in_source.fetch_add(1) != 0) overlap.fetch_add(1);
      indexes.push_back(i);
      in_source.fetch_sub(1);
      if (i == 100) return std::nullopt;
      return i;
    });
    auto slow = pipe.stage(items,
                           [](std::uint64_t x) {
                             busy_work(500);
                             return x;
                           },
                           {.concurrency = kUnlimited});
    pipe.sink(slow, [&](std::uint64_t x) { total.fetch_add(x); });
    Run first = pipe.run(pool);
    Run second = pipe.run(pool);  // queued: starts once `first` has ended
    Run third = pipe.run(pool);
    CHECK(third.wait() == RunStatus::Completed);
    CHECK(first.done());
    CHECK(second.done());
    CHECK(first.wait() == RunStatus::Completed);
    CHECK(second.wait() == RunStatus::Completed);
    CHECK(total.load() == 3 * (99 * 100 / 2));
    CHECK(overlap.load() == 0);
    REQUIRE(indexes.size() == 3 * 101);
    for (std::size_t i = 0; i < indexes.size(); ++i) CHECK(indexes[i] == i % 101);  // each run from 0
    // Changing the graph while runs are in flight or queued is refused. The run is held at its source until
    // the check is made: a run that had ended already would let the change through.
    hold.store(true);
    Run busy = pipe.run(pool);
    Run queued = pipe.run(pool);
    {
      // Released however the checks end (an exception they let through included), or the runs never would.
      struct Release {
        std::atomic<bool>& hold;
        ~Release() { hold.store(false); }
      } release{hold};
      CHECK(pipe.running());
      check_throws_naming<graph_busy>([&] { (void)pipe.stage(slow, [](std::uint64_t x) { return x; }); },
                                      {"weft::StreamGraph::stage", "in flight or queued"});
    }
    CHECK(queued.wait() == RunStatus::Completed);
    CHECK(busy.wait() == RunStatus::Completed);
  });
}

TEST_CASE("a run of the graph from inside its own stage is refused with graph_busy") {
  Pool pool(PoolOptions{.threads = 2});
  StreamGraph pipe;
  std::atomic<bool> refused{false};
  auto items = pipe.source([](std::size_t i) -> std::optional<int> {
    if (i == 3) return std::nullopt;
    return static_cast<int>(i);
  });
  pipe.sink(items, [&](int) {
    try {
      Run inner = pipe.run(pool);
    } catch (const graph_busy&) {
      refused.store(true);
    }
  });
  CHECK(pipe.run(pool).wait() == RunStatus::Completed);
  CHECK(refused.load());
}

TEST_CASE("a StreamGraph composed into a TaskGraph runs once per run of the outer graph") {
  for_each_scope_worker_count([](unsigned workers) {
    Pool pool(PoolOptions{.threads = workers});
    std::vector<int> batch;
    long long sum = 0;
    StreamGraph pipe;
    auto items = pipe.source(
        [&](std::size_t i) -> std::optional<int> {
          if (i == batch.size()) return std::nullopt;
          return batch[i];
        },
        {.name = "requests"});
    auto squares = pipe.stage(items, [](int x) { return 1LL * x * x; }, {.concurrency = kUnlimited});
    pipe.sink(squares, [&](long long s) { sum += s; });
    TaskGraph outer;
    Node load = outer.add_node([&] {
      batch.clear();
      for (int i = 1; i <= 10; ++i) batch.push_back(i);
      sum = 0;
    });
    long long reported = -1;
    Node stream = pipe.compose_into(outer);
    CHECK(outer.name(stream) == "requests");
    Node report = outer.add_node([&] { reported = sum; });
    outer.add_edge(load, stream);
    outer.add_edge(stream, report);
    for (int run = 0; run < 20; ++run) {
      CHECK(outer.run(pool).wait() == RunStatus::Completed);
      CHECK(reported == 385);
    }
    // An exception inside the pipeline fails the outer run, and the next outer run is whole.
    StreamGraph failing;
    bool fail = true;
    auto numbers = failing.source([](std::size_t i) -> std::optional<int> {
      if (i == 20) return std::nullopt;
      return static_cast<int>(i);
    });
    failing.sink(numbers, [&](int x) {
      if (fail && x == 7) throw StageFailure("seven");
    });
    TaskGraph holder;
    (void)failing.compose_into(holder);
    check_throws_naming<StageFailure>([&] { (void)holder.run(pool).wait(); }, {"seven"});
    fail = false;
    CHECK(holder.run(pool).wait() == RunStatus::Completed);
  });
}

TEST_CASE("Overflow::Drop counts per run; stats name the stage") {
  Pool pool(PoolOptions{.threads = 2});
  const ForcedMode shared(TestMode::shared);
  StreamGraph pipe;
  std::atomic<bool> hold{true};
  auto items = pipe.source(
      [](std::size_t i) -> std::optional<int> {
        if (i == 200) return std::nullopt;
        return static_cast<int>(i);
      },
      {.name = "sensor"});
  std::atomic<int> handled{0};
  pipe.sink(items,
            [&](int) {
              while (hold.load()) busy_work(10);
              handled.fetch_add(1);
            },
            {.name = "display", .capacity = 2, .overflow = Overflow::Drop});
  for (int run = 0; run < 3; ++run) {
    handled.store(0);
    hold.store(run != 1);
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      hold.store(false);
    });
    Run r = pipe.run(pool);
    CHECK(r.wait() == RunStatus::Completed);
    release.join();
    const RunStats stats = r.stats();
    CHECK(static_cast<std::uint64_t>(handled.load()) + stats.dropped == 200);
    if (stats.dropped != 0) {
      REQUIRE(stats.dropped_by_stage.size() == 1);
      CHECK(stats.dropped_by_stage[0].first == "sensor/display");
      CHECK(stats.dropped_by_stage[0].second == stats.dropped);
    }
  }
}

TEST_CASE("bad input to a StreamGraph is refused, naming what is wrong") {
  Pool pool(PoolOptions{.threads = 2});
  SUBCASE("an empty graph") {
    StreamGraph pipe;
    check_throws_naming<invalid_graph>([&] { (void)pipe.run(pool); }, {"weft::StreamGraph::run", "empty"});
    TaskGraph outer;
    check_throws_naming<invalid_graph>([&] { (void)pipe.compose_into(outer); },
                                       {"weft::StreamGraph::compose_into", "empty"});
    CHECK(pipe.name().empty());
  }
  SUBCASE("no sink") {
    StreamGraph pipe;
    auto items = pipe.source([](std::size_t) -> std::optional<int> { return std::nullopt; }, {.name = "in"});
    (void)pipe.stage(items, [](int x) { return x; }, {.name = "parse"});
    check_throws_naming<invalid_graph>([&] { (void)pipe.run(pool); },
                                       {"weft::StreamGraph::run", "pipeline 'in'", "'parse'", "sink()"});
  }
  SUBCASE("a second source") {
    StreamGraph pipe;
    (void)pipe.source([]() -> std::optional<int> { return std::nullopt; });
    check_throws_naming<invalid_graph>([&] { (void)pipe.source([]() -> std::optional<int> { return std::nullopt; }); },
                                       {"weft::StreamGraph::source", "has a source already"});
  }
  SUBCASE("a stream of another graph, of a scope, or empty") {
    StreamGraph one;
    StreamGraph two;
    auto theirs = two.source([]() -> std::optional<int> { return std::nullopt; }, {.name = "theirs"});
    (void)one.source([]() -> std::optional<int> { return std::nullopt; });
    check_throws_naming<invalid_graph>([&] { one.sink(theirs, [](int) {}); },
                                       {"weft::StreamGraph::sink", "another StreamGraph"});
    TaskScope scope(pool);
    auto scoped = scope.source([]() -> std::optional<int> { return std::nullopt; });
    check_throws_naming<invalid_graph>([&] { one.sink(scoped, [](int) {}); },
                                       {"weft::StreamGraph::sink", "another StreamGraph or TaskScope"});
    scope.sink(scoped, [](int) {});
    check_throws_naming<invalid_graph>([&] { one.sink(Stream<int>{}, [](int) {}); },
                                       {"weft::StreamGraph::sink", "empty"});
    check_throws_naming<invalid_graph>([&] { (void)one.merge({theirs}); },
                                       {"weft::StreamGraph::merge", "another StreamGraph"});
    check_throws_naming<invalid_graph>([&] { (void)one.merge(std::span<const Stream<int>>{}); },
                                       {"weft::StreamGraph::merge", "no streams"});
    two.sink(theirs, [](int) {});
  }
  SUBCASE("a stream consumed twice, a bad option") {
    StreamGraph pipe;
    auto items = pipe.source([]() -> std::optional<int> { return std::nullopt; });
    pipe.sink(items, [](int) {}, {.name = "first"});
    check_throws_naming<invalid_graph>([&] { pipe.sink(items, [](int) {}); }, {"already feeds stage 'first'"});
    StreamGraph other;
    check_throws_naming<invalid_option>(
        [&] { (void)other.source([]() -> std::optional<int> { return std::nullopt; }, {.live_tokens = 0}); },
        {"weft::StreamGraph::source", "live_tokens"});
    auto more = other.source([]() -> std::optional<int> { return std::nullopt; });
    check_throws_naming<invalid_option>([&] { other.sink(more, [](int) {}, {.concurrency = 0}); },
                                        {"weft::StreamGraph::sink", "concurrency = 0"});
    other.sink(more, [](int) {});
    CHECK(other.run(pool).wait() == RunStatus::Completed);
  }
  SUBCASE("a graph grown between runs is laid out anew") {
    StreamGraph pipe;
    int sum_a = 0;  // one per sink: the two sinks run at once
    int sum_b = 0;
    auto items = pipe.source([](std::size_t i) -> std::optional<int> {
      if (i == 4) return std::nullopt;
      return static_cast<int>(i);
    });
    auto [a, b] = pipe.broadcast<2>(items);
    pipe.sink(a, [&](int x) { sum_a += x; });
    check_throws_naming<invalid_graph>([&] { (void)pipe.run(pool); }, {"feeds nothing"});
    pipe.sink(b, [&](int x) { sum_b += 10 * x; });
    CHECK(pipe.run(pool).wait() == RunStatus::Completed);
    CHECK(sum_a == 6);
    CHECK(sum_b == 60);
  }
}

TEST_CASE("each run of a StreamGraph records its stages into that run's trace") {
  Pool pool(PoolOptions{.threads = 2});
  StreamGraph pipe;
  auto items = pipe.source(
      [](std::size_t i) -> std::optional<int> {
        if (i == 5) return std::nullopt;
        return static_cast<int>(i);
      },
      {.name = "numbers"});
  pipe.sink(items, [](int) {}, {.name = "drain"});
  for (int run = 0; run < 3; ++run) {
    auto trace = std::make_shared<Trace>();
    CHECK(pipe.run(pool, RunOptions{.trace = trace}).wait() == RunStatus::Completed);
    const std::string json = trace->json();
    CHECK(json.find("\"drain\"") != std::string::npos);
    CHECK(json.find("\"numbers\"") != std::string::npos);
  }
}

TEST_CASE("a TaskScope's source may take the item's index too") {
  Pool pool(PoolOptions{.threads = 2});
  TaskScope scope(pool);
  std::vector<std::size_t> seen;
  auto items = scope.source([](std::size_t i) -> std::optional<std::size_t> {
    if (i == 10) return std::nullopt;
    return i;
  });
  scope.sink(items, [&](std::size_t i) { seen.push_back(i); }, {.order = Order::Input});
  scope.run_and_wait();
  REQUIRE(seen.size() == 10);
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i);
}

}  // namespace
}  // namespace weft::test
