// The spin groups (scheduler/topology/spin_groups.hpp) on synthetic machines: one group per NUMA node with
// workers, each bounded to half its workers (at least one); none where a worker's node is unknown. Then a pinned
// pool on this machine: its idle workers never spin more at once than their group's bound, and every task runs
// exactly once.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/pool_access.hpp"
#include "scheduler/topology/spin_groups.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/watchdog.hpp"
#include "tests/topology/synthetic.hpp"
#include "weft/pool.hpp"
#include "weft/topology.hpp"

TEST_CASE("spin groups on two packages of two nodes: one group per node, half its workers") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
  const auto placement = weft::placement(machine, {.pinning = weft::Pinning::Cores}, 128);
  const auto groups = weft::topology::spin_groups(machine, placement);
  REQUIRE(groups.group_of.size() == 128);
  CHECK(groups.bound == std::vector<unsigned>{16, 16, 16, 16});
  for (unsigned w = 0; w < 128; ++w) {
    // Node n holds CPUs 32n .. 32n + 31; the groups are the nodes in order.
    CHECK(groups.group_of[w] == placement[w].front() / 32);
  }
  // Fewer workers than the machine: only the nodes that have some form groups, renumbered densely.
  const auto spread = weft::placement(machine, {.pinning = weft::Pinning::Compact}, 40);
  const auto few = weft::topology::spin_groups(machine, spread);
  CHECK(few.bound == std::vector<unsigned>{16, 4});  // 32 workers fill node 0, 8 go to node 1
}

TEST_CASE("spin groups on eight one-node packages, and of one or three workers") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:8 numa:1 core:24 pu:2");
  const auto placement = weft::placement(machine, {.pinning = weft::Pinning::Spread}, 24);
  const auto groups = weft::topology::spin_groups(machine, placement);
  CHECK(groups.bound == std::vector<unsigned>(8, 1));  // three workers a node: one spins
  const auto one = weft::topology::spin_groups(machine, weft::placement(machine, {.pinning = weft::Pinning::Cores}, 1));
  CHECK(one.bound == std::vector<unsigned>{1});
}

TEST_CASE("no spin groups where a worker's node is unknown") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
  // Unpinned workers: no CPUs.
  CHECK(weft::topology::spin_groups(machine, std::vector<std::vector<unsigned>>(4)).bound.empty());
  // A worker that may run on CPUs of two nodes (0 on node 0, 40 on node 1).
  const std::vector<std::vector<unsigned>> across{{0}, {0, 40}};
  CHECK(weft::topology::spin_groups(machine, across).group_of.empty());
  // A CPU the machine does not have.
  const std::vector<std::vector<unsigned>> unknown{{0}, {999}};
  CHECK(weft::topology::spin_groups(machine, unknown).bound.empty());
}

// A pinned pool of eight workers on this machine's node(s): bursts of short tasks from outside, with pauses in
// which the workers run dry and search. Never more spinners in a group than its bound; every task once.
TEST_CASE("a pinned pool's idle workers spin no more than their group's bound") {
  const weft::test::Watchdog watchdog("spin quota", weft::test::patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 8, .pinning = weft::Pinning::OnePerCpu}};
  const weft::engine::SpinQuota& quota = weft::detail::PoolAccess::engine(pool).spin_quota();
  if (!quota.bounded()) {
    MESSAGE("skipped: weft knows no node of this machine's CPUs, so the pool bounds no spinners");
    return;
  }
  INFO(pool.describe());
  CHECK(pool.describe().find("idle spinners at most") != std::string::npos);
  const int bursts = weft::test::reduced_runs() ? 40 : 200;
  constexpr int kPerBurst = 64;
  std::vector<std::atomic<int>> runs(static_cast<std::size_t>(bursts) * kPerBurst);
  for (int b = 0; b < bursts; ++b) {
    for (int i = 0; i < kPerBurst; ++i) {
      const std::size_t index = static_cast<std::size_t>(b) * kPerBurst + static_cast<std::size_t>(i);
      pool.post([&runs, index] { runs[index].fetch_add(1, std::memory_order_relaxed); });
    }
    // Long enough for the workers to run dry and search (spin_before_park is 50 µs), now and then to park.
    std::this_thread::sleep_for(std::chrono::microseconds(b % 4 == 0 ? 500 : 30));
  }
  pool.wait_idle();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    INFO("task " << i);
    REQUIRE(runs[i].load() == 1);
  }
  unsigned seen = 0;
  for (unsigned g = 0; g < quota.groups(); ++g) {
    INFO("group " << g << ": bound " << quota.bound(g) << ", peak " << quota.peak(g));
    CHECK(quota.peak(g) <= quota.bound(g));
    seen += quota.peak(g);
  }
  CHECK(seen >= 1);  // some worker did spin between bursts
}
