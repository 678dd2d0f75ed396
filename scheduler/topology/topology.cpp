// weft::Topology's members: the facts renumbered densely, the queries, the description, and Topology::current()'s
// choice of source (hwloc, then Linux's /sys, then flat).
#include <algorithm>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "scheduler/topology/topology_access.hpp"
#include "src/cpu_topology.hpp"
#include "src/os_thread.hpp"
#include "weft/errors.hpp"
#include "weft/topology.hpp"

namespace weft {
namespace {

// Dense numbers for the distinct values of `ids`, in ascending order of the values.
std::map<unsigned, unsigned> dense(const std::vector<unsigned>& ids) {
  std::map<unsigned, unsigned> numbers;
  for (const unsigned id : ids) numbers.emplace(id, 0);
  unsigned next = 0;
  for (auto& [id, number] : numbers) number = next++;
  return numbers;
}

}  // namespace

Topology::Topology(std::vector<CpuInfo> cpus, std::vector<unsigned> distances, std::vector<CacheInfo> caches)
    : cpus_(std::move(cpus)), source_(TopologySource::Given) {
  std::sort(cpus_.begin(), cpus_.end(), [](const CpuInfo& a, const CpuInfo& b) { return a.cpu < b.cpu; });
  for (std::size_t i = 1; i < cpus_.size(); ++i) {
    if (cpus_[i].cpu == cpus_[i - 1].cpu)
      throw invalid_option("weft::Topology: CPU " + std::to_string(cpus_[i].cpu) + " is given twice");
  }
  std::vector<unsigned> package_ids, node_ids, core_ids;
  for (const CpuInfo& cpu : cpus_) {
    package_ids.push_back(cpu.package);
    node_ids.push_back(cpu.numa_node);
    core_ids.push_back(cpu.core);
  }
  const auto packages = dense(package_ids);
  const auto nodes = dense(node_ids);
  const auto cores = dense(core_ids);
  packages_ = static_cast<unsigned>(packages.size());
  nodes_ = static_cast<unsigned>(nodes.size());
  cores_ = static_cast<unsigned>(cores.size());
  std::vector<unsigned> per_core(cores_, 0);
  for (CpuInfo& cpu : cpus_) {
    cpu.package = packages.at(cpu.package);
    cpu.numa_node = nodes.at(cpu.numa_node);
    cpu.core = cores.at(cpu.core);
    cpu.smt = per_core[cpu.core]++;  // ascending by cpu: cpus_ is sorted
  }
  threads_per_core_ = cpus_.empty() ? 0 : *std::max_element(per_core.begin(), per_core.end());

  if (!distances.empty() && distances.size() != std::size_t{nodes_} * nodes_)
    throw invalid_option("weft::Topology: the distance matrix has " + std::to_string(distances.size()) + " entries; " +
                         std::to_string(nodes_) + " NUMA nodes need " + std::to_string(std::size_t{nodes_} * nodes_));
  if (distances.empty()) {
    // A node's package is its first CPU's.
    std::vector<unsigned> node_package(nodes_, 0);
    for (auto it = cpus_.rbegin(); it != cpus_.rend(); ++it) node_package[it->numa_node] = it->package;
    distances.resize(std::size_t{nodes_} * nodes_);
    for (unsigned a = 0; a < nodes_; ++a) {
      for (unsigned b = 0; b < nodes_; ++b)
        distances[std::size_t{a} * nodes_ + b] = default_distance(a == b, node_package[a] == node_package[b]);
    }
  }
  distances_ = std::move(distances);

  for (CacheInfo& cache : caches) {
    std::erase_if(cache.cpus, [this](unsigned cpu) { return find(cpu) == nullptr; });
    std::sort(cache.cpus.begin(), cache.cpus.end());
  }
  std::erase_if(caches, [](const CacheInfo& cache) { return cache.cpus.empty(); });
  std::sort(caches.begin(), caches.end(), [](const CacheInfo& a, const CacheInfo& b) {
    return a.level != b.level ? a.level < b.level : a.cpus.front() < b.cpus.front();
  });
  caches_ = std::move(caches);
}

Topology Topology::flat(std::vector<unsigned> cpus) {
  std::vector<CpuInfo> infos;
  infos.reserve(cpus.size());
  for (const unsigned cpu : cpus) infos.push_back({.cpu = cpu, .package = 0, .numa_node = 0, .core = cpu, .smt = 0});
  Topology topology(std::move(infos));
  topology.source_ = TopologySource::Flat;
  return topology;
}

const CpuInfo* Topology::find(unsigned cpu) const noexcept {
  const auto it = std::lower_bound(cpus_.begin(), cpus_.end(), cpu,
                                   [](const CpuInfo& info, unsigned value) { return info.cpu < value; });
  return it != cpus_.end() && it->cpu == cpu ? &*it : nullptr;
}

std::vector<unsigned> Topology::node_cpus(unsigned node) const {
  std::vector<unsigned> out;
  for (const CpuInfo& cpu : cpus_) {
    if (cpu.numa_node == node) out.push_back(cpu.cpu);
  }
  return out;
}

unsigned Topology::distance(unsigned from, unsigned to) const noexcept {
  if (from >= nodes_ || to >= nodes_) return 0;
  return distances_[std::size_t{from} * nodes_ + to];
}

std::string Topology::describe() const {
  static constexpr const char* kSources[] = {"hwloc", "/sys", "hwloc synthetic", "given", "flat (no facts)"};
  std::string out;
  const auto add = [&out](std::initializer_list<std::string_view> parts) {
    for (const std::string_view part : parts) out.append(part);
  };
  add({std::to_string(cpus_.size()), " CPUs, ", std::to_string(cores_), " cores, ", std::to_string(nodes_),
       " NUMA nodes, ", std::to_string(packages_), " packages (from ", kSources[static_cast<unsigned>(source_)],
       ")\n"});
  for (unsigned node = 0; node < nodes_; ++node) {
    add({"node ", std::to_string(node), " (distances"});
    for (unsigned to = 0; to < nodes_; ++to) add({" ", std::to_string(distance(node, to))});
    out.append("):");
    unsigned last_core = ~0U;
    for (const CpuInfo& cpu : cpus_) {
      if (cpu.numa_node != node) continue;
      if (cpu.core == last_core) {
        out.append(",");
      } else {
        add({" core ", std::to_string(cpu.core), ":"});
      }
      out.append(std::to_string(cpu.cpu));
      last_core = cpu.core;
    }
    out.append("\n");
  }
  for (const CacheInfo& cache : caches_) {
    add({"L", std::to_string(cache.level), " ", std::to_string(cache.bytes / 1024), " KiB: CPUs"});
    for (const unsigned cpu : cache.cpus) add({" ", std::to_string(cpu)});
    out.append("\n");
  }
  return out;
}

Topology Topology::current() {
  Topology topology;
  std::string why;
  if (topology::from_hwloc(nullptr, topology, why) && !topology.cpus_.empty()) return topology;
  const auto allowed = os::allowed_cpus();
  if (const auto facts = os::read_machine_facts(allowed)) {
    std::vector<CpuInfo> cpus;
    for (const auto& cpu : facts->cpus)
      cpus.push_back({.cpu = cpu.cpu, .package = cpu.package, .numa_node = cpu.node, .core = cpu.core, .smt = 0});
    std::vector<CacheInfo> caches;
    for (const auto& cache : facts->caches)
      caches.push_back({.level = cache.level, .bytes = cache.bytes, .cpus = cache.cpus});
    topology = Topology(std::move(cpus), facts->distances, std::move(caches));
    topology.source_ = TopologySource::Sysfs;
    return topology;
  }
  return flat(allowed);
}

Topology Topology::synthetic(std::string_view description) {
  Topology topology;
  std::string why;
  const std::string text(description);
  if (!topology::from_hwloc(text.c_str(), topology, why))
    throw invalid_option("weft::Topology::synthetic(\"" + text + "\"): " + why);
  topology.source_ = TopologySource::Synthetic;
  return topology;
}

}  // namespace weft
