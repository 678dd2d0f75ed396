// What every Pool test shares: the worker counts each test runs with, a watchdog that turns a deadlock into a
// failure with a message, per-task exactly-once counters, and a gate that holds workers inside a task.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"
#include "weft/pool.hpp"

namespace weft::test {

// The issue's fixture: every test body runs with each of these worker counts (32 > cores on purpose).
inline constexpr std::array<unsigned, 5> kWorkerCounts = {1, 2, 4, 8, 32};

// Runs body(workers) once per worker count; a failing check prints the count.
template <class Body>
void for_each_worker_count(Body&& body) {
  for (const unsigned workers : kWorkerCounts) {
    INFO("workers = " << workers);
    body(workers);
  }
}

[[nodiscard]] inline std::string named(const char* what, unsigned workers) {
  return std::string(what) + " (workers = " + std::to_string(workers) + ")";
}

// One run counter per task. Tasks only increment (relaxed: the pool's wait_idle/shutdown/future orders the
// increments before the reader); the checks run on the test thread afterwards.
class RunCounts {
 public:
  explicit RunCounts(std::size_t tasks) : size_(tasks), counts_(std::make_unique<std::atomic<std::uint8_t>[]>(tasks)) {}

  void ran(std::size_t task) noexcept { counts_[task].fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] unsigned count(std::size_t task) const noexcept {
    return counts_[task].load(std::memory_order_relaxed);
  }

  // Result of one sweep: how many tasks ran once, never, or more than once, and the first offender.
  struct Summary {
    std::size_t once = 0;
    std::size_t never = 0;
    std::size_t repeated = 0;
    std::size_t first_never = ~std::size_t{0};
    std::size_t first_repeated = ~std::size_t{0};
  };
  [[nodiscard]] Summary summary() const noexcept {
    Summary s;
    for (std::size_t i = 0; i < size_; ++i) {
      const unsigned c = count(i);
      if (c == 1) {
        ++s.once;
      } else if (c == 0) {
        if (s.never++ == 0) s.first_never = i;
      } else if (s.repeated++ == 0) {
        s.first_repeated = i;
      }
    }
    return s;
  }

 private:
  std::size_t size_;
  std::unique_ptr<std::atomic<std::uint8_t>[]> counts_;
};

// Every task ran exactly once (one check, with the first offender named, instead of a million).
inline void check_exactly_once(const RunCounts& runs) {
  const auto s = runs.summary();
  INFO("tasks = " << runs.size() << ", never ran = " << s.never << " (first #" << s.first_never
                  << "), ran twice or more = " << s.repeated << " (first #" << s.first_repeated << ")");
  CHECK(s.once == runs.size());
}

// Holds the tasks that enter it until open() is called; counts who has entered.
// Sleeps on a mutex and a condition variable, not on std::atomic::wait: where libstdc++ has no futex (GCC 12 for
// Windows, MinGW-w64) its atomic wait checks the value, then sleeps on a shared condition variable without checking
// again under the lock, and notify_all does not take that lock, so a notify between the two is lost and the task
// never leaves (the Windows stage's hangs in every test that used a gate). On Linux it sleeps on a futex.
class Gate {
 public:
  // Called from tasks: blocks (without running other tasks) until the gate opens.
  void enter() noexcept {
    // release: the test thread that sees `entered` also sees what the task did before entering.
    entered_.fetch_add(1, std::memory_order_release);
    std::unique_lock lock(mutex_);
    opened_.wait(lock, [this] { return open_; });
  }
  void open() noexcept {
    {
      const std::lock_guard lock(mutex_);  // the mutex orders what the test thread did before with enter()
      open_ = true;
    }
    opened_.notify_all();
  }
  [[nodiscard]] unsigned entered() const noexcept { return entered_.load(std::memory_order_acquire); }
  // Spins (yielding) until `n` tasks are inside.
  void await_entered(unsigned n) const noexcept {
    while (entered() < n) std::this_thread::yield();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;  // under mutex_
  std::atomic<unsigned> entered_{0};
};

// Occupies every worker of `pool` with a task that waits at `gate`; returns once all of them are inside.
// Each worker can hold only one such task (it blocks without running others), so each gets exactly one.
inline void occupy_all_workers(Pool& pool, Gate& gate) {
  for (unsigned i = 0; i < pool.size(); ++i) pool.post([&gate] { gate.enter(); });
  gate.await_entered(pool.size());
}

// Tasks a holder posted from its worker to find out whether the pool still accepts work from workers.
struct Probes {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> ran{0};
};

// Occupies every worker with a task that returns only once the pool refuses tasks posted from a worker,
// which happens when a DropPending shutdown (or shutdown_for's deadline) begins: so when the holders return,
// the pool is already dropping, and no pending task may start any more. (An outside submitter is refused
// earlier, as soon as a shutdown of any kind begins.) Probes refused as full do not count.
inline void hold_workers_until_dropping(Pool& pool, Probes& probes) {
  std::atomic<unsigned> inside{0};
  for (unsigned i = 0; i < pool.size(); ++i) {
    pool.post([&pool, &probes, &inside] {
      inside.fetch_add(1);
      for (;;) {
        const SubmitStatus status = pool.try_post([&probes] { probes.ran.fetch_add(1); });
        if (status == SubmitStatus::Closed) return;
        if (status == SubmitStatus::Accepted) probes.accepted.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  while (inside.load() < pool.size()) std::this_thread::yield();
}

// Polls pred every millisecond until it holds or `limit` passes; returns pred().
template <class Pred>
[[nodiscard]] bool eventually(Pred pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

[[nodiscard]] inline std::uint64_t total_executed(const PoolStats& stats) {
  std::uint64_t sum = 0;
  for (const auto& w : stats.workers) sum += w.executed;
  return sum;
}

}  // namespace weft::test
