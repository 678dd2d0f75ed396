// WEFT_PINNING: a pool whose options leave pinning at None takes the policy the environment names (this test runs
// with WEFT_PINNING=cores, tests/topology/meson.build); a pool that chose its own keeps it; a bad value is refused.
#include <doctest/doctest.h>

#include <string>

#include "tests/support/platform.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/topology.hpp"

TEST_CASE("WEFT_PINNING sets the policy of pools that chose none, and a bad value is refused naming it") {
  const auto machine = weft::Topology::current();
  if (!machine.has_facts()) {
    MESSAGE("skipped: weft knows no cores or nodes of this machine (flat topology)");
    return;
  }
  {
    weft::Pool pool{weft::PoolOptions{.threads = 2}};
    CHECK(pool.describe().find("pinning Cores") != std::string::npos);
    CHECK(pool.placement() == weft::placement(machine, {.pinning = weft::Pinning::Cores}, 2));
  }
  {
    weft::Pool pool{weft::PoolOptions{.threads = 2, .pinning = weft::Pinning::OnePerCpu}};
    CHECK(pool.describe().find("pinning OnePerCpu") != std::string::npos);
  }
  REQUIRE(weft::test::set_environment("WEFT_PINNING", "everywhere"));
  try {
    weft::Pool pool{weft::PoolOptions{.threads = 1}};
    FAIL("a bad WEFT_PINNING was accepted");
  } catch (const weft::invalid_option& error) {
    CHECK(std::string(error.what()).find("WEFT_PINNING=everywhere: the environment variable may be") !=
          std::string::npos);
  }
  REQUIRE(weft::test::set_environment("WEFT_PINNING", "cores"));
}
