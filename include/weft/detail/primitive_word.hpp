// The one 32-bit word that holds a weft wait primitive's state (weft::Event, WaitGroup, ConditionVariable): the
// primitive's value in the low 31 bits, and kWordWaiters, which a waiter sets before it sleeps on the word.
// Internal: the protocol is in the library (scheduler/sync/word_protocol.hpp).
#pragma once

#include <cstdint>

namespace weft::detail {

// Set by a waiter before it sleeps on the word; cleared by the notifier that wakes it.
inline constexpr std::uint32_t kWordWaiters = std::uint32_t{1} << 31;
// The primitive's own value: the count, the generation, the signalled flag.
inline constexpr std::uint32_t kWordValue = kWordWaiters - 1;

// An Event's value. Bit 0: set (Mode::Manual: the whole value; Mode::Auto: signalled with no wait in progress
// left to release). Mode::Auto only, above it: the releases due (signals given to waits in progress that have not
// taken them yet) and the waits in progress not released yet.
inline constexpr std::uint32_t kEventSetBit = 1;
inline constexpr std::uint32_t kEventReleaseUnit = 2;
inline constexpr std::uint32_t kEventReleases = (std::uint32_t{1} << 16) - kEventReleaseUnit;
inline constexpr std::uint32_t kEventWaitUnit = std::uint32_t{1} << 16;
inline constexpr std::uint32_t kEventWaits = kWordValue & ~(kEventWaitUnit - 1);
// The most waits in progress (released or not) an Auto event counts at once: what either field can hold.
inline constexpr std::uint32_t kEventMaxWaits = (std::uint32_t{1} << 15) - 1;

}  // namespace weft::detail
