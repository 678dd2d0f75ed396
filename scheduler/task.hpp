// A task as the scheduler holds it: the closure plus what the worker loop needs to route it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "scheduler/cache_line.hpp"
#include "weft/detail/inline_tag.hpp"
#include "weft/pool_options.hpp"
#include "weft/small_function.hpp"

namespace weft::sched {

// Tasks live in blocks from the hazard-pointer domain's node pool (allocated and freed through a thread's
// ThreadRef), so a steady stream of tasks recycles memory instead of calling malloc. Deques and queues hold
// Task pointers: a 128-byte closure cannot be moved through a lock-free slot atomically.
struct Task {
  static constexpr std::uint32_t kNoAffinity = ~std::uint32_t{0};

  Task(small_function<void()>&& closure, Priority p, std::uint32_t worker,
       weft::detail::InlineTag tag = weft::detail::kWorkersOnly) noexcept
      : inline_tag(tag), priority(p), affinity(worker), work(std::move(closure)) {}

  // The routing fields come first and the closure's table pointer right after them (small_function keeps it
  // before its storage): a task with a small capture is then written, handed over and read in one cache line
  // of its three (a no-op burst moved 2-3 lines per task between the submitter and the worker before).
  // Who may run it from its outside submitter's slot besides the workers (weft::detail::InlineTag): a future's
  // waiter, or the waiter of the graph run that posted it. Posted tasks run on workers only.
  weft::detail::InlineTag inline_tag;
  Priority priority;
  std::uint32_t affinity;  // a worker index, or kNoAffinity
  small_function<void()> work;
};
static_assert(offsetof(Task, work) + sizeof(void*) + 32 <= kCacheLine,
              "a small closure's bytes and the routing fields should share the task's first cache line");

// Allocates and frees tasks through any allocator with allocate(bytes, align)/deallocate(p, bytes, align)
// (a reclamation domain's ThreadRef).
template <class Allocator>
[[nodiscard]] Task* make_task(Allocator allocator, small_function<void()>&& closure, Priority priority,
                              std::uint32_t affinity, weft::detail::InlineTag inline_tag = weft::detail::kWorkersOnly) {
  void* block = allocator.allocate(sizeof(Task), alignof(Task));
  return ::new (block) Task(std::move(closure), priority, affinity, inline_tag);
}

template <class Allocator>
void destroy_task(Allocator allocator, Task* task) noexcept {
  task->~Task();
  allocator.deallocate(task, sizeof(Task), alignof(Task));
}

}  // namespace weft::sched
