// Counts heap allocations made by the calling thread, through a replaced global operator new
// (counting_new.cpp), so that tests can assert "no allocation" and "exactly one allocation".
#pragma once

#include <cstddef>

namespace weft::test {

// Calls to any replaceable operator new made by the calling thread since it started.
[[nodiscard]] std::size_t allocations_on_this_thread() noexcept;

// Makes the calling thread's next operator new throw std::bad_alloc (it still counts as an allocation attempt).
void fail_next_allocation_on_this_thread() noexcept;

// Allocations made by this thread since the counter was created.
class allocation_counter {
 public:
  [[nodiscard]] std::size_t count() const noexcept { return allocations_on_this_thread() - start_; }

 private:
  std::size_t start_ = allocations_on_this_thread();
};

}  // namespace weft::test
