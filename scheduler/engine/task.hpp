// A task as the scheduler holds it: a header with what the worker loop needs to route it, followed by a
// closure in a block of the scheduler's own (ClosureTask), by the rest of a future's state, or by a SelfTask's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "scheduler/atomics/cache_line.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/detail/inline_tag.hpp"
#include "weft/detail/task_header.hpp"
#include "weft/pool_options.hpp"
#include "weft/small_function.hpp"

namespace weft::engine {

// What deques and queues hold pointers to (a 128-byte closure cannot be moved through a lock-free slot
// atomically). See weft::detail::TaskKind for the kinds.
using Task = weft::detail::TaskHeader;

// A posted closure. Lives in a block from the hazard-pointer domain's node pool (allocated and freed through a
// thread's ThreadRef), so a steady stream of tasks recycles memory instead of calling malloc. Standard layout
// with the header first, so a Task* of this kind is a pointer to it.
struct ClosureTask {
  ClosureTask(small_function<void()>&& closure, Priority p, std::uint32_t worker, weft::detail::InlineTag tag) noexcept
      : header{tag, worker, p, weft::detail::TaskKind::closure}, work(std::move(closure)) {}

  Task header;
  // The closure's table pointer comes right after the routing fields (small_function keeps it before its
  // storage): a task with a small capture is then written, handed over and read in one cache line of its
  // three (a no-op burst moved 2-3 lines per task between the submitter and the worker before).
  small_function<void()> work;
};
static_assert(std::is_standard_layout_v<ClosureTask> && offsetof(ClosureTask, header) == 0);
static_assert(offsetof(ClosureTask, work) + sizeof(void*) + 32 <= atomics::kCacheLine,
              "a small closure's bytes and the routing fields should share the task's first cache line");

[[nodiscard]] inline ClosureTask& closure_task(Task* task) noexcept {
  return *reinterpret_cast<ClosureTask*>(task);  // pointer-interconvertible: the header is the first member
}

// Allocates a closure task through any allocator with allocate(bytes, align)/deallocate(p, bytes, align) (a
// reclamation domain's ThreadRef).
template <class Allocator>
[[nodiscard]] Task* make_task(Allocator allocator, small_function<void()>&& closure, Priority priority,
                              std::uint32_t affinity, weft::detail::InlineTag inline_tag = weft::detail::kWorkersOnly) {
  void* block = allocator.allocate(sizeof(ClosureTask), alignof(ClosureTask));
  return &(::new (block) ClosureTask(std::move(closure), priority, affinity, inline_tag))->header;
}

// Runs (run = true) or drops a task that is its own block (a future's state or a SelfTask), which then gives
// itself up: the caller must not touch it after.
inline void finish_own_block(Task* task, bool run) noexcept {
  if (task->kind == weft::detail::TaskKind::future_state) {
    weft::detail::FutureStateBase::finish_queued(task, run);
  } else {
    weft::detail::SelfTask::finish(task, run);
  }
}

// Gives up a task that has run or will not run: a closure task's block is freed (destroying the closure, unrun
// or not); a future's state that has not run is told it was dropped (its future reports task_dropped), and the
// queue's reference on it is released; a SelfTask is finished unrun.
template <class Allocator>
void destroy_task(Allocator allocator, Task* task) noexcept {
  if (task->kind != weft::detail::TaskKind::closure) {
    finish_own_block(task, false);
    return;
  }
  ClosureTask& block = closure_task(task);
  block.~ClosureTask();
  allocator.deallocate(&block, sizeof(ClosureTask), alignof(ClosureTask));
}

}  // namespace weft::engine
