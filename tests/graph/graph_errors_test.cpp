// Bad input, each with its exception and a message naming what was wrong: cycles, foreign or empty node
// handles, self-edges, too many nodes or edges, out-of-range options, changing or running a graph while it
// runs, a moved-from graph.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

// "v<i>"; built by appending, since g++ 12 warns (-Wrestrict, a false positive) on "v" + std::to_string(i).
std::string vname(std::size_t i) {
  std::string s = "v";
  s += std::to_string(i);
  return s;
}

// The cycle an error reports must close (first == last) and follow edges that exist.
void check_cycle(const weft::cycle_error& e, const std::set<std::pair<std::string, std::string>>& edges,
                 const std::set<std::string>& expected_members) {
  const auto& nodes = e.nodes();
  INFO("what() = " << e.what());
  REQUIRE(nodes.size() >= 3);  // at least a -> b -> a
  CHECK(nodes.front() == nodes.back());
  std::set<std::string> members(nodes.begin(), nodes.end() - 1);
  CHECK(members.size() == nodes.size() - 1);  // a simple cycle: nobody twice
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    INFO("step " << nodes[i] << " -> " << nodes[i + 1]);
    CHECK(edges.count({nodes[i], nodes[i + 1]}) == 1);
  }
  if (!expected_members.empty()) CHECK(members == expected_members);
  for (const auto& name : members) CHECK(contains(e.what(), name));
}

TEST_CASE("a cycle throws cycle_error naming its nodes, from compile() and from run()") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("cycle", patience(30));
  weft::TaskGraph g;
  std::atomic<int> ran{0};
  auto body = [&] { ran.fetch_add(1); };
  auto entry = g.add_node(body, weft::NodeOptions{.name = "entry"});
  auto alpha = g.add_node(body, weft::NodeOptions{.name = "alpha"});
  auto beta = g.add_node(body, weft::NodeOptions{.name = "beta"});
  auto gamma = g.add_node(body, weft::NodeOptions{.name = "gamma"});
  auto exit = g.add_node(body, weft::NodeOptions{.name = "exit"});
  g.add_edge(entry, alpha);
  g.add_edge(alpha, beta);
  g.add_edge(beta, gamma);
  CHECK_NOTHROW(g.add_edge(gamma, alpha));  // detected when the graph is checked, not when the edge is added
  g.add_edge(gamma, exit);
  const std::set<std::pair<std::string, std::string>> edges = {
      {"entry", "alpha"}, {"alpha", "beta"}, {"beta", "gamma"}, {"gamma", "alpha"}, {"gamma", "exit"}};
  try {
    g.compile();
    FAIL("compile() accepted a cycle");
  } catch (const weft::cycle_error& e) {
    check_cycle(e, edges, {"alpha", "beta", "gamma"});
    CHECK(contains(e.what(), "weft::TaskGraph::compile: the graph has a cycle"));  // the call that found it
  }
  try {
    weft::Run run = g.run(pool);
    FAIL("run() accepted a cycle");
  } catch (const weft::cycle_error& e) {
    check_cycle(e, edges, {"alpha", "beta", "gamma"});
    CHECK(contains(e.what(), "weft::TaskGraph::run: the graph has a cycle"));
  }
  CHECK_FALSE(g.running());
  CHECK(ran.load() == 0);
  CHECK_THROWS_AS(g.compile(), weft::invalid_graph);  // cycle_error is an invalid_graph
}

TEST_CASE("a two-node cycle with default names") {
  weft::TaskGraph g;
  (void)g.add_node([] {});
  auto a = g.add_node([] {});
  auto b = g.add_node([] {});
  g.add_edge(a, b);
  g.add_edge(b, a);
  try {
    g.compile();
    FAIL("compile() accepted a cycle");
  } catch (const weft::cycle_error& e) {
    check_cycle(e, {{"node 1", "node 2"}, {"node 2", "node 1"}}, {"node 1", "node 2"});
  }
}

TEST_CASE("a cycle hidden in a large random DAG is found and reported along real edges") {
  const std::uint64_t seed = seed_for("graph_errors: hidden cycle");
  INFO("seed = " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; ++trial) {
    INFO("trial " << trial);
    weft::TaskGraph g;
    const std::size_t n = 50 + rng() % 500;
    std::vector<weft::Node> nodes;
    for (std::size_t i = 0; i < n; ++i) {
      nodes.push_back(g.add_node([] {}, weft::NodeOptions{.name = vname(i)}));
    }
    std::set<std::pair<std::string, std::string>> edges;
    auto edge = [&](std::size_t from, std::size_t to) {
      g.add_edge(nodes[from], nodes[to]);
      edges.insert({vname(from), vname(to)});
    };
    for (std::size_t e = 0; e < 3 * n; ++e) {
      std::size_t from = rng() % n, to = rng() % n;
      if (from == to) continue;
      if (from > to) std::swap(from, to);  // forward edges only: a DAG
      edge(from, to);
    }
    // One back edge along a forward path closes exactly the cycles through that path.
    std::size_t lo = rng() % (n - 2);
    const std::size_t mid = lo + 1 + rng() % (n - lo - 2);
    const std::size_t hi = mid + 1 + rng() % (n - mid - 1);
    edge(lo, mid);
    edge(mid, hi);
    edge(hi, lo);
    try {
      g.compile();
      FAIL("compile() accepted a cycle");
    } catch (const weft::cycle_error& e) {
      check_cycle(e, edges, {});
    }
  }
}

TEST_CASE("edges to nodes of another graph, of no graph, or to the node itself throw invalid_graph") {
  weft::TaskGraph g, other;
  auto a = g.add_node([] {}, weft::NodeOptions{.name = "home"});
  auto foreign = other.add_node([] {}, weft::NodeOptions{.name = "foreign"});
  auto b = g.add_node([] {});
  (void)b;
  // `foreign` has index 0 like `a`: only the graph identity tells them apart.
  CHECK(foreign.index() == a.index());
  CHECK_THROWS_AS(g.add_edge(a, foreign), weft::invalid_graph);
  CHECK_THROWS_AS(g.add_edge(foreign, a), weft::invalid_graph);
  CHECK_THROWS_AS(g.add_edge(weft::Node{}, a), weft::invalid_graph);
  CHECK_THROWS_AS(g.add_edge(a, weft::Node{}), weft::invalid_graph);
  CHECK_THROWS_AS((void)g.name(foreign), weft::invalid_graph);
  CHECK_THROWS_AS((void)g.name(weft::Node{}), weft::invalid_graph);
  try {
    g.add_edge(a, a);
    FAIL("a self-edge was accepted");
  } catch (const weft::cycle_error&) {
    FAIL("a self-edge is invalid_graph when added, not a cycle found later");
  } catch (const weft::invalid_graph& e) {
    CHECK(contains(e.what(), "home"));
  }
  CHECK(g.edge_count() == 0);  // nothing half-added
  CHECK(other.edge_count() == 0);
  g.compile();
}

TEST_CASE("a refused edge names the call, which end was wrong, that node, and the other end by name") {
  weft::TaskGraph g, other;
  auto home = g.add_node([] {}, weft::NodeOptions{.name = "home"});
  auto b = g.add_node([] {});
  auto c = g.add_node([] {}, weft::NodeOptions{.name = "cee"});
  (void)other.add_node([] {});
  auto foreign = other.add_node([] {}, weft::NodeOptions{.name = "foreign"});
  // The foreign node carries only its index in its own graph (1): this graph cannot know its name.
  CHECK_THROWS_WITH_AS(g.add_edge(home, foreign),
                       "weft::TaskGraph::add_edge(from, to): `to` is node 1 of another graph, not a node of this "
                       "graph (`from` is 'home')",
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.add_edge(foreign, b),
                       "weft::TaskGraph::add_edge(from, to): `from` is node 1 of another graph, not a node of this "
                       "graph (`to` is 'node 1')",
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.add_edge(weft::Node{}, home),
                       doctest::Contains("`from` is an empty weft::Node (default-constructed), of no graph"),
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.add_edge(home, weft::Node{}), doctest::Contains("`to` is an empty weft::Node"),
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.add_edge(c, c), "weft::TaskGraph::add_edge(from, to): an edge from node 'cee' to itself",
                       weft::invalid_graph);
  // add_edges names itself and the element of the list; a refused list adds none of its edges.
  CHECK_THROWS_WITH_AS(g.add_edges(home, {b, c, foreign}),
                       "weft::TaskGraph::add_edges(from, to): `to[2]` is node 1 of another graph, not a node of "
                       "this graph (`from` is 'home')",
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.add_edges(c, {home, c}),
                       "weft::TaskGraph::add_edges(from, to): an edge from node 'cee' to itself (`to[1]`)",
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS(g.add_edges(foreign, {home}), doctest::Contains("`from` is node 1 of another graph"),
                       weft::invalid_graph);
  CHECK(g.edge_count() == 0);
  CHECK_THROWS_WITH_AS((void)g.name(foreign),
                       "weft::TaskGraph::name(node): `node` is node 1 of another graph, not a node of this graph",
                       weft::invalid_graph);
  g.add_edges(home, {b, c});
  CHECK(g.edge_count() == 2);
}

TEST_CASE("reserving room for more edges than a graph can hold throws length_error, naming the limit") {
  weft::TaskGraph g;
  auto a = g.add_node([] {});
  auto b = g.add_node([] {});
  const std::size_t too_many = std::size_t{1} << 32;  // the layout indexes edges with 32 bits
  try {
    g.reserve(2, too_many);
    FAIL("reserve accepted 2^32 edges");
  } catch (const std::length_error& e) {
    CHECK(contains(e.what(), "reserve"));
    CHECK(contains(e.what(), std::to_string(too_many) + " edges"));
    CHECK(contains(e.what(), std::to_string(std::numeric_limits<std::uint32_t>::max() - 1)));
  }
  g.reserve(2, 1);  // nothing half-done: the graph still builds and runs
  g.add_edge(a, b);
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
}

TEST_CASE("reserving room for more nodes than a graph can hold throws length_error, naming the limit") {
  weft::TaskGraph g;
  auto a = g.add_node([] {});
  const std::size_t too_many = std::size_t{1} << 32;  // nodes are indexed with 32 bits, and one index is no node
  try {
    g.reserve(too_many, 1);
    FAIL("reserve accepted 2^32 nodes");
  } catch (const std::length_error& e) {
    CHECK(contains(e.what(), "reserve"));
    CHECK(contains(e.what(), std::to_string(too_many) + " nodes"));
    CHECK(contains(e.what(), std::to_string(std::numeric_limits<std::uint32_t>::max())));
  }
  g.reserve(std::numeric_limits<std::uint32_t>::max() >> 20, 0);  // below the limit: accepted
  auto b = g.add_node([] {});                                     // nothing half-done: the graph still builds and runs
  g.add_edge(a, b);
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(g.size() == 2);
}

struct BadOption {
  const char* option;
  weft::NodeOptions options;
};

TEST_CASE("options out of range throw invalid_option naming the node, the option and the value") {
  const BadOption cases[] = {
      {"concurrency", weft::NodeOptions{.name = "bad-node", .concurrency = 0}},
      {"capacity", weft::NodeOptions{.name = "bad-node", .capacity = 0}},
      {"tokens", weft::NodeOptions{.name = "bad-node", .tokens = 0}},
  };
  for (const auto& bad : cases) {
    INFO("option " << bad.option);
    weft::TaskGraph g;
    (void)g.add_node([] {});
    try {
      (void)g.add_node([] {}, bad.options);
      FAIL("accepted");
    } catch (const weft::invalid_option& e) {
      CHECK(contains(e.what(), "bad-node"));
      CHECK(contains(e.what(), bad.option));
      CHECK(contains(e.what(), "0"));
      CHECK(contains(e.what(), std::string("weft::TaskGraph::add_node: NodeOptions::") + bad.option + " = 0"));
    }
    CHECK(g.size() == 1);  // the bad node was not added
    // Unnamed: the node is called by the index it would have had.
    weft::NodeOptions unnamed = bad.options;
    unnamed.name.clear();
    try {
      (void)g.add_node([] {}, unnamed);
      FAIL("accepted");
    } catch (const weft::invalid_option& e) {
      CHECK(contains(e.what(), "node 1"));
      CHECK(contains(e.what(), bad.option));
    }
  }
}

TEST_CASE("an affinity past the pool's workers throws invalid_option from run(); a larger pool is fine") {
  const Watchdog watchdog("affinity range", patience(30));
  weft::TaskGraph g;
  std::atomic<int> ran{0};
  (void)g.add_node([&] { ran.fetch_add(1); });
  (void)g.add_node([&] { ran.fetch_add(1); }, weft::NodeOptions{.name = "pinned", .affinity = 4U});
  {
    weft::Pool small{weft::PoolOptions{.threads = 4}};
    try {
      weft::Run run = g.run(small);
      FAIL("run() accepted affinity 4 on a pool of 4");
    } catch (const weft::invalid_option& e) {
      CHECK(contains(e.what(), "pinned"));
      CHECK(contains(e.what(), "affinity"));
      CHECK(contains(e.what(), "4"));
      CHECK(contains(e.what(), "weft::TaskGraph::run: NodeOptions::affinity = 4 for node 'pinned'"));
    }
    CHECK_FALSE(g.running());
    CHECK(ran.load() == 0);  // refused before anything started
  }
  weft::Pool big{weft::PoolOptions{.threads = 5}};
  CHECK(g.run(big).wait() == weft::RunStatus::Completed);
  CHECK(ran.load() == 2);
}

TEST_CASE("the largest affinity is refused by run() too, naming the node (affinity + 1 used to wrap to 0)") {
  weft::TaskGraph g;
  (void)g.add_node([] {}, weft::NodeOptions{.name = "far", .affinity = std::numeric_limits<unsigned>::max()});
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  try {
    weft::Run run = g.run(pool);
    FAIL("run() accepted affinity UINT_MAX");
  } catch (const weft::invalid_option& e) {
    CHECK(contains(e.what(), "far"));
    CHECK(contains(e.what(), "affinity"));
    CHECK(contains(e.what(), std::to_string(std::numeric_limits<unsigned>::max())));
  }
  CHECK_FALSE(g.running());
}

TEST_CASE("a priority or overflow outside its enum is refused when the node is added, naming both") {
  weft::TaskGraph g;
  CHECK_THROWS_WITH_AS((void)g.add_node([] {},
                                        weft::NodeOptions{.name = "odd", .priority = static_cast<weft::Priority>(9)}),
                       doctest::Contains("priority = 9 for node 'odd'"), weft::invalid_option);
  CHECK_THROWS_WITH_AS((void)g.add_node([] {},
                                        weft::NodeOptions{.name = "odd", .overflow = static_cast<weft::Overflow>(7)}),
                       doctest::Contains("overflow = 7"), weft::invalid_option);
  CHECK(g.size() == 0);
}

TEST_CASE("an inbox that can overflow (Drop or Fail, capacity < tokens) above kMaxInboxCapacity is refused") {
  constexpr std::size_t limit = weft::kMaxInboxCapacity;
  const std::size_t huge = std::size_t{1} << 33;
  for (const weft::Overflow overflow : {weft::Overflow::Drop, weft::Overflow::Fail}) {
    INFO("overflow " << static_cast<int>(overflow));
    weft::TaskGraph g;
    try {
      (void)g.add_node([](std::size_t) {},
                       weft::NodeOptions{.name = "wide", .capacity = limit + 1, .overflow = overflow, .tokens = huge});
      FAIL("add_node accepted an overflowing inbox past kMaxInboxCapacity");
    } catch (const weft::invalid_option& e) {
      INFO(e.what());
      CHECK(contains(e.what(), "weft::TaskGraph::add_node: NodeOptions::capacity = " + std::to_string(limit + 1) +
                                   " for node 'wide'"));
      CHECK(contains(e.what(), "at most weft::kMaxInboxCapacity = " + std::to_string(limit)));
      CHECK(contains(e.what(), std::to_string(huge)));  // the tokens it was compared with
    }
    CHECK(g.size() == 0);
    // Within the limit, or an inbox as large as an activation (it never overflows), or Block: accepted, and
    // compiled without allocating for the capacity (graph_out_of_memory_test measures it).
    (void)g.add_node([](std::size_t) {}, weft::NodeOptions{.capacity = limit, .overflow = overflow, .tokens = huge});
    (void)g.add_node([](std::size_t) {}, weft::NodeOptions{.capacity = huge, .overflow = overflow, .tokens = huge});
    (void)g.add_node([](std::size_t) {}, weft::NodeOptions{.capacity = huge, .overflow = overflow, .tokens = 3});
    (void)g.add_node([](std::size_t) {}, weft::NodeOptions{.capacity = huge - 1, .tokens = huge});
    CHECK(g.size() == 4);
  }
}

TEST_CASE("changing or compiling a graph while it runs throws graph_busy, running it queues; afterwards all work") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("graph_busy", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    Gate gate;
    auto held = g.add_node([&] { gate.enter(); });
    auto next = g.add_node([] {});
    g.add_edge(held, next);
    weft::Run run = g.run(pool);
    gate.await_entered(1);
    CHECK(g.running());
    CHECK_THROWS_AS((void)g.add_node([] {}), weft::graph_busy);
    CHECK_THROWS_AS(g.add_edge(held, next), weft::graph_busy);
    CHECK_THROWS_AS(g.add_edge(next, held), weft::graph_busy);  // busy wins over "would be a cycle"
    CHECK_THROWS_AS(g.compile(), weft::graph_busy);
    weft::Run queued = g.run(pool);  // queued behind `run`: the graph stays busy until it is over too
    CHECK(g.size() == 2);
    CHECK(g.edge_count() == 1);
    gate.open();
    await_or_die(run, named("graph_busy", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    await_or_die(queued, named("graph_busy", workers), patience(30));
    CHECK(queued.wait() == weft::RunStatus::Completed);
    CHECK(gate.entered() == 2);
    CHECK_FALSE(g.running());
    auto late = g.add_node([] {});
    g.add_edge(next, late);
    g.compile();
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  });
}

TEST_CASE("a moved-from graph refuses every use but destruction and assignment, saying so") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskGraph g;
  auto a = g.add_node([] {});
  auto b = g.add_node([] {});
  weft::TaskGraph taken(std::move(g));
  CHECK_THROWS_WITH_AS((void)g.add_node([] {}), doctest::Contains("moved"), std::logic_error);
  CHECK_THROWS_WITH_AS(g.add_edge(a, b), doctest::Contains("moved"), std::logic_error);
  CHECK_THROWS_WITH_AS(g.compile(), doctest::Contains("moved"), std::logic_error);
  CHECK_THROWS_WITH_AS((void)g.run(pool), doctest::Contains("moved"), std::logic_error);
  CHECK_THROWS_AS((void)g.edge_count(), std::logic_error);
  CHECK_THROWS_AS((void)g.name(a), std::logic_error);
  CHECK(g.size() == 0);
  CHECK_FALSE(g.running());
  taken.add_edge(a, b);  // the handles follow the graph
  CHECK(taken.run(pool).wait() == weft::RunStatus::Completed);
}

TEST_CASE("Run::wait() from inside one of the run's own nodes throws would_deadlock instead of hanging") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("wait inside own run", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<weft::Run*> current{nullptr};
    (void)g.add_node([&] {
      weft::Run* run = nullptr;
      while ((run = current.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
      (void)run->wait();
    });
    weft::Run run = g.run(pool);
    current.store(&run, std::memory_order_release);
    await_or_die(run, named("wait inside own run", workers), patience(20));
    CHECK_THROWS_AS(run.wait(), weft::would_deadlock);
  });
}

TEST_CASE("Run::wait() from a subflow child of the run's own node throws would_deadlock instead of hanging") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("wait inside own child", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<weft::Run*> current{nullptr};
    std::atomic<int> grandchild_threw{0};
    (void)g.add_node([&](weft::Subflow& sf) {
      sf.spawn([&](weft::Subflow& child) {
        // A grandchild too: the check follows the innermost child, whatever its depth.
        child.spawn([&] {
          weft::Run* run = nullptr;
          while ((run = current.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
          try {
            (void)run->wait();
          } catch (const weft::would_deadlock&) {
            grandchild_threw.fetch_add(1, std::memory_order_relaxed);
            throw;
          }
        });
      });
    });
    weft::Run run = g.run(pool);
    current.store(&run, std::memory_order_release);
    await_or_die(run, named("wait inside own child", workers), patience(20));
    // The child's own message: the node's marker alone (which a child nested in its node's join also has)
    // would say "own nodes".
    CHECK_THROWS_WITH_AS(run.wait(), doctest::Contains("from a subflow child"), weft::would_deadlock);
    CHECK(grandchild_threw.load() == 1);
  });
}

TEST_CASE("Subflow::join() on an ancestor from a child throws would_deadlock; joining its own Subflow works") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("join ancestor", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const int depth : {1, 2}) {  // the node's own Subflow from a child, then from a grandchild
      INFO("depth = " << depth);
      weft::TaskGraph g;
      std::atomic<int> own_joins{0};
      std::atomic<int> leaves{0};
      (void)g.add_node([&](weft::Subflow& root) {
        root.spawn([&](weft::Subflow& child) {
          child.spawn([&] { leaves.fetch_add(1, std::memory_order_relaxed); });
          child.join();  // its own: fine, and the leaf has run
          own_joins.fetch_add(leaves.load(std::memory_order_relaxed), std::memory_order_relaxed);
          if (depth == 1) {
            root.join();
          } else {
            child.spawn([&] { root.join(); });
          }
        });
      });
      weft::Run run = g.run(pool);
      await_or_die(run, named("join ancestor", workers), patience(20));
      CHECK_THROWS_WITH_AS(run.wait(), doctest::Contains("weft::Subflow::join"), weft::would_deadlock);
      CHECK(own_joins.load() == 1);
      CHECK(leaves.load() == 1);
    }
  });
}

TEST_CASE("Subflow::join() of a child's Subflow from another thread throws logic_error naming the misuse") {
  const Watchdog watchdog("join from another thread", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  std::atomic<int> leaves{0};
  std::string message;
  (void)g.add_node([&](weft::Subflow& root) {
    root.spawn([&](weft::Subflow& child) {
      child.spawn([&] { leaves.fetch_add(1, std::memory_order_relaxed); });
      std::thread other([&] {
        try {
          child.join();
        } catch (const std::logic_error& error) {
          message = error.what();
        }
      });
      other.join();
      child.join();  // its own body: fine
      CHECK(leaves.load(std::memory_order_relaxed) == 1);
    });
  });
  CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(message.find("weft::Subflow::join") != std::string::npos);
  CHECK(message.find("outside that child's body") != std::string::npos);
  CHECK(leaves.load() == 1);
}

TEST_CASE("a graph whose run is over is not busy even while its Run handle lives") {
  const Watchdog watchdog("not busy", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  (void)g.add_node([] {});
  weft::Run first = g.run(pool);
  CHECK(first.wait() == weft::RunStatus::Completed);
  weft::Run second = g.run(pool);  // `first` still exists: the graph is free once the run is over
  CHECK(second.wait() == weft::RunStatus::Completed);
}

}  // namespace
