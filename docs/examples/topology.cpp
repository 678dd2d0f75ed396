// One pool per NUMA node, and a placement policy shown on a machine this program does not run on.
//
// 1. weft::Topology::current() says how many NUMA nodes this process may use; the program starts one pool per node
//    (PoolOptions::numa_node), each pinning one worker per core of its node first (Pinning::Cores), prints where the
//    workers sit (Pool::describe), checks that every worker was placed on its pool's node (Pool::placement), and
//    sums a range on every pool.
// 2. weft::placement shows where Pinning::Spread would put eight workers on a two-package, four-node machine
//    described to hwloc (only in a weft built with hwloc: Topology::synthetic_available()).
//
// Exits with 1 if a result is wrong. Built and run by weft's test suite (suite 'examples').
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <weft/parallel_for.hpp>
#include <weft/pool.hpp>
#include <weft/topology.hpp>

int main() {
  const weft::Topology machine = weft::Topology::current();
  std::printf("%s", machine.describe().c_str());
  if (!machine.has_facts()) {
    std::printf("weft knows no NUMA nodes here: nothing to place\n");
    return 0;
  }

  // 1. One pool per node.
  std::vector<std::unique_ptr<weft::Pool>> pools;
  for (unsigned node = 0; node < machine.numa_nodes(); ++node) {
    pools.push_back(std::make_unique<weft::Pool>(
        weft::PoolOptions{.pinning = weft::Pinning::Cores, .numa_node = node, .name = "node" + std::to_string(node)}));
    std::printf("%s", pools.back()->describe().c_str());
  }
  bool ok = true;
  for (unsigned node = 0; node < pools.size(); ++node) {
    for (const std::vector<unsigned>& cpus : pools[node]->placement()) {
      if (cpus.size() != 1 || machine.find(cpus[0])->numa_node != node) ok = false;
    }
    std::atomic<long> sum{0};
    weft::parallel_for(*pools[node], 0, 10'000, [&sum](int i) { sum.fetch_add(i, std::memory_order_relaxed); });
    if (sum.load() != 49'995'000L) {
      std::printf("node %u: sum %ld\n", node, sum.load());
      ok = false;
    }
  }

  // 2. What Spread does on a machine we do not have.
  if (weft::Topology::synthetic_available()) {
    const auto big = weft::Topology::synthetic("pack:2 numa:2 core:16 pu:2");
    const auto places = weft::placement(big, {.pinning = weft::Pinning::Spread}, 8);
    const unsigned expected[] = {0, 32, 64, 96, 2, 34, 66, 98};  // node 0, 1, 2, 3, then their second cores
    for (unsigned w = 0; w < 8; ++w) {
      std::printf("Spread on \"pack:2 numa:2 core:16 pu:2\": worker %u on CPU %u (node %u)\n", w, places[w][0],
                  big.find(places[w][0])->numa_node);
      if (places[w][0] != expected[w]) ok = false;
    }
  }
  return ok ? 0 : 1;
}
