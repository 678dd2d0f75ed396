// Submission: where a task goes (the spawning worker's deque, an outside thread's slot, a mailbox, a shared
// priority queue), through the gate shutdown closes (lifecycle.hpp), and admission under PoolOptions::max_queued
// (who waits for room and how; the count is queue_bound.hpp's).
#include <exception>
#include <string>
#include <type_traits>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"
#include "scheduler/engine/spawn_path.hpp"

namespace weft::engine {
using namespace engine_internal;

namespace {
// Whether the task is empty: a closure can be; a task that is its own block (a future's state, a SelfTask) never
// is.
[[nodiscard]] bool is_empty(const small_function<void()>& closure) noexcept { return !closure; }
[[nodiscard]] constexpr bool is_empty(const Task*) noexcept { return false; }
}  // namespace

[[gnu::always_inline]] inline void Engine::check_task_options(const TaskOptions& options, bool empty) const {
  if (options.affinity && *options.affinity >= size())
    throw invalid_option("weft::TaskOptions::affinity = " + std::to_string(*options.affinity) + ": the pool has " +
                         std::to_string(size()) + " workers (0.." + std::to_string(size() - 1) + ")");
  if (empty) throw std::invalid_argument("weft::Pool: the task is empty (a null function)");
  // Only here: the fast path of enqueue() takes Normal tasks alone, so an out-of-range value always comes here.
  if (options.priority > Priority::Low)
    throw invalid_option("weft::TaskOptions::priority = " + std::to_string(static_cast<unsigned>(options.priority)) +
                         ": not a weft::Priority (High, Normal or Low)");
}

[[gnu::always_inline]] inline SubmitStatus Engine::queue_counted(Worker* self, TaskDomain::ThreadRef ref, Task* task) {
  // Counted as submitted before it can run, so that idle() never sees it finished but not submitted.
  if (self != nullptr) {
    self->counters.spawned.bump();
  } else {
    idle_.outside_submitted();
  }
  try {
    route(self, ref, task);
  } catch (...) {
    abandon_unqueued(ref, task);  // only allocation can fail here, before the task was queued
    throw;
  }
  return SubmitStatus::Accepted;
}

template <class Source>
SubmitStatus Engine::enqueue_general(Source&& source, const TaskOptions& options, weft::detail::Admission admission,
                                     std::chrono::steady_clock::time_point deadline,
                                     weft::detail::InlineTag inline_tag) {
  check_task_options(options, is_empty(source));
  // A worker of this pool here has a task with a priority, an affinity or max_queued: enqueue() took the rest.
  Worker* self = tls_worker != nullptr && &tls_worker->engine == this ? tls_worker : nullptr;

  // An outside thread's Normal task without affinity goes into the thread's own slot (when it can have one).
  OutsideSlot* const slot = self == nullptr && !options.affinity && options.priority == Priority::Normal
                                ? slots_.claim()
                                : nullptr;

  Lifecycle::Pass pass;  // held until the task is queued
  if (!lifecycle_.enter(self != nullptr, slot, pass)) return SubmitStatus::Closed;

  if (bound_.bounded()) {
    const SubmitStatus admitted = admit(self, admission, deadline);
    if (admitted != SubmitStatus::Accepted) return admitted;
  }

  const auto affinity = options.affinity ? *options.affinity : Task::kNoAffinity;
  // Into the calling thread's slot; `abandon` takes the task back if the deque cannot grow.
  const auto push_to_slot = [&](Task* task, auto abandon) {
    // Counted as submitted before it can run (see queue_counted); the owner's plain increment, release.
    slot->submitted.bump();
    try {
      slot->deque.push(task);
    } catch (...) {
      abandon(task);  // growth failed: the task was never queued
      throw;
    }
    signal_work();
    return SubmitStatus::Accepted;
  };
  if constexpr (std::is_same_v<std::remove_cvref_t<Source>, Task*>) {
    // A task that is its own block (a future's state, a SelfTask) going into a slot needs no block from this thread's
    // registration: no look-up of it (a thread-local table search for an outside thread).
    if (slot != nullptr) {
      Task* const task = to_task_fields(source, options.priority, affinity, inline_tag);
      return push_to_slot(task, [this](Task*) noexcept { abandon_counted(); });
    }
  }
  Task* task = nullptr;
  // One look-up of the calling thread's registration per submission (a thread-local table for outsiders).
  const TaskDomain::ThreadRef ref = self != nullptr ? self->ref() : domain_.current();
  try {
    task = to_task(ref, std::forward<Source>(source), options.priority, affinity, inline_tag);
  } catch (...) {
    if (bound_.bounded()) release_queued_slot();
    throw;
  }
  if (slot != nullptr) return push_to_slot(task, [this, ref](Task* t) noexcept { abandon_unqueued(ref, t); });
  return queue_counted(self, ref, task);
}

// The two kinds of source enqueue() passes (spawn_path.hpp declares them extern).
template SubmitStatus Engine::enqueue_general<small_function<void()>>(small_function<void()>&&, const TaskOptions&,
                                                                      weft::detail::Admission,
                                                                      std::chrono::steady_clock::time_point,
                                                                      weft::detail::InlineTag);
template SubmitStatus Engine::enqueue_general<Task*&>(Task*&, const TaskOptions&, weft::detail::Admission,
                                                      std::chrono::steady_clock::time_point, weft::detail::InlineTag);

void Engine::abandon_unqueued(TaskDomain::ThreadRef ref, Task* task) noexcept {
  // It never ran and never will, but it was counted as submitted: count it finished for idle(), and wake a
  // wait_idle that may be waiting for it. A task that is its own block goes back to its submitter, which is
  // told by the exception that follows and drops it (Pool::submit_impl, Subflow::spawn_child).
  if (task->kind == weft::detail::TaskKind::closure) destroy_task(ref, task);
  abandon_counted();
}

void Engine::abandon_counted() noexcept {
  idle_.abandoned();
  idle_.notify();
  if (bound_.bounded()) release_queued_slot();
}

void Engine::route(Worker* self, TaskDomain::ThreadRef ref, Task* task) {
  if (task->affinity != Task::kNoAffinity) {
    Worker& target = *workers_[task->affinity];
    // Counted before the push, so that a parking worker that misses the push still sees the count.
    target.mailbox_pending.fetch_add(1, std::memory_order_relaxed);
    try {
      target.mailbox.push(ref, task);
    } catch (...) {
      target.mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // else that worker could never park
      throw;
    }
    parking_.notify_all();  // notify_one might wake another worker, which must not take it yet
    return;
  }
  // A worker waiting deeper than kMaxWaitDepth runs only its own deque and mailbox (wait_on_worker): what it
  // spawns from there, whatever the priority, goes to its own deque, or its wait could never reach the
  // children it waits for (a High or Low child in the shared queues was run by nobody on one worker). Others
  // still steal it; its priority then only orders it where it is taken from a shared queue.
  if (self != nullptr && (task->priority == Priority::Normal || self->wait_depth >= kMaxWaitDepth)) {
    self->deque.push(task);
    signal_work();
    return;
  }
  const std::size_t s = slot(task->priority);
  // Counted for stats only; relaxed, and on a line only submitters write, so workers never contend on it.
  injected_total_[s].value.fetch_add(1, std::memory_order_relaxed);
  try {
    injected_[s]->push(ref, task);
  } catch (...) {
    injected_total_[s].value.fetch_sub(1, std::memory_order_relaxed);  // never queued: else stats().queued stays up
    throw;
  }
  signal_work();
}

SubmitStatus Engine::admit(Worker*& self, weft::detail::Admission admission,
                           std::chrono::steady_clock::time_point deadline) {
  const bool timed = admission == weft::detail::Admission::until;
  for (;;) {
    if (bound_.try_take()) return SubmitStatus::Accepted;
    if (lifecycle_.closed_to(self != nullptr)) return SubmitStatus::Closed;
    if (admission == weft::detail::Admission::try_once) return SubmitStatus::Full;
    if (timed && std::chrono::steady_clock::now() >= deadline) return SubmitStatus::Full;
    if (self != nullptr && !timed &&
        (self->wait_depth >= kMaxWaitDepth || fiber::stack_low_within(kAdmitStackMargin))) {
      // This worker already waits kMaxWaitDepth deep, or its stack is nearly used up: the wait below could run
      // only its own deque (wait_on_worker's own_work_only), never the queued tasks whose start makes room, and
      // once every worker is here no task starts again (outside submitters take each freed slot first). Seen
      // with fibers under ASan: two workers short of fiber stack in nested admissions, both waiting for ever.
      // The stack is judged here with a margin, since the wait looks at it a few frames further down. Admit over
      // the limit rather than deadlock; the overshoot lasts until the task starts.
      bound_.take_over_limit();
      return SubmitStatus::Accepted;
    }
    const auto room = [&] { return bound_.has_room() || lifecycle_.closed_to(self != nullptr); };
    if (self != nullptr) {
      // A worker must not simply block: the room it waits for is made by workers running tasks.
      wait_on_worker(*self, room, timed ? deadline : std::chrono::steady_clock::time_point::max(),
                     [&](std::chrono::nanoseconds slice) { bound_.sleep_for_room(room, slice); });
      self = this_thread_worker();  // with fibers the task may have moved to another worker while it waited
      continue;
    }
    bound_.wait_for_room(room, timed ? deadline : std::chrono::steady_clock::time_point::max());
  }
}

}  // namespace weft::engine
