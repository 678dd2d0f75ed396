// The spin groups of scheduler/topology/spin_groups.hpp.
#include "scheduler/topology/spin_groups.hpp"

#include <algorithm>
#include <map>

#include "scheduler/topology/seat.hpp"

namespace weft::topology {

SpinGroups spin_groups(const Topology& topology, std::span<const std::vector<unsigned>> placement) {
  SpinGroups groups;
  std::map<unsigned, unsigned> group_of_node;  // node -> dense group index, in node order
  std::vector<unsigned> nodes;
  nodes.reserve(placement.size());
  for (const auto& cpus : placement) {
    const auto seat = seat_of(topology, cpus);
    if (!seat) return {};
    nodes.push_back(seat->node);
    group_of_node.emplace(seat->node, 0);
  }
  unsigned next = 0;
  for (auto& [node, group] : group_of_node) group = next++;
  std::vector<unsigned> workers(next, 0);
  groups.group_of.reserve(nodes.size());
  for (const unsigned node : nodes) {
    const unsigned group = group_of_node[node];
    groups.group_of.push_back(group);
    ++workers[group];
  }
  groups.bound.reserve(next);
  for (const unsigned count : workers) groups.bound.push_back(std::max(1U, count / 2));
  return groups;
}

}  // namespace weft::topology
