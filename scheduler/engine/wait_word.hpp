// Blocking on a 32-bit word: how every wait in weft sleeps once it has nothing else to do. A thread sleeps on the
// word's futex. A task on a worker's fiber, inside a wait that may suspend (Engine::wait_on_worker), suspends its
// fiber instead, and the worker runs other tasks meanwhile (scheduler/engine/fiber_worker.hpp).
//
// The protocol is the futex's: a waker changes the word, then calls wake_word_*; a waiter parks only while the
// word still holds the value it saw. Wake-ups may be spurious: waiters re-check their condition.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace weft::engine {

// Blocks while `word` holds `expected`, for at most `timeout` (nanoseconds::max(): no limit), or until a
// wake_word_* on it; may return early. Inside a suspending wait on this thread (see SuspendingWait in
// scheduler/engine/fiber_worker.hpp), suspends the calling fiber rather than the thread, for as long.
void park_word(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::chrono::nanoseconds timeout) noexcept;
// Wakes everything parked on `word`: threads and suspended fibers.
void wake_word_all(std::atomic<std::uint32_t>& word) noexcept;
// Wakes at least one thing parked on `word`, if any (possibly more: a sleeping thread and a suspended fiber).
void wake_word_one(std::atomic<std::uint32_t>& word) noexcept;

// park_word and wake_word_all as the `Parking` policy of a primitive word's protocol
// (scheduler/sync/word_protocol.hpp): how the waiters of an Event, a WaitGroup, a TaskGroup or an AsyncTask sleep.
struct WordParking {
  static void park(std::atomic<std::uint32_t>& w, std::uint32_t expected, std::chrono::nanoseconds slice) noexcept {
    park_word(w, expected, slice);
  }
  static void wake_all(std::atomic<std::uint32_t>& w) noexcept { wake_word_all(w); }
};

}  // namespace weft::engine
