// The workers' parking protocol (scheduler/engine/parking.hpp) on real threads, with the asymmetric barriers (the
// default where the OS offers them) and with plain fences: no published item is ever left with every consumer
// asleep. The producer publishes with a plain store, as a worker's push publishes its deque's bottom, and then
// waits for the item to be taken: a lost wake-up stops all progress, and the watchdog fails the test instead of
// waiting for meson's timeout.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "scheduler/atomics/cpu_relax.hpp"
#include "scheduler/engine/parking.hpp"
#include "src/process_barrier.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"

using namespace std::chrono_literals;
using weft::engine::Parking;

namespace {

// A consumer as Engine::worker_main drives it: search, and when nothing is found, park (announce, check, sleep).
void consume(Parking& parking, const std::atomic<std::uint64_t>& published, std::atomic<std::uint64_t>& taken,
             const std::atomic<bool>& stop) {
  bool woken = true;
  for (;;) {
    parking.begin_search(woken);
    woken = false;
    bool found = false;
    std::uint64_t seen = taken.load(std::memory_order_relaxed);
    // acquire: pairs with the producer's release store (its "push").
    while (seen < published.load(std::memory_order_acquire)) {
      if (taken.compare_exchange_weak(seen, seen + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        found = true;
        break;
      }
    }
    const bool last = parking.end_search();
    if (found) {
      if (last && taken.load(std::memory_order_relaxed) < published.load(std::memory_order_acquire)) {
        parking.notify();
      }
      continue;
    }
    if (stop.load(std::memory_order_acquire)) return;
    if (auto key = parking.prepare_park([&] {
          return taken.load(std::memory_order_relaxed) < published.load(std::memory_order_acquire) ||
                 stop.load(std::memory_order_acquire);
        })) {
      (void)parking.sleep(*key, std::chrono::nanoseconds::max());
    }
    woken = true;
  }
}

// Publishes `items` one at a time, each after a random pause of up to ~2 us (so that its publish meets the
// consumers at every point of their way to sleep), and waits for it to be taken before the next. Returns whether
// every item was taken exactly once and nobody is left announced as a sleeper.
bool run(bool asymmetric, std::uint64_t items, unsigned consumers) {
  const char* mode = asymmetric ? "asymmetric barriers" : "plain fences";
  Parking parking(asymmetric);
  std::atomic<std::uint64_t> published{0};
  std::atomic<std::uint64_t> taken{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < consumers; ++i) {
    threads.emplace_back([&] { consume(parking, published, taken, stop); });
  }
  std::mt19937_64 random(weft::test::seed_for(mode));
  std::uniform_int_distribution<int> pause(0, 64);
  {
    const weft::test::Watchdog watchdog(std::string("parking with ") + mode, 120s);
    for (std::uint64_t i = 0; i < items; ++i) {
      for (int spins = pause(random); spins > 0; --spins) weft::atomics::cpu_relax();
      published.store(i + 1, std::memory_order_release);  // a plain store, as a deque's push
      parking.notify();
      while (taken.load(std::memory_order_acquire) <= i) weft::atomics::cpu_relax();
    }
  }
  stop.store(true, std::memory_order_release);
  parking.notify_all();
  for (auto& thread : threads) thread.join();
  return taken.load() == items && parking.sleepers() == 0;
}

}  // namespace

TEST_CASE("every published item is taken, whatever point of parking its publish meets") {
  const std::uint64_t items = weft::test::stress_count(100'000);
  for (const unsigned consumers : {1U, 2U}) {
    CAPTURE(consumers);
    CHECK(run(false, items, consumers));
    if (weft::os::process_barrier_available()) {
      CHECK(run(true, items, consumers));
    } else {
      MESSAGE("membarrier is not available here: only the plain protocol was run");
    }
  }
}

TEST_CASE("a child made by fork() parks with the asymmetric barriers too") {
  // The registration for membarrier belongs to a process. Linux 6.x hands it down to a forked child (strace
  // shows no failed barrier here); process_barrier() registers the child itself where a kernel does not.
  if (!weft::os::process_barrier_available()) {
    MESSAGE("membarrier is not available here: nothing to check");
    return;
  }
#if defined(_WIN32)
  MESSAGE("skipped on Windows: no fork(), and FlushProcessWriteBuffers needs no registration to inherit");
#else
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::_Exit(run(true, weft::test::stress_count(10'000), 1) ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
#endif
}
