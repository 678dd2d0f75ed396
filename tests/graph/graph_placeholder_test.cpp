// Placeholder nodes (TaskGraph::placeholder, set_work): a node added without a body and given one later runs as
// any node does, with its edges and options; a graph with a placeholder left without a body neither runs nor
// compiles, and the error names the node; a body given twice, to a node that has one, to a node of another
// graph or while the graph runs is refused, naming what was wrong and changing nothing.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

// Runs `g` on `pool` and waits at most a generous while, then returns how it ended.
weft::RunStatus run_once(weft::TaskGraph& g, weft::Pool& pool, const std::string& what) {
  weft::Run run = g.run(pool);
  await_or_die(run, what, patience(60));
  return run.wait();
}

TEST_CASE("a wavefront of placeholders: every node first, edges right and down, bodies afterwards") {
  // Each cell records the step at which it ran: it must come after its left and upper neighbours'.
  constexpr std::size_t kSide = 12;
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("placeholder wavefront", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::vector<weft::Node> cell(kSide * kSide);
    for (weft::Node& c : cell) c = g.placeholder();
    CHECK(g.placeholders_left() == kSide * kSide);
    for (std::size_t i = 0; i < kSide; ++i) {
      for (std::size_t j = 0; j < kSide; ++j) {
        if (j + 1 < kSide) g.add_edge(cell[i * kSide + j], cell[i * kSide + j + 1]);
        if (i + 1 < kSide) g.add_edge(cell[i * kSide + j], cell[(i + 1) * kSide + j]);
      }
    }
    std::atomic<std::uint64_t> clock{0};
    std::vector<std::atomic<std::uint64_t>> step(kSide * kSide);
    std::vector<std::atomic<int>> runs(kSide * kSide);
    // Bodies given in reverse order: the order of set_work calls means nothing.
    for (std::size_t k = kSide * kSide; k-- > 0;) {
      CHECK_FALSE(g.has_work(cell[k]));
      g.set_work(cell[k], [&, k] {
        runs[k].fetch_add(1, std::memory_order_relaxed);
        step[k].store(clock.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      });
      CHECK(g.has_work(cell[k]));
    }
    CHECK(g.placeholders_left() == 0);
    for (int pass = 1; pass <= 2; ++pass) {
      INFO("pass " << pass);
      CHECK(run_once(g, pool, named("placeholder wavefront", workers)) == weft::RunStatus::Completed);
      for (std::size_t i = 0; i < kSide; ++i) {
        for (std::size_t j = 0; j < kSide; ++j) {
          const std::size_t k = i * kSide + j;
          INFO("cell (" << i << ", " << j << ")");
          CHECK(runs[k].load() == pass);
          if (j > 0) CHECK(step[k].load() > step[k - 1].load());
          if (i > 0) CHECK(step[k].load() > step[k - kSide].load());
        }
      }
    }
  });
}

TEST_CASE("a placeholder mixes with ordinary nodes and keeps its options: name, tokens, concurrency") {
  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  const Watchdog watchdog("placeholder options", patience(60));
  weft::TaskGraph g;
  std::atomic<int> before{0};
  std::atomic<std::uint64_t> token_sum{0};
  std::atomic<int> after{0};
  InFlight in_flight;
  auto first = g.add_node([&] { before.fetch_add(1); });
  auto middle = g.placeholder(weft::NodeOptions{.name = "middle", .concurrency = 2, .tokens = 40});
  auto last = g.add_node([&] { after.fetch_add(1); });
  g.add_edge(first, middle);
  g.add_edge(middle, last);
  CHECK(g.name(middle) == "middle");
  g.set_work(middle, [&](std::size_t token) {
    in_flight.enter();
    CHECK(before.load() == 1);
    CHECK(after.load() == 0);
    token_sum.fetch_add(token);
    busy_work(200);
    in_flight.leave();
  });
  CHECK(run_once(g, pool, "placeholder options") == weft::RunStatus::Completed);
  CHECK(token_sum.load() == 40 * 39 / 2);
  CHECK(in_flight.max.load() <= 2);
  CHECK(after.load() == 1);
}

TEST_CASE("a placeholder left without a body: run, run_n, run_until and compile throw invalid_graph naming it") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("placeholder without a body", patience(60));
  weft::TaskGraph g;
  std::atomic<int> ran{0};
  auto a = g.add_node([&] { ran.fetch_add(1); });
  auto b = g.placeholder(weft::NodeOptions{.name = "decode"});
  auto c = g.placeholder();
  g.add_edge(a, b);
  g.add_edge(b, c);
  CHECK_THROWS_WITH_AS((void)g.run(pool),
                       doctest::Contains(
                           "weft::TaskGraph::run: placeholder 'decode' has no body: give it one with "
                           "weft::TaskGraph::set_work before the graph runs (1 other placeholder has none either)"),
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.compile(), doctest::Contains("weft::TaskGraph::compile: placeholder 'decode'"),
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS((void)g.run_n(pool, 3), doctest::Contains("weft::TaskGraph::run_n: placeholder 'decode'"),
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS((void)g.run_until(pool, [] { return false; }),
                       doctest::Contains("weft::TaskGraph::run_until: placeholder 'decode'"), weft::invalid_graph);
  CHECK_THROWS_WITH_AS((void)g.run(pool, weft::RunOptions{.record_outcomes = true}),
                       doctest::Contains("placeholder 'decode'"), weft::invalid_graph);
  CHECK_FALSE(g.running());
  CHECK(ran.load() == 0);  // nothing started
  g.set_work(b, [&] { ran.fetch_add(1); });
  // The one left is named now, by its default name; no "others".
  const std::string message = [&] {
    try {
      (void)g.run(pool);
    } catch (const weft::invalid_graph& e) {
      return std::string(e.what());
    }
    return std::string("did not throw");
  }();
  CHECK(contains(message, "placeholder 'node 2' has no body"));
  CHECK_FALSE(contains(message, "other"));
  CHECK(ran.load() == 0);
  g.set_work(c, [&] { ran.fetch_add(1); });
  CHECK(run_once(g, pool, "placeholder without a body") == weft::RunStatus::Completed);
  CHECK(ran.load() == 3);
}

TEST_CASE("a body is given once, to a placeholder of this graph, while the graph does not run") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("set_work refusals", patience(60));
  weft::TaskGraph g;
  weft::TaskGraph other;
  std::atomic<int> ran{0};
  auto plain = g.add_node([&] { ran.fetch_add(1); }, weft::NodeOptions{.name = "plain"});
  auto hole = g.placeholder(weft::NodeOptions{.name = "hole"});
  auto foreign = other.placeholder();

  SUBCASE("twice") {
    g.set_work(hole, [&] { ran.fetch_add(1); });
    CHECK_THROWS_WITH_AS(g.set_work(hole, [&] { ran.fetch_add(100); }),
                         doctest::Contains("weft::TaskGraph::set_work(node, f): node 'hole' has a body already"),
                         weft::invalid_graph);
    CHECK(run_once(g, pool, "set_work twice") == weft::RunStatus::Completed);
    CHECK(ran.load() == 2);  // the first body ran, not the second
  }
  SUBCASE("to a node added with its body") {
    CHECK_THROWS_WITH_AS(g.set_work(plain, [] {}), doctest::Contains("node 'plain' has a body already"),
                         weft::invalid_graph);
  }
  SUBCASE("to a node of another graph, or of none") {
    CHECK_THROWS_WITH_AS(g.set_work(foreign, [] {}),
                         doctest::Contains("`node` is node 0 of another graph, not a node of this graph"),
                         weft::invalid_graph);
    CHECK_THROWS_WITH_AS(g.set_work(weft::Node{}, [] {}), doctest::Contains("an empty weft::Node"),
                         weft::invalid_graph);
    CHECK_THROWS_AS((void)g.has_work(foreign), weft::invalid_graph);
    CHECK(other.placeholders_left() == 1);  // nothing given to the other graph's node
    CHECK(g.placeholders_left() == 1);
  }
  SUBCASE("an empty callable") {
    CHECK_THROWS_AS(g.set_work(hole, std::function<void()>{}), std::invalid_argument);
    void (*null)() = nullptr;
    CHECK_THROWS_AS(g.set_work(hole, null), std::invalid_argument);
    CHECK_FALSE(g.has_work(hole));
    CHECK(g.placeholders_left() == 1);
  }
  SUBCASE("while the graph runs: graph_busy, and after it the placeholder takes its body") {
    g.set_work(hole, [&] { ran.fetch_add(1); });
    Gate gate;
    auto held = g.add_node([&] { gate.enter(); });
    weft::Run run = g.run(pool);
    gate.await_entered(1);
    CHECK_THROWS_AS((void)g.placeholder(), weft::graph_busy);
    CHECK_THROWS_AS(g.set_work(hole, [] {}), weft::graph_busy);
    gate.open();
    await_or_die(run, "set_work while running", patience(60));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == 2);
    // A node that ran keeps the body it ran.
    CHECK_THROWS_WITH_AS(g.set_work(hole, [] {}), doctest::Contains("node 'hole' has a body already"),
                         weft::invalid_graph);
    CHECK_THROWS_AS(g.set_work(held, [] {}), weft::invalid_graph);
    // Between runs the graph may grow, placeholders included: the next run waits for their bodies.
    auto late = g.placeholder(weft::NodeOptions{.name = "late"});
    g.add_edge(hole, late);
    CHECK_THROWS_WITH_AS((void)g.run(pool), doctest::Contains("placeholder 'late' has no body"), weft::invalid_graph);
    g.set_work(late, [&] { ran.fetch_add(10); });
    CHECK(run_once(g, pool, "placeholder added between runs") == weft::RunStatus::Completed);
    CHECK(ran.load() == 14);
  }
}

TEST_CASE("placeholders: dump marks the ones without a body; a moved-from graph refuses both calls") {
  weft::TaskGraph g;
  auto a = g.placeholder(weft::NodeOptions{.name = "a"});
  auto b = g.placeholder(weft::NodeOptions{.name = "b"});
  g.add_edge(a, b);
  g.set_work(a, [] {});
  std::ostringstream out;
  g.dump(out);
  const std::string dot = out.str();
  INFO(dot);
  CHECK(contains(dot, "n0 [label=\"a\"];"));
  CHECK(contains(dot, "n1 [label=\"b\\nplaceholder: no body yet\", style=dashed];"));

  weft::TaskGraph taken(std::move(g));
  CHECK_THROWS_WITH_AS((void)g.placeholder(), doctest::Contains("moved"), std::logic_error);
  CHECK_THROWS_WITH_AS(g.set_work(b, [] {}), doctest::Contains("moved"), std::logic_error);
  CHECK_THROWS_WITH_AS((void)g.has_work(b), doctest::Contains("moved"), std::logic_error);
  CHECK(g.placeholders_left() == 0);
  CHECK(taken.placeholders_left() == 1);
  taken.set_work(b, [] {});  // the handles follow the graph
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  CHECK(taken.run(pool).wait() == weft::RunStatus::Completed);
}

}  // namespace
