// Counts heap allocations through a replaced global operator new (tests/support/counting_new.cpp), so that a
// test can assert "no allocation" or "exactly one". Link counting_new.cpp into an executable to use it; it
// replaces operator new for that executable only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weft::test {

// Calls to any replaceable operator new made by the calling thread since it started.
[[nodiscard]] std::size_t allocations_on_this_thread() noexcept;

// The largest size asked of operator new by the calling thread since it started or last called
// reset_largest_allocation_on_this_thread() (an attempt counts even if it then fails).
[[nodiscard]] std::size_t largest_allocation_on_this_thread() noexcept;
void reset_largest_allocation_on_this_thread() noexcept;

// Makes the calling thread's next operator new throw std::bad_alloc (it still counts as an allocation attempt).
void fail_next_allocation_on_this_thread() noexcept;

// Lets the calling thread's next `skip` calls of operator new succeed, then makes the one after throw
// std::bad_alloc: a test can fail each allocation of an operation in turn.
void fail_allocation_after_on_this_thread(std::size_t skip) noexcept;

// Takes back a pending failure (either call above) if no allocation has used it yet; returns whether it was
// still pending (false: some operator new on this thread has thrown for it since).
bool cancel_allocation_failure_on_this_thread() noexcept;

// Allocations made by this thread since the counter was created.
class allocation_counter {
 public:
  [[nodiscard]] std::size_t count() const noexcept { return allocations_on_this_thread() - start_; }

 private:
  std::size_t start_ = allocations_on_this_thread();
};

// Process-wide counting, for code that allocates on other threads (a pool's workers): switch it on, run,
// wait for the threads, read.
void count_allocations(bool on) noexcept;
[[nodiscard]] std::uint64_t allocations_counted() noexcept;
void reset_allocation_count() noexcept;

}  // namespace weft::test
