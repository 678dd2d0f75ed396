// The steal tiers of scheduler/topology/steal_order.hpp.
#include "scheduler/topology/steal_order.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "scheduler/topology/seat.hpp"

namespace weft::topology {

std::vector<StealOrder> steal_orders(const Topology& topology, std::span<const std::vector<unsigned>> placement) {
  const auto count = static_cast<unsigned>(placement.size());
  std::vector<Seat> seats;
  seats.reserve(count);
  for (const auto& cpus : placement) {
    const auto seat = seat_of(topology, cpus);
    if (!seat) return {};
    seats.push_back(*seat);
  }
  std::vector<StealOrder> orders(count);
  bool tiered = false;
  for (unsigned self = 0; self < count; ++self) {
    // (rank, victim): rank 0 same core, 1 same node, 1 + distance for another node (distance > 10 there).
    std::vector<std::pair<unsigned, unsigned>> ranked;
    for (unsigned victim = 0; victim < count; ++victim) {
      if (victim == self) continue;
      const Seat& a = seats[self];
      const Seat& b = seats[victim];
      unsigned rank = 0;
      if (a.node != b.node) {
        rank = 1 + std::max(topology.distance(a.node, b.node), 11U);
      } else if (!a.core || !b.core || *a.core != *b.core) {
        rank = 1;
      }
      ranked.emplace_back(rank, victim);
    }
    std::sort(ranked.begin(), ranked.end());
    StealOrder& order = orders[self];
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      if (i > 0 && ranked[i].first != ranked[i - 1].first) order.tier_ends.push_back(static_cast<unsigned>(i));
      order.victims.push_back(ranked[i].second);
    }
    if (!ranked.empty()) order.tier_ends.push_back(static_cast<unsigned>(ranked.size()));
    if (order.tier_ends.size() > 1) tiered = true;
  }
  if (!tiered) return {};
  return orders;
}

}  // namespace weft::topology
