#include "scheduler/fiber/stack_guard.hpp"

#include <algorithm>
#include <string>

#include "src/os_thread.hpp"
#include "weft/errors.hpp"

namespace weft::fiber::stack_guard_detail {
namespace {

[[nodiscard]] std::size_t reserve_for(std::size_t stack_size) noexcept {
  return std::min(kStackReserve, stack_size / 4);
}

}  // namespace

std::uintptr_t look_up_limit() noexcept {
  const os::StackBounds bounds = os::current_stack_bounds();
  tls_limit = bounds.size == 0 ? 1 : bounds.low + reserve_for(bounds.size);
  return tls_limit;
}

void throw_too_deep(const char* call) {
  os::StackBounds bounds = os::current_stack_bounds();
  const bool fiber = tls_fiber_size != 0;
  if (fiber) bounds = {tls_fiber_low, tls_fiber_size};
  const auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const std::size_t left = here > bounds.low ? here - bounds.low : 0;
  throw nesting_too_deep(std::string(call) + ": nested too deep for this " + (fiber ? "fiber's" : "thread's") +
                         " stack: " + std::to_string(left / 1024) + " KiB of its " +
                         std::to_string(bounds.size / 1024) + " KiB left, below the " +
                         std::to_string(reserve_for(bounds.size) / 1024) +
                         " KiB that weft keeps free for the work a wait runs (each wait inside a task runs the "
                         "awaited work on the waiting thread's stack): nest fewer waits, joins or spawns inside "
                         "one another, or give the thread a larger stack");
}

}  // namespace weft::fiber::stack_guard_detail

namespace weft::fiber {

// The empty asms keep each call a call of its own (not pure, so never merged with another across a switch).
bool stack_low_here() noexcept {
  asm volatile("");
  return stack_low();
}

bool stack_low_for_nesting_here() noexcept {
  asm volatile("");
  return stack_low_for_nesting();
}

}  // namespace weft::fiber
