// The pool's queue bound (PoolOptions::max_queued): how many accepted tasks may wait unstarted, the places taken
// and given back, and where submitters wait for room. Engine::admit (submit.cpp) decides who waits and how; this
// type holds the count those decisions act on.
//
// Contract:
// - bounded() is false when max_queued is 0, and never changes: no place is then ever taken or given back, and
//   every other member goes unused (the engine tests bounded() before each).
// - A task takes one place when it is admitted (try_take(), or take_over_limit()) and gives it back exactly once
//   (release()): when it starts (on a worker, in an outside thread's slot, or as the future a worker waits for) or
//   when it is abandoned unqueued. So queued() is the number admitted and not yet started.
// - queued() exceeds limit() only by admissions over the limit (take_over_limit(), counted in
//   admitted_over_limit()): a worker that may not wait for room (Engine::admit says when) is admitted past it
//   rather than deadlock; the overshoot lasts until those tasks start.
// - The count is relaxed throughout: it bounds memory only; each task is ordered by the queue it goes into. A
//   submitter that finds no room waits (wait_for_room, sleep_for_room) on an EventCount that release() notifies
//   once per place given back and wake_all() for every waiter (a shutdown closing the gate: they must see it).
// Header only: release() runs once per task started in a bounded pool, the waits are templates over the caller's
// look at the room, and the rest is a few lines each.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "scheduler/engine/event_count.hpp"

namespace weft::engine {

class QueueBound {
 public:
  // `limit`: PoolOptions::max_queued, 0 for no bound.
  explicit QueueBound(std::size_t limit) noexcept : limit_(limit) {}
  QueueBound(const QueueBound&) = delete;
  QueueBound& operator=(const QueueBound&) = delete;

  // The pool has a bound (max_queued > 0).
  [[nodiscard]] bool bounded() const noexcept { return limit_ != 0; }
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }
  // Admitted tasks not yet started (a snapshot).
  [[nodiscard]] std::size_t queued() const noexcept { return queued_.load(std::memory_order_relaxed); }
  // A place is free now (a snapshot).
  [[nodiscard]] bool has_room() const noexcept { return queued() < limit_; }

  // Takes a place if one is free; false if the queue is full.
  [[nodiscard]] bool try_take() noexcept {
    std::size_t queued = queued_.load(std::memory_order_relaxed);
    while (queued < limit_) {
      // relaxed: the count only bounds memory; the task itself is ordered by the queue it goes into.
      if (queued_.compare_exchange_weak(queued, queued + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  // Takes a place past the limit, for a submitter that may not wait (see the contract). relaxed: as try_take.
  void take_over_limit() noexcept {
    queued_.fetch_add(1, std::memory_order_relaxed);
    admitted_over_limit_.fetch_add(1, std::memory_order_relaxed);
  }
  // An admitted task started, or was abandoned: its place is free again, and one waiting submitter looks.
  void release() noexcept {
    queued_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see try_take
    room_changed_.notify_one();
  }

  // PoolStats::admitted_over_limit.
  [[nodiscard]] std::uint64_t admitted_over_limit() const noexcept {
    return admitted_over_limit_.load(std::memory_order_relaxed);  // relaxed: a count
  }

  // Blocks the calling thread until release() or wake_all() may have changed `room()` (has_room(), or the pool
  // closed to the caller), or the deadline (time_point::max(): none) passed; returns at once if room() holds.
  template <class Room>
  void wait_for_room(Room room, std::chrono::steady_clock::time_point deadline) noexcept {
    const auto key = room_changed_.prepare_wait();
    if (room()) {
      room_changed_.cancel_wait();
      return;
    }
    if (deadline != std::chrono::steady_clock::time_point::max()) {
      (void)room_changed_.wait_for(key, deadline - std::chrono::steady_clock::now());
    } else {
      room_changed_.wait(key);
    }
  }
  // A worker's sleep inside its wait for room (Engine::wait_on_worker's `sleep`): as wait_for_room, for at most
  // `slice`; on a fiber it parks the fiber once.
  template <class Room>
  void sleep_for_room(Room room, std::chrono::nanoseconds slice) noexcept {
    const auto key = room_changed_.prepare_wait();
    if (room()) {
      room_changed_.cancel_wait();
      return;
    }
    (void)room_changed_.wait_once(key, slice);
  }
  // Every waiting submitter looks again: the gate closed, or the state rose (shutdown.cpp).
  void wake_all() noexcept { room_changed_.notify_all(); }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<std::uint64_t> admitted_over_limit_{0};
  EventCount room_changed_;
};

}  // namespace weft::engine
