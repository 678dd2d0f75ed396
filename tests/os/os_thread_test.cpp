#include <doctest/doctest.h>

#include <array>
#include <thread>
#include <vector>

#include "src/os_thread.hpp"
#include "tests/support/platform.hpp"

using weft::test::thread_cpus;

TEST_CASE("usable_cpu_count matches the process affinity mask") {
  // This thread's mask is the process's: nothing here pinned it.
  CHECK(weft::os::usable_cpu_count() == thread_cpus().size());
  CHECK(weft::os::allowed_cpus() == thread_cpus());
  CHECK(weft::os::usable_cpu_count() >= 1);
}

TEST_CASE("set_current_thread_name truncates to what Linux keeps") {
  std::thread([] {
    CHECK(weft::os::set_current_thread_name("weft-worker-with-a-long-name"));
    CHECK(weft::test::thread_name() == "weft-worker-wit");
  }).join();
}

TEST_CASE("pin_current_thread pins to an allowed CPU and refuses impossible ones") {
  std::thread([] {
    const auto allowed = thread_cpus();
    REQUIRE(!allowed.empty());
    const unsigned first = allowed.front();
    const std::array<unsigned, 1> one{first};
    CHECK(weft::os::pin_current_thread(one));
    CHECK(thread_cpus() == std::vector<unsigned>{first});

    // Beyond any mask the OS can take (Linux's CPU_SETSIZE is 1024; Windows takes 64 in a mask).
    const std::array<unsigned, 1> out_of_range{1025u};
    CHECK_FALSE(weft::os::pin_current_thread(out_of_range));
    CHECK_FALSE(weft::os::pin_current_thread({}));
  }).join();
}
