// Shutdown meets tasks that wait on weft's primitives (Event, WaitGroup, ConditionVariable; untimed and timed):
// shutdown_for's deadline ends those waits as DropPending does, within its timeout; and a DropPending shutdown
// racing tasks that suspend, a pipeline and a then chain always finishes, with every waiter told.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/condition_variable.hpp"
#include "weft/event.hpp"
#include "weft/task_scope.hpp"
#include "weft/wait_group.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

enum class WaitKind { event, event_timed, wait_group, condition_variable };

const char* name_of(WaitKind kind) {
  switch (kind) {
    case WaitKind::event:
      return "Event::wait";
    case WaitKind::event_timed:
      return "Event::wait_for(1h)";
    case WaitKind::wait_group:
      return "WaitGroup::wait";
    case WaitKind::condition_variable:
      return "ConditionVariable::wait";
  }
  return "?";
}

// What the waiters wait on: nothing ever signals it.
struct Unsignalled {
  weft::Event event;
  weft::WaitGroup group{1};
  weft::ConditionVariable cv;
  std::mutex mutex;
  bool never = false;  // the condition variable's predicate, under `mutex`

  // Waits as `kind` says; returns normally only if the wait ended without a signal (a timed wait's deadline).
  void wait(WaitKind kind) {
    switch (kind) {
      case WaitKind::event:
        event.wait();
        break;
      case WaitKind::event_timed:
        (void)event.wait_for(1h);
        break;
      case WaitKind::wait_group:
        group.wait();
        break;
      case WaitKind::condition_variable: {
        std::unique_lock lock(mutex);
        cv.wait(lock, [this] { return never; });
        break;
      }
    }
  }
};

constexpr std::array<WaitKind, 4> kWaitKinds = {WaitKind::event, WaitKind::event_timed, WaitKind::wait_group,
                                                WaitKind::condition_variable};

}  // namespace

TEST_CASE("shutdown_for returns at its deadline while tasks wait on primitives nobody signals, and drops them") {
  for (const bool fibers : {true, false}) {
    for (const WaitKind kind : kWaitKinds) {
      for (const unsigned workers : {1U, 2U, 4U}) {
        INFO("fibers = " << fibers << ", wait = " << name_of(kind) << ", workers = " << workers);
        const Watchdog watchdog(std::string("shutdown_for with tasks in ") + name_of(kind) +
                                    (fibers ? " (fibers)" : " (no fibers)") + ", workers = " + std::to_string(workers),
                                patience(60));
        Unsignalled never;
        std::atomic<unsigned> started{0};
        std::atomic<unsigned> ended_normally{0};
        std::vector<weft::Future<void>> futures;
        {
          weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
          // More waiters than workers: with fibers they suspend; without, a waiting worker runs the next one.
          constexpr unsigned kWaiters = 12;
          for (unsigned i = 0; i < kWaiters; ++i) {
            futures.push_back(pool.submit([&] {
              started.fetch_add(1);
              never.wait(kind);
              ended_normally.fetch_add(1);
            }));
          }
          // Every waiter is inside its wait (or about to be): none of them can finish before the deadline.
          while (started.load() < kWaiters) std::this_thread::yield();
          const weft::ShutdownResult result = pool.shutdown_for(10ms);
          CHECK_FALSE(result.drained);
          CHECK(pool.stats().dropped == result.dropped);
        }
        CHECK(ended_normally.load() == 0);
        // Each waiter's wait threw task_dropped naming the primitive; its future reports it.
        unsigned dropped = 0;
        for (auto& future : futures) {
          try {
            future.get();
          } catch (const weft::task_dropped& e) {
            ++dropped;
            CHECK(std::string(e.what()).find("weft::") != std::string::npos);
          }
        }
        CHECK(dropped == futures.size());
      }
    }
  }
}

// A DropPending shutdown racing tasks that suspend again and again (condition-variable ping-pong pairs), tasks
// suspended on an Event nobody signals, a pipeline run from another thread and a then chain. The shutdown wakes
// every suspended task of its pool once; a task that looked at the pool just before that and suspended just
// after must still end (with task_dropped), or the shutdown's join of its workers waits forever.
namespace {

// Two tasks that hand a turn back and forth through one ConditionVariable until their pool drops them.
struct PingPong {
  weft::ConditionVariable cv;
  std::mutex mutex;
  unsigned turn = 0;  // under `mutex`
  std::atomic<std::uint64_t> hand_overs{0};

  void play(unsigned me) {
    for (;;) {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return turn == me; });
      turn = 1 - me;
      lock.unlock();
      hand_overs.fetch_add(1, std::memory_order_relaxed);
      cv.notify_all();
    }
  }
};

struct RaceOutcome {
  std::uint64_t waiters_dropped = 0;  // waits that ended with task_dropped
  std::uint64_t waiters = 0;
};

RaceOutcome drop_racing_suspended_waits(unsigned workers, std::uint64_t round, std::mt19937_64& random) {
  constexpr unsigned kPairs = 6;
  constexpr unsigned kEventWaiters = 20;
  constexpr unsigned kLinks = 2'000;
  constexpr std::uint64_t kItems = 100'000;
  RaceOutcome outcome;
  weft::Event never;
  std::vector<PingPong> pairs(kPairs);
  std::vector<weft::Future<void>> waits;
  std::atomic<unsigned> event_waiting{0};
  std::atomic<std::uint64_t> consumed{0};
  std::atomic<bool> pipeline_started{false};
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  for (auto& pair : pairs) {
    for (unsigned me = 0; me < 2; ++me) waits.push_back(pool.submit([&pair, me] { pair.play(me); }));
  }
  for (unsigned i = 0; i < kEventWaiters; ++i) {
    waits.push_back(pool.submit([&] {
      event_waiting.fetch_add(1);
      never.wait();
    }));
  }
  std::thread piping([&] {
    weft::TaskScope scope{pool};
    std::uint64_t next = 0;
    auto items = scope.source([&]() -> std::optional<std::uint64_t> {
      if (next == kItems) return std::nullopt;
      return next++;
    });
    auto doubled = scope.stage(items, [](std::uint64_t v) { return 2 * v; }, {.concurrency = 2});
    (void)scope.sink(doubled, [&](std::uint64_t) { consumed.fetch_add(1, std::memory_order_relaxed); });
    scope.run();
    pipeline_started.store(true);
    try {
      (void)scope.wait();
    } catch (const weft::task_dropped&) {  // cut by the shutdown: expected
    }
  });
  weft::Future<std::uint64_t> chain = pool.submit([] { return std::uint64_t{0}; });
  for (unsigned i = 0; i < kLinks; ++i) chain = std::move(chain).then([](std::uint64_t v) { return v + 1; });
  while (!pipeline_started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::microseconds(random() % 3'000));
  const std::uint64_t dropped = pool.shutdown(weft::Shutdown::DropPending);
  piping.join();
  INFO("round " << round << ", workers = " << workers << ", dropped = " << dropped);
  try {
    const std::uint64_t links = chain.get();
    CHECK(links == kLinks);              // ran whole: the shutdown came after the chain's end
  } catch (const weft::task_dropped&) {  // a link was dropped, or refused as the pool closed
  }
  for (auto& wait : waits) {
    ++outcome.waiters;
    try {
      wait.get();
      FAIL("a wait that nothing ends returned normally");
    } catch (const weft::task_dropped&) {
      ++outcome.waiters_dropped;  // its wait threw, or it was dropped before it started
    }
  }
  CHECK(pool.stats().dropped == dropped);
  return outcome;
}

}  // namespace

TEST_CASE("a DropPending shutdown racing suspending tasks, a pipeline and a then chain always finishes") {
  std::mt19937_64 random(seed_for("DropPending racing suspending tasks"));
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 100 : 300);  // TSan runs each ten times slower
  RaceOutcome total;
  for (std::uint64_t round = 0; round < rounds; ++round) {
    const unsigned workers = 1U + static_cast<unsigned>(round % 4);
    // A round takes milliseconds; a hung one fails within a minute, saying which.
    const Watchdog watchdog("DropPending racing suspending tasks, round " + std::to_string(round) +
                                ", workers = " + std::to_string(workers),
                            patience(60));
    const RaceOutcome outcome = drop_racing_suspended_waits(workers, round, random);
    total.waiters += outcome.waiters;
    total.waiters_dropped += outcome.waiters_dropped;
  }
  CHECK(total.waiters_dropped == total.waiters);
}
