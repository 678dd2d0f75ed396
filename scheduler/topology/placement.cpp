// weft::placement: where each worker of a pool goes on a topology, by PoolOptions::pinning and numa_node. A pure
// function of its arguments, so that the rules are tested on machines weft does not run on.
#include <algorithm>
#include <string>
#include <vector>

#include "weft/errors.hpp"
#include "weft/topology.hpp"

namespace weft {
namespace {

[[noreturn]] void invalid(const std::string& what) { throw invalid_option("weft::PoolOptions::" + what); }

const char* pinning_name(Pinning pinning) {
  switch (pinning) {
    case Pinning::None:
      return "Pinning::None";
    case Pinning::OnePerCpu:
      return "Pinning::OnePerCpu";
    case Pinning::CpuList:
      return "Pinning::CpuList";
    case Pinning::Cores:
      return "Pinning::Cores";
    case Pinning::Compact:
      return "Pinning::Compact";
    case Pinning::Spread:
      return "Pinning::Spread";
  }
  return "?";
}

// The CPUs of `cpus` (CpuInfo of one topology, ascending by cpu) in Cores order: each core's first CPU (cores in
// order of node, then core), then each core's second, and so on.
std::vector<unsigned> cores_first(std::vector<const CpuInfo*> cpus) {
  std::stable_sort(cpus.begin(), cpus.end(), [](const CpuInfo* a, const CpuInfo* b) {
    if (a->smt != b->smt) return a->smt < b->smt;
    if (a->numa_node != b->numa_node) return a->numa_node < b->numa_node;
    return a->core < b->core;
  });
  std::vector<unsigned> out;
  out.reserve(cpus.size());
  for (const CpuInfo* cpu : cpus) out.push_back(cpu->cpu);
  return out;
}

}  // namespace

std::vector<std::vector<unsigned>> placement(const Topology& topology, const PoolOptions& options, unsigned workers) {
  const Pinning pinning = options.pinning;
  if (pinning > Pinning::Spread)
    invalid("pinning = " + std::to_string(static_cast<unsigned>(pinning)) +
            ": not a weft::Pinning (None, OnePerCpu, CpuList, Cores, Compact or Spread)");
  const bool needs_facts = pinning == Pinning::Cores || pinning == Pinning::Compact || pinning == Pinning::Spread;
  if (needs_facts && !topology.has_facts())
    invalid(std::string("pinning = ") + pinning_name(pinning) +
            ": weft knows no cores or NUMA nodes of this machine (neither hwloc nor the OS told it; "
            "weft::Topology::current().source() is Flat); use Pinning::OnePerCpu or CpuList");
  if (options.numa_node) {
    const unsigned node = *options.numa_node;
    if (!topology.has_facts())
      invalid("numa_node = " + std::to_string(node) +
              ": weft knows no NUMA nodes of this machine (neither hwloc nor the OS told it)");
    if (node >= topology.numa_nodes())
      invalid("numa_node = " + std::to_string(node) + ": this machine has " + std::to_string(topology.numa_nodes()) +
              " NUMA node" + (topology.numa_nodes() == 1 ? "" : "s") + " (0.." +
              std::to_string(topology.numa_nodes() - 1) + ") among the CPUs this process may use");
    if (pinning == Pinning::CpuList)
      invalid("numa_node = " + std::to_string(node) +
              " with pinning = Pinning::CpuList: the CPU list already says where the workers go; set one of them");
  }
  if (pinning == Pinning::CpuList) {
    if (options.cpus.empty()) invalid("cpus is empty, but pinning is Pinning::CpuList");
    for (const unsigned cpu : options.cpus) {
      if (topology.find(cpu) == nullptr)
        invalid("cpus contains CPU " + std::to_string(cpu) + ", which is not one of this machine's usable CPUs");
    }
  }

  // The CPUs the pool may use: all, or one node's.
  std::vector<const CpuInfo*> usable;
  for (const CpuInfo& cpu : topology.cpus()) {
    if (!options.numa_node || cpu.numa_node == *options.numa_node) usable.push_back(&cpu);
  }

  std::vector<std::vector<unsigned>> out(workers);
  if (pinning == Pinning::None) {
    if (options.numa_node) {
      std::vector<unsigned> node;
      for (const CpuInfo* cpu : usable) node.push_back(cpu->cpu);
      for (auto& place : out) place = node;
    }
    return out;
  }
  std::vector<unsigned> order;
  switch (pinning) {
    case Pinning::OnePerCpu:
      for (const CpuInfo* cpu : usable) order.push_back(cpu->cpu);
      break;
    case Pinning::CpuList:
      order = options.cpus;
      break;
    case Pinning::Cores:
      order = cores_first(usable);
      break;
    case Pinning::Compact:
    case Pinning::Spread: {
      // Each node's CPUs in Cores order; Compact takes the nodes one after the other, Spread deals from them in turn.
      std::vector<std::vector<unsigned>> nodes(topology.numa_nodes());
      for (unsigned node = 0; node < topology.numa_nodes(); ++node) {
        std::vector<const CpuInfo*> mine;
        for (const CpuInfo* cpu : usable) {
          if (cpu->numa_node == node) mine.push_back(cpu);
        }
        nodes[node] = cores_first(std::move(mine));
      }
      if (pinning == Pinning::Compact) {
        for (const auto& node : nodes) order.insert(order.end(), node.begin(), node.end());
      } else {
        for (std::size_t round = 0; order.size() < usable.size(); ++round) {
          for (const auto& node : nodes) {
            if (round < node.size()) order.push_back(node[round]);
          }
        }
      }
      break;
    }
    case Pinning::None:
      break;
  }
  if (order.empty())
    invalid(std::string("pinning = ") + pinning_name(pinning) + ": the topology holds no CPU to pin a worker to");
  for (unsigned w = 0; w < workers; ++w) out[w] = {order[w % order.size()]};
  return out;
}

}  // namespace weft
