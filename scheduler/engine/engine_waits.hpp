// Engine's members that run a task in place and wait for something inside the pool: run_here / run_as (a
// thread that runs a task of the pool itself), help_from_own_slot (an outside thread running its own slot's
// tasks), wait_on_worker and wait_on_fiber (a worker's wait: run other tasks, or suspend the task's fiber) and the
// inline helpers they share. Templates and inline functions, defined here so that each wait compiles into its
// caller; included by engine.hpp, after the class.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "scheduler/engine/engine.hpp"

namespace weft::engine {

template <class Work>
bool Engine::run_here(Priority priority, Work&& work) noexcept {
  const std::optional<unsigned> thread_index = thread_index_for_running();
  if (!thread_index) return false;
  run_as(*thread_index, priority, std::forward<Work>(work));
  return true;
}

template <class Work>
void Engine::run_as(unsigned thread_index, Priority priority, Work&& work) noexcept {
  const RunningFrame frame(*this, thread_index);
  if (!has_hooks()) {
    work();
    return;
  }
  const TaskEvent event{worker_index_here(), priority};
  const bool traced = hooks_.recording();
  const std::int64_t start = traced ? hooks_.now() : 0;
  call_hook(hooks_.on_start(), event);
  work();
  call_hook(hooks_.on_end(), event);
  if (traced) hooks_.task(start, priority, event.worker);
}

template <class Ready>
bool Engine::help_from_own_slot(Ready ready, weft::detail::InlineTag owner,
                                weft::detail::FutureStateBase* exclusive) noexcept {
  OutsideSlot* slot = slots_.mine();
  if (slot == nullptr) return ready();
  bool ran = false;
  while (!ready()) {
    // Once dropping, pending tasks are left for the shutdown to drop.
    if (stops_tasks()) break;
    auto task = slot->deque.pop();
    if (!task) break;
    const weft::detail::InlineTag tag = (*task)->inline_tag;
    if (tag != weft::detail::kInlineFuture && (tag == weft::detail::kWorkersOnly || tag != owner)) {
      // Back where it was, announced as new work: a worker that searched while it was out found the slot empty
      // and may have parked (seen as a hang: an outside thread waiting for a queued run whose predecessor's
      // task it had put back, every worker asleep). Cannot grow (the pop just freed the slot it fills), so
      // cannot throw.
      parking_.republish([&]() noexcept { slot->deque.push(*task); });
      break;
    }
    // The null test first, as in execute_awaited: a caller with no `exclusive` (a group's or a run's wait) otherwise
    // gives g++'s LTO a constant-null path into run_outside_exclusive, on which it warns (-Wstringop-overflow).
    if (exclusive != nullptr && *task == exclusive && !has_hooks()) {
      run_outside_exclusive(*slot, *exclusive);
    } else {
      run_outside(*slot, *task);
    }
    ran = true;
  }
  if (ran) finished_outside_runs();
  return ready();
}

// Inline, as the waits that call them: without LTO each was a call between object files per awaited task.
inline std::uint64_t Engine::switch_mark(const Worker& self) noexcept {
#if WEFT_FIBERS
  if (self.fibers != nullptr) return self.fibers->suspensions();
#endif
  (void)self;
  return 0;
}

inline Worker& Engine::worker_after(Worker& self, std::uint64_t mark) noexcept {
#if WEFT_FIBERS
  // A task that never suspended on `self` cannot have left it: to move, its fiber must suspend, and it would do
  // so on self's thread, which counts it. The count is self's own (read here possibly from another thread, but
  // then it has changed, which is all this needs to know).
  if (self.fibers != nullptr && self.fibers->suspensions() != mark) return *this_thread_worker();
#endif
  (void)mark;
  return self;
}

// Forced inline: the wait loops above call it from two places, and a unity build that compiles both beside one
// another would otherwise call it out of line on every awaited task (callgrind: fib by spawn + get, +8%).
[[gnu::always_inline]] inline Worker& Engine::execute_awaited(Worker& self, Task* task,
                                                              weft::detail::FutureStateBase* exclusive) noexcept {
  // The null test first: g++'s LTO otherwise follows a path where both are null into run_exclusive and warns
  // (-Wstringop-overflow), though a found task is never null.
  if (exclusive == nullptr || task != exclusive || has_hooks()) return execute(self, task);
  if (bound_.bounded()) release_queued_slot();
  const std::uint64_t mark = switch_mark(self);
  exclusive->run_exclusive();
  Worker& after = worker_after(self, mark);  // as in run_and_release: the task may have moved (fibers)
  after.counters.executed.bump();
  after.counters.finished.bump();  // last, as in execute()
  return after;
}

template <class Ready, class Sleep>
bool Engine::wait_on_worker(Worker& self, Ready ready, std::chrono::steady_clock::time_point deadline, Sleep sleep,
                            const char* refuse_as, weft::detail::FutureStateBase* exclusive) {
  Worker* me = &self;
#if WEFT_FIBERS
  if (me->fibers != nullptr) {
    if (const std::optional<bool> done = wait_on_fiber(me, ready, sleep, deadline, exclusive)) return *done;
    // It may not suspend here: wait as a pool without fibers does, below.
  }
#endif
  // Looked at every eighth nested wait (a thread-local load and a compare): the stack grows by a few frames a
  // level, so the reserve (stack_guard.hpp) absorbs the seven levels between two looks. Looking at every wait put
  // its cost, and a different inlining of the spawn + get path, on every Future::get inside a task (callgrind
  // figures for fib(28) in docs/perf-log.md).
  // Out of line (stack_low_here): wait_on_fiber, above, may have moved this wait to another thread.
  const bool short_of_stack = (me->wait_depth & 7) == 7 && fiber::stack_low_here();
  if (short_of_stack && refuse_as != nullptr) [[unlikely]]
    fiber::require_stack(refuse_as);
  // No task run below suspends (Worker::no_suspend): this wait's frames stay on this thread, so `me` stays
  // right, and the depth counts go back to the worker they were taken from.
  ++me->wait_depth;
  ++me->no_suspend;
  struct Leave {
    Worker& worker;
    ~Leave() {
      --worker.wait_depth;
      --worker.no_suspend;
    }
  } leave{*me};
  // Deep in nested waits, or short of stack (scheduler/fiber/stack_guard.hpp): run only this worker's own deque and
  // mailbox, whose tasks are descendants of the waiting one (or bound here), never unrelated work that could
  // nest further.
  const bool own_work_only = me->wait_depth > kMaxWaitDepth || short_of_stack;
  const bool timed = deadline != std::chrono::steady_clock::time_point::max();
  unsigned fruitless = 0;
  while (!ready()) {
    Task* task = nullptr;
    if (stops_tasks()) {
      // Dropping: start nothing more. The awaited task is either running elsewhere or dropped by the
      // shutting-down thread, which makes it ready (dropped) either way. A task this worker pushed just as the
      // shutdown's drop pass went by would stay in its own deque (or mailbox), where the shutdown looks again
      // only after joining this very worker: drop those here, or the wait and the join would wait on each other.
      // The same for outside tasks this worker took in a batch (its from_outside deque).
      if (drop_own_pending(*me)) continue;
    } else if (!own_work_only) {
      task = find_task(*me);
    } else if (auto own = me->deque.pop()) {
      task = *own;  // deep: only descendants of the waiting task, which keeps the stack bounded
    } else if (auto mine = me->take_from_mailbox(me->ref())) {
      // ... and tasks sent to this worker, which nobody else may take soon (nor a waiter inline).
      task = *mine;
    }
    if (task != nullptr) {
      (void)execute_awaited(*me, task, exclusive);  // cannot move this thread's frames: nothing suspends
      fruitless = 0;
      continue;
    }
    if (timed && std::chrono::steady_clock::now() >= deadline) return ready();
    if (++fruitless < 64) {
      atomics::cpu_relax();
      continue;
    }
    auto slice = std::chrono::nanoseconds(kWaitSlice);
    if (timed) slice = std::min(slice, std::chrono::nanoseconds(deadline - std::chrono::steady_clock::now()));
    sleep(slice);
  }
  return true;
}

template <class Ready, class Sleep>
std::optional<bool> Engine::wait_on_fiber(Worker*& me, Ready& ready, Sleep& sleep,
                                          std::chrono::steady_clock::time_point deadline,
                                          weft::detail::FutureStateBase* exclusive) {
#if WEFT_FIBERS
  const bool timed = deadline != std::chrono::steady_clock::time_point::max();
  while (!ready()) {
    // A dropping pool runs nothing more (the classic wait drops).
    if (stops_tasks()) return std::nullopt;
    // The awaited task is most often the newest of this worker's own deque (a spawn, then its get): run it here,
    // as a pool without fibers does, while the fiber's stack has twice its reserve left (suspending needs no stack;
    // stack_guard.hpp) and no High task waits (the loop takes that first once this task suspends). Not in a timed
    // wait: the task could run past the deadline.
    // The stack check out of line: this loop may have moved to another thread at its last suspension.
    if (!timed && !fiber::stack_low_for_nesting_here() &&
        injected_[static_cast<std::size_t>(Priority::High)]->empty_hint()) {
      if (auto own = me->deque.pop()) {
        me = &execute_awaited(*me, *own, exclusive);
        continue;
      }
    }
    std::chrono::nanoseconds left = std::chrono::nanoseconds::max();
    if (timed) {
      left = std::chrono::nanoseconds(deadline - std::chrono::steady_clock::now());
      if (left <= std::chrono::nanoseconds::zero()) return ready();
    }
    // Where it may not suspend (now, or any more: the stack bound), it goes on as a pool without fibers does.
    if (!may_suspend(*me) || !me->fibers->ready_to_suspend()) return std::nullopt;
    {
      const SuspendingWait suspending(*me->fibers);
      sleep(left);  // parks this fiber on the word the wait sleeps on (until woken, or `left` at most)
    }
    me = this_thread_worker();  // resumed, perhaps on another worker
  }
  return true;
#else
  (void)me, (void)ready, (void)sleep, (void)deadline, (void)exclusive;
  return std::nullopt;
#endif
}

}  // namespace weft::engine
