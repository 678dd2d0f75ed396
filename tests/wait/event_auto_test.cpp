// weft::Event in Mode::Auto: each signal() releases one wait in progress; with no wait left to release it leaves
// the event set, once (signals do not add up beyond the waits). Checked with waits on plain threads, in tasks on
// workers with fibers (they suspend) and without (they run other tasks meanwhile): N signals against M waits
// already waiting release exactly min(N, M) of them, and leave the event set if N > M. Racing signals, waits and
// time-outs never release more waits than there were signals, and every wait that ends leaves the count of
// waits in progress (read from the event's word) as it found it.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"
#include "weft/detail/primitive_word.hpp"
#include "weft/weft.hpp"

namespace weft::detail {
// Reads an Auto event's word (weft/detail/primitive_word.hpp): the waits in progress (released or not), the
// releases due.
struct EventAccess {
  static std::uint32_t releases(const Event& event) noexcept {
    return (event.state_.load(std::memory_order_acquire) & kEventReleases) / kEventReleaseUnit;
  }
  static std::uint32_t waits(const Event& event) noexcept {
    return (event.state_.load(std::memory_order_acquire) & kEventWaits) / kEventWaitUnit + releases(event);
  }
};
}  // namespace weft::detail

namespace {

using weft::detail::EventAccess;
using weft::test::kThreadSanitizer;
using weft::test::patience;
using weft::test::stress_count;
using weft::test::Watchdog;

std::vector<bool> event_fiber_modes() {
  if (weft::fibers_available()) return {true, false};
  return {false};
}

// Where the waits run: each on a thread of its own, or each in a task of a pool (with or without fibers).
enum class Waiters { threads, tasks };

// Starts `m` waits on `event`, each counting its return in `released` (and in `times[i]`); returns once all m
// are counted by the event as waiting. The tasks run on `pool`, whose workers must outnumber the waits unless
// they suspend (fibers): a worker without fibers runs the next wait nested inside the one it waits in.
class WaitsOn {
 public:
  WaitsOn(weft::Event& event, Waiters where, weft::Pool& pool, unsigned m)
      : event_(event), times_(std::make_unique<std::atomic<unsigned>[]>(m)), m_(m) {
    for (unsigned i = 0; i < m; ++i) {
      auto wait = [this, i] {
        event_.wait();
        times_[i].fetch_add(1, std::memory_order_relaxed);
        released_.fetch_add(1, std::memory_order_release);
      };
      if (where == Waiters::threads) {
        threads_.emplace_back(wait);
      } else {
        pool.post(wait);
      }
    }
    while (EventAccess::waits(event_) != m) std::this_thread::yield();
  }
  WaitsOn(const WaitsOn&) = delete;
  WaitsOn& operator=(const WaitsOn&) = delete;
  ~WaitsOn() {
    for (std::thread& thread : threads_) thread.join();
  }

  [[nodiscard]] unsigned released() const noexcept { return released_.load(std::memory_order_acquire); }
  // Waits until `n` waits returned.
  void await(unsigned n) const {
    while (released() < n) std::this_thread::yield();
  }
  // True if no wait returned twice.
  [[nodiscard]] bool each_at_most_once() const noexcept {
    for (unsigned i = 0; i < m_; ++i) {
      if (times_[i].load(std::memory_order_relaxed) > 1) return false;
    }
    return true;
  }

 private:
  weft::Event& event_;
  std::unique_ptr<std::atomic<unsigned>[]> times_;
  unsigned m_;
  std::atomic<unsigned> released_{0};
  std::vector<std::thread> threads_;
};

// N signals, back to back, against M waits all waiting: min(N, M) return; the event is left set iff N > M (a
// later wait_for(0) takes that one signal, and only it). Then the waits still waiting are released one signal
// each, and nothing returns twice.
void n_signals_m_waits(Waiters where, bool fibers, unsigned n, unsigned m) {
  INFO("waits on " << std::string(where == Waiters::threads ? "threads" : "tasks") << ", fibers = " << fibers
                   << ", N = " << n << " signals, M = " << m << " waits");
  // Without fibers each waiting task holds a worker (its wait runs the others nested): one worker more than M.
  weft::Pool pool{weft::PoolOptions{.threads = fibers ? 2u : m + 1, .fibers = fibers}};
  weft::Event event(weft::Event::Mode::Auto);
  {
    WaitsOn waits(event, where, pool, m);
    for (unsigned i = 0; i < n; ++i) event.signal();
    const unsigned expected = std::min(n, m);
    waits.await(expected);
    CHECK(event.is_signaled() == (n > m));
    CHECK(EventAccess::waits(event) == m - expected);
    // The rest, one signal each (the event stays unset while a wait is left to take each).
    for (unsigned i = expected; i < m; ++i) event.signal();
    waits.await(m);
    CHECK(waits.released() == m);
    CHECK(waits.each_at_most_once());
  }
  CHECK(EventAccess::waits(event) == 0);
  CHECK(event.is_signaled() == (n > m));
  CHECK(event.wait_for(std::chrono::nanoseconds(0)) == (n > m));
  CHECK_FALSE(event.is_signaled());
  CHECK_FALSE(event.wait_for(std::chrono::nanoseconds(0)));
  pool.wait_idle();
}

TEST_CASE("Auto: two back-to-back signals with four waits waiting release two of them") {
  for (const bool fibers : event_fiber_modes()) {
    for (const Waiters where : {Waiters::tasks, Waiters::threads}) {
      const Watchdog watchdog("two signals, four waits", patience(60));
      n_signals_m_waits(where, fibers, 2, 4);
    }
  }
}

TEST_CASE("Auto: N signals against M waiting waits release min(N, M); with N > M the event stays set, once") {
  const unsigned pairs[][2] = {{1, 1}, {1, 3}, {3, 1}, {3, 3}, {2, 5}, {5, 2}, {0, 2}, {4, 0}, {7, 7}, {8, 6}};
  for (const bool fibers : event_fiber_modes()) {
    for (const Waiters where : {Waiters::tasks, Waiters::threads}) {
      for (const auto& pair : pairs) {
        const Watchdog watchdog("N signals, M waits", patience(60));
        n_signals_m_waits(where, fibers, pair[0], pair[1]);
      }
    }
  }
}

TEST_CASE("Auto: clear() unsets an event nobody waits on, and keeps the releases due to waits in progress") {
  weft::Event event(weft::Event::Mode::Auto, true);
  CHECK(event.is_signaled());
  event.clear();
  CHECK_FALSE(event.is_signaled());
  CHECK_FALSE(event.wait_for(std::chrono::nanoseconds(0)));
  const Watchdog watchdog("clear with waits in progress", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  WaitsOn waits(event, Waiters::threads, pool, 3);
  event.signal();
  event.signal();
  event.clear();  // both signals were due to waits in progress: they keep them
  waits.await(2);
  event.signal();
  waits.await(3);
  CHECK(waits.each_at_most_once());
  CHECK_FALSE(event.is_signaled());
}

// Racing: waiters on threads and in tasks wait (some with short time-outs) while signallers signal; a wait
// returns true at most once per signal in all, and every wait that ended left the event's count of waits as
// it found it (zero at the end). Signals go on until the waits that must return have.
TEST_CASE("Auto: racing signals, waits and time-outs: never more returns than signals, exactly once each") {
  const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 30 : 300);
  for (const bool fibers : event_fiber_modes()) {
    INFO("fibers = " << fibers);
    const Watchdog watchdog("racing signals and waits", patience(240));
    weft::Pool pool{weft::PoolOptions{.threads = 3, .fibers = fibers}};
    for (std::uint64_t round = 0; round < rounds; ++round) {
      weft::Event event(weft::Event::Mode::Auto);
      constexpr unsigned kWaitsEach = 20;
      std::atomic<std::uint64_t> returned{0};   // waits that returned true (wait() or wait_for)
      std::atomic<std::uint64_t> timed_out{0};  // wait_for that returned false
      std::atomic<std::uint64_t> signals{0};
      std::atomic<unsigned> waiters_done{0};
      auto waiter = [&](bool timed) {
        for (unsigned i = 0; i < kWaitsEach; ++i) {
          if (timed && i % 2 == 0) {
            if (event.wait_for(std::chrono::microseconds(50))) {
              returned.fetch_add(1, std::memory_order_relaxed);
            } else {
              timed_out.fetch_add(1, std::memory_order_relaxed);
            }
          } else {
            event.wait();
            returned.fetch_add(1, std::memory_order_relaxed);
          }
        }
        waiters_done.fetch_add(1, std::memory_order_release);
      };
      // Two waiters on threads, two in tasks (one of each with time-outs).
      std::thread t1(waiter, false);
      std::thread t2(waiter, true);
      pool.post([&] { waiter(false); });
      pool.post([&] { waiter(true); });
      // Signals (counted before each, so the count is never below the returns) until every waiter finished.
      std::thread signaller([&] {
        while (waiters_done.load(std::memory_order_acquire) < 4) {
          signals.fetch_add(1, std::memory_order_relaxed);
          event.signal();
          std::this_thread::yield();
        }
      });
      t1.join();
      t2.join();
      signaller.join();
      pool.wait_idle();
      const std::uint64_t waits = 4ULL * kWaitsEach;
      INFO("round " << round << ": " << returned.load() << " returned, " << timed_out.load() << " timed out, "
                    << signals.load() << " signals");
      REQUIRE(returned.load() + timed_out.load() == waits);
      REQUIRE(returned.load() <= signals.load());
      REQUIRE(EventAccess::waits(event) == 0);
      REQUIRE(EventAccess::releases(event) == 0);
    }
  }
}

}  // namespace
