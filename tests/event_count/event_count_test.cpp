// EventCount: no lost wake-ups under ping-pong and many-to-many hand-offs, and a parked thread uses no CPU.
// A lost wake-up shows as a hang, so every blocking test runs under a watchdog that fails it with the round
// it was stuck in instead of waiting for meson's timeout.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "scheduler/engine/event_count.hpp"
#include "tests/support/platform.hpp"
#include "tests/support/stress.hpp"

using namespace std::chrono_literals;
using weft::engine::EventCount;

namespace {

// Aborts the process if `progress` stops moving for `limit` (a lost wake-up), naming the test.
class Watchdog {
 public:
  Watchdog(const char* name, const std::atomic<std::uint64_t>& progress, std::chrono::seconds limit)
      : thread_([this, name, &progress, limit] {
          auto last = progress.load();
          auto since = std::chrono::steady_clock::now();
          while (!done_.load()) {
            std::this_thread::sleep_for(10ms);
            const auto now_value = progress.load();
            if (now_value != last) {
              last = now_value;
              since = std::chrono::steady_clock::now();
            } else if (std::chrono::steady_clock::now() - since > limit) {
              std::fprintf(stderr, "%s: no progress for %llds at step %llu: lost wake-up\n", name,
                           static_cast<long long>(limit.count()), static_cast<unsigned long long>(now_value));
              std::abort();
            }
          }
        }) {}
  ~Watchdog() {
    done_.store(true);
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Blocks until `ready()` holds, using the EventCount protocol exactly as a worker does.
template <class Ready>
void block_until(EventCount& events, Ready ready) {
  while (!ready()) {
    const auto key = events.prepare_wait();
    if (ready()) {
      events.cancel_wait();
      return;
    }
    events.wait(key);
  }
}

double thread_cpu_seconds() { return static_cast<double>(weft::test::thread_cpu_time().count()) * 1e-6; }

}  // namespace

TEST_CASE("wait returns at once when notified between prepare_wait and wait") {
  EventCount events;
  const auto key = events.prepare_wait();
  CHECK(events.waiters() == 1);
  events.notify_one();
  events.wait(key);
  CHECK(events.waiters() == 0);
}

TEST_CASE("cancel_wait withdraws the waiter; notify with no waiter does not disturb a later wait_for") {
  EventCount events;
  const auto key = events.prepare_wait();
  events.cancel_wait();
  CHECK(events.waiters() == 0);
  (void)key;
  events.notify_all();
  const auto later = events.prepare_wait();
  CHECK_FALSE(events.wait_for(later, 20ms));  // nobody notifies: times out
  CHECK(events.waiters() == 0);
}

TEST_CASE("ping-pong between two threads never loses a wake-up") {
  const std::uint64_t rounds = weft::test::stress_count(50'000);
  EventCount events;
  std::atomic<std::uint64_t> turn{0};  // even: ping's turn, odd: pong's turn
  Watchdog watchdog("ping-pong", turn, 20s);
  std::thread pong([&] {
    for (std::uint64_t i = 0; i < rounds; ++i) {
      block_until(events, [&] { return turn.load(std::memory_order_acquire) == 2 * i + 1; });
      turn.store(2 * i + 2, std::memory_order_release);
      events.notify_all();
    }
  });
  for (std::uint64_t i = 0; i < rounds; ++i) {
    block_until(events, [&] { return turn.load(std::memory_order_acquire) == 2 * i; });
    turn.store(2 * i + 1, std::memory_order_release);
    events.notify_all();
  }
  pong.join();
  CHECK(turn.load() == 2 * rounds);
}

TEST_CASE("tokens handed from 3 producers to 3 consumers with notify_one are each taken once") {
  const std::uint64_t per_producer = weft::test::stress_count(300'000);
  constexpr int producers = 3;
  constexpr int consumers = 3;
  EventCount events;
  std::atomic<std::int64_t> available{0};
  std::atomic<std::uint64_t> taken{0};
  std::atomic<bool> closed{false};
  Watchdog watchdog("tokens", taken, 20s);

  auto take_one = [&] {
    auto have = available.load(std::memory_order_acquire);
    while (have > 0) {
      if (available.compare_exchange_weak(have, have - 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < consumers; ++c) {
    threads.emplace_back([&] {
      for (;;) {
        if (take_one()) {
          taken.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (closed.load(std::memory_order_acquire) && available.load(std::memory_order_acquire) == 0) return;
        const auto key = events.prepare_wait();
        if (available.load(std::memory_order_acquire) > 0 || closed.load(std::memory_order_acquire)) {
          events.cancel_wait();
          continue;
        }
        events.wait(key);
      }
    });
  }
  std::vector<std::thread> makers;
  for (int p = 0; p < producers; ++p) {
    makers.emplace_back([&] {
      for (std::uint64_t i = 0; i < per_producer; ++i) {
        available.fetch_add(1, std::memory_order_release);
        events.notify_one();
      }
    });
  }
  for (auto& maker : makers) maker.join();
  closed.store(true, std::memory_order_release);
  events.notify_all();
  for (auto& thread : threads) thread.join();
  CHECK(taken.load() == producers * per_producer);
  CHECK(available.load() == 0);
  CHECK(events.waiters() == 0);
}

TEST_CASE("a parked thread uses no CPU and wakes on notify") {
  EventCount events;
  std::atomic<bool> go{false};
  std::atomic<double> parked_cpu{-1.0};
  std::thread sleeper([&] {
    const double before = thread_cpu_seconds();
    block_until(events, [&] { return go.load(std::memory_order_acquire); });
    parked_cpu.store(thread_cpu_seconds() - before);
  });
  while (events.waiters() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(300ms);
  go.store(true, std::memory_order_release);
  events.notify_one();
  sleeper.join();
  // A spinning thread would have used ~0.3 s; a parked one uses microseconds. 30 ms leaves room for noise.
  CHECK(parked_cpu.load() >= 0.0);
  CHECK(parked_cpu.load() < 0.03);
}
