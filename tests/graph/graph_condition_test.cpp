// TaskGraph::add_condition (Taskflow's condition tasks): the return value picks the successor that starts, edges
// out of a condition are weak (no join count), cycles through one are loops; strong cycles are still refused.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

static_assert(weft::ConditionCallable<int (*)()>);
static_assert(weft::ConditionCallable<std::size_t (*)(weft::Subflow&)>);
static_assert(!weft::ConditionCallable<bool (*)()>, "bool would silently mean branch 0 or 1");
static_assert(!weft::ConditionCallable<void (*)()>);

TEST_CASE("if/else: only the picked branch runs; a join of both branches never starts, run after run") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("if/else", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> pick{0}, then_ran{0}, else_ran{0}, join_ran{0};
    auto start = g.add_node([] {});
    auto cond = g.add_condition([&] { return pick.load(); });
    auto then_branch = g.add_node([&] { then_ran.fetch_add(1); });
    auto else_branch = g.add_node([&] { else_ran.fetch_add(1); });
    // Two strong predecessors of which one run takes only one: the counter is left at 1 by every run, and
    // must be set back, or the next run would start `join` after a single branch.
    auto join = g.add_node([&] { join_ran.fetch_add(1); });
    g.add_edge(start, cond);
    g.add_edges(cond, {then_branch, else_branch});
    g.add_edge(then_branch, join);
    g.add_edge(else_branch, join);
    for (int round = 0; round < 6; ++round) {
      pick.store(round % 2);
      weft::Run run = g.run(pool);
      await_or_die(run, named("if/else", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
    }
    CHECK(then_ran.load() == 3);
    CHECK(else_ran.load() == 3);
    CHECK(join_ran.load() == 0);
  });
}

TEST_CASE("a loop runs its body k times, with a fork-join inside each iteration") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("loop", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const std::uint64_t k = stress_count(500);
    weft::TaskGraph g;
    std::uint64_t i = 0;  // written by init and body only, ordered by the graph
    std::atomic<std::uint64_t> leaves{0}, done_ran{0}, bad{0};
    auto init = g.add_node([&] { i = 0; });
    auto body = g.add_node([&] { ++i; }, weft::NodeOptions{.name = "body"});
    auto cond = g.add_condition([&] { return i < k ? 0 : 1; }, weft::NodeOptions{.name = "again"});
    auto done = g.add_node([&] {
      if (i != k || leaves.load() != 4 * k) bad.fetch_add(1);
      done_ran.fetch_add(1);
    });
    g.add_edge(init, body);
    for (int leaf = 0; leaf < 4; ++leaf) {
      auto n = g.add_node([&] {
        if (leaves.fetch_add(1) >= 4 * i) bad.fetch_add(1);  // each iteration's leaves after its body
      });
      g.add_edge(body, n);
      g.add_edge(n, cond);
    }
    g.add_edges(cond, {body, done});
    for (int round = 0; round < 3; ++round) {
      leaves.store(0);
      weft::Run run = g.run(pool);
      await_or_die(run, named("loop", workers), patience(60));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(i == k);
    }
    CHECK(done_ran.load() == 3);
    CHECK(bad.load() == 0);
    // And several passes of it as one Run.
    leaves.store(0);
    weft::Run passes = g.run_n(pool, 3);
    await_or_die(passes, named("loop run_n", workers), patience(60));
    CHECK(passes.wait() == weft::RunStatus::Completed);
    CHECK(done_ran.load() == 6);
  });
}

TEST_CASE("nested loops: 3 outer iterations of 4 inner ones") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested loops", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    int i = 0, j = 0, count = 0;
    auto init = g.add_node([&] { i = 0; });
    auto outer_head = g.add_node([&] { j = 0; });
    auto inner_body = g.add_node([&] { ++count; });
    auto inner_cond = g.add_condition([&] { return ++j < 4 ? 0 : 1; });
    auto outer_cond = g.add_condition([&] { return ++i < 3 ? 0 : 1; });
    std::atomic<int> done{0};
    auto end = g.add_node([&] { done.fetch_add(1); });
    g.add_edge(init, outer_head);
    g.add_edge(outer_head, inner_body);
    g.add_edge(inner_body, inner_cond);
    g.add_edges(inner_cond, {inner_body, outer_cond});
    g.add_edges(outer_cond, {outer_head, end});
    weft::Run run = g.run(pool);
    await_or_die(run, named("nested loops", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(count == 12);
    CHECK(done.load() == 1);
  });
}

TEST_CASE("do-while: the body runs once before the condition; out of range ends the loop") {
  for_each_graph_worker_count([](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    int runs = 0;
    int limit = 0;
    auto init = g.add_node([] {});
    auto body = g.add_node([&] { ++runs; });
    auto cond = g.add_condition([&] { return runs < limit ? 0 : 1; });  // one successor: 1 is out of range
    g.add_edge(init, body);
    g.add_edge(body, cond);
    g.add_edge(cond, body);
    g.run(pool).wait();
    CHECK(runs == 1);  // limit 0: still once
    runs = 0;
    limit = 5;
    g.run(pool).wait();
    CHECK(runs == 5);
  });
}

TEST_CASE("out of range or negative picks no successor; nodes with only weak incoming edges are not roots") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  std::atomic<int> ran{0};
  long pick = 5;
  auto cond = g.add_condition([&] { return pick; });
  auto a = g.add_node([&] { ran.fetch_add(1); });
  auto b = g.add_node([&] { ran.fetch_add(1); });
  g.add_edges(cond, {a, b});
  g.run(pool).wait();
  pick = -1;
  g.run(pool).wait();
  CHECK(ran.load() == 0);
  pick = 1;
  g.run(pool).wait();
  CHECK(ran.load() == 1);
  // A loop with no way in: every node has an incoming edge, so nothing starts (as in Taskflow).
  weft::TaskGraph closed;
  auto body = closed.add_node([&] { ran.fetch_add(1); });
  auto again = closed.add_condition([] { return 0; });
  closed.add_edge(body, again);
  closed.add_edge(again, body);
  CHECK(closed.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(ran.load() == 1);
}

TEST_CASE("a cycle of strong edges is still refused, naming its nodes, beside an allowed loop") {
  weft::TaskGraph g;
  auto head = g.add_node([] {});
  auto cond = g.add_condition([] { return 0; });
  g.add_edge(head, cond);
  g.add_edge(cond, head);  // weak: a loop, fine
  g.compile();
  auto x = g.add_node([] {}, weft::NodeOptions{.name = "x"});
  auto y = g.add_node([] {}, weft::NodeOptions{.name = "y"});
  auto z = g.add_node([] {}, weft::NodeOptions{.name = "z"});
  g.add_edge(cond, x);  // weak into the strong cycle
  g.add_edge(x, y);
  g.add_edge(y, z);
  g.add_edge(z, x);
  // A condition left over with the cycle, whose weak edge back into it must not be reported as part of it.
  auto exit = g.add_condition([] { return 0; }, weft::NodeOptions{.name = "exit"});
  g.add_edge(z, exit);
  g.add_edge(exit, x);
  try {
    g.compile();
    FAIL("no cycle_error");
  } catch (const weft::cycle_error& e) {
    CHECK(contains(e.what(), "the graph has a cycle"));
    const std::vector<std::string>& names = e.nodes();
    REQUIRE(names.size() == 4);
    CHECK(names.front() == names.back());
    for (const std::string& name : names) CHECK((name == "x" || name == "y" || name == "z"));
  }
}

TEST_CASE("a condition that throws fails the run with it; no successor starts") {
  for_each_graph_worker_count([](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> ran{0};
    auto cond = g.add_condition([]() -> int { throw Boom("condition"); });
    auto a = g.add_node([&] { ran.fetch_add(1); });
    g.add_edge(cond, a);
    weft::Run run = g.run(pool);
    CHECK_THROWS_WITH_AS(run.wait(), "condition", Boom);
    CHECK(ran.load() == 0);
    CHECK(run.stats().exceptions == 1);
  });
}

TEST_CASE("cancel stops an endless loop") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("cancel loop", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<std::uint64_t> iterations{0};
    auto init = g.add_node([] {});
    auto body = g.add_node([&] { iterations.fetch_add(1); });
    auto cond = g.add_condition([] { return 0; });
    g.add_edge(init, body);
    g.add_edge(body, cond);
    g.add_edge(cond, body);
    weft::Run run = g.run(pool);
    while (iterations.load() < 100) std::this_thread::yield();
    run.cancel();
    await_or_die(run, named("cancel loop", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    const std::uint64_t seen = iterations.load();
    CHECK(run.stats().skipped >= 1);
    // The graph is runnable again (counters set back), and the loop still loops.
    weft::Run again = g.run(pool);
    while (iterations.load() < seen + 100) std::this_thread::yield();
    again.cancel();
    await_or_die(again, named("cancel loop again", workers), patience(30));
    CHECK(again.wait() == weft::RunStatus::Cancelled);
  });
}

TEST_CASE("a condition taking Subflow& spawns work that finishes before the picked successor") {
  for_each_graph_worker_count([](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> children{0}, seen{-1};
    auto cond = g.add_condition([&](weft::Subflow& sf) -> unsigned {
      for (int c = 0; c < 8; ++c) sf.spawn([&] { children.fetch_add(1); });
      return 1u;
    });
    auto a = g.add_node([] {});
    auto b = g.add_node([&] { seen.store(children.load()); });
    g.add_edges(cond, {a, b});
    g.run(pool).wait();
    CHECK(seen.load() == 8);
  });
}

TEST_CASE("add_condition refuses tokens > 1 naming the node; dump draws diamonds and dashed weak edges") {
  weft::TaskGraph g;
  CHECK_THROWS_WITH_AS((void)g.add_condition([] { return 0; }, weft::NodeOptions{.name = "c", .tokens = 3}),
                       doctest::Contains("weft::TaskGraph::add_condition: NodeOptions::tokens = 3 for node 'c'"),
                       weft::invalid_option);
  CHECK(g.size() == 0);
  int (*none)() = nullptr;
  CHECK_THROWS_AS((void)g.add_condition(none), std::invalid_argument);
  auto a = g.add_node([] {}, weft::NodeOptions{.name = "a"});
  auto c = g.add_condition([] { return 0; }, weft::NodeOptions{.name = "c"});
  g.add_edge(a, c);
  g.add_edge(c, a);
  std::ostringstream out;
  g.dump(out);
  CHECK(contains(out.str(), "n1 [label=\"c\", shape=diamond];"));
  CHECK(contains(out.str(), "n0 -> n1;"));
  CHECK(contains(out.str(), "n1 -> n0 [style=dashed];"));
}

}  // namespace
