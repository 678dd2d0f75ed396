// What every test on hwloc's synthetic machines asks first: whether weft can build one here.
#pragma once

#include <doctest/doctest.h>

#include "weft/topology.hpp"

namespace weft::test {

// True if weft was built with hwloc (Topology::synthetic works); else says the case is skipped, and false.
inline bool synthetic_or_skip() {
  if (weft::Topology::synthetic_available()) return true;
  MESSAGE("skipped: weft was built without hwloc, so Topology::synthetic is not available");
  return false;
}

}  // namespace weft::test
