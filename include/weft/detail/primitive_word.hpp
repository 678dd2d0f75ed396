// The one 32-bit word that holds a weft wait primitive's state (weft::Event, WaitGroup, ConditionVariable): the
// primitive's value in the low 31 bits, and kWordWaiters, which a waiter sets before it sleeps on the word.
// Internal: the protocol is in the library (scheduler/primitive_word.hpp).
#pragma once

#include <cstdint>

namespace weft::detail {

// Set by a waiter before it sleeps on the word; cleared by the notifier that wakes it.
inline constexpr std::uint32_t kWordWaiters = std::uint32_t{1} << 31;
// The primitive's own value: the count, the generation, the signalled flag.
inline constexpr std::uint32_t kWordValue = kWordWaiters - 1;

}  // namespace weft::detail
