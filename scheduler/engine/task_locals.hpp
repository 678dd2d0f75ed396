// Thread-locals that belong to the task being run rather than to the thread running it.
//
// A task that waits on a fiber (scheduler/engine/fiber_worker.hpp) is suspended and may resume on another worker; the
// worker it left runs other tasks meanwhile. A front-end's per-task marks (graph/: the run whose node is running
// here, the Subflow child running here) must follow the task: the fiber switcher takes them off the thread when
// a fiber suspends and puts them back wherever it resumes, so that the tasks run meanwhile start from none.
//
// Every accessor is out of line and computes the thread's address afresh on each call: code that resumed on
// another thread reaches that thread's values, never an address the compiler kept from before the switch.
#pragma once

#include <array>

namespace weft::engine {

// Slots a front-end may use; the scheduler gives them no meaning. graph/ uses 0 and 1 (graph/run_state.hpp),
// weft::TaskGroup 2 (scheduler/sync/task_group.cpp).
inline constexpr unsigned kTaskLocalSlots = 3;

// One task's values, as the switcher saves them while the task is suspended.
struct TaskLocals {
  std::array<void*, kTaskLocalSlots> slots{};
};

// The calling thread's value in `slot` (< kTaskLocalSlots).
[[nodiscard, gnu::noinline]] void* task_local(unsigned slot) noexcept;
// Sets the calling thread's value in `slot` (< kTaskLocalSlots) and returns the previous one.
[[gnu::noinline]] void* exchange_task_local(unsigned slot, void* value) noexcept;
// For the fiber switcher: the calling thread's values, which are reset to none (take), or replaced (put).
[[nodiscard, gnu::noinline]] TaskLocals take_task_locals() noexcept;
[[gnu::noinline]] void put_task_locals(const TaskLocals& values) noexcept;

}  // namespace weft::engine
