// Run options (weft::RunOptions): ErrorPolicy::KeepGoing skips exactly the descendants of failed nodes and runs
// everything else once; per-node outcomes (NodeOutcome) and times; CancelRun with outcomes; multi-token nodes
// that fail, drop or are cancelled; asking for outcomes a run did not record.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/graph/graph_test_support.hpp"
#include "tests/support/stress.hpp"

namespace {

using namespace weft::test;

constexpr std::uint32_t kNone = UINT32_MAX;

// "target <i>"; built by appending (g++ 12 warns, -Wrestrict, on "target " + std::to_string(i)).
std::string target_name(std::size_t i) {
  std::string s = "target ";
  s += std::to_string(i);
  return s;
}

// The build-system DAG of the issue: `n` targets, each depending on up to four earlier ones (so index order is a
// topological order), a few of them failing. How a target runs and fails varies with its index, so that every
// path of the executor is taken: a plain body, a subflow whose child throws, three tokens one of which throws
// (its inbox), a High-priority node (posted, not run in place).
struct BuildDag {
  std::size_t n = 0;
  std::vector<std::vector<std::uint32_t>> preds;
  std::vector<bool> throws;

  BuildDag(std::size_t targets, std::uint64_t seed) : n(targets), preds(targets), throws(targets, false) {
    std::mt19937_64 rng(seed);
    for (std::size_t i = 1; i < n; ++i) {
      const std::size_t fan_in = std::uniform_int_distribution<std::size_t>(0, std::min<std::size_t>(4, i))(rng);
      for (std::size_t k = 0; k < fan_in; ++k) {
        const auto from = static_cast<std::uint32_t>(std::uniform_int_distribution<std::size_t>(0, i - 1)(rng));
        if (std::find(preds[i].begin(), preds[i].end(), from) == preds[i].end()) preds[i].push_back(from);
      }
    }
    for (int k = 0; k < 8; ++k) throws[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)] = true;
  }

  // Sequentially: which targets fail, and for each skipped one its lowest failed ancestor (kNone: it runs).
  struct Expected {
    std::vector<bool> failed;
    std::vector<std::uint32_t> cause;
  };
  [[nodiscard]] Expected expected() const {
    Expected e{std::vector<bool>(n, false), std::vector<std::uint32_t>(n, kNone)};
    for (std::size_t i = 0; i < n; ++i) {
      for (const std::uint32_t p : preds[i]) e.cause[i] = std::min(e.cause[i], e.failed[p] ? p : e.cause[p]);
      e.failed[i] = e.cause[i] == kNone && throws[i];
    }
    return e;
  }
};

enum class Kind { plain, subflow, tokens, high };
Kind kind_of(std::size_t i) { return static_cast<Kind>(i % 4); }

struct BuildRun {
  std::unique_ptr<std::atomic<int>[]> executions;  // body executions (tokens and children count once each)
  weft::TaskGraph graph;
  std::vector<weft::Node> nodes;
};

std::unique_ptr<BuildRun> make_build(const BuildDag& dag) {
  auto b = std::make_unique<BuildRun>();
  b->executions = std::make_unique<std::atomic<int>[]>(dag.n);
  for (std::size_t i = 0; i < dag.n; ++i) {
    std::atomic<int>* count = &b->executions[i];
    const bool fails = dag.throws[i];
    const std::string name = target_name(i);
    weft::NodeOptions options{.name = name};
    switch (kind_of(i)) {
      case Kind::plain:
        b->nodes.push_back(b->graph.add_node(
            [count, fails, name] {
              count->fetch_add(1, std::memory_order_relaxed);
              if (fails) throw std::runtime_error(name + " failed");
            },
            options));
        break;
      case Kind::subflow:
        b->nodes.push_back(b->graph.add_node(
            [count, fails, name](weft::Subflow& sf) {
              count->fetch_add(1, std::memory_order_relaxed);
              sf.spawn([fails, name] {
                if (fails) throw std::runtime_error(name + " failed");
              });
            },
            options));
        break;
      case Kind::tokens:
        options.tokens = 3;
        b->nodes.push_back(b->graph.add_node(
            [count, fails, name](std::size_t token) {
              count->fetch_add(1, std::memory_order_relaxed);
              if (fails && token == 1) throw std::runtime_error(name + " failed");
            },
            options));
        break;
      case Kind::high:
        options.priority = weft::Priority::High;
        b->nodes.push_back(b->graph.add_node(
            [count, fails, name] {
              count->fetch_add(1, std::memory_order_relaxed);
              if (fails) throw std::runtime_error(name + " failed");
            },
            options));
        break;
    }
  }
  for (std::size_t i = 0; i < dag.n; ++i)
    for (const std::uint32_t p : dag.preds[i]) b->graph.add_edge(b->nodes[p], b->nodes[i]);
  return b;
}

int executions_per_run(std::size_t i) { return kind_of(i) == Kind::tokens ? 3 : 1; }

TEST_CASE("KeepGoing: exactly the descendants of failed targets are skipped, every other target runs once") {
  const std::uint64_t seeds = stress_count(6);
  for_each_graph_worker_count([&](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
      INFO("seed = " << seed);
      const BuildDag dag(200, seed);
      const BuildDag::Expected expected = dag.expected();
      auto build = make_build(dag);
      std::size_t failures = 0;
      std::size_t skipped_targets = 0;
      std::uint64_t skipped_executions = 0;
      for (std::size_t i = 0; i < dag.n; ++i) {
        failures += expected.failed[i] ? 1 : 0;
        if (expected.cause[i] != kNone) {
          ++skipped_targets;
          skipped_executions += static_cast<std::uint64_t>(executions_per_run(i));
        }
      }
      REQUIRE(failures > 0);
      // Twice on the same graph: the second run must see reset join counters and fresh records.
      for (int round = 0; round < 2; ++round) {
        INFO("round = " << round);
        for (std::size_t i = 0; i < dag.n; ++i) build->executions[i].store(0);
        weft::Run run = build->graph.run(pool, weft::RunOptions{.on_error = weft::ErrorPolicy::KeepGoing});
        await_or_die(run, "keep going, seed " + std::to_string(seed), patience(60));
        std::string first;
        try {
          (void)run.wait();
          FAIL("wait() did not rethrow the first failure");
        } catch (const std::runtime_error& e) {
          first = e.what();
        }
        const std::vector<weft::NodeOutcome> outcomes = run.outcomes();
        REQUIRE(outcomes.size() == dag.n);
        bool first_is_a_failure = false;
        for (std::size_t i = 0; i < dag.n; ++i) {
          INFO("target " << i);
          const weft::NodeOutcome& o = outcomes[i];
          CHECK(!o.start.has_value());  // times were not asked for
          if (expected.cause[i] != kNone) {
            CHECK(build->executions[i].load() == 0);
            CHECK(o.state == weft::NodeState::Skipped);
            REQUIRE(o.failed_ancestor.has_value());
            CHECK(o.failed_ancestor->index() == expected.cause[i]);
            CHECK(outcomes[o.failed_ancestor->index()].state == weft::NodeState::Failed);
            CHECK(!o.error);
            continue;
          }
          CHECK(build->executions[i].load() == executions_per_run(i));
          CHECK(!o.failed_ancestor.has_value());
          if (expected.failed[i]) {
            CHECK(o.state == weft::NodeState::Failed);
            REQUIRE(o.error);
            CHECK(what_of(o.error) == target_name(i) + " failed");
            if (first == target_name(i) + " failed") first_is_a_failure = true;
          } else {
            CHECK(o.state == weft::NodeState::Ran);
            CHECK(!o.error);
          }
          CHECK(run.outcome(build->nodes[i]).state == o.state);
        }
        CHECK(first_is_a_failure);
        const weft::RunStats stats = run.stats();
        CHECK(stats.exceptions == failures);
        CHECK(stats.skipped == skipped_executions);
        CHECK(skipped_targets < dag.n);
      }
    }
  });
}

TEST_CASE("CancelRun with outcomes: the failed node, then every node not started is cancelled") {
  for_each_graph_worker_count([&](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const BuildDag dag(200, 7);
    auto build = make_build(dag);
    weft::Run run = build->graph.run(pool, weft::RunOptions{.record_outcomes = true});
    await_or_die(run, "cancel run", patience(60));
    CHECK_THROWS_AS((void)run.wait(), std::runtime_error);
    const std::vector<weft::NodeOutcome> outcomes = run.outcomes();
    std::size_t failed = 0;
    for (std::size_t i = 0; i < dag.n; ++i) {
      INFO("target " << i);
      const weft::NodeOutcome& o = outcomes[i];
      CHECK(o.state != weft::NodeState::Skipped);  // KeepGoing only
      CHECK(o.state != weft::NodeState::NotRun);   // no task was lost
      CHECK(!o.failed_ancestor.has_value());
      const int ran = build->executions[i].load();
      switch (o.state) {
        case weft::NodeState::Failed:
          ++failed;
          CHECK(dag.throws[i]);
          CHECK(what_of(o.error) == target_name(i) + " failed");
          break;
        case weft::NodeState::Ran:
          CHECK(ran == executions_per_run(i));
          break;
        case weft::NodeState::Cancelled:
          CHECK(ran <= executions_per_run(i));  // a subflow's body may have run, its child not
          break;
        default:
          FAIL("unexpected state");
      }
      // No node runs after a failed predecessor: the failure cancelled the run before it could start.
      for (const std::uint32_t p : dag.preds[i])
        if (outcomes[p].state == weft::NodeState::Failed) CHECK(o.state == weft::NodeState::Cancelled);
    }
    CHECK(failed >= 1);
    CHECK(failed == run.stats().exceptions);
  });
}

// Blocks the only worker of a one-worker pool until released, so that a run can be cancelled before it starts.
struct Blocker {
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  void hold(weft::Pool& pool) {
    pool.post([this] {
      started.store(true);
      while (!release.load()) std::this_thread::yield();
    });
    while (!started.load()) std::this_thread::yield();
  }
};

TEST_CASE("Run::cancel() cancels a KeepGoing run: every node not started is Cancelled") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  const Watchdog watchdog("keep going cancel", patience(60));
  weft::TaskGraph g;
  std::atomic<int> ran{0};
  std::vector<weft::Node> nodes;
  for (int i = 0; i < 6; ++i) nodes.push_back(g.add_node([&] { ran.fetch_add(1); }));
  g.add_edge(nodes[0], nodes[1]);
  g.add_edge(nodes[1], nodes[2]);
  g.add_edge(nodes[3], nodes[4]);
  Blocker blocker;
  blocker.hold(pool);
  weft::Run run = g.run(pool, weft::RunOptions{.on_error = weft::ErrorPolicy::KeepGoing});
  CHECK_THROWS_WITH_AS((void)run.outcome(nodes[0]), doctest::Contains("not over yet"), std::logic_error);
  run.cancel();
  blocker.release.store(true);
  CHECK(run.wait() == weft::RunStatus::Cancelled);
  CHECK(ran.load() == 0);
  for (const weft::Node n : nodes) CHECK(run.outcome(n).state == weft::NodeState::Cancelled);
  CHECK(run.stats().skipped == nodes.size());
}

TEST_CASE("KeepGoing: a failing subflow child fails its node; its body's siblings and independent nodes run") {
  for_each_graph_worker_count([&](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> children{0};
    std::atomic<int> after{0};
    std::atomic<int> other{0};
    auto parent = g.add_node(
        [&](weft::Subflow& sf) {
          for (int i = 0; i < 8; ++i) {
            sf.spawn([&, i](weft::Subflow& inner) {
              children.fetch_add(1);
              inner.spawn([i] {
                if (i == 3) throw std::runtime_error("grandchild 3");
              });
            });
          }
        },
        {.name = "parent"});
    auto next = g.add_node([&] { after.fetch_add(1); }, {.name = "next"});
    auto independent = g.add_node([&] { other.fetch_add(1); }, {.name = "independent"});
    g.add_edge(parent, next);
    weft::Run run = g.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing});
    await_or_die(run, "subflow keep going", patience(60));
    CHECK_THROWS_WITH_AS((void)run.wait(), "grandchild 3", std::runtime_error);
    CHECK(children.load() == 8);
    CHECK(after.load() == 0);
    CHECK(other.load() == 1);
    CHECK(run.outcome(parent).state == weft::NodeState::Failed);
    CHECK(what_of(run.outcome(parent).error) == "grandchild 3");
    CHECK(run.outcome(next).state == weft::NodeState::Skipped);
    CHECK(run.outcome(next).failed_ancestor == parent);
    CHECK(run.outcome(independent).state == weft::NodeState::Ran);
  });
}

// A multi-token node whose first token waits (inside the run) until `until(stats)` holds: the inbox of capacity
// 1 then overflows for certain, whatever the scheduling, since the producer never waits under Drop or Fail.
struct OverflowCase {
  std::atomic<weft::Run*> run{nullptr};
  std::atomic<bool> first{true};
  std::atomic<int> executed{0};
};

template <class Until>
void wait_first_token(OverflowCase& c, Until until) {
  c.executed.fetch_add(1);
  if (!c.first.exchange(false)) return;
  weft::Run* run = nullptr;
  while ((run = c.run.load()) == nullptr) std::this_thread::yield();
  while (!until(run->stats())) std::this_thread::yield();
}

TEST_CASE("multi-token outcomes: Overflow::Drop gives Dropped (successors run), Overflow::Fail gives Failed") {
  for_each_graph_worker_count([&](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kTokens = 40;
    SUBCASE("Drop") {
      weft::TaskGraph g;
      OverflowCase c;
      std::atomic<int> after{0};
      auto dropping = g.add_node(
          [&] { wait_first_token(c, [](const weft::RunStats& s) { return s.dropped >= kTokens - 2; }); },
          {.name = "dropping", .concurrency = 1, .capacity = 1, .overflow = weft::Overflow::Drop, .tokens = kTokens});
      auto next = g.add_node([&] { after.fetch_add(1); });
      auto full = g.add_node([] {}, {.name = "full", .tokens = 5});
      g.add_edge(dropping, next);
      weft::Run run = g.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing, .record_times = true});
      c.run.store(&run);
      await_or_die(run, "drop", patience(60));
      CHECK(run.wait() == weft::RunStatus::Completed);
      const weft::RunStats stats = run.stats();
      CHECK(stats.dropped_by_node[dropping.index()] + static_cast<std::uint64_t>(c.executed.load()) == kTokens);
      CHECK(run.outcome(dropping).state == weft::NodeState::Dropped);
      CHECK(run.outcome(full).state == weft::NodeState::Ran);
      CHECK(run.outcome(next).state == weft::NodeState::Ran);
      CHECK(after.load() == 1);
      REQUIRE(run.outcome(dropping).start.has_value());
      CHECK(*run.outcome(dropping).start <= *run.outcome(dropping).end);
    }
    SUBCASE("Fail, KeepGoing") {
      weft::TaskGraph g;
      OverflowCase c;
      std::atomic<int> after{0};
      auto failing = g.add_node(
          [&] { wait_first_token(c, [](const weft::RunStats& s) { return s.skipped >= 1; }); },
          {.name = "failing", .concurrency = 1, .capacity = 1, .overflow = weft::Overflow::Fail, .tokens = kTokens});
      auto next = g.add_node([&] { after.fetch_add(1); });
      auto beside = g.add_node([&] { after.fetch_add(10); });
      g.add_edge(failing, next);
      weft::Run run = g.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing});
      c.run.store(&run);
      await_or_die(run, "fail", patience(60));
      CHECK_THROWS_WITH_AS((void)run.wait(), doctest::Contains("its descendants are skipped"), weft::inbox_full);
      const weft::NodeOutcome o = run.outcome(failing);
      CHECK(o.state == weft::NodeState::Failed);
      CHECK(contains(what_of(o.error), "'failing' found its inbox full"));
      CHECK(run.outcome(next).state == weft::NodeState::Skipped);
      CHECK(run.outcome(next).failed_ancestor == failing);
      CHECK(run.outcome(beside).state == weft::NodeState::Ran);
      CHECK(after.load() == 10);
      CHECK(run.stats().exceptions == 0);  // an inbox overflow is no exception of a body
    }
    SUBCASE("a token throws: Failed; the node's other tokens still run under KeepGoing") {
      weft::TaskGraph g;
      std::atomic<int> ran{0};
      auto tokens = g.add_node(
          [&](std::size_t token) {
            ran.fetch_add(1);
            if (token % 10 == 3) throw std::runtime_error("token " + std::to_string(token));
          },
          {.name = "tokens", .concurrency = 2, .tokens = kTokens});
      auto next = g.add_node([] {});
      g.add_edge(tokens, next);
      weft::Run run = g.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing});
      await_or_die(run, "token throws", patience(60));
      CHECK_THROWS_AS((void)run.wait(), std::runtime_error);
      CHECK(ran.load() == static_cast<int>(kTokens));
      CHECK(run.stats().exceptions == 4);
      CHECK(run.outcome(tokens).state == weft::NodeState::Failed);
      CHECK(contains(what_of(run.outcome(tokens).error), "token "));
      CHECK(run.outcome(next).state == weft::NodeState::Skipped);
    }
  });
}

TEST_CASE("record_times: start <= end, and a successor starts after its predecessor ended") {
  for_each_graph_worker_count([&](unsigned workers) {
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const BuildDag dag(120, 11);
    auto build = make_build(dag);
    weft::Run run = build->graph.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing, .record_times = true});
    await_or_die(run, "times", patience(60));
    CHECK_THROWS((void)run.wait());
    const std::vector<weft::NodeOutcome> outcomes = run.outcomes();
    for (std::size_t i = 0; i < dag.n; ++i) {
      INFO("target " << i);
      const weft::NodeOutcome& o = outcomes[i];
      const bool started = o.state == weft::NodeState::Ran || o.state == weft::NodeState::Failed;
      CHECK(o.start.has_value() == started);
      CHECK(o.end.has_value() == started);
      if (!started) continue;
      CHECK(*o.start <= *o.end);
      for (const std::uint32_t p : dag.preds[i]) {
        REQUIRE(outcomes[p].end.has_value());
        CHECK(*outcomes[p].end <= *o.start);
      }
    }
  });
}

TEST_CASE("record_outcomes alone: every node Ran; the default run(pool) records nothing") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("record outcomes", patience(60));
  weft::TaskGraph g;
  auto a = g.add_node([] {});
  auto b = g.add_node([](weft::Subflow& sf) { sf.spawn([] {}); });
  auto c = g.add_node([] {}, {.tokens = 4});
  g.add_edges(a, {b, c});
  {
    weft::Run run = g.run(pool, weft::RunOptions{.record_outcomes = true});
    CHECK(run.wait() == weft::RunStatus::Completed);
    for (const weft::Node n : {a, b, c}) {
      CHECK(run.outcome(n).state == weft::NodeState::Ran);
      CHECK(!run.outcome(n).start.has_value());
    }
  }
  weft::Run plain = g.run(pool);
  CHECK(plain.wait() == weft::RunStatus::Completed);
  CHECK_THROWS_WITH_AS((void)plain.outcome(a), doctest::Contains("RunOptions{.record_outcomes = true}"),
                       std::logic_error);
  CHECK_THROWS_WITH_AS((void)plain.outcomes(), doctest::Contains("weft::Run::outcomes: this run did not record"),
                       std::logic_error);
  weft::Run defaults = g.run(pool, weft::RunOptions{});
  CHECK(defaults.wait() == weft::RunStatus::Completed);
  CHECK_THROWS_AS((void)defaults.outcome(a), std::logic_error);
}

TEST_CASE("bad input: a node of another graph, an empty handle, an ErrorPolicy out of range, an empty Run") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("bad input", patience(60));
  weft::TaskGraph g;
  auto a = g.add_node([] {});
  weft::TaskGraph other;
  (void)other.add_node([] {});
  auto foreign = other.add_node([] {});
  weft::Run run = g.run(pool, {.record_outcomes = true});
  (void)run.wait();
  CHECK_THROWS_WITH_AS((void)run.outcome(foreign),
                       "weft::Run::outcome(node): `node` is node 1 of another graph, "
                       "not a node of this run's graph",
                       weft::invalid_graph);
  CHECK_THROWS_WITH_AS((void)run.outcome(weft::Node{}), doctest::Contains("an empty weft::Node"), weft::invalid_graph);
  // A node added after the run is not one of the run's.
  auto later = g.add_node([] {});
  CHECK_THROWS_WITH_AS((void)run.outcome(later), doctest::Contains("past the 1 nodes"), weft::invalid_graph);
  CHECK(run.outcome(a).state == weft::NodeState::Ran);
  CHECK_THROWS_WITH_AS((void)g.run(pool, {.on_error = static_cast<weft::ErrorPolicy>(7)}),
                       "weft::TaskGraph::run: RunOptions::on_error = 7: not a weft::ErrorPolicy (CancelRun or "
                       "KeepGoing)",
                       weft::invalid_option);
  CHECK(!g.running());  // the refused run left the graph idle
  weft::Run empty;
  CHECK_THROWS_WITH_AS((void)empty.outcome(a), doctest::Contains("weft::Run::outcome: the run handle is empty"),
                       std::logic_error);
  // Outcomes outlive the graph.
  weft::Run kept;
  weft::Node kept_node;
  {
    weft::TaskGraph gone;
    kept_node = gone.add_node([] { throw std::runtime_error("gone"); });
    kept = gone.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing});
    CHECK_THROWS((void)kept.wait());
  }
  CHECK(kept.outcome(kept_node).state == weft::NodeState::Failed);
}

}  // namespace
