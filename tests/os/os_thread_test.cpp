#include <doctest/doctest.h>

#include <array>
#include <cstring>
#include <thread>

#include <pthread.h>
#include <sched.h>

#include "src/os_thread.hpp"

TEST_CASE("usable_cpu_count matches the process affinity mask") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  CHECK(weft::os::usable_cpu_count() == static_cast<unsigned>(CPU_COUNT(&set)));
  CHECK(weft::os::usable_cpu_count() >= 1);
}

TEST_CASE("set_current_thread_name truncates to what Linux keeps") {
  std::thread([] {
    CHECK(weft::os::set_current_thread_name("weft-worker-with-a-long-name"));
    std::array<char, 32> name{};
    REQUIRE(pthread_getname_np(pthread_self(), name.data(), name.size()) == 0);
    CHECK(std::strcmp(name.data(), "weft-worker-wit") == 0);
  }).join();
}

TEST_CASE("pin_current_thread pins to an allowed CPU and refuses impossible ones") {
  std::thread([] {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
    unsigned first = 0;
    while (!CPU_ISSET(first, &allowed)) ++first;
    const std::array<unsigned, 1> one{first};
    CHECK(weft::os::pin_current_thread(one));
    cpu_set_t now;
    CPU_ZERO(&now);
    REQUIRE(sched_getaffinity(0, sizeof(now), &now) == 0);
    CHECK(CPU_COUNT(&now) == 1);
    CHECK(CPU_ISSET(first, &now));

    const std::array<unsigned, 1> out_of_range{CPU_SETSIZE + 1u};
    CHECK_FALSE(weft::os::pin_current_thread(out_of_range));
    CHECK_FALSE(weft::os::pin_current_thread({}));
  }).join();
}
