// Who besides the workers may run a queued task: its submitter's thread, while that thread waits, if the task
// still sits in the thread's own slot (scheduler/engine/outside_slot.hpp). Internal to weft; users never spell it.
#pragma once

#include <cstdint>

namespace weft::detail {

// kWorkersOnly: a posted task (Pool::post), which runs on a worker. kInlineFuture: a future's task
// (Pool::submit without affinity), which the future's waiter may run. Any other value names an owner, such as
// a graph run, whose waiter may run that owner's tasks (engine::Engine::help_from_own_slot).
using InlineTag = std::uintptr_t;
inline constexpr InlineTag kWorkersOnly = 0;
inline constexpr InlineTag kInlineFuture = 1;

}  // namespace weft::detail
