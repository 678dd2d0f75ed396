// Each worker's steal victims by distance (scheduler/topology/steal_order.hpp), from the placement on synthetic
// machines: the same core, the same node, then the other nodes nearest first; none where distance tells nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "scheduler/topology/steal_order.hpp"
#include "tests/topology/synthetic.hpp"
#include "weft/topology.hpp"

namespace {

// A worker's tiers, each sorted.
std::vector<std::vector<unsigned>> tiers(const weft::topology::StealOrder& order) {
  std::vector<std::vector<unsigned>> out;
  unsigned begin = 0;
  for (const unsigned end : order.tier_ends) {
    out.emplace_back(order.victims.begin() + begin, order.victims.begin() + end);
    begin = end;
  }
  return out;
}

std::vector<unsigned> workers_on(const std::vector<std::vector<unsigned>>& placement, unsigned first_cpu,
                                 unsigned last_cpu, unsigned except) {
  std::vector<unsigned> out;
  for (unsigned w = 0; w < placement.size(); ++w) {
    if (w != except && placement[w].front() >= first_cpu && placement[w].front() <= last_cpu) out.push_back(w);
  }
  return out;
}

}  // namespace

TEST_CASE("steal order on two packages of two nodes: core, node, package, machine") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
  const auto placement = weft::placement(machine, {.pinning = weft::Pinning::Cores}, 128);
  const auto orders = weft::topology::steal_orders(machine, placement);
  REQUIRE(orders.size() == 128);
  // Worker 0 sits on CPU 0 (core 0, node 0); worker 64 on CPU 1, its sibling. Node 0 is CPUs 0..31, node 1 (same
  // package, distance 20) 32..63, nodes 2 and 3 (the other package, distance 30) 64..127.
  const auto zero = tiers(orders[0]);
  REQUIRE(zero.size() == 4);
  CHECK(zero[0] == std::vector<unsigned>{64});
  CHECK(zero[1] == workers_on(placement, 2, 31, 0));
  CHECK(zero[2] == workers_on(placement, 32, 63, 0));
  CHECK(zero[3] == workers_on(placement, 64, 127, 0));
  // Every worker: every other worker exactly once, tiers by distance from its own seat.
  for (unsigned w = 0; w < 128; ++w) {
    auto all = orders[w].victims;
    std::sort(all.begin(), all.end());
    std::vector<unsigned> expected;
    for (unsigned v = 0; v < 128; ++v) {
      if (v != w) expected.push_back(v);
    }
    CHECK(all == expected);
    const unsigned cpu = placement[w].front();
    const auto mine = tiers(orders[w]);
    REQUIRE(mine.size() == 4);
    CHECK(mine[0] == std::vector<unsigned>{w < 64 ? w + 64 : w - 64});
    const unsigned node = cpu / 32;
    const unsigned sibling_node = node ^ 1U;
    for (const unsigned v : mine[1]) CHECK(placement[v].front() / 32 == node);
    for (const unsigned v : mine[2]) CHECK(placement[v].front() / 32 == sibling_node);
    for (const unsigned v : mine[3]) CHECK(placement[v].front() / 64 != cpu / 64);
  }
}

TEST_CASE("steal order on eight single-node packages with Spread: no sibling tier") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:8 numa:1 core:24 pu:2");
  const auto placement = weft::placement(machine, {.pinning = weft::Pinning::Spread}, 16);
  const auto orders = weft::topology::steal_orders(machine, placement);
  REQUIRE(orders.size() == 16);
  // Worker w on node w % 8: its node-mate is w ^ 8 (on another core of that node), then every other worker.
  for (unsigned w = 0; w < 16; ++w) {
    const auto mine = tiers(orders[w]);
    REQUIRE(mine.size() == 2);
    CHECK(mine[0] == std::vector<unsigned>{w ^ 8U});
    CHECK(mine[1].size() == 14);
  }
}

TEST_CASE("steal order with distances the machine gives") {
  // Three nodes of one single-thread core each; node 0 is nearer node 2 (15) than node 1 (25).
  const weft::Topology machine(std::vector<weft::CpuInfo>{{.cpu = 0, .numa_node = 0, .core = 0},
                                                          {.cpu = 1, .numa_node = 1, .core = 1},
                                                          {.cpu = 2, .numa_node = 2, .core = 2}},
                               {10, 25, 15, 25, 10, 25, 15, 25, 10});
  const auto placement = weft::placement(machine, {.pinning = weft::Pinning::OnePerCpu}, 3);
  const auto orders = weft::topology::steal_orders(machine, placement);
  REQUIRE(orders.size() == 3);
  CHECK(tiers(orders[0]) == std::vector<std::vector<unsigned>>{{2}, {1}});
  CHECK(tiers(orders[1]) == std::vector<std::vector<unsigned>>{{0, 2}});
  CHECK(tiers(orders[2]) == std::vector<std::vector<unsigned>>{{0}, {1}});
}

TEST_CASE("no steal order where distance tells nothing: random victims stay") {
  if (!weft::test::synthetic_or_skip()) return;
  // One node, one worker per core: every victim is as near as the next.
  const auto small = weft::Topology::synthetic("pack:1 numa:1 core:4 pu:2");
  CHECK(weft::topology::steal_orders(small, weft::placement(small, {.pinning = weft::Pinning::Cores}, 4)).empty());
  // Workers not pinned, or on a whole node each.
  const auto machine = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
  CHECK(weft::topology::steal_orders(machine, weft::placement(machine, {}, 8)).empty());
  CHECK(weft::topology::steal_orders(machine, weft::placement(machine, {.numa_node = 1}, 8)).empty());
  // A flat machine, or a lone worker.
  const auto flat = weft::Topology::flat({0, 1, 2, 3});
  CHECK(weft::topology::steal_orders(flat, weft::placement(flat, {.pinning = weft::Pinning::OnePerCpu}, 4)).empty());
  CHECK(weft::topology::steal_orders(machine, weft::placement(machine, {.pinning = weft::Pinning::Cores}, 1)).empty());
  // Two workers on one core (more workers than cores): a tier of their own.
  const auto orders = weft::topology::steal_orders(small, weft::placement(small, {.pinning = weft::Pinning::Cores}, 8));
  REQUIRE(orders.size() == 8);
  CHECK(tiers(orders[0]).front() == std::vector<unsigned>{4});
}
