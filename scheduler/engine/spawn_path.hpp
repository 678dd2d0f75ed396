// Engine::enqueue's common case, defined where the files that submit (pool.cpp, submit.cpp) can inline it: a
// worker's own Normal task with no affinity, in a pool without max_queued, goes straight to its deque. Without
// LTO (a consumer's default build) each call between these functions was a call between object files: fib(28)
// by submit + get spent more instructions a spawn than weft's LTO build (callgrind, docs/perf-log.md).
// Everything else goes through enqueue_general (submit.cpp).
#pragma once

#include <chrono>
#include <type_traits>
#include <utility>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"
#include "scheduler/engine/task.hpp"

namespace weft::engine {

namespace engine_internal {

// What enqueue_general and spawn_on_worker queue: a closure, wrapped here in a ClosureTask block, or a task
// that is its own block, which only gets its routing fields.
[[nodiscard]] inline Task* to_task(TaskDomain::ThreadRef ref, small_function<void()>&& closure, Priority priority,
                                   std::uint32_t affinity, weft::detail::InlineTag inline_tag) {
  return make_task(ref, std::move(closure), priority, affinity, inline_tag);
}
[[nodiscard]] inline Task* to_task_fields(Task* task, Priority priority, std::uint32_t affinity,
                                          weft::detail::InlineTag inline_tag) noexcept {
  task->priority = priority;
  task->affinity = affinity;
  task->inline_tag = inline_tag;
  return task;
}
[[nodiscard]] inline Task* to_task(TaskDomain::ThreadRef, Task* task, Priority priority, std::uint32_t affinity,
                                   weft::detail::InlineTag inline_tag) noexcept {
  return to_task_fields(task, priority, affinity, inline_tag);
}

}  // namespace engine_internal

inline Worker* Engine::spawning_worker(const TaskOptions& options) const noexcept {
  Worker* const self = engine_internal::tls_worker;
  const bool plain = !options.affinity && options.priority == Priority::Normal && !bound_.bounded();
  return self != nullptr && &self->engine == this && plain ? self : nullptr;
}

inline SubmitStatus Engine::enqueue(small_function<void()>&& closure, const TaskOptions& options,
                                    weft::detail::Admission admission, std::chrono::steady_clock::time_point deadline,
                                    weft::detail::InlineTag inline_tag) {
  if (Worker* const self = spawning_worker(options); self != nullptr && closure) [[likely]]
    return spawn_on_worker(*self, std::move(closure), inline_tag);
  return enqueue_general(std::move(closure), options, admission, deadline, inline_tag);
}

inline SubmitStatus Engine::enqueue(Task* task, const TaskOptions& options, weft::detail::Admission admission,
                                    std::chrono::steady_clock::time_point deadline,
                                    weft::detail::InlineTag inline_tag) {
  if (Worker* const self = spawning_worker(options)) [[likely]]
    return spawn_on_worker(*self, task, inline_tag);
  return enqueue_general(task, options, admission, deadline, inline_tag);
}

// Forced inline into each of its two callers: in a unity build both sit in one translation unit, where g++ would
// otherwise keep it out of line (callgrind: fib by spawn + get, +8%).
template <class Source>
[[gnu::always_inline]] inline SubmitStatus Engine::spawn_on_worker(Worker& self, Source&& source,
                                                                   weft::detail::InlineTag inline_tag) {
  // As Lifecycle::enter for a worker: once dropping, a worker's new task would only be dropped again.
  if (stops_tasks()) return SubmitStatus::Closed;
  const TaskDomain::ThreadRef ref = self.ref();
  Task* task = engine_internal::to_task(ref, std::forward<Source>(source), Priority::Normal, Task::kNoAffinity,
                                        inline_tag);
  self.counters.spawned.bump();  // before it can run: idle() never sees it finished but not submitted
  try {
    self.deque.push(task);
  } catch (...) {
    abandon_unqueued(ref, task);  // growth failed: the task was never queued
    throw;
  }
  signal_work();
  return SubmitStatus::Accepted;
}

// Instantiated once, in submit.cpp.
extern template SubmitStatus Engine::enqueue_general<small_function<void()>>(small_function<void()>&&,
                                                                             const TaskOptions&,
                                                                             weft::detail::Admission,
                                                                             std::chrono::steady_clock::time_point,
                                                                             weft::detail::InlineTag);
extern template SubmitStatus Engine::enqueue_general<Task*&>(Task*&, const TaskOptions&, weft::detail::Admission,
                                                             std::chrono::steady_clock::time_point,
                                                             weft::detail::InlineTag);

}  // namespace weft::engine
