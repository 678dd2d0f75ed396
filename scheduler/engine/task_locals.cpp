#include "scheduler/engine/task_locals.hpp"

#include <utility>

namespace weft::engine {
namespace {

thread_local TaskLocals tls_locals;

// The address of this thread's values, computed anew in each accessor (each is out of line, so none runs across a
// fiber switch): the empty asm hides where it came from, so that the compiler cannot reuse one computed before.
// Inlined into them rather than a call of its own: a Subflow child reaches them three times per spawn.
[[gnu::always_inline]] inline TaskLocals* here() noexcept {
  TaskLocals* address = &tls_locals;
  asm volatile("" : "+r"(address));
  return address;
}

}  // namespace

void* task_local(unsigned slot) noexcept { return here()->slots[slot]; }

void* exchange_task_local(unsigned slot, void* value) noexcept { return std::exchange(here()->slots[slot], value); }

TaskLocals take_task_locals() noexcept { return std::exchange(*here(), TaskLocals{}); }

void put_task_locals(const TaskLocals& values) noexcept { *here() = values; }

}  // namespace weft::engine
