// weft::Topology: built from hwloc synthetic descriptions (skipped, saying so, in a weft built without hwloc),
// from CpuInfo lists, flat, and the machine's own.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "src/cpu_topology.hpp"
#include "src/os_thread.hpp"
#include "weft/errors.hpp"
#include "weft/topology.hpp"

namespace {

bool synthetic_or_skip() {
  if (weft::Topology::synthetic_available()) return true;
  MESSAGE("skipped: weft was built without hwloc, so Topology::synthetic is not available");
  return false;
}

std::string topology_error(auto&& make) {
  try {
    (void)make();
  } catch (const weft::invalid_option& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a synthetic two-package machine has its packages, nodes, cores and siblings") {
  if (!synthetic_or_skip()) return;
  const auto topology = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
  CHECK(topology.source() == weft::TopologySource::Synthetic);
  CHECK(topology.has_facts());
  REQUIRE(topology.cpus().size() == 128);
  CHECK(topology.packages() == 2);
  CHECK(topology.numa_nodes() == 4);
  CHECK(topology.cores() == 64);
  CHECK(topology.threads_per_core() == 2);
  for (const weft::CpuInfo& cpu : topology.cpus()) {
    CHECK(cpu.core == cpu.cpu / 2);
    CHECK(cpu.smt == cpu.cpu % 2);
    CHECK(cpu.numa_node == cpu.cpu / 32);
    CHECK(cpu.package == cpu.cpu / 64);
  }
  CHECK(topology.node_cpus(1).front() == 32);
  CHECK(topology.node_cpus(1).back() == 63);
  CHECK(topology.node_cpus(4).empty());
  // No distances in the description: derived from the packages.
  CHECK(topology.distance(0, 0) == 10);
  CHECK(topology.distance(0, 1) == 20);
  CHECK(topology.distance(1, 2) == 30);
  CHECK(topology.distance(3, 2) == 20);
  CHECK(topology.distance(0, 4) == 0);
  CHECK(topology.find(127) != nullptr);
  CHECK(topology.find(128) == nullptr);
  CHECK(topology.describe().find("128 CPUs, 64 cores, 4 NUMA nodes, 2 packages") != std::string::npos);
}

TEST_CASE("a synthetic eight-package machine, one node per package") {
  if (!synthetic_or_skip()) return;
  const auto topology = weft::Topology::synthetic("pack:8 numa:1 core:24 pu:2");
  REQUIRE(topology.cpus().size() == 384);
  CHECK(topology.packages() == 8);
  CHECK(topology.numa_nodes() == 8);
  CHECK(topology.cores() == 192);
  CHECK(topology.distance(0, 7) == 30);
  CHECK(topology.node_cpus(7).size() == 48);
}

TEST_CASE("a synthetic machine's caches, when the description names them") {
  if (!synthetic_or_skip()) return;
  const auto topology = weft::Topology::synthetic("pack:1 l3:1 numa:1 core:2 l2:1 pu:2");
  REQUIRE(!topology.caches().empty());
  const auto l3 = std::find_if(topology.caches().begin(), topology.caches().end(),
                               [](const weft::CacheInfo& cache) { return cache.level == 3; });
  REQUIRE(l3 != topology.caches().end());
  CHECK(l3->cpus == std::vector<unsigned>{0, 1, 2, 3});
  const auto l2 = std::find_if(topology.caches().begin(), topology.caches().end(),
                               [](const weft::CacheInfo& cache) { return cache.level == 2; });
  REQUIRE(l2 != topology.caches().end());
  CHECK(l2->cpus == std::vector<unsigned>{0, 1});
}

TEST_CASE("a synthetic description hwloc refuses is an error naming it") {
  if (!synthetic_or_skip()) return;
  const auto what = topology_error([] { return weft::Topology::synthetic("pack:two"); });
  CHECK(what.find("weft::Topology::synthetic(\"pack:two\")") != std::string::npos);
}

TEST_CASE("without hwloc, Topology::synthetic says so") {
  if (weft::Topology::synthetic_available()) return;
  const auto what = topology_error([] { return weft::Topology::synthetic("pack:2 core:2 pu:1"); });
  CHECK(what.find("without hwloc") != std::string::npos);
}

TEST_CASE("a topology from CpuInfo renumbers the ids densely and ranks siblings") {
  // CPUs 4..7 and 12..15 of a machine: two nodes (ids 1 and 3), cores named by their first CPU.
  std::vector<weft::CpuInfo> cpus;
  for (const unsigned cpu : {13U, 12U, 15U, 14U, 5U, 4U, 7U, 6U})
    cpus.push_back({.cpu = cpu, .package = cpu / 8, .numa_node = cpu < 8 ? 1U : 3U, .core = cpu & ~1U});
  const weft::Topology topology(cpus, {10, 21, 21, 10});
  CHECK(topology.source() == weft::TopologySource::Given);
  REQUIRE(topology.cpus().size() == 8);
  CHECK(topology.cpus().front().cpu == 4);
  CHECK(topology.numa_nodes() == 2);
  CHECK(topology.packages() == 2);
  CHECK(topology.cores() == 4);
  const weft::CpuInfo* fifteen = topology.find(15);
  REQUIRE(fifteen != nullptr);
  CHECK(fifteen->numa_node == 1);
  CHECK(fifteen->package == 1);
  CHECK(fifteen->core == 3);
  CHECK(fifteen->smt == 1);
  CHECK(topology.distance(0, 1) == 21);
}

TEST_CASE("a topology refuses a repeated CPU and a distance matrix of the wrong size, naming them") {
  const auto twice = topology_error([] { return weft::Topology(std::vector<weft::CpuInfo>{{.cpu = 3}, {.cpu = 3}}); });
  CHECK(twice.find("CPU 3 is given twice") != std::string::npos);
  const auto matrix = topology_error([] {
    return weft::Topology(std::vector<weft::CpuInfo>{{.cpu = 0, .numa_node = 0}, {.cpu = 1, .numa_node = 1}},
                          {10, 20, 20});
  });
  CHECK(matrix.find("the distance matrix has 3 entries; 2 NUMA nodes need 4") != std::string::npos);
  const auto flat = topology_error([] { return weft::Topology::flat({1, 1}); });
  CHECK(flat.find("CPU 1 is given twice") != std::string::npos);
}

TEST_CASE("a flat topology has no facts") {
  const auto topology = weft::Topology::flat({2, 0, 1});
  CHECK(!topology.has_facts());
  CHECK(topology.source() == weft::TopologySource::Flat);
  CHECK(topology.cores() == 3);
  CHECK(topology.numa_nodes() == 1);
  CHECK(topology.cpus().front().cpu == 0);
}

TEST_CASE("the machine's own topology holds exactly the CPUs this process may use") {
  const auto topology = weft::Topology::current();
  MESSAGE(topology.describe());
  CHECK(!topology.cpus().empty());
  CHECK(topology.numa_nodes() >= 1);
  CHECK(topology.cores() >= 1);
  if (weft::topology_from_hwloc_available()) CHECK(topology.source() == weft::TopologySource::Hwloc);
#if defined(__linux__)
  CHECK(topology.has_facts());
#endif
  for (const weft::CpuInfo& cpu : topology.cpus()) {
    CHECK(cpu.numa_node < topology.numa_nodes());
    CHECK(cpu.core < topology.cores());
    CHECK(cpu.smt < topology.threads_per_core());
  }
}

TEST_CASE("the machine's topology holds the process's CPUs, and /sys tells the same as hwloc") {
  const auto allowed = weft::os::allowed_cpus();
  const auto topology = weft::Topology::current();
  std::vector<unsigned> held;
  for (const weft::CpuInfo& cpu : topology.cpus()) held.push_back(cpu.cpu);
  CHECK(held == allowed);
#if defined(__linux__)
  const auto facts = weft::os::read_machine_facts(allowed);
  REQUIRE(facts.has_value());
  std::vector<weft::CpuInfo> cpus;
  for (const auto& cpu : facts->cpus)
    cpus.push_back({.cpu = cpu.cpu, .package = cpu.package, .numa_node = cpu.node, .core = cpu.core});
  const weft::Topology from_sys(cpus, facts->distances);
  CHECK(from_sys.numa_nodes() == topology.numa_nodes());
  CHECK(from_sys.packages() == topology.packages());
  CHECK(from_sys.cores() == topology.cores());
  for (const weft::CpuInfo& cpu : from_sys.cpus()) {
    const weft::CpuInfo* same = topology.find(cpu.cpu);
    REQUIRE(same != nullptr);
    CHECK(same->smt == cpu.smt);
    CHECK(same->numa_node == cpu.numa_node);
  }
  for (unsigned a = 0; a < topology.numa_nodes(); ++a) CHECK(from_sys.distance(a, a) == 10);
#endif
}
