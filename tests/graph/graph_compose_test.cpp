// TaskGraph::add_graph (Taskflow's composed_of): a graph as a node of another, run on the same pool, its
// layout reused; inner exceptions fail the module node; cancelling the outer run cancels the inner one; a
// graph running twice at once (two module nodes of it, or a composition cycle) fails with graph_busy at once.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

TEST_CASE("a module node runs its graph after its predecessors and before its successors") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("module order", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph inner;
    std::atomic<std::uint64_t> before{0}, a{0}, b{0}, after{0}, bad{0};
    auto ia = inner.add_node([&] {
      if (before.load() != a.load() + 1) bad.fetch_add(1);
      a.fetch_add(1);
    });
    auto ib = inner.add_node([&] { b.fetch_add(1); });
    inner.add_edge(ia, ib);
    weft::TaskGraph outer;
    auto nb = outer.add_node([&] { before.fetch_add(1); });
    auto module = outer.add_graph(inner, weft::NodeOptions{.name = "inner"});
    auto na = outer.add_node([&] {
      if (b.load() != before.load()) bad.fetch_add(1);
      after.fetch_add(1);
    });
    outer.add_edge(nb, module);
    outer.add_edge(module, na);
    constexpr std::uint64_t kRuns = 20;
    for (std::uint64_t i = 0; i < kRuns; ++i) {
      weft::Run run = outer.run(pool);
      await_or_die(run, named("module order", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
    }
    CHECK(after.load() == kRuns);
    CHECK(bad.load() == 0);
    // The inner graph is still a graph of its own, runnable alone between outer runs.
    inner.run(pool).wait();
    CHECK(b.load() == kRuns + 1);
  });
}

TEST_CASE("graphs nested three deep, run once and with run_n") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested 3", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<std::uint64_t> leaf{0}, mid{0}, top{0}, bad{0};
    weft::TaskGraph level3;
    auto l1 = level3.add_node([&] { leaf.fetch_add(1); });
    auto l2 = level3.add_node([&] { leaf.fetch_add(1); });
    auto l3 = level3.add_node([&] { leaf.fetch_add(1); });
    level3.add_edges(l1, {l2, l3});
    weft::TaskGraph level2;
    auto m = level2.add_graph(level3, weft::NodeOptions{.name = "level 3"});
    auto m_after = level2.add_node([&] {
      if (leaf.load() != 3 * (mid.load() + 1)) bad.fetch_add(1);
      mid.fetch_add(1);
    });
    level2.add_edge(m, m_after);
    weft::TaskGraph level1;
    auto t = level1.add_graph(level2, weft::NodeOptions{.name = "level 2"});
    auto t_after = level1.add_node([&] {
      if (mid.load() != top.load() + 1) bad.fetch_add(1);
      top.fetch_add(1);
    });
    level1.add_edge(t, t_after);
    weft::Run once = level1.run(pool);
    await_or_die(once, named("nested 3", workers), patience(30));
    CHECK(once.wait() == weft::RunStatus::Completed);
    weft::Run repeated = level1.run_n(pool, 5);
    await_or_die(repeated, named("nested 3 run_n", workers), patience(30));
    CHECK(repeated.wait() == weft::RunStatus::Completed);
    CHECK(top.load() == 6);
    CHECK(mid.load() == 6);
    CHECK(leaf.load() == 18);
    CHECK(bad.load() == 0);
  });
}

TEST_CASE("an exception of the inner run fails the module node; its successors do not run") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("module exception", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph inner;
    inner.add_node([] { throw Boom("inner boom"); });
    weft::TaskGraph outer;
    std::atomic<int> after{0};
    auto module = outer.add_graph(inner);
    auto next = outer.add_node([&] { after.fetch_add(1); });
    outer.add_edge(module, next);
    weft::Run run = outer.run(pool);
    await_or_die(run, named("module exception", workers), patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), "inner boom", Boom);
    CHECK(after.load() == 0);
    CHECK(run.stats().exceptions == 1);
    CHECK_FALSE(inner.running());
  });
}

TEST_CASE("cancelling the outer run cancels the inner run in flight") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("module cancel", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph inner;
    std::atomic<bool> started{false}, saw_cancel{false};
    std::atomic<int> inner_after{0}, outer_after{0};
    auto hold = inner.add_node([&](weft::Subflow& sf) {
      started.store(true);
      saw_cancel.store(spin_until([&] { return sf.cancelled(); }, 10'000ms));
    });
    auto next = inner.add_node([&] { inner_after.fetch_add(1); });
    inner.add_edge(hold, next);
    weft::TaskGraph outer;
    auto module = outer.add_graph(inner);
    auto after = outer.add_node([&] { outer_after.fetch_add(1); });
    outer.add_edge(module, after);
    weft::Run run = outer.run(pool);
    while (!started.load()) std::this_thread::yield();
    run.cancel();
    await_or_die(run, named("module cancel", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    CHECK(saw_cancel.load());
    CHECK(inner_after.load() == 0);
    CHECK(outer_after.load() == 0);
    CHECK_FALSE(inner.running());
  });
}

TEST_CASE("a composition cycle fails at once with graph_busy naming the module node") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("composition cycle", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph a, b;
    a.add_graph(b, weft::NodeOptions{.name = "b in a"});
    b.add_graph(a, weft::NodeOptions{.name = "a in b"});
    weft::Run run = a.run(pool);
    await_or_die(run, named("composition cycle", workers), patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), doctest::Contains("module node 'a in b'"), weft::graph_busy);
    CHECK_FALSE(a.running());
    CHECK_FALSE(b.running());
  });
}

TEST_CASE("two module nodes of one graph running at once: the second fails with graph_busy, no hang") {
  // The inner node holds its run until the run is cancelled, so the other module node starts while it is in
  // flight; that needs a second worker (with one, the holding node would keep it until its time-out).
  for (const unsigned workers : {2u, 4u, 8u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("two modules", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph inner;
    inner.add_node([&](weft::Subflow& sf) { (void)spin_until([&] { return sf.cancelled(); }, 10'000ms); });
    weft::TaskGraph outer;
    outer.add_graph(inner, weft::NodeOptions{.name = "first"});
    outer.add_graph(inner, weft::NodeOptions{.name = "second"});
    weft::Run run = outer.run(pool);
    await_or_die(run, named("two modules", workers), patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), doctest::Contains("cannot run its graph: a run of that graph is in flight"),
                         weft::graph_busy);
    CHECK_FALSE(inner.running());
  }
}

TEST_CASE("add_graph refuses this graph, a moved-from graph and tokens > 1, naming the node") {
  weft::TaskGraph g, inner;
  CHECK_THROWS_WITH_AS((void)g.add_graph(g, weft::NodeOptions{.name = "self"}),
                       doctest::Contains("module node 'self') is this graph itself"), weft::invalid_graph);
  weft::TaskGraph gone = std::move(inner);
  CHECK_THROWS_WITH_AS((void)g.add_graph(inner), doctest::Contains("(for module node 'node 0') was moved from"),
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS((void)g.add_graph(gone, weft::NodeOptions{.name = "many", .tokens = 2}),
                       doctest::Contains("NodeOptions::tokens = 2 for node 'many'"), weft::invalid_option);
  CHECK(g.size() == 0);
}

TEST_CASE("dump draws a module node as a 3-D box with its graph's size") {
  weft::TaskGraph inner, outer;
  inner.add_node([] {});
  inner.add_node([] {});
  auto first = outer.add_node([] {}, weft::NodeOptions{.name = "first"});
  auto module = outer.add_graph(inner, weft::NodeOptions{.name = "sub"});
  outer.add_edge(first, module);
  std::ostringstream out;
  outer.dump(out);
  CHECK(contains(out.str(), "n1 [label=\"sub\\nmodule: 2 nodes\", shape=box3d];"));
  CHECK(contains(out.str(), "n0 [label=\"first\"];"));
}

}  // namespace
