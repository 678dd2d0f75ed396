// The wait primitives' lifetime contract: a waiter may destroy an Event or a WaitGroup as soon as its wait
// returns, although the signal() or done() that released it may not have returned yet (scheduler/
// primitive_word.hpp). Each primitive lives on the heap and is freed right after the wait, thousands of times:
// a notifier that touched it after releasing the waiter would be a use after free under AddressSanitizer and a
// race under ThreadSanitizer. Waiters run outside the pool, on workers with fibers, and on workers without.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"
#include "weft/weft.hpp"

namespace {

using weft::test::kThreadSanitizer;
using weft::test::patience;
using weft::test::stress_count;
using weft::test::Watchdog;

// Rounds per case: the race window is a few instructions wide, and TSan runs everything ten times slower.
std::uint64_t rounds() { return stress_count(weft::test::reduced_runs() ? 400 : 3000); }

std::vector<bool> fiber_modes() {
  if (weft::fibers_available()) return {true, false};
  return {false};
}

// One round: a fresh primitive that `release` (run as a task) releases and `wait` waits for; freed at once.
// Returns what `wait` returned.
template <class Make, class Release, class Wait>
bool round(weft::Pool& pool, Make make, Release release, Wait wait) {
  auto primitive = make();
  pool.post([p = primitive.get(), release] { release(*p); });
  const bool waited = wait(*primitive);
  primitive.reset();
  return waited;
}

// Runs `one_round(pool)` rounds() times from the calling thread, and as many again inside a task (whose waits
// suspend with fibers and run other tasks without), for 1, 2 and 4 workers. Every round must return true.
template <class OneRound>
void every_kind_of_waiter(const char* what, OneRound one_round) {
  for (const bool fibers : fiber_modes()) {
    for (const unsigned workers : {1u, 2u, 4u}) {
      INFO(what << ", workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(what, patience(60));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      const std::uint64_t n = rounds();
      std::uint64_t outside = 0;
      for (std::uint64_t i = 0; i < n; ++i) outside += one_round(pool) ? 1 : 0;
      CHECK(outside == n);
      auto inside = pool.submit([&pool, n, one_round] {
        std::uint64_t ok = 0;
        for (std::uint64_t i = 0; i < n; ++i) ok += one_round(pool) ? 1 : 0;
        return ok;
      });
      CHECK(inside.get() == n);
    }
  }
}

TEST_CASE("a WaitGroup may be destroyed as soon as its wait returns") {
  every_kind_of_waiter("wait group", [](weft::Pool& pool) {
    return round(
        pool, [] { return std::make_unique<weft::WaitGroup>(1); }, [](weft::WaitGroup& g) { g.done(); },
        [](weft::WaitGroup& g) {
          g.wait();
          return g.count() == 0;
        });
  });
}

TEST_CASE("a WaitGroup released by many done() calls may be destroyed as soon as its wait returns") {
  every_kind_of_waiter("wait group, many", [](weft::Pool& pool) {
    constexpr std::uint32_t kItems = 3;
    auto group = std::make_unique<weft::WaitGroup>(kItems);
    for (std::uint32_t i = 0; i < kItems; ++i) pool.post([g = group.get()] { g->done(); });
    group->wait();
    const bool zero = group->count() == 0;
    group.reset();
    return zero;
  });
}

TEST_CASE("a manual Event may be destroyed as soon as its wait returns") {
  every_kind_of_waiter("manual event", [](weft::Pool& pool) {
    return round(
        pool, [] { return std::make_unique<weft::Event>(); }, [](weft::Event& e) { e.signal(); },
        [](weft::Event& e) {
          e.wait();
          return true;
        });
  });
}

TEST_CASE("an auto Event may be destroyed as soon as its wait returns") {
  every_kind_of_waiter("auto event", [](weft::Pool& pool) {
    return round(
        pool, [] { return std::make_unique<weft::Event>(weft::Event::Mode::Auto); }, [](weft::Event& e) { e.signal(); },
        [](weft::Event& e) {
          e.wait();
          return true;
        });
  });
}

TEST_CASE("a timed wait that succeeds may destroy the primitive at once") {
  every_kind_of_waiter("timed waits", [](weft::Pool& pool) {
    const bool event = round(
        pool, [] { return std::make_unique<weft::Event>(); }, [](weft::Event& e) { e.signal(); },
        [](weft::Event& e) { return e.wait_for(patience(30)); });
    const bool group = round(
        pool, [] { return std::make_unique<weft::WaitGroup>(1); }, [](weft::WaitGroup& g) { g.done(); },
        [](weft::WaitGroup& g) { return g.wait_for(patience(30)); });
    return event && group;
  });
}

// A plain thread, not a worker, as the notifier: the waiter on a worker or outside frees the primitive.
TEST_CASE("a primitive released by a plain thread may be destroyed as soon as its wait returns") {
  const Watchdog watchdog("plain-thread notifier", patience(60));
  const std::uint64_t n = rounds();
  for (std::uint64_t i = 0; i < n; ++i) {
    auto event = std::make_unique<weft::Event>();
    auto group = std::make_unique<weft::WaitGroup>(1);
    std::thread notifier([e = event.get(), g = group.get()] {
      e->signal();
      g->done();
    });
    event->wait();
    event.reset();
    group->wait();
    group.reset();
    notifier.join();
  }
}

}  // namespace
