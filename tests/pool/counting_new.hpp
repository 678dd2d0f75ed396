// Counts heap allocations made by every thread of the process (a replaced global operator new,
// counting_new.cpp), so that a test can show that the pool's steady state does not allocate.
#pragma once

#include <cstdint>

namespace weft::test {

// Switches counting on or off for all threads.
void count_allocations(bool on) noexcept;
// Allocations counted since the last reset.
[[nodiscard]] std::uint64_t allocations_counted() noexcept;
void reset_allocation_count() noexcept;

}  // namespace weft::test
