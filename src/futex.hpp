// The OS boundary for sleeping: a thread blocks on a 32-bit word until another thread wakes it.
// Internal to weft; the scheduler's parking (scheduler/engine/event_count.hpp) is its only user.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace weft::os {

// Blocks while `word` holds `expected`, until futex_wake_* on the same word, a spurious wake-up, or (if given)
// the timeout. Returns at once if the word already differs. Callers re-check their condition in a loop:
// a return says nothing about why it returned.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept;
void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                    std::chrono::nanoseconds timeout) noexcept;

// Wakes at most one / every thread blocked in futex_wait on `word`.
void futex_wake_one(std::atomic<std::uint32_t>& word) noexcept;
void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept;

}  // namespace weft::os
