// weft::Semaphore on TaskGraph nodes (NodeOptions::semaphores): at most `count` units taken at once across
// random graphs and concurrent runs, every node exactly once, no deadlock on one worker, parked nodes skip when
// their run is cancelled or fails, units always given back, and bad input refused with the node named.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/graph/graph_test_support.hpp"
#include "weft/errors.hpp"
#include "weft/semaphore.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const weft::invalid_option& e) {
    return e.what();
  } catch (...) {
    return "<another exception>";
  }
  return "<no exception>";
}

TEST_CASE("Semaphore: count, available, waiting; count 0 is refused") {
  weft::Semaphore s{3};
  CHECK(s.count() == 3);
  CHECK(s.available() == 3);
  CHECK(s.waiting() == 0);
  const std::string message = message_of([] { weft::Semaphore zero{0}; });
  INFO(message);
  CHECK(contains(message, "weft::Semaphore"));
  CHECK(contains(message, "count = 0"));
}

TEST_CASE("bad NodeOptions::semaphores: null, more units than the count, tokens > 1") {
  weft::Semaphore one{1};
  weft::Semaphore two{2};
  weft::TaskGraph g;
  {
    const std::string message = message_of([&] {
      (void)g.add_node([] {}, weft::NodeOptions{.name = "fetch", .semaphores = {&one, nullptr}});
    });
    INFO(message);
    CHECK(contains(message, "weft::TaskGraph::add_node"));
    CHECK(contains(message, "NodeOptions::semaphores[1] = null"));
    CHECK(contains(message, "'fetch'"));
  }
  {
    const std::string message = message_of([&] {
      (void)g.add_node([] {}, weft::NodeOptions{.name = "greedy", .semaphores = {&two, &one, &two, &two}});
    });
    INFO(message);
    CHECK(contains(message, "NodeOptions::semaphores[3]"));
    CHECK(contains(message, "'greedy'"));
    CHECK(contains(message, "semaphores[0] (count 2)"));
    CHECK(contains(message, "could never start"));
  }
  {
    const std::string message = message_of(
        [&] { (void)g.add_node([] {}, weft::NodeOptions{.name = "many", .tokens = 4, .semaphores = {&one}}); });
    INFO(message);
    CHECK(contains(message, "NodeOptions::semaphores"));
    CHECK(contains(message, "'many'"));
    CHECK(contains(message, "tokens = 4"));
  }
  CHECK(g.size() == 0);  // nothing was added
  // Twice the same semaphore within its count is fine: the node takes two units.
  (void)g.add_node([] {}, weft::NodeOptions{.semaphores = {&two, &two}});
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(two.available() == 2);
}

// A random DAG whose nodes take 0-3 entries of a few shared semaphores (repeats allowed within a count): each
// execution adds its units to its semaphores' in-flight counters, and the maximum must stay within the count.
struct SharedSemaphores {
  std::vector<std::unique_ptr<weft::Semaphore>> semaphores;
  std::vector<InFlight> in_flight;
  explicit SharedSemaphores(std::mt19937_64& rng) : in_flight(4) {
    for (int i = 0; i < 4; ++i) semaphores.push_back(std::make_unique<weft::Semaphore>(1 + rng() % 3));
  }
  void check() {
    for (std::size_t i = 0; i < semaphores.size(); ++i) {
      INFO("semaphore " << i << " of count " << semaphores[i]->count());
      CHECK(in_flight[i].max.load() <= semaphores[i]->count());
      CHECK(in_flight[i].max.load() >= 1);
      CHECK(semaphores[i]->available() == semaphores[i]->count());
      CHECK(semaphores[i]->waiting() == 0);
    }
  }
};

struct RandomGraph {
  weft::TaskGraph graph;
  std::unique_ptr<RunCounts> runs;

  RandomGraph(std::mt19937_64& rng, SharedSemaphores& shared, std::size_t nodes) {
    runs = std::make_unique<RunCounts>(nodes);
    std::vector<weft::Node> made;
    for (std::size_t i = 0; i < nodes; ++i) {
      weft::NodeOptions options;
      std::vector<std::size_t> units(shared.semaphores.size(), 0);
      const std::size_t entries = rng() % 4;  // 0: a plain node, run in place among the others
      for (std::size_t e = 0; e < entries; ++e) {
        const std::size_t s = rng() % shared.semaphores.size();
        if (units[s] == shared.semaphores[s]->count()) continue;
        ++units[s];
        options.semaphores.push_back(shared.semaphores[s].get());
      }
      made.push_back(graph.add_node(
          [&shared, units, counts = runs.get(), i] {
            counts->ran(i);
            for (std::size_t s = 0; s < units.size(); ++s)
              for (std::size_t u = 0; u < units[s]; ++u) shared.in_flight[s].enter();
            busy_work(2000);
            for (std::size_t s = 0; s < units.size(); ++s)
              for (std::size_t u = 0; u < units[s]; ++u) shared.in_flight[s].leave();
          },
          std::move(options)));
      // Up to three edges from earlier nodes: a DAG by construction.
      for (std::size_t e = 0; i > 0 && e < rng() % 4; ++e) graph.add_edge(made[rng() % i], made[i]);
    }
  }
};

TEST_CASE("random graphs sharing semaphores: at most count at once, every node exactly once") {
  const std::uint64_t seed = seed_for("graph_semaphore random");
  std::mt19937_64 rng(seed);
  const std::uint64_t rounds = stress_count(6);
  for_each_graph_worker_count([&](unsigned workers) {
    const std::string what = named("random semaphores", workers) + " seed " + std::to_string(seed);
    const Watchdog watchdog(what, patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (std::uint64_t round = 0; round < rounds; ++round) {
      SharedSemaphores shared(rng);
      // Two graphs at once on the same semaphores: their nodes wait for each other's units.
      RandomGraph a(rng, shared, 300);
      RandomGraph b(rng, shared, 200);
      weft::Run run_a = a.graph.run(pool);
      weft::Run run_b = b.graph.run(pool);
      await_or_die(run_a, what, patience(60));
      await_or_die(run_b, what, patience(60));
      CHECK(run_a.wait() == weft::RunStatus::Completed);
      CHECK(run_b.wait() == weft::RunStatus::Completed);
      check_exactly_once(*a.runs);
      check_exactly_once(*b.runs);
      shared.check();
    }
  });
}

TEST_CASE("cancelling one run does not strand the nodes of another run waiting on the same semaphores") {
  const std::uint64_t seed = seed_for("graph_semaphore cancel one of two");
  std::mt19937_64 rng(seed);
  const std::uint64_t rounds = stress_count(6);
  for_each_graph_worker_count([&](unsigned workers) {
    const std::string what = named("cancel one of two", workers) + " seed " + std::to_string(seed);
    const Watchdog watchdog(what, patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (std::uint64_t round = 0; round < rounds; ++round) {
      SharedSemaphores shared(rng);
      RandomGraph a(rng, shared, 300);
      RandomGraph b(rng, shared, 300);
      weft::Run run_a = a.graph.run(pool);
      weft::Run run_b = b.graph.run(pool);
      (void)spin_until([&] { return a.runs->summary().once >= 20; }, 2000ms);
      run_a.cancel();
      await_or_die(run_a, what, patience(60));
      await_or_die(run_b, what, patience(60));
      (void)run_a.wait();
      CHECK(run_b.wait() == weft::RunStatus::Completed);
      check_exactly_once(*b.runs);
      CHECK(a.runs->summary().repeated == 0);
      for (std::size_t i = 0; i < shared.semaphores.size(); ++i) {
        CHECK(shared.in_flight[i].max.load() <= shared.semaphores[i]->count());
        CHECK(shared.semaphores[i]->available() == shared.semaphores[i]->count());
        CHECK(shared.semaphores[i]->waiting() == 0);
      }
    }
  });
}

TEST_CASE("one worker, a semaphore of 1: a deep chain and a wide fan-out finish, one node at a time") {
  const Watchdog watchdog("one worker semaphore", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::Semaphore one{1};
  InFlight in_flight;
  std::atomic<std::size_t> ran{0};
  const auto body = [&] {
    in_flight.enter();
    ran.fetch_add(1, std::memory_order_relaxed);
    in_flight.leave();
  };
  const weft::NodeOptions options{.semaphores = {&one}};
  weft::TaskGraph g;
  constexpr std::size_t kChain = 500, kFan = 300;
  weft::Node previous = g.add_node(body, options);
  for (std::size_t i = 1; i < kChain; ++i) {
    const weft::Node next = g.add_node(body, options);
    g.add_edge(previous, next);
    previous = next;
  }
  const weft::Node join = g.add_node(body, options);
  for (std::size_t i = 0; i < kFan; ++i) {
    const weft::Node leaf = g.add_node(body, options);
    g.add_edge(previous, leaf);
    g.add_edge(leaf, join);
  }
  for (int round = 0; round < 3; ++round) {
    ran.store(0);
    weft::Run run = g.run(pool);
    await_or_die(run, "one worker semaphore", patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == kChain + kFan + 1);
  }
  CHECK(in_flight.max.load() == 1);
  CHECK(one.available() == 1);
}

TEST_CASE("units are given back after the node's subflow joined, before its successors start") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("subflow holds units", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Semaphore one{1};
    std::atomic<int> busy{0};  // the parent's execution, children included
    std::atomic<bool> overlapped{false};
    weft::TaskGraph g;
    constexpr int kParents = 20;
    for (int p = 0; p < kParents; ++p) {
      (void)g.add_node(
          [&](weft::Subflow& sf) {
            if (busy.fetch_add(1) != 0) overlapped.store(true);
            auto left = std::make_shared<std::atomic<int>>(4);
            for (int c = 0; c < 4; ++c) {
              sf.spawn([&, left] {
                busy_work(2000);
                if (left->fetch_sub(1) == 1) busy.fetch_sub(1);  // the last child ends the execution
              });
            }
          },
          weft::NodeOptions{.semaphores = {&one}});
    }
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK_FALSE(overlapped.load());
    CHECK(busy.load() == 0);
    CHECK(one.available() == 1);
  });
}

// A node of another graph, run on a pool of its own (so that it holds none of the tested pool's workers), holds
// the semaphore's only unit until the test lets it go.
struct Holder {
  weft::TaskGraph graph;
  std::atomic<bool> holding{false};
  std::atomic<bool> release{false};
  explicit Holder(weft::Semaphore& semaphore) {
    (void)graph.add_node(
        [this] {
          holding.store(true);
          while (!release.load()) std::this_thread::yield();
        },
        weft::NodeOptions{.name = "holder", .semaphores = {&semaphore}});
  }
};

// `parked` nodes of a graph run on a pool of `workers`, all parked on a semaphore of one unit that a Holder keeps.
struct ParkedBehindHolder {
  weft::Pool pool;
  weft::Semaphore one{1};
  weft::Pool holder_pool{weft::PoolOptions{.threads = 1}};
  Holder holder{one};
  weft::Run held;
  std::atomic<std::size_t> ran{0};
  weft::TaskGraph graph;
  weft::Run run;

  ParkedBehindHolder(unsigned workers, std::size_t parked) : pool(weft::PoolOptions{.threads = workers}) {
    held = holder.graph.run(holder_pool);
    while (!holder.holding.load()) std::this_thread::yield();
    for (std::size_t i = 0; i < parked; ++i)
      (void)graph.add_node([this] { ran.fetch_add(1); }, weft::NodeOptions{.semaphores = {&one}});
    run = graph.run(pool);
    REQUIRE(spin_until([&] { return one.waiting() == parked; }, 10000ms));
  }
};

TEST_CASE("cancel while nodes are parked: the run ends at once, its nodes skipped, the units untouched") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("cancel parked", workers);
    const Watchdog watchdog(what, patience(60));
    constexpr std::size_t kParked = 20;
    ParkedBehindHolder parked(workers, kParked);
    auto& [pool, one, holder_pool, holder, held, ran, g, run] = parked;
    run.cancel();
    // The holder still holds the unit: the cancelled run must not wait for it.
    const bool ended = run.wait_for(patience(10));
    CHECK(ended);
    holder.release.store(true);
    await_or_die(run, what, patience(30));
    await_or_die(held, what, patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    CHECK(run.stats().skipped == kParked);
    CHECK(ran.load() == 0);
    CHECK(held.wait() == weft::RunStatus::Completed);
    CHECK(one.available() == 1);
    CHECK(one.waiting() == 0);
    // The graph runs again, normally.
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == kParked);
  });
}

TEST_CASE("a body that throws gives its units back; nodes parked behind it skip") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("throw releases", workers);
    const Watchdog watchdog(what, patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Semaphore two{2};
    constexpr std::size_t kOthers = 10;
    std::atomic<std::size_t> ran{0};
    weft::TaskGraph g;
    // Takes both units, waits until every other node either ran or is parked (none can be running while it
    // holds both; bounded: never a hang), then throws.
    (void)g.add_node(
        [&] {
          (void)spin_until([&] { return two.waiting() + ran.load() == kOthers; }, 5000ms);
          throw Boom("boom");
        },
        weft::NodeOptions{.name = "thrower", .semaphores = {&two, &two}});
    for (std::size_t i = 0; i < kOthers; ++i)
      (void)g.add_node([&] { ran.fetch_add(1); }, weft::NodeOptions{.semaphores = {&two}});
    for (int round = 0; round < 3; ++round) {
      ran.store(0);
      weft::Run run = g.run(pool);
      await_or_die(run, what, patience(30));
      CHECK_THROWS_AS(run.wait(), Boom);
      CHECK(two.available() == 2);
      CHECK(two.waiting() == 0);
      // The others either ran before the thrower took both units, or were skipped.
      CHECK(ran.load() + run.stats().skipped == kOthers);
    }
  });
}

TEST_CASE("a DropPending shutdown while nodes are parked fails the run with task_dropped, never a hang") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("DropPending parked", workers);
    const Watchdog watchdog(what, patience(60));
    constexpr std::size_t kParked = 10;
    ParkedBehindHolder parked(workers, kParked);
    auto& [pool, one, holder_pool, holder, held, ran, g, run] = parked;
    // The holder gives its unit back once the pool is shut down: the parked nodes are then re-posted into a
    // pool that will not run them.
    (void)pool.shutdown(weft::Shutdown::DropPending);
    holder.release.store(true);
    await_or_die(run, what, patience(30));
    await_or_die(held, what, patience(30));
    CHECK(held.wait() == weft::RunStatus::Completed);
    CHECK_THROWS_AS(run.wait(), weft::task_dropped);
    CHECK(ran.load() == 0);
    CHECK(one.available() == 1);
    CHECK(one.waiting() == 0);
  });
}

}  // namespace
