// Each worker's steal victims by distance, from where the workers sit: the workers on its own core first, then
// those on its NUMA node, then the other nodes' nearest first. Computed once when a pool starts; the engine reads
// it in Engine::steal (scheduler/engine/steal.cpp).
#pragma once

#include <span>
#include <vector>

#include "weft/topology.hpp"

namespace weft::topology {

// One worker's victims (worker indices, never its own), in tiers: tier t is victims[tier_ends[t-1], tier_ends[t])
// (tier 0 from 0). Within a tier in ascending worker index; the engine starts each tier's sweep at random.
struct StealOrder {
  std::vector<unsigned> victims;
  std::vector<unsigned> tier_ends;
};

// The steal order of every worker placed by `placement` (weft::placement's answer) on `topology`. Empty when
// distance tells nothing: a worker's place unknown (not pinned, or on CPUs of several nodes), or every worker
// with all others in one tier (one node, no two workers on one core: this the engine's random victim choice
// serves as well). Tiers: 0 the same core (workers on sibling CPUs, or on the very CPU), 1 the same node, then one
// per distinct node distance, nearest first.
[[nodiscard]] std::vector<StealOrder> steal_orders(const Topology& topology,
                                                   std::span<const std::vector<unsigned>> placement);

}  // namespace weft::topology
