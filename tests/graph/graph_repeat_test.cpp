// TaskGraph::run_n and run_until: several passes as one Run, each started by the last unit of work of the one
// before; stopped by an exception (of a node or of the predicate) or a cancel; statistics added up.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// A diamond, a -> {b, c} -> d, whose nodes check that each pass starts only after the previous one ended: a
// sees d's count equal to its own (every earlier pass finished), d sees a's one ahead of its own.
struct Diamond {
  weft::TaskGraph graph;
  std::atomic<std::uint64_t> a{0}, b{0}, c{0}, d{0};
  std::atomic<std::uint64_t> out_of_order{0};
  Diamond() {
    auto na = graph.add_node([this] {
      if (d.load() != a.load()) out_of_order.fetch_add(1);
      a.fetch_add(1);
    });
    auto nb = graph.add_node([this] { b.fetch_add(1); });
    auto nc = graph.add_node([this] { c.fetch_add(1); });
    auto nd = graph.add_node([this] {
      if (a.load() != d.load() + 1 || b.load() != a.load() || c.load() != a.load()) out_of_order.fetch_add(1);
      d.fetch_add(1);
    });
    graph.add_edges(na, {nb, nc});
    graph.add_edge(nb, nd);
    graph.add_edge(nc, nd);
  }
};

TEST_CASE("run_n runs the graph n times, one pass after the other, as one Run") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run_n", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Diamond g;
    const std::size_t n = stress_count(50);
    weft::Run run = g.graph.run_n(pool, n);
    await_or_die(run, named("run_n", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(g.d.load() == n);
    CHECK(g.out_of_order.load() == 0);
    CHECK(run.stats().passes == n);
    // The graph is left as a plain run leaves it: it runs again, once.
    g.graph.run(pool).wait();
    CHECK(g.d.load() == n + 1);
    CHECK(g.out_of_order.load() == 0);
  });
}

TEST_CASE("run_n(0) is over at once and completed; so is run_n of an empty graph, however many passes") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  Diamond g;
  weft::Run run = g.graph.run_n(pool, 0);
  CHECK(run.done());
  CHECK(run.wait() == weft::RunStatus::Completed);
  CHECK(g.a.load() == 0);
  CHECK(run.stats().passes == 0);
  CHECK_FALSE(g.graph.running());
  // No roots: every pass ends inside the one before's last unit; a loop, not a recursion a million deep.
  weft::TaskGraph empty;
  weft::Run many = empty.run_n(pool, 1'000'000);
  CHECK(many.wait() == weft::RunStatus::Completed);
  CHECK(many.stats().passes == 1'000'000);
}

TEST_CASE("run_n stops after the pass in which a node threw; wait() rethrows it") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run_n exception", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<std::uint64_t> first{0}, second{0};
    constexpr std::uint64_t kThrowAt = 7;  // the pass (from 1) in which the body throws
    auto a = g.add_node([&] {
      if (first.fetch_add(1) + 1 == kThrowAt) throw Boom("pass 7");
    });
    auto b = g.add_node([&] { second.fetch_add(1); });
    g.add_edge(a, b);
    weft::Run run = g.run_n(pool, 100);
    await_or_die(run, named("run_n exception", workers), patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), "pass 7", Boom);
    CHECK(first.load() == kThrowAt);
    CHECK(second.load() == kThrowAt - 1);  // the failed pass was cancelled after a
    const weft::RunStats stats = run.stats();
    CHECK(stats.passes == kThrowAt);
    CHECK(stats.exceptions == 1);
    CHECK(stats.skipped == 1);  // b, in pass 7
  });
}

TEST_CASE("run_n cancelled mid-way: the running pass is cancelled, no later pass starts") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run_n cancel", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<std::uint64_t> first{0}, second{0};
    std::atomic<bool> saw_cancel{false};
    constexpr std::uint64_t kHoldAt = 5;
    auto a = g.add_node([&](weft::Subflow& sf) {
      if (first.fetch_add(1) + 1 == kHoldAt) saw_cancel.store(spin_until([&] { return sf.cancelled(); }, 10'000ms));
    });
    auto b = g.add_node([&] { second.fetch_add(1); });
    g.add_edge(a, b);
    weft::Run run = g.run_n(pool, 1000);
    while (first.load() < kHoldAt) std::this_thread::yield();
    run.cancel();
    await_or_die(run, named("run_n cancel", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    CHECK(saw_cancel.load());
    CHECK(first.load() == kHoldAt);
    CHECK(second.load() == kHoldAt - 1);
    CHECK(run.stats().passes == kHoldAt);
    CHECK_FALSE(g.running());
  });
}

TEST_CASE("run_until: the predicate is asked before every pass and once more at the end") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run_until", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Diamond g;
    std::uint64_t asked = 0;   // only the predicate touches it: never two calls at once
    std::uint64_t seen_d = 0;  // d's count at each call: a whole pass ended in between
    bool consistent = true;
    weft::Run run = g.graph.run_until(pool, [&] {
      if (g.d.load() != asked) consistent = false;
      seen_d = g.d.load();
      return asked++ == 10;
    });
    await_or_die(run, named("run_until", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(consistent);
    CHECK(asked == 11);
    CHECK(seen_d == 10);
    CHECK(g.d.load() == 10);
    CHECK(run.stats().passes == 10);
    CHECK(g.out_of_order.load() == 0);
  });
}

TEST_CASE("run_until whose predicate holds at once runs no pass") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  Diamond g;
  int asked = 0;
  weft::Run run = g.graph.run_until(pool, [&] {
    ++asked;
    return true;
  });
  CHECK(run.wait() == weft::RunStatus::Completed);
  CHECK(asked == 1);
  CHECK(g.a.load() == 0);
  CHECK(run.stats().passes == 0);
}

TEST_CASE("run_until whose predicate throws fails the run with that exception") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run_until throws", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Diamond g;
    int asked = 0;
    weft::Run run = g.graph.run_until(pool, [&]() -> bool {
      if (++asked == 4) throw Boom("predicate");
      return false;
    });
    await_or_die(run, named("run_until throws", workers), patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), "predicate", Boom);
    CHECK(asked == 4);
    CHECK(g.d.load() == 3);
    CHECK(run.stats().passes == 3);
    // The first call throwing: no pass at all, and the graph is free again.
    weft::Run first = g.graph.run_until(pool, []() -> bool { throw Boom("at once"); });
    CHECK_THROWS_WITH_AS(first.wait(), "at once", Boom);
    CHECK(first.stats().passes == 0);
    CHECK(g.d.load() == 3);
  });
}

TEST_CASE("run_n: statistics add up over the passes; a run submitted meanwhile queues behind the last pass") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run_n stats", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<std::uint64_t> ran{0};
    std::atomic<bool> release{false};
    constexpr std::size_t kTokens = 64, kPasses = 6;
    auto gate = g.add_node([&] { (void)spin_until([&] { return release.load(); }, 10'000ms); });
    auto drop = g.add_node([&] { ran.fetch_add(1); }, weft::NodeOptions{.name = "drop",
                                                                        .concurrency = 1,
                                                                        .capacity = 1,
                                                                        .overflow = weft::Overflow::Drop,
                                                                        .tokens = kTokens});
    g.add_edge(gate, drop);
    weft::Run run = g.run_n(pool, kPasses);
    weft::Run queued = g.run_n(pool, 1);  // queued: starts after the last of the kPasses
    CHECK_THROWS_AS((void)g.add_node([] {}), weft::graph_busy);
    release.store(true);
    await_or_die(run, named("run_n stats", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    const weft::RunStats stats = run.stats();
    CHECK(stats.passes == kPasses);
    await_or_die(queued, named("run_n stats", workers), patience(30));
    CHECK(queued.wait() == weft::RunStatus::Completed);
    CHECK(queued.stats().passes == 1);
    CHECK(ran.load() + stats.dropped + queued.stats().dropped == kTokens * (kPasses + 1));
    CHECK(stats.dropped_by_node[drop.index()] == stats.dropped);
  });
}

TEST_CASE("run_until refuses an empty predicate, naming the call") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskGraph g;
  bool (*none)() = nullptr;
  CHECK_THROWS_WITH_AS((void)g.run_until(pool, none), doctest::Contains("weft::TaskGraph::run_until"),
                       std::invalid_argument);
  CHECK_FALSE(g.running());
}

}  // namespace

// run_n(pool, SIZE_MAX), then cancel() and wait(), with the wait starting at any moment of the passes: a waiter on
// an outside thread takes a pass's roots over (help_from_outside) whenever it finds them unclaimed, which may be
// while the thread that ended the previous pass is still starting the next one. Every round must end: a pass that
// lost its first roots task to that overlap would hold its last unit forever, and the waiter and the workers
// would all sleep.
TEST_CASE("run_n(SIZE_MAX), cancel and wait from outside threads at any moment of the passes always end") {
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 600
                                                                       : 3'000);  // TSan runs each ten times slower
  std::mt19937_64 random(seed_for("run_n cancel wait"));
  for (const unsigned workers : {1U, 2U, 4U}) {
    const Watchdog watchdog(named("run_n + cancel + wait", workers), patience(240));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<std::uint64_t> ran{0};
    weft::TaskGraph graph;
    (void)graph.add_node([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });  // one root: short passes
    for (std::uint64_t round = 0; round < rounds / 3; ++round) {
      weft::Run run = graph.run_n(pool, SIZE_MAX);
      const std::uint64_t mode = random() % 3;
      const std::uint64_t passes = random() % 64;
      const std::uint64_t from = ran.load(std::memory_order_relaxed);
      const auto after_passes = [&] {
        while (ran.load(std::memory_order_relaxed) - from < passes) std::this_thread::yield();
      };
      if (mode == 0) {
        // This thread: wait a few passes, cancel, wait (which helps with whatever pass is starting).
        after_passes();
        run.cancel();
        CHECK(run.wait() == weft::RunStatus::Cancelled);
      } else {
        // Another thread waits from a moment of its own (mode 1: at once, mode 2: after a few passes); this one
        // cancels after a few passes.
        std::atomic<bool> cancelled{false};
        std::thread waiter([&] {
          if (mode == 2) after_passes();
          cancelled.store(run.wait() == weft::RunStatus::Cancelled);
        });
        after_passes();
        run.cancel();
        waiter.join();
        CHECK(cancelled.load());
      }
    }
  }
}
