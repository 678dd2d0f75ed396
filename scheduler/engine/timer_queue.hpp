// The pool's timers (Pool::post_after, post_at, post_every, submit_after_delay, submit_at): one binary min-heap
// of deadlines under a mutex, serviced by one timer thread per pool, started with the pool's first timer.
//
// Why a thread and not the worker that would otherwise park: a worker servicing the heap runs only when it runs
// dry, so with every worker busy in long tasks a due timer would wait for the first of them to finish; and it
// would add a look at the heap (or a timeout computation) to the loop and park path every ordinary task crosses.
// The timer thread costs one sleeping thread per pool that uses timers, touches nothing of the worker loop, and
// hands each due task to the pool as an outside post does. Measured (docs/perf-log.md, "timer lateness"): under a
// load of 1 ms tasks a timer's task starts a few ms late, where a worker-serviced design would wait for the load to
// end; on an idle pool the hand-over costs one more wake-up than a worker parked until the deadline would (0.1 to
// 3.7 ms at the median on a contended machine).
//
// Every move of a timer's phase word is in timer_phase.hpp (checked under Relacy).
//
// Contract:
// - schedule() inserts an entry; the thread is woken only when the new entry is the earliest (its sleep's
//   deadline moved). It sleeps on a condition variable until the earliest deadline (steady_clock; the wait is a
//   futex wait with a timeout, no polling), pops every due entry, and fires each outside the mutex.
// - Firing a one-shot timer is the compare-and-swap waiting -> fired (weft::detail::TimerState); its loser is
//   a cancel() that won first, and the entry is skipped. A periodic timer goes waiting -> queued, and its run
//   task (run_periodic) queued -> running -> waiting, then reinserts itself with its next deadline.
// - Cancelled entries stay in the heap until due, or until a compaction removes them: whenever the heap has
//   doubled since the last compaction (at least kCompactFloor entries), every entry no longer waiting is dropped
//   (amortised constant time per insert), so cancelled far-future timers cannot grow the heap without bound.
// - stop() (a shutdown's first step) refuses further schedules, joins the thread (whatever it popped is handed
//   to the pool first), and drops every entry left, counting each timer it drops.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "weft/timer.hpp"

namespace weft::engine {

class Engine;

class TimerQueue {
 public:
  explicit TimerQueue(Engine& engine) noexcept : engine_(engine) {}
  ~TimerQueue() { (void)stop(); }
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Queues `state` due at `when`; starts the timer thread if it is not running. False (nothing queued) once
  // stop() began. Throws std::bad_alloc, std::system_error (no thread) with nothing queued.
  bool schedule(std::shared_ptr<weft::detail::TimerState> state, std::chrono::steady_clock::time_point when);
  // Refuses further schedules, joins the thread, drops what is left (each counted in dropped()). Returns the number
  // this call dropped. Idempotent.
  std::uint64_t stop() noexcept;

  // A periodic timer's run task: runs the work once (its exception to the pool's error handler), then schedules
  // the next run, unless cancelled meanwhile or the queue stopped (then dropped and counted).
  void run_periodic(const std::shared_ptr<weft::detail::TimerState>& state) noexcept;
  // A periodic timer's run task was destroyed unrun (a shutdown dropped it): the timer is dropped and counted.
  void periodic_dropped(weft::detail::TimerState& state) noexcept;

  // PoolStats: timer tasks handed to the pool (a periodic timer counts each run), timers dropped by a shutdown.
  [[nodiscard]] std::uint64_t fired() const noexcept { return fired_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  // Entries in the heap now, cancelled ones not yet removed included (a snapshot).
  [[nodiscard]] std::size_t size() const;

  static constexpr std::size_t kCompactFloor = 1024;

 private:
  struct Entry {
    std::chrono::steady_clock::time_point when;
    std::uint64_t sequence;  // equal deadlines fire in the order they were scheduled
    std::shared_ptr<weft::detail::TimerState> state;
  };
  // The heap's order: the earliest deadline on top (std::push_heap builds a max-heap, so "later" is "less").
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const noexcept {
      return a.when != b.when ? a.when > b.when : a.sequence > b.sequence;
    }
  };

  void thread_main() noexcept;
  // Hands a due entry's task to the pool, or skips it (cancelled).
  void fire(Entry& entry) noexcept;
  // Drops the entries no longer waiting (cancelled, or a periodic one whose phase moved on). Under mutex_.
  void compact();
  // Drops a timer `state` whose phase this caller just took to `dropped`: its work destroyed, its future told.
  void drop_taken(weft::detail::TimerState& state) noexcept;

  Engine& engine_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a new earliest deadline, or stop()
  std::vector<Entry> heap_;          // under mutex_
  std::uint64_t next_sequence_ = 0;  // under mutex_
  std::size_t compact_at_ = kCompactFloor;
  bool stopping_ = false;  // under mutex_
  std::thread thread_;     // started by the first schedule(), under mutex_
  std::atomic<std::uint64_t> fired_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace weft::engine
