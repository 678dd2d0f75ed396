// WEFT_PROCESS_BARRIER set to a value the switch does not understand (meson sets "fences" for this test): a pool
// refuses to start with weft::invalid_option naming the variable and its value, rather than ignoring a setting
// that CI or a user meant to take effect.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string_view>

#include "src/process_barrier.hpp"
#include "tests/support/platform.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

TEST_CASE("a pool refuses a WEFT_PROCESS_BARRIER it does not understand, naming it") {
  const char* const value = std::getenv("WEFT_PROCESS_BARRIER");
  REQUIRE(value != nullptr);
  REQUIRE(std::string_view(value) == "fences");
  CHECK(weft::os::process_barrier_unknown_setting() == "fences");
  CHECK_THROWS_WITH_AS(weft::Pool(weft::PoolOptions{.threads = 2}), doctest::Contains("WEFT_PROCESS_BARRIER=fences"),
                       weft::invalid_option);
}

TEST_CASE("\"off\" and an unset variable are understood") {
  REQUIRE(weft::test::set_environment("WEFT_PROCESS_BARRIER", "off"));
  CHECK(weft::os::process_barrier_unknown_setting().empty());
  {
    weft::Pool pool{weft::PoolOptions{.threads = 2}};
    CHECK(pool.submit([] { return 7; }).get() == 7);
  }
  REQUIRE(weft::test::set_environment("WEFT_PROCESS_BARRIER", nullptr));
  CHECK(weft::os::process_barrier_unknown_setting().empty());
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  CHECK(pool.submit([] { return 8; }).get() == 8);
}
