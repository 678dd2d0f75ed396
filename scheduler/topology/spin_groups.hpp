// Which idle workers share a spinning budget: the workers of one NUMA node, of whom at most half (at least one) may
// spin looking for work at a time; the rest of that node make one look and park. Computed once when a pool starts;
// the engine keeps the counts (scheduler/engine/spin_quota.hpp).
//
// Why per node, and why half: an idle worker that spins burns its CPU and reads every victim's queue, lines that
// cross the socket when the victims sit on another node. On a machine of many cores, a burst's end leaves every
// worker searching at once; one spinner per few cores of a node finds the next work as fast (it steals from the
// node first, scheduler/topology/steal_order.hpp) while the others sleep. Half of a node's workers is the bound Go's
// scheduler keeps for the whole machine (no more spinning threads than busy ones, at the most idle moment); here it
// is per node, so every node keeps a searcher of its own.
#pragma once

#include <span>
#include <vector>

#include "weft/topology.hpp"

namespace weft::topology {

struct SpinGroups {
  // Each worker's group (its NUMA node, renumbered densely over the nodes that have workers).
  std::vector<unsigned> group_of;
  // Each group's bound: how many of its workers may spin at once, max(1, its workers / 2).
  std::vector<unsigned> bound;
};

// The spin groups of the workers placed by `placement` (weft::placement's answer) on `topology`. Empty (no bound:
// every idle worker spins for PoolOptions::spin_before_park) when a worker's place is unknown (not pinned, or on
// CPUs of several nodes).
[[nodiscard]] SpinGroups spin_groups(const Topology& topology, std::span<const std::vector<unsigned>> placement);

}  // namespace weft::topology
