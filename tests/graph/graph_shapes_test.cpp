// Big shapes: chains of 100,000 nodes (no recursion per edge may blow the stack, also when waited on from a
// worker), a fan-out/fan-in of 100,000, a dense layered graph where each node sums its predecessors, a binary
// tree out and back, a chain of nodes with tokens through tiny inboxes, and claimed ranges (a join group's
// members, the roots: graph/claim_cursor.hpp): few tasks on a busy pool, every idle worker finds a way in.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("a chain of 100,000 nodes runs in order, twice, from outside and from a worker") {
  const std::size_t length = stress_count(100'000);
  for_each_graph_worker_count([length](unsigned workers) {
    const Watchdog watchdog(named("chain 100000", workers), patience(300));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::size_t next = 0;  // plain: only the chain orders the increments
    std::size_t out_of_order = 0;
    weft::Node last;
    for (std::size_t i = 0; i < length; ++i) {
      weft::Node node = g.add_node([&next, &out_of_order, i] {
        if (next != i) ++out_of_order;
        next = i + 1;
      });
      if (i > 0) g.add_edge(last, node);
      last = node;
    }
    for (int round = 0; round < 2; ++round) {
      next = 0;
      weft::Run run = g.run(pool);
      await_or_die(run, named("chain 100000", workers), patience(120));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(next == length);
      CHECK(out_of_order == 0);
    }
    next = 0;
    auto waited = pool.submit_with(weft::TaskOptions{.affinity = 0U}, [&] { return g.run(pool).wait(); });
    CHECK(waited.get() == weft::RunStatus::Completed);
    CHECK(next == length);
  });
}

TEST_CASE("fan-out to 100,000 nodes and fan-in to one") {
  const std::size_t width = stress_count(100'000);
  for_each_graph_worker_count([width](unsigned workers) {
    const Watchdog watchdog(named("fan 100000", workers), patience(300));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::vector<std::uint32_t> slots(width, 0);  // plain: each leaf writes its own, the join reads all
    std::uint64_t source_value = 0, total = 0;
    auto source = g.add_node([&] { source_value = 3; });
    auto join = g.add_node([&] {
      total = 0;
      for (const std::uint32_t s : slots) total += s;
    });
    for (std::size_t i = 0; i < width; ++i) {
      auto leaf = g.add_node([&slots, &source_value, i] { slots[i] = static_cast<std::uint32_t>(source_value); });
      g.add_edge(source, leaf);
      g.add_edge(leaf, join);
    }
    for (int round = 0; round < 2; ++round) {
      slots.assign(width, 0);
      weft::Run run = g.run(pool);
      await_or_die(run, named("fan 100000", workers), patience(120));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(total == 3 * width);
    }
  });
}

TEST_CASE("a dense layered graph: each node sums its predecessors' values") {
  const std::size_t width = reduced_runs() ? 30 : 100, depth = reduced_runs() ? 30 : 100;
  for_each_graph_worker_count([=](unsigned workers) {
    const Watchdog watchdog(named("layered", workers), patience(300));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    // value[l][i] = i + 1 on layer 0, else (sum of layer l-1) mod 2^64 + i: plain, ordered by the edges.
    std::vector<std::vector<std::uint64_t>> value(depth, std::vector<std::uint64_t>(width, 0));
    std::vector<std::vector<weft::Node>> nodes(depth);
    for (std::size_t l = 0; l < depth; ++l) {
      for (std::size_t i = 0; i < width; ++i) {
        nodes[l].push_back(g.add_node([&value, l, i, width] {
          if (l == 0) {
            value[0][i] = i + 1;
            return;
          }
          std::uint64_t sum = 0;
          for (std::size_t j = 0; j < width; ++j) sum += value[l - 1][j];
          value[l][i] = sum + i;
        }));
        if (l > 0) {
          for (std::size_t j = 0; j < width; ++j) g.add_edge(nodes[l - 1][j], nodes[l].back());
        }
      }
    }
    CHECK(g.edge_count() == (depth - 1) * width * width);
    g.compile();  // each layer after the first is one join group: the count is still of edges
    CHECK(g.edge_count() == (depth - 1) * width * width);
    // The sequential reference.
    std::vector<std::uint64_t> ref(width), prev(width);
    for (std::size_t i = 0; i < width; ++i) prev[i] = i + 1;
    for (std::size_t l = 1; l < depth; ++l) {
      std::uint64_t sum = 0;
      for (const std::uint64_t v : prev) sum += v;
      for (std::size_t i = 0; i < width; ++i) ref[i] = sum + i;
      prev = ref;
    }
    for (int round = 0; round < 2; ++round) {
      weft::Run run = g.run(pool);
      await_or_die(run, named("layered", workers), patience(120));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(value[depth - 1] == prev);
    }
  });
}

// Every worker's executed count, summed.
std::uint64_t tasks_executed(const weft::Pool& pool) {
  std::uint64_t sum = 0;
  for (const weft::WorkerStats& worker : pool.stats().workers) sum += worker.executed;
  return sum;
}

// Node bodies that meet: each one, once started, waits (until a deadline shared by the round, so that a failure
// is a count and not a hang) until `wanted` of them are running at once. `met` counts those that saw it.
class Rendezvous {
 public:
  explicit Rendezvous(int wanted) : wanted_(wanted) {}
  void start_round() {
    running_.store(0);
    met_.store(0);
    deadline_ = std::chrono::steady_clock::now() + patience(20);
  }
  void arrive() {
    running_.fetch_add(1);
    while (running_.load() < wanted_ && std::chrono::steady_clock::now() < deadline_) std::this_thread::yield();
    if (running_.load() >= wanted_) met_.fetch_add(1);
    // Stays counted: a body that met the others must not make a later one miss them.
  }
  [[nodiscard]] int met() const { return met_.load(); }

 private:
  const int wanted_;
  std::atomic<int> running_{0};
  std::atomic<int> met_{0};
  std::chrono::steady_clock::time_point deadline_{};
};

// A graph of two roots and `members` nodes after both (one join group), each member a rendezvous of `wanted`.
void meet_in_a_group(unsigned workers, int members, int wanted) {
  INFO(members << " members on " << workers << " workers, " << wanted << " at once");
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  weft::TaskGraph g;
  Rendezvous rendezvous(wanted);
  const weft::Node p1 = g.add_node([] {});
  const weft::Node p2 = g.add_node([] {});
  for (int i = 0; i < members; ++i) {
    const weft::Node member = g.add_node([&rendezvous] { rendezvous.arrive(); });
    g.add_edge(p1, member);
    g.add_edge(p2, member);
  }
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    rendezvous.start_round();
    weft::Run run = g.run(pool);
    await_or_die(run, "members meeting", patience(60));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(rendezvous.met() == members);
  }
}

// The same with `roots` independent nodes, the run started and waited for on a worker.
void meet_as_roots(unsigned workers, int roots, int wanted) {
  INFO(roots << " roots on " << workers << " workers, " << wanted << " at once");
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  weft::TaskGraph g;
  Rendezvous rendezvous(wanted);
  for (int i = 0; i < roots; ++i) (void)g.add_node([&rendezvous] { rendezvous.arrive(); });
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    rendezvous.start_round();
    std::atomic<bool> completed{false};
    pool.post([&] { completed.store(g.run(pool).wait() == weft::RunStatus::Completed); });
    pool.wait_idle();
    CHECK(completed.load());
    CHECK(rendezvous.met() == roots);
  }
}

TEST_CASE("a join group of 10,000 members runs in a handful of pool tasks when no worker is idle") {
  // One worker, and the run started and waited for from a task on it: no worker looks for work while the group
  // runs, so its members are claimed a share at a time by one or two tasks (graph/claim_cursor.hpp), not
  // posted as 10,000 tasks.
  const Watchdog watchdog("a join group on a busy pool", patience(60));
  constexpr std::size_t kMembers = 10'000;
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskGraph g;
  std::atomic<int> predecessors_done{0}, expected_done{0}, early{0};
  std::vector<int> ran(kMembers, 0);  // each slot written by one member only, read after the run
  const weft::Node p1 = g.add_node([&] { predecessors_done.fetch_add(1); });
  const weft::Node p2 = g.add_node([&] { predecessors_done.fetch_add(1); });
  for (std::size_t i = 0; i < kMembers; ++i) {
    const weft::Node member = g.add_node([&, i] {
      if (predecessors_done.load() != expected_done.load()) early.fetch_add(1);
      ++ran[i];
    });
    g.add_edge(p1, member);
    g.add_edge(p2, member);
  }
  for (int round = 1; round <= 2; ++round) {
    INFO("round " << round);
    expected_done.store(2 * round);
    const std::uint64_t before = tasks_executed(pool);
    std::atomic<bool> completed{false};
    pool.post([&] { completed.store(g.run(pool).wait() == weft::RunStatus::Completed); });
    pool.wait_idle();
    CHECK(completed.load());
    CHECK(early.load() == 0);
    CHECK(std::count(ran.begin(), ran.end(), round) == static_cast<std::ptrdiff_t>(kMembers));
    // The posted task, the roots' tasks and the members' tasks; one post per member would be over 10,000.
    CHECK(tasks_executed(pool) - before <= 8);
  }
}

TEST_CASE("10,000 roots started from a worker run in a handful of pool tasks when no worker is idle") {
  const Watchdog watchdog("roots on a busy pool", patience(60));
  constexpr std::size_t kRoots = 10'000;
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskGraph g;
  std::vector<int> ran(kRoots, 0);
  for (std::size_t i = 0; i < kRoots; ++i) (void)g.add_node([&ran, i] { ++ran[i]; });
  for (int round = 1; round <= 2; ++round) {
    INFO("round " << round);
    const std::uint64_t before = tasks_executed(pool);
    std::atomic<bool> completed{false};
    pool.post([&] { completed.store(g.run(pool).wait() == weft::RunStatus::Completed); });
    pool.wait_idle();
    CHECK(completed.load());
    CHECK(std::count(ran.begin(), ran.end(), round) == static_cast<std::ptrdiff_t>(kRoots));
    // The posted task and the roots' tasks; one task per root would be over 10,000.
    CHECK(tasks_executed(pool) - before <= 8);
  }
}

TEST_CASE("a join group's members, or roots, are claimed by every idle worker: a claim holds back little") {
  // Each node waits until `wanted` nodes run at once. Four on four workers: every claim must be of one node
  // and every worker must find a task of the range while the others wait (a range one task held back whole
  // would run them one after another). 64 on four: the first claims take several nodes, but each leaves most
  // of the range claimable, so four workers still get one each.
  const Watchdog watchdog("claimed ranges meet", patience(600));
  meet_in_a_group(4, 4, 4);
  meet_in_a_group(4, 64, 4);
  meet_as_roots(4, 4, 4);
  meet_as_roots(4, 64, 4);
}

TEST_CASE("a binary tree out to 2^16 leaves and back to one root") {
  const unsigned levels = reduced_runs() ? 13 : 16;
  for_each_graph_worker_count([levels](unsigned workers) {
    const Watchdog watchdog(named("tree", workers), patience(300));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    const std::size_t leaves = std::size_t{1} << levels;
    // Heap layout: node k has children 2k+1 and 2k+2. `down` fans out, `up` sums back (plain, per node).
    const std::size_t count = 2 * leaves - 1;
    std::vector<std::uint64_t> down(count, 0), up(count, 0);
    std::vector<weft::Node> dn(count), un(count);
    for (std::size_t k = 0; k < count; ++k) {
      dn[k] = g.add_node([&down, k] { down[k] = k == 0 ? 1 : down[(k - 1) / 2] + 1; });
      if (k > 0) g.add_edge(dn[(k - 1) / 2], dn[k]);
    }
    for (std::size_t k = count; k-- > 0;) {
      const bool leaf = 2 * k + 1 >= count;
      un[k] = g.add_node([&down, &up, k, leaf] { up[k] = leaf ? down[k] : up[2 * k + 1] + up[2 * k + 2]; });
      if (leaf) {
        g.add_edge(dn[k], un[k]);
      } else {
        g.add_edge(un[2 * k + 1], un[k]);
        g.add_edge(un[2 * k + 2], un[k]);
      }
    }
    weft::Run run = g.run(pool);
    await_or_die(run, named("tree", workers), patience(120));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(up[0] == leaves * (levels + 1));  // every leaf is at depth `levels`, counted from 1
  });
}

TEST_CASE("a chain of 10,000 nodes with 3 tokens each through inboxes of one") {
  const std::size_t length = stress_count(weft::test::reduced_runs() ? 2'000 : 10'000);
  for_each_graph_worker_count([length](unsigned workers) {
    const Watchdog watchdog(named("token chain", workers), patience(300));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    auto ran = std::make_unique<std::atomic<std::uint8_t>[]>(length);
    std::size_t finished_nodes = 0;  // plain: the last token of a node and the successor are ordered by it
    std::atomic<std::size_t> violations{0};
    weft::Node last;
    for (std::size_t i = 0; i < length; ++i) {
      weft::Node node = g.add_node(
          [&, i](std::size_t) {
            if (ran[i].fetch_add(1) == 2) ++finished_nodes;  // concurrency 1: tokens are serialised
            if (i > 0 && ran[i - 1].load() != 3) violations.fetch_add(1);
          },
          weft::NodeOptions{.concurrency = 1, .capacity = 1, .overflow = weft::Overflow::Block, .tokens = 3});
      if (i > 0) g.add_edge(last, node);
      last = node;
    }
    weft::Run run = g.run(pool);
    await_or_die(run, named("token chain", workers), patience(120));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(finished_nodes == length);
    CHECK(violations.load() == 0);
  });
}

}  // namespace
