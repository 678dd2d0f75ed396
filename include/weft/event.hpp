// weft::Event: a flag that tasks and threads wait for, set by signal(). On a worker of a pool with fibers the
// waiting task suspends and the worker runs other tasks; on any other thread the thread blocks.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

#include "weft/detail/deadline.hpp"
#include "weft/detail/primitive_word.hpp"

namespace weft {

// An event (marl's marl::Event, a Win32 event): signalled or not; wait() returns once it is signalled.
//
// Contract:
// - Mode::Manual (the default): signal() sets it and it stays set, releasing every waiter now and later, until
//   clear(). Mode::Auto: each signal() releases one wait (now or later) and the event clears itself as that
//   wait returns; signals that no wait consumed do not add up (it is a flag, not a count).
// - wait() returns once the event is signalled. On a worker of a pool with fibers (PoolOptions::fibers) the
//   calling task suspends and resumes, possibly on another worker, when the event is signalled; on a worker
//   without fibers, or inside a catch block, the worker runs other tasks of its pool meanwhile; on any other
//   thread the thread blocks.
// - wait_for(timeout) is wait() with a time limit: it returns true if it consumed the signal (Auto) or saw the
//   event signalled (Manual), false if the time ran out. On a worker with fibers it suspends as wait() does, and
//   resumes at the deadline at the latest (give or take the workers' timer look, about a millisecond when idle).
// - Every member may be called from any thread at any time; signal() before wait() is never lost. What a thread
//   did before signal() is visible to the waiter that wait() released.
// - Not copyable or movable: waiters refer to it by address. Destroy it only once no thread waits on it; a waiter
//   may destroy it as soon as wait() returns, even while the signal() that released it is still returning.
//
// Example (docs/examples/wait_primitives.cpp has more):
//   weft::Event ready;                      // manual reset
//   pool.post([&] { load_config(); ready.signal(); });
//   pool.post([&] { ready.wait(); use_config(); });  // suspends until the first task signals
class Event {
 public:
  // Manual: stays signalled until clear(). Auto: each signal releases one wait.
  enum class Mode : unsigned char { Manual, Auto };

  // An event in `mode`, signalled from the start if `signaled`.
  explicit Event(Mode mode = Mode::Manual, bool signaled = false) noexcept
      : mode_(mode), state_(signaled ? 1 : 0) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Sets the event and wakes its waiters (Manual: all of them; Auto: one wait returns per signal).
  void signal() noexcept;
  // Clears the event: waits started after this block until the next signal().
  void clear() noexcept;
  // Blocks (or suspends the calling task) until the event is signalled; Auto consumes the signal.
  void wait();
  // As wait(), for at most `timeout`; true if signalled (Auto: and consumed), false on time-out.
  [[nodiscard]] bool wait_for(std::chrono::nanoseconds timeout);
  template <class Rep, class Period>
  [[nodiscard]] bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    return wait_for(detail::clamp_to_nanoseconds(timeout));
  }
  // True if signalled now (a snapshot; never consumes an Auto event's signal).
  [[nodiscard]] bool is_signaled() const noexcept {
    return (state_.load(std::memory_order_acquire) & 1) != 0;
  }
  // The mode it was made with.
  [[nodiscard]] Mode mode() const noexcept { return mode_; }

 private:
  // Returns whether it saw (Manual) or took (Auto) the signal.
  [[nodiscard]] bool try_take() noexcept;
  bool wait_until(std::chrono::steady_clock::time_point deadline);

  const Mode mode_;
  // Set (1) or not, and whether a waiter sleeps on it (weft/detail/primitive_word.hpp).
  std::atomic<std::uint32_t> state_;
};

}  // namespace weft
