// TaskGraph basics: the four body shapes, edges and their order, duplicate edges, names, the Run handle
// (wait/wait_for/done/stats, repeated wait), re-running, lazy recompilation after a change, moving a graph.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

TEST_CASE("an empty graph runs and completes") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("empty graph", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    CHECK(g.size() == 0);
    CHECK(g.edge_count() == 0);
    for (int round = 0; round < 3; ++round) {
      weft::Run run = g.run(pool);
      CHECK(run.valid());
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(run.done());
      const weft::RunStats stats = run.stats();
      CHECK(stats.dropped == 0);
      CHECK(stats.skipped == 0);
      CHECK(stats.exceptions == 0);
      CHECK(stats.dropped_by_node.empty());
    }
  });
}

TEST_CASE("every body shape runs with its token index and a Subflow") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("body shapes", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> plain{0};
    std::atomic<std::size_t> token_sum{0};
    std::atomic<int> with_subflow{0};
    std::atomic<std::size_t> both_sum{0};
    std::atomic<int> returning{0};
    (void)g.add_node([&] { plain.fetch_add(1); });
    (void)g.add_node([&](std::size_t t) { token_sum.fetch_add(t + 1); }, weft::NodeOptions{.tokens = 4});
    (void)g.add_node([&](weft::Subflow& sf) {
      CHECK(&sf.pool() == &pool);
      sf.spawn([&] { with_subflow.fetch_add(1); });
    });
    (void)g.add_node([&](weft::Subflow& sf, std::size_t t) { sf.spawn([&, t] { both_sum.fetch_add(t + 1); }); },
                     weft::NodeOptions{.tokens = 3});
    (void)g.add_node([&]() -> int { return returning.fetch_add(1) + 41; });  // result discarded
    CHECK(g.size() == 5);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(plain.load() == 1);
    CHECK(token_sum.load() == 1 + 2 + 3 + 4);
    CHECK(with_subflow.load() == 1);
    CHECK(both_sum.load() == 1 + 2 + 3);
    CHECK(returning.load() == 1);
  });
}

TEST_CASE("a diamond runs each node once, after its predecessors, every time it is run") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("diamond", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    // Plain ints on purpose: only the graph's edges order these accesses, so TSan checks them.
    int a = 0, b = 0, c = 0, d = 0;
    auto na = g.add_node([&] { a = 1; });
    auto nb = g.add_node([&] { b = a + 10; });
    auto nc = g.add_node([&] { c = a + 100; });
    auto nd = g.add_node([&] { d = b + c; });
    g.add_edge(na, nb);
    g.add_edge(na, nc);
    g.add_edge(nb, nd);
    g.add_edge(nc, nd);
    CHECK(g.edge_count() == 4);
    for (int round = 0; round < 3; ++round) {
      a = b = c = d = 0;
      CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
      CHECK(d == 112);
    }
  });
}

TEST_CASE("a duplicate edge counts once") {
  const Watchdog watchdog("duplicate edge", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  std::atomic<int> runs{0};
  int before = 0;
  int seen = -1;
  auto a = g.add_node([&] { before = 7; });
  auto b = g.add_node([&] {
    runs.fetch_add(1);
    seen = before;
  });
  g.add_edge(a, b);
  g.add_edge(a, b);
  g.add_edge(a, b);
  CHECK(g.edge_count() == 1);
  CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(runs.load() == 1);  // a join counter of 3 would never reach zero, or one of 1 released b three times
  CHECK(seen == 7);
  CHECK(g.edge_count() == 1);  // read off the layout now: repeats straight after their original are dropped
}

// compile() skips looking for repeated edges when they were added in strictly increasing (to, from) order (a
// node, then the edges into it), and removes them otherwise: the same edges in either order, repeated or not,
// must give every node the same predecessors.
TEST_CASE("edges added node by node, shuffled, or repeated lay out the same successors") {
  const Watchdog watchdog("edge orders", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  constexpr std::uint32_t kNodes = 300;
  std::mt19937 rng(20261125);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // (from, to), from < to, by (to, from)
  for (std::uint32_t to = 1; to < kNodes; ++to) {
    std::vector<std::uint32_t> from;
    for (std::uint32_t k = rng() % 4; k > 0; --k) from.push_back(static_cast<std::uint32_t>(rng() % to));
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
    for (const std::uint32_t f : from) edges.emplace_back(f, to);
  }
  auto shuffled = edges;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  auto repeated = edges;
  for (std::size_t i = 0; i < edges.size(); i += 7) repeated.push_back(edges[i]);
  auto backwards = edges;  // sorted by (to, from) descending: distinct, but not in the order that skips the look
  std::reverse(backwards.begin(), backwards.end());

  const std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>*> orders{&edges, &shuffled, &repeated,
                                                                                  &backwards};
  for (std::size_t which = 0; which < orders.size(); ++which) {
    CAPTURE(which);
    for (const bool compile_first : {false, true}) {
      CAPTURE(compile_first);
      weft::TaskGraph g;
      std::vector<std::atomic<std::uint32_t>> ran_at(kNodes);
      std::atomic<std::uint32_t> clock{0};
      std::vector<weft::Node> nodes;
      for (std::uint32_t i = 0; i < kNodes; ++i)
        nodes.push_back(g.add_node([&, i] { ran_at[i].store(clock.fetch_add(1) + 1); }));
      const auto& list = *orders[which];
      // compile_first: lay out half the edges, then add the rest (and one repeat), so the layout is redone.
      const std::size_t first_part = compile_first ? list.size() / 2 : list.size();
      for (std::size_t e = 0; e < first_part; ++e) g.add_edge(nodes[list[e].first], nodes[list[e].second]);
      if (compile_first) {
        g.compile();
        for (std::size_t e = first_part; e < list.size(); ++e) g.add_edge(nodes[list[e].first], nodes[list[e].second]);
        g.add_edge(nodes[list.front().first], nodes[list.front().second]);
      }
      CHECK(g.edge_count() == edges.size());
      for (int round = 0; round < 2; ++round) {
        for (auto& at : ran_at) at.store(0);
        REQUIRE(g.run(pool).wait() == weft::RunStatus::Completed);
        CHECK(clock.exchange(0) == kNodes);     // each node exactly once
        CHECK(g.edge_count() == edges.size());  // now read off the layout: a repeat kept would show here
        for (const auto& [from, to] : edges) {
          REQUIRE(ran_at[from].load() != 0);
          CHECK(ran_at[from].load() < ran_at[to].load());
        }
      }
    }
  }
}

TEST_CASE("names: NodeOptions::name or 'node <index>'") {
  weft::TaskGraph g;
  auto n0 = g.add_node([] {});
  auto n1 = g.add_node([] {}, weft::NodeOptions{.name = "loader"});
  CHECK(n0.valid());
  CHECK(n0.index() == 0);
  CHECK(n1.index() == 1);
  CHECK(g.name(n0) == "node 0");
  CHECK(g.name(n1) == "loader");
  CHECK_FALSE(n0 == n1);
  CHECK_FALSE(weft::Node{}.valid());
}

TEST_CASE("the Run handle: wait twice, wait_for, done, stats, default-constructed") {
  const Watchdog watchdog("run handle", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  Gate gate;
  (void)g.add_node([&] { gate.enter(); });
  weft::Run run = g.run(pool);
  gate.await_entered(1);
  CHECK_FALSE(run.done());
  CHECK(g.running());
  CHECK_FALSE(run.wait_for(1ms));
  // Odd timeouts: zero, negative and NaN do not wait; one past the clock's range waits as long as it takes.
  CHECK_FALSE(run.wait_for(std::chrono::hours(-1)));
  CHECK_FALSE(run.wait_for(std::chrono::nanoseconds::min()));
  CHECK_FALSE(run.wait_for(std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN())));
  (void)run.stats();  // a snapshot while running is allowed
  std::thread opener([&gate] {
    std::this_thread::sleep_for(20ms);
    gate.open();
  });
  CHECK(run.wait_for(std::chrono::hours::max()));  // used to overflow in the conversion to nanoseconds
  opener.join();
  CHECK(run.wait_for(std::chrono::duration<double>(std::numeric_limits<double>::infinity())));
  CHECK(run.wait_for(patience(10)));
  CHECK(run.done());
  CHECK(run.wait() == weft::RunStatus::Completed);
  CHECK(run.wait() == weft::RunStatus::Completed);
  CHECK(run.stats().dropped_by_node.size() == 1);
  CHECK_FALSE(g.running());

  weft::Run moved = std::move(run);
  CHECK(moved.valid());
  CHECK(moved.wait() == weft::RunStatus::Completed);

  weft::Run none;
  CHECK_FALSE(none.valid());
  CHECK_THROWS(none.wait());
  CHECK_THROWS((void)none.stats());
}

TEST_CASE("changing a graph after a run recompiles it: new nodes and edges take effect") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("recompile", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::vector<int> trace(8, 0);  // plain: ordered by edges only
    auto a = g.add_node([&] { trace[0] = 1; });
    auto b = g.add_node([&] { trace[1] = trace[0] + 1; });
    g.add_edge(a, b);
    g.compile();
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(trace[1] == 2);

    auto c = g.add_node([&] { trace[2] = trace[1] + 1; });
    g.add_edge(b, c);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);  // compiles again, implicitly
    CHECK(trace[2] == 3);

    auto d = g.add_node([&] { trace[3] = trace[2] + trace[0] + 1; });
    g.add_edge(c, d);
    g.add_edge(a, d);
    g.compile();
    g.compile();  // twice is harmless
    trace.assign(8, 0);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(trace[3] == 5);
    CHECK(g.size() == 4);
    CHECK(g.edge_count() == 4);
  });
}

TEST_CASE("a moved graph keeps its nodes; the moved-from one can be assigned and reused") {
  const Watchdog watchdog("move graph", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  std::atomic<int> runs{0};
  weft::TaskGraph g1;
  auto a = g1.add_node([&] { runs.fetch_add(1); });
  auto b = g1.add_node([&] { runs.fetch_add(10); });
  weft::TaskGraph g2(std::move(g1));
  g2.add_edge(a, b);  // handles made by g1 belong to the graph that now lives in g2
  CHECK(g2.size() == 2);
  CHECK(g2.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(runs.load() == 11);

  weft::TaskGraph g3;
  g3 = std::move(g2);
  CHECK(g3.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(runs.load() == 22);

  g1 = weft::TaskGraph{};  // a moved-from graph may be assigned, then used again
  (void)g1.add_node([&] { runs.fetch_add(100); });
  CHECK(g1.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(runs.load() == 122);
}

TEST_CASE("two threads racing to run one graph: one run starts, the other is queued behind it; both run once") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run race", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<bool> release{false};
    std::atomic<int> ran{0};
    std::atomic<int> inside{0};
    std::atomic<int> overlapped{0};
    (void)g.add_node([&] {
      if (inside.fetch_add(1) != 0) overlapped.fetch_add(1);
      // Holds the first run open until both racers have returned, so the second is queued, not started.
      while (!release.load(std::memory_order_acquire)) std::this_thread::yield();
      ran.fetch_add(1);
      inside.fetch_sub(1);
    });
    for (int round = 0; round < 200; ++round) {
      release.store(false, std::memory_order_release);
      weft::Run runs[2];
      auto racer = [&](int i) { runs[i] = g.run(pool); };
      std::thread t0(racer, 0), t1(racer, 1);
      t0.join();
      t1.join();
      CHECK(g.running());
      release.store(true, std::memory_order_release);
      for (auto& r : runs) CHECK(r.wait() == weft::RunStatus::Completed);
    }
    CHECK(ran.load() == 400);
    CHECK(overlapped.load() == 0);
  });
}

}  // namespace
