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
namespace detail {
struct EventAccess;
struct CoroWordAccess;
}  // namespace detail

// An event (marl's marl::Event, a Win32 event): signalled or not; wait() returns once it is signalled.
//
// Contract:
// - Mode::Manual (the default): signal() sets it and it stays set, releasing every waiter now and later, until
//   clear(). Mode::Auto (a Win32 auto-reset event): each signal() releases one wait in progress that no earlier
//   signal released; with none left to release it sets the event, and the next wait to start takes that signal
//   and returns at once (the event clears itself). Signals never add up beyond the waits: N signals, back to
//   back, while M waits are in progress release min(N, M) of them, and if N > M leave the event set, once: the
//   next wait returns at once, the one after it waits. Which waits are released is not specified (not FIFO).
//   marl's Auto event differs: there a second signal before the first one's wait woke is lost. At most 32,767
//   waits may be in progress on one Auto event at once; the next one throws std::length_error.
// - wait() returns once the event is signalled. On a worker of a pool with fibers (PoolOptions::fibers) the
//   calling task suspends and resumes, possibly on another worker, when the event is signalled; on a worker
//   without fibers, or inside a catch block, the worker runs other tasks of its pool meanwhile; on any other
//   thread the thread blocks.
// - wait_for(timeout) is wait() with a time limit: it returns true if it consumed a signal (Auto) or saw the
//   event signalled (Manual), false if the time ran out (Auto: a signal due to it as time ran out is consumed,
//   and it returns true). On a worker with fibers it suspends as wait() does, and
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
  // Manual: stays signalled until clear(). Auto: each signal releases one wait (or sets the event if none is left).
  enum class Mode : unsigned char { Manual, Auto };

  // An event in `mode`, signalled from the start if `signaled`.
  explicit Event(Mode mode = Mode::Manual, bool signaled = false) noexcept : mode_(mode), state_(signaled ? 1 : 0) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Sets the event and wakes its waiters (Manual: all of them; Auto: one wait returns per signal, or the event is
  // left set if every wait in progress has a signal already).
  void signal() noexcept;
  // Clears the event: waits started after this block until the next signal(). Auto: the signals that released
  // waits in progress stay theirs.
  void clear() noexcept;
  // Blocks (or suspends the calling task) until the event is signalled; Auto consumes one signal. Auto: throws
  // std::length_error if 32,767 waits are in progress already.
  void wait();
  // As wait(), for at most `timeout`; true if signalled (Auto: and consumed), false on time-out.
  [[nodiscard]] bool wait_for(std::chrono::nanoseconds timeout);
  template <class Rep, class Period>
  [[nodiscard]] bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    return wait_for(detail::clamp_to_nanoseconds(timeout));
  }
  // True if signalled now (a snapshot; never consumes an Auto event's signal).
  [[nodiscard]] bool is_signaled() const noexcept { return (state_.load(std::memory_order_acquire) & 1) != 0; }
  // The mode it was made with.
  [[nodiscard]] Mode mode() const noexcept { return mode_; }

 private:
  friend struct detail::EventAccess;     // tests read the word
  friend struct detail::CoroWordAccess;  // co_await event (weft/task.hpp) waits on the word
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  bool wait_until_auto(std::chrono::steady_clock::time_point deadline);

  const Mode mode_;
  // Set (1) or not; Auto: also the releases due and the waits in progress not released yet. And whether a waiter
  // sleeps on it (weft/detail/primitive_word.hpp).
  std::atomic<std::uint32_t> state_;
};

}  // namespace weft
