// The smaller parts of TaskGraph's API: add_edges, reserve, dump (DOT), and their bad input: an empty
// callable, changes while running, a moved-from graph.
#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("add_edges: every target runs after the source") {
  const Watchdog watchdog("add_edges", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  std::atomic<int> source_done{0};
  std::atomic<int> after{0};
  auto source = g.add_node([&] { source_done.store(1); });
  auto check = [&] { after.fetch_add(source_done.load()); };
  auto a = g.add_node(check);
  auto b = g.add_node(check);
  auto c = g.add_node(check);
  g.add_edges(source, {a, b, c});
  g.add_edges(source, {a});  // a duplicate counts once
  CHECK(g.edge_count() == 3);
  CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(after.load() == 3);

  weft::TaskGraph other;
  auto foreign = other.add_node([] {});
  CHECK_THROWS_AS(g.add_edges(source, {a, foreign}), weft::invalid_graph);
  CHECK_THROWS_AS(g.add_edges(source, {source}), weft::invalid_graph);
}

TEST_CASE("dump writes DOT with names, options and edges") {
  weft::TaskGraph g;
  auto load = g.add_node([] {}, weft::NodeOptions{.name = "lo\"ad"});
  auto parse = g.add_node([](std::size_t) {}, weft::NodeOptions{.concurrency = 2,
                                                                .capacity = 8,
                                                                .overflow = weft::Overflow::Drop,
                                                                .tokens = 4});
  g.add_edge(load, parse);
  std::ostringstream out;
  g.dump(out);
  const std::string dot = out.str();
  CHECK(dot.rfind("digraph weft {", 0) == 0);
  CHECK(contains(dot, "lo\\\"ad"));  // the quote is escaped
  CHECK(contains(dot, "node 1\\nconcurrency 2, capacity 8, Drop, tokens 4"));
  CHECK(contains(dot, "n0 -> n1;"));
}

TEST_CASE("bad input: an empty callable") {
  weft::TaskGraph g;
  CHECK_THROWS_WITH_AS(g.add_node(std::function<void()>{}), doctest::Contains("empty"), std::invalid_argument);
  void (*null_function)() = nullptr;
  CHECK_THROWS_WITH_AS(g.add_node(null_function), doctest::Contains("weft::TaskGraph::add_node"),
                       std::invalid_argument);
  CHECK(g.size() == 0);  // nothing half-added
}

TEST_CASE("reserve, add_edges and dump: graph_busy while running, logic_error once moved from") {
  const Watchdog watchdog("busy and moved", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  std::atomic<bool> release{false};
  auto a = g.add_node([&] {
    while (!release.load()) std::this_thread::yield();
  });
  auto b = g.add_node([] {});
  weft::Run run = g.run(pool);
  CHECK_THROWS_AS(g.reserve(10), weft::graph_busy);
  CHECK_THROWS_AS(g.add_edges(a, {b}), weft::graph_busy);
  release.store(true);
  CHECK(run.wait() == weft::RunStatus::Completed);
  g.reserve(100, 100);
  g.add_edges(a, {b});

  weft::TaskGraph moved = std::move(g);
  std::ostringstream out;
  CHECK_THROWS_WITH_AS(g.dump(out), doctest::Contains("moved"), std::logic_error);  // NOLINT(bugprone-use-after-move)
  CHECK_THROWS_AS(g.reserve(1), std::logic_error);
  CHECK_THROWS_AS(g.add_edges(a, {b}), std::logic_error);
  CHECK(moved.edge_count() == 1);
}

}  // namespace
