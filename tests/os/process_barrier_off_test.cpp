// WEFT_PROCESS_BARRIER=off (meson sets it for this test): process_barrier_available() says no, and a pool then
// runs its handshakes with a fence on each side (parking, the idle count, the outside slots' shutdown gate). CI
// runs the whole unit suite that way too (.ci/run); this checks the switch itself and a pool's basic traffic.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

#include "src/process_barrier.hpp"
#include "weft/pool.hpp"

TEST_CASE("WEFT_PROCESS_BARRIER=off turns the asymmetric barriers off") {
  const char* const value = std::getenv("WEFT_PROCESS_BARRIER");
  REQUIRE(value != nullptr);
  REQUIRE(std::string_view(value) == "off");
  CHECK_FALSE(weft::os::process_barrier_available());
}

TEST_CASE("a pool without the asymmetric barriers runs, waits and shuts down") {
  for (const unsigned workers : {1U, 2U, 4U}) {
    CAPTURE(workers);
    std::atomic<int> ran{0};
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      // Posts from several outside threads (their slots' gate), round trips, and idle waits between bursts
      // (workers park and wake, and the idle count's waiter sleeps).
      for (int burst = 0; burst < 20; ++burst) {
        std::vector<std::thread> threads;
        for (int t = 0; t < 3; ++t) {
          threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i) pool.post([&] { ran.fetch_add(1, std::memory_order_relaxed); });
            for (int i = 0; i < 50; ++i) CHECK(pool.submit([i] { return i; }).get() == i);
          });
        }
        for (auto& thread : threads) thread.join();
        pool.wait_idle();
        CHECK(ran.load() == (burst + 1) * 3 * 200);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let the workers park
      }
    }  // the destructor's Drain shutdown closes the gate against the slots
    CHECK(ran.load() == 20 * 3 * 200);
  }
}
