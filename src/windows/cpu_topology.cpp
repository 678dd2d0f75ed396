// Windows's side of src/cpu_topology.hpp: not written yet (GetLogicalProcessorInformationEx would give the same
// facts), so weft::Topology falls back to hwloc, or to a flat view, there.
#include "src/cpu_topology.hpp"

namespace weft::os {

std::optional<MachineFacts> read_machine_facts(std::span<const unsigned> /*cpus*/) { return std::nullopt; }

}  // namespace weft::os
