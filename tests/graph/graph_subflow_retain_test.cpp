// RunOptions::retain_subflows: a run keeps the Subflow children it spawned (names, and spawn_after's edges) for
// TaskGraph::dump, which draws them as a cluster inside their node. A later run replaces them (with nothing when it
// does not retain); a default run retains nothing.
#include <doctest/doctest.h>

#include <cstddef>
#include <sstream>
#include <string>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

std::string dot_of(const weft::TaskGraph& graph) {
  std::ostringstream out;
  graph.dump(out);
  return out.str();
}

// The DOT id ("c<k>") of the retained child labelled `label`, or empty if there is none.
std::string retained_id(const std::string& dot, const std::string& label) {
  const std::size_t at = dot.find(" [label=\"" + label + "\"]");
  if (at == std::string::npos) return {};
  const std::size_t start = dot.rfind(' ', at - 1) + 1;
  return dot.substr(start, at - start);
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

TEST_CASE("retain_subflows: dump draws the children and their edges inside the node, the next run replaces them") {
  const Watchdog watchdog("retain_subflows", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  int round = 0;
  const weft::Node split = g.add_node(
      [&](weft::Subflow& sf) {
        if (round == 0) {
          const weft::SubflowChild a = sf.spawn_after({}, "load a", [] {});
          const weft::SubflowChild b = sf.spawn_after({}, "load b", [] {});
          (void)sf.spawn_after({a, b}, "sum", [] {});
          sf.spawn([] {});  // unnamed: "child 3"
          sf.join();
          sf.spawn("nested", [](weft::Subflow& inner) { inner.spawn("grandchild", [] {}); });
        } else {
          sf.spawn("second run", [] {});
        }
      },
      {.name = "split"});
  const weft::Node after = g.add_node([] {}, {.name = "after"});
  g.add_edge(split, after);

  const std::string before = dot_of(g);
  CHECK(before.find("subgraph") == std::string::npos);

  weft::Run first = g.run(pool, weft::RunOptions{.retain_subflows = true});
  await_or_die(first, "retain_subflows, first run", patience(30));
  first.wait();
  const std::string dot = dot_of(g);
  INFO(dot);
  CHECK(occurrences(dot, "subgraph cluster_n0 {") == 1);
  CHECK(dot.find("label=\"split\";\n    n0;\n") != std::string::npos);  // the node sits inside its cluster
  const std::string a = retained_id(dot, "load a");
  const std::string b = retained_id(dot, "load b");
  const std::string sum = retained_id(dot, "sum");
  REQUIRE(!a.empty());
  REQUIRE(!b.empty());
  REQUIRE(!sum.empty());
  CHECK(dot.find("    " + a + " -> " + sum + ";\n") != std::string::npos);
  CHECK(dot.find("    " + b + " -> " + sum + ";\n") != std::string::npos);
  CHECK(occurrences(dot, " -> c") == 2);  // spawn_after's two edges, no others among the children
  CHECK(!retained_id(dot, "child 3").empty());
  CHECK(!retained_id(dot, "nested").empty());
  CHECK(!retained_id(dot, "grandchild").empty());  // a child's children: in the same cluster
  CHECK(occurrences(dot, "[label=\"") == 2 + 6);   // the two nodes, the six children
  CHECK(dot.find("  n0 -> n1;\n") != std::string::npos);

  round = 1;
  weft::Run second = g.run(pool, weft::RunOptions{.retain_subflows = true});
  await_or_die(second, "retain_subflows, second run", patience(30));
  second.wait();
  const std::string replaced = dot_of(g);
  INFO(replaced);
  CHECK(occurrences(replaced, "subgraph cluster_n0 {") == 1);
  CHECK(!retained_id(replaced, "second run").empty());
  CHECK(retained_id(replaced, "load a").empty());
  CHECK(occurrences(replaced, "[label=\"") == 2 + 1);

  // A default run retains nothing, and lets go of what the last one retained.
  weft::Run plain = g.run(pool);
  await_or_die(plain, "retain_subflows, default run", patience(30));
  plain.wait();
  CHECK(dot_of(g) == before);
}

TEST_CASE("retain_subflows: default runs retain nothing; several nodes get a cluster each") {
  const Watchdog watchdog("retain_subflows, several nodes", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  for (int i = 0; i < 3; ++i) {
    (void)g.add_node([](weft::Subflow& sf) {
      for (int k = 0; k < 4; ++k) sf.spawn("leaf \"q\"", [] {});  // quotes escaped in the label
    });
  }
  for (int pass = 0; pass < 2; ++pass) {
    weft::Run run = g.run(pool);
    await_or_die(run, "retain_subflows, default run", patience(30));
    run.wait();
    CHECK(dot_of(g).find("subgraph") == std::string::npos);
  }
  weft::Run run = g.run(pool, weft::RunOptions{.retain_subflows = true});
  await_or_die(run, "retain_subflows, three nodes", patience(30));
  run.wait();
  const std::string dot = dot_of(g);
  INFO(dot);
  for (int i = 0; i < 3; ++i) CHECK(occurrences(dot, "subgraph cluster_n" + std::to_string(i) + " {") == 1);
  CHECK(occurrences(dot, "[label=\"leaf \\\"q\\\"\"]") == 12);
}

}  // namespace
