#include "scheduler/stack_guard.hpp"

#include <algorithm>
#include <string>

#include "src/os_thread.hpp"
#include "weft/errors.hpp"

namespace weft::sched {
namespace {

[[nodiscard]] std::size_t reserve_for(std::size_t stack_size) noexcept {
  return std::min(kStackReserve, stack_size / 4);
}

}  // namespace

bool stack_low() noexcept {
  const os::StackRoom room = os::current_stack_room();
  return room.size != 0 && room.left < reserve_for(room.size);
}

void require_stack(const char* call) {
  const os::StackRoom room = os::current_stack_room();
  if (room.size == 0 || room.left >= reserve_for(room.size)) return;
  throw nesting_too_deep(std::string(call) + ": nested too deep for this thread's stack: " +
                         std::to_string(room.left / 1024) + " KiB of its " + std::to_string(room.size / 1024) +
                         " KiB left, below the " + std::to_string(reserve_for(room.size) / 1024) +
                         " KiB that weft keeps free for the work a wait runs (each wait inside a task runs the "
                         "awaited work on the waiting thread's stack): nest fewer waits, joins or spawns inside "
                         "one another, or give the thread a larger stack");
}

}  // namespace weft::sched
