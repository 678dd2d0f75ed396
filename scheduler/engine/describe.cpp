// Pool::describe(): where each worker sits, from the placement and steal orders fixed at start (engine.cpp).
#include <initializer_list>
#include <string>
#include <string_view>

#include "scheduler/engine/engine.hpp"

namespace weft::engine {
namespace {

const char* pinning_text(Pinning pinning) {
  switch (pinning) {
    case Pinning::None:
      return "None";
    case Pinning::OnePerCpu:
      return "OnePerCpu";
    case Pinning::CpuList:
      return "CpuList";
    case Pinning::Cores:
      return "Cores";
    case Pinning::Compact:
      return "Compact";
    case Pinning::Spread:
      return "Spread";
  }
  return "?";
}

const char* source_text(TopologySource source) {
  switch (source) {
    case TopologySource::Hwloc:
      return "hwloc";
    case TopologySource::Sysfs:
      return "/sys";
    case TopologySource::Synthetic:
      return "hwloc synthetic";
    case TopologySource::Given:
      return "given";
    case TopologySource::Flat:
      return "flat";
  }
  return "?";
}

}  // namespace

std::string Engine::describe() const {
  std::string out;
  const auto add = [&out](std::initializer_list<std::string_view> parts) {
    for (const std::string_view part : parts) out.append(part);
  };
  add({"pool '", options_.name, "': ", std::to_string(workers_.size()), " workers, pinning ",
       pinning_text(options_.pinning)});
  if (options_.numa_node) add({", NUMA node ", std::to_string(*options_.numa_node)});
  if (placement_.empty()) {
    out.append("; workers unpinned, stealing at random\n");
    return out;
  }
  add({"; topology from ", source_text(topology_.source()), " (", std::to_string(topology_.numa_nodes()), " nodes, ",
       std::to_string(topology_.cores()), " cores, ", std::to_string(topology_.cpus().size()), " CPUs); stealing ",
       steal_orders_.empty() ? "at random" : "by distance"});
  if (spin_quota_.bounded()) {
    out.append("; idle spinners at most");
    for (unsigned g = 0; g < spin_quota_.groups(); ++g)
      add({g == 0 ? " " : ", ", std::to_string(spin_quota_.bound(g)), " of node group ", std::to_string(g)});
  }
  out.append("\n");
  for (std::size_t w = 0; w < placement_.size(); ++w) {
    const auto& cpus = placement_[w];
    add({"worker ", std::to_string(w), cpus.size() == 1 ? ": CPU" : ": CPUs"});
    for (std::size_t i = 0; i < cpus.size(); ++i) add({i == 0 ? " " : ",", std::to_string(cpus[i])});
    if (cpus.size() == 1) {
      if (const CpuInfo* cpu = topology_.find(cpus.front()); cpu != nullptr && topology_.has_facts())
        add({" (package ", std::to_string(cpu->package), ", node ", std::to_string(cpu->numa_node), ", core ",
             std::to_string(cpu->core), ", SMT ", std::to_string(cpu->smt), ")"});
    }
    if (!steal_orders_.empty()) {
      const auto& order = steal_orders_[w];
      out.append("; victims");
      unsigned begin = 0;
      for (const unsigned end : order.tier_ends) {
        out.append(" [");
        for (unsigned i = begin; i < end; ++i) add({i == begin ? "" : " ", std::to_string(order.victims[i])});
        out.append("]");
        begin = end;
      }
    }
    out.append("\n");
  }
  return out;
}

}  // namespace weft::engine
