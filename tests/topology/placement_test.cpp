// weft::placement: each policy's CPU per worker on synthetic machines, against hand-written expectations, and
// every refusal naming the option and its value.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/topology/synthetic.hpp"
#include "weft/errors.hpp"
#include "weft/topology.hpp"

namespace {

// One CPU per worker, as placement gives it for a pinning.
std::vector<unsigned> pinned(const weft::Topology& topology, const weft::PoolOptions& options, unsigned workers) {
  std::vector<unsigned> out;
  for (const auto& cpus : weft::placement(topology, options, workers)) {
    REQUIRE(cpus.size() == 1);
    out.push_back(cpus.front());
  }
  return out;
}

std::vector<unsigned> range(unsigned first, unsigned last_inclusive, unsigned step = 1) {
  std::vector<unsigned> out;
  for (unsigned cpu = first; cpu <= last_inclusive; cpu += step) out.push_back(cpu);
  return out;
}

std::vector<unsigned> join(std::initializer_list<std::vector<unsigned>> parts) {
  std::vector<unsigned> out;
  for (const auto& part : parts) out.insert(out.end(), part.begin(), part.end());
  return out;
}

std::string placement_error(const weft::Topology& topology, const weft::PoolOptions& options) {
  try {
    (void)weft::placement(topology, options, 4);
  } catch (const weft::invalid_option& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace

// "pack:2 numa:2 core:16 pu:2": CPU c is thread c % 2 of core c / 2, on node c / 32, package c / 64.
TEST_CASE("placement on two packages of two nodes of 16 two-thread cores") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
  using weft::Pinning;

  // Cores: every core's first thread, then the second ones; more workers than CPUs start again.
  CHECK(pinned(machine, {.pinning = Pinning::Cores}, 130) == join({range(0, 126, 2), range(1, 127, 2), {0, 2}}));
  // Compact: node 0's cores, then their siblings, then node 1...
  CHECK(pinned(machine, {.pinning = Pinning::Compact}, 128) ==
        join({range(0, 30, 2), range(1, 31, 2), range(32, 62, 2), range(33, 63, 2), range(64, 94, 2), range(65, 95, 2),
              range(96, 126, 2), range(97, 127, 2)}));
  CHECK(pinned(machine, {.pinning = Pinning::Compact}, 3) == std::vector<unsigned>{0, 2, 4});
  // Spread: one per node in turn, each node's CPUs in Compact's order.
  CHECK(pinned(machine, {.pinning = Pinning::Spread}, 10) ==
        std::vector<unsigned>{0, 32, 64, 96, 2, 34, 66, 98, 4, 36});
  const auto spread = pinned(machine, {.pinning = Pinning::Spread}, 128);
  CHECK(spread[64] == 1);  // node 0's sixteen cores used, then its siblings
  CHECK(spread[127] == 127);
  // OnePerCpu keeps its meaning: the i-th CPU.
  CHECK(pinned(machine, {.pinning = Pinning::OnePerCpu}, 5) == std::vector<unsigned>{0, 1, 2, 3, 4});
  CHECK(pinned(machine, {.pinning = Pinning::CpuList, .cpus = {7, 9}}, 3) == std::vector<unsigned>{7, 9, 7});

  // One node's pool: its CPUs only, in the policy's order.
  CHECK(pinned(machine, {.pinning = Pinning::Cores, .numa_node = 2}, 32) == join({range(64, 94, 2), range(65, 95, 2)}));
  CHECK(pinned(machine, {.pinning = Pinning::Spread, .numa_node = 1}, 3) == std::vector<unsigned>{32, 34, 36});
  CHECK(pinned(machine, {.pinning = Pinning::OnePerCpu, .numa_node = 3}, 2) == std::vector<unsigned>{96, 97});
  const auto floating = weft::placement(machine, {.numa_node = 1}, 2);
  REQUIRE(floating.size() == 2);
  CHECK(floating[0] == range(32, 63));
  CHECK(floating[1] == range(32, 63));
  // No pinning, no node: anywhere.
  CHECK(weft::placement(machine, {}, 3) == std::vector<std::vector<unsigned>>(3));
}

// "pack:8 numa:1 core:24 pu:2": node n holds CPUs 48n..48n+47, core c CPUs 2c and 2c+1.
TEST_CASE("placement on eight packages of one node of 24 two-thread cores") {
  if (!weft::test::synthetic_or_skip()) return;
  const auto machine = weft::Topology::synthetic("pack:8 numa:1 core:24 pu:2");
  using weft::Pinning;
  CHECK(pinned(machine, {.pinning = Pinning::Spread}, 9) ==
        std::vector<unsigned>{0, 48, 96, 144, 192, 240, 288, 336, 2});
  CHECK(pinned(machine, {.pinning = Pinning::Compact}, 26) == join({range(0, 46, 2), {1, 3}}));
  const auto cores = pinned(machine, {.pinning = Pinning::Cores}, 384);
  CHECK(std::vector<unsigned>(cores.begin(), cores.begin() + 192) == range(0, 382, 2));
  CHECK(std::vector<unsigned>(cores.begin() + 192, cores.end()) == range(1, 383, 2));
  CHECK(pinned(machine, {.pinning = Pinning::Compact, .numa_node = 7}, 2) == std::vector<unsigned>{336, 338});
}

TEST_CASE("placement on small machines") {
  if (!weft::test::synthetic_or_skip()) return;
  using weft::Pinning;
  // One core of two threads: Cores can only share it.
  const auto one_core = weft::Topology::synthetic("pack:1 numa:1 core:1 pu:2");
  CHECK(pinned(one_core, {.pinning = Pinning::Cores}, 3) == std::vector<unsigned>{0, 1, 0});
  // Two cores of two threads: the cores first.
  const auto small = weft::Topology::synthetic("pack:1 numa:1 core:2 pu:2");
  CHECK(pinned(small, {.pinning = Pinning::Cores}, 4) == std::vector<unsigned>{0, 2, 1, 3});
  CHECK(pinned(small, {.pinning = Pinning::Compact}, 4) == std::vector<unsigned>{0, 2, 1, 3});
  CHECK(pinned(small, {.pinning = Pinning::Spread}, 4) == std::vector<unsigned>{0, 2, 1, 3});
  // Two nodes of two single-thread cores.
  const auto two_nodes = weft::Topology::synthetic("pack:1 numa:2 core:2 pu:1");
  CHECK(pinned(two_nodes, {.pinning = Pinning::Spread}, 4) == std::vector<unsigned>{0, 2, 1, 3});
  CHECK(pinned(two_nodes, {.pinning = Pinning::Compact}, 4) == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(pinned(two_nodes, {.pinning = Pinning::Cores}, 4) == std::vector<unsigned>{0, 1, 2, 3});
}

TEST_CASE("placement on a given machine with unequal nodes") {
  // Node 0: CPUs 0,1 (one core of two threads); node 1: CPUs 2,3,4 (three single-thread cores).
  const weft::Topology machine(std::vector<weft::CpuInfo>{{.cpu = 0, .numa_node = 0, .core = 0},
                                                          {.cpu = 1, .numa_node = 0, .core = 0},
                                                          {.cpu = 2, .numa_node = 1, .core = 2},
                                                          {.cpu = 3, .numa_node = 1, .core = 3},
                                                          {.cpu = 4, .numa_node = 1, .core = 4}});
  using weft::Pinning;
  CHECK(pinned(machine, {.pinning = Pinning::Cores}, 5) == std::vector<unsigned>{0, 2, 3, 4, 1});
  CHECK(pinned(machine, {.pinning = Pinning::Compact}, 5) == std::vector<unsigned>{0, 1, 2, 3, 4});
  // Spread skips node 0 once it has no CPU left.
  CHECK(pinned(machine, {.pinning = Pinning::Spread}, 6) == std::vector<unsigned>{0, 2, 1, 3, 4, 0});
}

TEST_CASE("placement refuses bad input, naming the option and its value") {
  const weft::Topology machine(
      std::vector<weft::CpuInfo>{{.cpu = 0, .numa_node = 0, .core = 0}, {.cpu = 1, .numa_node = 1, .core = 1}});
  using weft::Pinning;
  auto contains = [](const std::string& what, const std::string& part) {
    INFO(what);
    CHECK(what.find(part) != std::string::npos);
  };
  contains(placement_error(machine, {.numa_node = 2}),
           "weft::PoolOptions::numa_node = 2: this machine has 2 NUMA nodes (0..1)");
  contains(placement_error(machine, {.pinning = Pinning::Cores, .numa_node = 7}), "numa_node = 7");
  contains(placement_error(machine, {.pinning = Pinning::CpuList, .cpus = {0}, .numa_node = 0}),
           "numa_node = 0 with pinning = Pinning::CpuList");
  contains(placement_error(machine, {.pinning = Pinning::CpuList}), "cpus is empty");
  contains(placement_error(machine, {.pinning = Pinning::CpuList, .cpus = {5}}), "cpus contains CPU 5");
  contains(placement_error(machine, {.pinning = static_cast<Pinning>(42)}), "pinning = 42: not a weft::Pinning");

  const auto flat = weft::Topology::flat({0, 1});
  for (const Pinning policy : {Pinning::Cores, Pinning::Compact, Pinning::Spread}) {
    const std::string name = policy == Pinning::Cores ? "Cores" : policy == Pinning::Compact ? "Compact" : "Spread";
    contains(placement_error(flat, {.pinning = policy}),
             "weft::PoolOptions::pinning = Pinning::" + name + ": weft knows no cores or NUMA nodes");
  }
  contains(placement_error(flat, {.numa_node = 0}), "numa_node = 0: weft knows no NUMA nodes");
  // What needs no facts works on a flat machine.
  CHECK(pinned(flat, {.pinning = Pinning::OnePerCpu}, 3) == std::vector<unsigned>{0, 1, 0});
  contains(placement_error(weft::Topology::flat({}), {.pinning = Pinning::OnePerCpu}), "no CPU to pin");
}
