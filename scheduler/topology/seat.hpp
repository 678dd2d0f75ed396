// Where a worker sits on the machine, from the CPUs weft::placement gave it: shared by the steal order and the
// spin groups, which both rank workers by what they share with each other.
#pragma once

#include <optional>
#include <vector>

#include "weft/topology.hpp"

namespace weft::topology {

// A worker's NUMA node, and its core if every CPU it may run on is on that one core.
struct Seat {
  unsigned node = 0;
  std::optional<unsigned> core;
};

// The seat of a worker that may run on `cpus`; nothing if the list is empty (not pinned), names a CPU the
// topology does not hold, or spans nodes.
[[nodiscard]] inline std::optional<Seat> seat_of(const Topology& topology, const std::vector<unsigned>& cpus) {
  if (cpus.empty()) return std::nullopt;
  Seat seat;
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    const CpuInfo* cpu = topology.find(cpus[i]);
    if (cpu == nullptr) return std::nullopt;
    if (i == 0) {
      seat.node = cpu->numa_node;
      seat.core = cpu->core;
    } else if (cpu->numa_node != seat.node) {
      return std::nullopt;
    } else if (seat.core != cpu->core) {
      seat.core.reset();
    }
  }
  return seat;
}

}  // namespace weft::topology
