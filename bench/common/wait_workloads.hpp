// The waits workloads of issue 25 ("Waits: the rows of the fibers issue"), shared by bench/fiber/wait_bench
// (Google Benchmark) and bench/demo/weft-demo, so that both programs time exactly the same code:
// - ping-pong: two tasks hand a turn back and forth through two auto-reset weft::Events, against the same
//   hand-over between two threads on std::binary_semaphore (oneTBB has no task-level blocking primitive: a
//   oneTBB user who needs one blocks a thread, and two threads on a semaphore are the cheapest such wait);
// - fan-out: one task posts small tasks and waits for them on a weft::WaitGroup (oneTBB's peer, task_group run +
//   wait, is in wait_workloads_tbb.hpp);
// - a short wait behind a long task: how late a task waiting on an Event resumes when the signal comes while
//   its worker runs a long unrelated task (with fibers it resumes on another worker; without, the long task
//   runs nested on the waiting task's stack and the wait ends only when it returns).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <semaphore>
#include <thread>
#include <vector>

#include "weft/event.hpp"
#include "weft/pool.hpp"
#include "weft/wait_group.hpp"

namespace weft::bench {

inline constexpr std::int64_t kPingPongRounds = 20'000;
inline constexpr std::size_t kFanOutTasks = 1'000;
inline constexpr std::chrono::milliseconds kLongTask{20};

// One ping-pong of `rounds` rounds on `pool` (each round: two signals, two waits); returns once both tasks
// have finished. The pool must have no other work (it waits for the pool to be idle).
inline void weft_ping_pong(Pool& pool, std::int64_t rounds) {
  Event ping{Event::Mode::Auto};
  Event pong{Event::Mode::Auto};
  pool.post([&] {
    for (std::int64_t i = 0; i < rounds; ++i) {
      ping.signal();
      pong.wait();
    }
  });
  pool.post([&] {
    for (std::int64_t i = 0; i < rounds; ++i) {
      ping.wait();
      pong.signal();
    }
  });
  pool.wait_idle();
}

// The same ping-pong between this thread and a new one, through std::binary_semaphore (a futex each way once
// the short spin of the semaphore's wait gives up). The thread's start and join are timed too: a few tens of
// microseconds against the rounds' milliseconds.
inline void threads_ping_pong(std::int64_t rounds) {
  std::binary_semaphore ping{0};
  std::binary_semaphore pong{0};
  std::thread other([&] {
    for (std::int64_t i = 0; i < rounds; ++i) {
      ping.acquire();
      pong.release();
    }
  });
  for (std::int64_t i = 0; i < rounds; ++i) {
    ping.release();
    pong.acquire();
  }
  other.join();
}

// What task i of a fan-out computes; the fan-out's result is the sum over all tasks, so that a scheduler that
// lost or repeated a task cannot pass as a fast one.
[[nodiscard]] constexpr std::uint64_t fan_out_item(std::size_t i) noexcept {
  return static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(i);
}
[[nodiscard]] constexpr std::uint64_t fan_out_sum(std::size_t tasks) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < tasks; ++i) sum += fan_out_item(i);
  return sum;
}

// One task, posted from this thread (which then waits for the pool to be idle, as WeftSide::fib does: a future's
// waiter could run the task itself, off the workers), posts `tasks` small tasks to its worker's deque, each
// filling its own slot and calling WaitGroup::done, waits on the WaitGroup (suspending, with fibers, if they are
// not all done), then sums the slots. The pool must have no other work.
inline std::uint64_t weft_fan_out(Pool& pool, std::size_t tasks) {
  std::uint64_t sum = 0;
  pool.post([&pool, tasks, &sum] {
    std::vector<std::uint64_t> slots(tasks);
    WaitGroup pending;
    pending.add(static_cast<std::uint32_t>(tasks));
    for (std::size_t i = 0; i < tasks; ++i) {
      pool.post([&slots, &pending, i] {
        slots[i] = fan_out_item(i);
        pending.done();
      });
    }
    pending.wait();
    for (const std::uint64_t value : slots) sum += value;
  });
  pool.wait_idle();
  return sum;
}

// A short wait behind a long task, once, on `pool` (two workers or more; `fibers`: whether it was made with
// PoolOptions::fibers on): task W waits on an Event; once W waits (with fibers: has suspended), task L is
// posted with an affinity for W's worker and spins for `long_task`; as soon as L runs, this thread signals the
// Event. Returns the time from the signal to W running again, or nothing if L did not run on W's worker (a
// sample of some other situation: the caller retries).
inline std::optional<std::chrono::nanoseconds> wait_behind_long_task(Pool& pool, bool fibers,
                                                                     std::chrono::nanoseconds long_task) {
  using Clock = std::chrono::steady_clock;
  Event event;
  std::atomic<int> w_worker{-1};
  std::atomic<int> l_worker{-1};
  std::atomic<bool> l_started{false};
  Clock::time_point resumed;
  pool.post([&] {
    const auto worker = pool.current_worker();
    w_worker.store(worker ? static_cast<int>(*worker) : -2, std::memory_order_release);
    event.wait();
    resumed = Clock::now();
  });
  while (w_worker.load(std::memory_order_acquire) == -1) std::this_thread::yield();
  if (fibers && fibers_available()) {
    // Bounded: a wait that does not suspend (no fiber stack left) still makes a valid classic sample.
    const auto give_up = Clock::now() + std::chrono::milliseconds(100);
    while (pool.stats().suspended == 0 && Clock::now() < give_up) std::this_thread::yield();
  }
  TaskOptions on_w;
  on_w.affinity = static_cast<unsigned>(std::max(w_worker.load(std::memory_order_acquire), 0));
  pool.post(
      [&] {
        const auto start = Clock::now();
        const auto worker = pool.current_worker();
        l_worker.store(worker ? static_cast<int>(*worker) : -2, std::memory_order_relaxed);
        l_started.store(true, std::memory_order_release);
        while (Clock::now() - start < long_task) {
        }
      },
      on_w);
  while (!l_started.load(std::memory_order_acquire)) std::this_thread::yield();
  const auto signalled = Clock::now();
  event.signal();
  pool.wait_idle();
  if (l_worker.load(std::memory_order_relaxed) != w_worker.load(std::memory_order_relaxed)) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(resumed - signalled);
}

}  // namespace weft::bench
