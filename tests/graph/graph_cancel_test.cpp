// Cancellation (from outside, from inside a node, before anything starts, after the end) and exceptions
// (first rethrown by every wait(), later ones counted, the run cancelled, successors never started).
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

std::string at(std::size_t i) {
  std::string s = "boom at ";
  s += std::to_string(i);
  return s;
}

TEST_CASE("cancel from outside: the running node finishes, no later node starts, wait() says cancelled") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("cancel outside", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChain = 2000, kHeld = 10;
    weft::TaskGraph g;
    std::atomic<std::size_t> ran{0};
    std::atomic<bool> hold{true}, held_saw_cancel{false}, held_finished{false};
    std::vector<weft::Node> chain;
    for (std::size_t i = 0; i < kChain; ++i) {
      chain.push_back(g.add_node([&, i](weft::Subflow& sf) {
        ran.fetch_add(1);
        if (i == kHeld && hold.load()) {
          (void)spin_until([&] { return sf.cancelled(); }, 3000ms);
          held_saw_cancel.store(sf.cancelled());
          held_finished.store(true);
        }
      }));
      if (i > 0) g.add_edge(chain[i - 1], chain[i]);
    }
    for (int round = 0; round < 3; ++round) {
      ran.store(0);
      held_finished.store(false);
      weft::Run run = g.run(pool);
      while (ran.load() <= kHeld) std::this_thread::yield();
      run.cancel();
      await_or_die(run, named("cancel outside", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Cancelled);
      CHECK(run.wait() == weft::RunStatus::Cancelled);
      CHECK(held_finished.load());  // running ones finish
      CHECK(held_saw_cancel.load());
      CHECK(ran.load() == kHeld + 1);
      const weft::RunStats stats = run.stats();
      CHECK(stats.skipped == kChain - kHeld - 1);
      CHECK(stats.exceptions == 0);
      run.cancel();  // after the end: harmless
      CHECK(run.wait() == weft::RunStatus::Cancelled);
    }
    // The graph is reusable after a cancelled run.
    hold.store(false);
    ran.store(0);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == kChain);
  });
}

TEST_CASE("cancel from inside a node stops the run after it") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("cancel inside", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChain = 500, kCanceller = 123;
    weft::TaskGraph g;
    std::atomic<weft::Run*> current{nullptr};
    std::atomic<std::size_t> ran{0};
    std::atomic<bool> saw_cancel{false};
    std::vector<weft::Node> chain;
    for (std::size_t i = 0; i < kChain; ++i) {
      chain.push_back(g.add_node([&, i](weft::Subflow& sf) {
        ran.fetch_add(1);
        if (i != kCanceller) return;
        weft::Run* run = nullptr;
        while ((run = current.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
        run->cancel();
        saw_cancel.store(sf.cancelled());
      }));
      if (i > 0) g.add_edge(chain[i - 1], chain[i]);
    }
    weft::Run run = g.run(pool);
    current.store(&run, std::memory_order_release);
    await_or_die(run, named("cancel inside", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    CHECK(ran.load() == kCanceller + 1);
    CHECK(saw_cancel.load());
    CHECK(run.stats().skipped == kChain - kCanceller - 1);
  });
}

TEST_CASE("cancel a wide run: every token either ran or was skipped") {
  const std::uint64_t seed = seed_for("graph_cancel: wide");
  for_each_graph_worker_count([seed](unsigned workers) {
    const Watchdog watchdog(named("cancel wide", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::mt19937_64 rng(seed + workers);
    weft::TaskGraph g;
    std::atomic<std::uint64_t> ran{0};
    std::uint64_t total = 0;
    for (int i = 0; i < 300; ++i) {
      const std::size_t tokens = 1 + rng() % 6;
      total += tokens;
      (void)g.add_node(
          [&] {
            ran.fetch_add(1);
            busy_work(3000);
          },
          weft::NodeOptions{.concurrency = 1 + static_cast<unsigned>(rng() % 3), .tokens = tokens});
    }
    for (int round = 0; round < 5; ++round) {
      ran.store(0);
      weft::Run run = g.run(pool);
      while (ran.load() < static_cast<std::uint64_t>(round) * 40 && !run.done()) std::this_thread::yield();
      run.cancel();
      await_or_die(run, named("cancel wide", workers), patience(30));
      const weft::RunStatus status = run.wait();
      const weft::RunStats stats = run.stats();
      INFO("round " << round << ": ran " << ran.load() << ", skipped " << stats.skipped << " of " << total);
      CHECK(ran.load() + stats.skipped == total);
      if (status == weft::RunStatus::Completed) CHECK(stats.skipped == 0);
      if (stats.skipped > 0) CHECK(status == weft::RunStatus::Cancelled);
    }
  });
}

TEST_CASE("cancel before any node started: nothing runs, everything is skipped") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("cancel early", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> ran{0};
    auto a = g.add_node([&] { ran.fetch_add(1); }, weft::NodeOptions{.tokens = 3});
    auto b = g.add_node([&] { ran.fetch_add(1); });
    g.add_edge(a, b);
    Gate gate;
    occupy_all_workers(pool, gate);
    weft::Run run = g.run(pool);
    run.cancel();
    gate.open();
    await_or_die(run, named("cancel early", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    CHECK(ran.load() == 0);
    CHECK(run.stats().skipped == 4);
  });
}

TEST_CASE("cancel after completion changes nothing") {
  const Watchdog watchdog("cancel late", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  (void)g.add_node([] {});
  weft::Run run = g.run(pool);
  CHECK(run.wait() == weft::RunStatus::Completed);
  run.cancel();
  CHECK(run.wait() == weft::RunStatus::Completed);
  CHECK(run.stats().skipped == 0);
}

TEST_CASE("an exception in a chain: rethrown by every wait(), the rest skipped, the graph reusable") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("chain exception", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChain = 100, kThrower = 37;
    weft::TaskGraph g;
    std::atomic<bool> armed{true};
    std::atomic<std::size_t> ran{0};
    std::vector<weft::Node> chain;
    for (std::size_t i = 0; i < kChain; ++i) {
      chain.push_back(g.add_node([&, i] {
        ran.fetch_add(1);
        if (i == kThrower && armed.load()) throw Boom(at(i));
      }));
      if (i > 0) g.add_edge(chain[i - 1], chain[i]);
    }
    weft::Run run = g.run(pool);
    await_or_die(run, named("chain exception", workers), patience(30));
    for (int call = 0; call < 3; ++call) {
      INFO("wait() call " << call);
      try {
        (void)run.wait();
        FAIL("wait() did not rethrow");
      } catch (const Boom& e) {
        CHECK(std::string(e.what()) == at(kThrower));
      }
    }
    CHECK(ran.load() == kThrower + 1);
    CHECK(run.stats().exceptions == 1);
    CHECK(run.stats().skipped == kChain - kThrower - 1);
    armed.store(false);
    ran.store(0);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == kChain);
  });
}

TEST_CASE("something not derived from std::exception is rethrown as is") {
  const Watchdog watchdog("throw int", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  (void)g.add_node([] { throw 42; });
  weft::Run run = g.run(pool);
  CHECK_THROWS_AS(run.wait(), int);
  CHECK_THROWS_AS(run.wait(), int);
}

TEST_CASE("exceptions at random nodes of random DAGs: the first rethrown, all counted, no successor started") {
  const std::uint64_t seed = seed_for("graph_cancel: random exceptions");
  for_each_graph_worker_count([seed](unsigned workers) {
    const Watchdog watchdog(named("random exceptions", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const std::uint64_t graphs = stress_count(weft::test::reduced_runs() ? 40 : 200);
    for (std::uint64_t gi = 0; gi < graphs; ++gi) {
      std::mt19937_64 rng(seed ^ (gi * 0x9E3779B97F4A7C15ULL) ^ workers);
      INFO("seed " << seed << ", graph " << gi);
      const std::size_t n = 1 + rng() % 200;
      const unsigned throw_per_mille = 1 + static_cast<unsigned>(rng() % 200);
      weft::TaskGraph g;
      std::vector<weft::Node> nodes;
      std::vector<std::vector<std::size_t>> preds(n);
      auto throws = std::make_unique<bool[]>(n);
      auto ran = std::make_unique<std::atomic<std::uint32_t>[]>(n);
      std::atomic<std::uint64_t> thrown{0};
      std::size_t total_tokens = 0;
      for (std::size_t i = 0; i < n; ++i) {
        throws[i] = rng() % 1000 < throw_per_mille;
        const std::size_t tokens = 1 + rng() % 3;
        total_tokens += tokens;
        nodes.push_back(g.add_node(
            [&, i] {
              ran[i].fetch_add(1);
              busy_work(100);
              if (throws[i]) {
                thrown.fetch_add(1);
                throw Boom(at(i));
              }
            },
            weft::NodeOptions{.tokens = tokens}));
        for (int e = 0; i > 0 && e < 3; ++e) {
          const std::size_t from = rng() % i;
          g.add_edge(nodes[from], nodes[i]);
          preds[i].push_back(from);
        }
      }
      weft::Run run = g.run(pool);
      await_or_die(run, "random exceptions, seed " + std::to_string(seed) + " graph " + std::to_string(gi),
                   patience(60));
      std::string first;
      bool threw = false;
      try {
        (void)run.wait();
      } catch (const Boom& e) {
        threw = true;
        first = e.what();
      }
      std::uint64_t executions = 0;
      bool some_thrower_ran = false, first_is_a_thrower_that_ran = false;
      for (std::size_t i = 0; i < n; ++i) {
        executions += ran[i].load();
        if (throws[i] && ran[i].load() > 0) {
          some_thrower_ran = true;
          if (first == at(i)) first_is_a_thrower_that_ran = true;
        }
        if (ran[i].load() == 0) continue;
        for (const std::size_t p : preds[i]) {
          INFO("node " << i << " ran after its predecessor " << p << " threw");
          REQUIRE_FALSE(throws[p]);
        }
      }
      const weft::RunStats stats = run.stats();
      REQUIRE(threw == some_thrower_ran);
      if (threw) REQUIRE(first_is_a_thrower_that_ran);
      REQUIRE(stats.exceptions == thrown.load());
      REQUIRE(executions + stats.skipped == total_tokens);
    }
  });
}

TEST_CASE("many tokens of one node throwing: each exception counted once") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("token exceptions", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<std::uint64_t> thrown{0};
    (void)g.add_node(
        [&](std::size_t t) {
          busy_work(1000);
          thrown.fetch_add(1);
          throw Boom(at(t));
        },
        weft::NodeOptions{.tokens = 400});
    weft::Run run = g.run(pool);
    await_or_die(run, named("token exceptions", workers), patience(30));
    CHECK_THROWS_AS(run.wait(), Boom);
    const weft::RunStats stats = run.stats();
    CHECK(stats.exceptions == thrown.load());
    CHECK(thrown.load() + stats.skipped == 400);
    CHECK(thrown.load() >= 1);
  });
}

}  // namespace
