// What scheduler/topology/'s sources need of weft::Topology beyond its public constructor: to say where the facts came
// from.
#pragma once

#include "weft/topology.hpp"

namespace weft::detail {

struct TopologyAccess {
  static void set_source(Topology& topology, TopologySource source) noexcept { topology.source_ = source; }
};

}  // namespace weft::detail

namespace weft::topology {

// The topology hwloc reports: the machine's (description null) or a synthetic one. Without hwloc in the build, or
// when hwloc fails, returns false and says why in `why`.
bool from_hwloc(const char* description, Topology& out, std::string& why);

}  // namespace weft::topology
