// The worker loop: find a task (priority first, then the worker's own deque and mailbox, then steals: steal.cpp),
// run it inside the hooks, and search then park when there is none.
#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "scheduler/atomics/cpu_relax.hpp"
#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"

namespace weft::engine {
using namespace engine_internal;

namespace {

// A searching worker's looks at full speed before it starts yielding its CPU between looks.
constexpr unsigned kHotLooks = 16;

}  // namespace

void Engine::worker_main(Worker& start) {
  // The worker this loop runs for: with fibers, a task that suspended in execute() may come back on another
  // worker's thread, and the loop then goes on as that worker's.
  Worker* me = &start;
  bool ran_since_dry = false;
  // Set after a wake-up: the next search is made as a counted searcher (below), never as a plain find_task.
  bool woken = false;
  for (;;) {
    // Checked before every task, not only when dry: once a DropPending shutdown (or shutdown_for's deadline)
    // has begun, a worker starts nothing more, so the pending tasks are left for finish_shutdown to drop.
    // (A task already running finishes; a Future::get inside it still runs the tasks it needs meanwhile.)
    if (stops_tasks()) {
      // A task this worker pushed (or was sent) just as a DropPending shutdown's drop pass went by stays here
      // until after this worker is joined; a worker elsewhere may be waiting for it (a subflow's join, a
      // pipeline's tasks), and the join would wait for that worker. Dropped on the way out instead.
      (void)drop_own_pending(*me);
      return;
    }
#if WEFT_FIBERS
    if (me->fibers != nullptr && timed_parked() != 0) expire_timed_waits(*me);
    // A task woken while suspended goes first: it holds a stack, and its waiter already waited.
    if (me->fibers != nullptr && !resumed_.empty_hint()) {
      if (Task* resumed = take_resumed()) {
        if (woken) {
          // Woken to search, this worker runs a resumed task instead, perhaps for long: producers that saw the
          // wake in flight skipped theirs, counting on this worker's search. It keeps that promise here (the
          // handover of a last searcher), or their work would wait for a worker that is not coming (a hang:
          // every other worker asleep beside pending tasks, the resumed task waiting for them).
          woken = false;
          parking_.begin_search(true);
          if (parking_.end_search() && has_visible_work(*me)) signal_work();
        }
        if (!me->fibers->switch_to(resumed)) return;  // this fiber ends; the resumed one goes on here
        me = this_thread_worker();                    // this fiber was idle meanwhile
        continue;
      }
    }
#endif
    if (!woken) {
      if (Task* task = find_task(*me)) {
        me = &execute(*me, task);
        ran_since_dry = true;
        continue;
      }
      if (ran_since_dry) {
        // This worker just ran dry: whoever waits for the pool to go idle should look again.
        ran_since_dry = false;
        idle_.notify();
      }
    }
    // Search as a counted searcher (scheduler/engine/parking.hpp), so that producers can skip the wake-up syscall.
    parking_.begin_search(woken);
    woken = false;
    Task* found = nullptr;
    // A worker whose NUMA node has as many spinners as it may (scheduler/engine/spin_quota.hpp) makes one look,
    // then parks; its node's spinners keep looking for it.
    const bool spins = spin_quota_.try_enter(me->index);
    const auto spin_until = std::chrono::steady_clock::now() + options_.spin_before_park;
    unsigned looks = 0;
    do {
      if (++looks <= kHotLooks) {
        for (int i = 0; i < 32; ++i) atomics::cpu_relax();
      } else {
        // Past the first looks, give the CPU away between looks: a pool has as many workers as cores, so a
        // thread outside it that produces the work (a submitter in a burst) shares a core with a searching
        // worker, and a worker that spun through its time slice slowed the very producer it waited for.
        std::this_thread::yield();
      }
      found = find_task(*me);
      // A resumed task is taken at the loop's top.
      if (me->fibers != nullptr && !resumed_.empty_hint()) break;
    } while (found == nullptr && spins && std::chrono::steady_clock::now() < spin_until);
    if (spins) spin_quota_.leave(me->index);
    const bool last_searcher = parking_.end_search();
    if (found != nullptr) {
      // The last searcher found work, and producers skipped waking anyone while we searched. If more work is
      // visible, hand the searching over to a sleeper (end_search() fenced: a producer that saw us searching
      // published before its own fence, so this look sees its work).
      if (last_searcher && has_visible_work(*me)) signal_work();
      me = &execute(*me, found);
      ran_since_dry = true;
      continue;
    }
    if (me->fibers != nullptr && !resumed_.empty_hint()) {
      if (last_searcher && has_visible_work(*me)) signal_work();
      continue;
    }
    park(*me);
    // A worker woken by that hand-over must search as a counted searcher too, so that if it finds work it
    // hands over in turn. Were it to take a task with a plain find_task and run it (possibly for long), the
    // rest of the work published while the first searcher spun would have nobody to wake a sleeper for it:
    // producers skipped the notify because a searcher was counted (a lost wake-up, seen with 8 workers held
    // in long tasks and 2 asleep beside 2 pending tasks).
    woken = true;
  }
}

bool Engine::drop_own_pending(Worker& self) noexcept {
  std::uint64_t taken = 0;
  std::uint64_t count = 0;  // drop() counts only the tasks that had something left to do
  const auto drop_one = [&](Task* task) {
    ++taken;
    count += drop(task, self.ref());
  };
  while (auto task = self.deque.pop()) drop_one(*task);
  while (auto task = self.from_outside.pop()) drop_one(*task);
  while (auto task = self.take_from_mailbox(self.ref())) drop_one(*task);
  // relaxed: finish_shutdown reads it after joining this worker.
  if (count != 0) dropped_by_waiters_.fetch_add(count, std::memory_order_relaxed);
  return taken != 0;
}

Task* Engine::find_task(Worker& self) {
  // Priority first: a ready High task beats the worker's own Normal work.
  if (!injected_[slot(Priority::High)]->empty_hint()) {
    if (Task* task = take_injected(self, Priority::High)) return task;
  }
  if (auto task = self.deque.pop()) return *task;
  if (auto task = self.take_from_mailbox(self.ref())) return *task;
  if (!injected_[slot(Priority::Normal)]->empty_hint()) {
    if (Task* task = take_injected(self, Priority::Normal)) return task;
  }
  // Outside threads' slots hold what the shared Normal queue used to: taken before other workers' spawns.
  if (Task* task = steal_from_slots(self)) return task;
  if (Task* task = steal(self)) return task;
  if (!injected_[slot(Priority::Low)]->empty_hint()) {
    if (Task* task = take_injected(self, Priority::Low)) return task;
  }
  return nullptr;
}

Task* Engine::take_injected(Worker& self, Priority priority) {
  auto task = injected_[slot(priority)]->try_pop(self.ref());
  if (!task) return nullptr;
  self.counters.taken_injected.bump();
  return *task;
}

Worker& Engine::execute(Worker& self, Task* task) noexcept {
  if (bound_.bounded()) release_queued_slot();
  Worker* after;
  if (has_hooks()) [[unlikely]] {
    after = run_hooked(&self, self.registration->ref(), task, self.index);
  } else if (task->kind == weft::detail::TaskKind::self_finishing) {
    // No block of the scheduler's to free, so none of run_and_release's frame (a Subflow child, most often
    // run by its parent's join: callgrind, docs/perf-log.md).
    const std::uint64_t mark = switch_mark(self);
    weft::detail::SelfTask::finish(task, true);
    after = &worker_after(self, mark);
  } else {
    after = run_and_release(&self, self.registration->ref(), task);
  }
  // The counters of the worker the task ended on: each has one writer, its own thread.
  after->counters.executed.bump();
  // Last: everything the task did, the tasks it spawned included, is counted before it counts as finished.
  after->counters.finished.bump();
  return *after;
}

Worker* Engine::run_and_release(Worker* self, TaskDomain::ThreadRef ref, Task* task) noexcept {
  const std::uint64_t mark = self != nullptr ? switch_mark(*self) : 0;
  if (task->kind != weft::detail::TaskKind::closure) {
    finish_own_block(task, true);  // keeps its own exceptions, and frees itself
    return self != nullptr ? &worker_after(*self, mark) : nullptr;
  }
  try {
    closure_task(task).work();
  } catch (...) {
    report_error(std::current_exception());
  }
  if (self == nullptr) {
    destroy_task(ref, task);
    return nullptr;
  }
  Worker& after = worker_after(*self, mark);
  destroy_task(after.ref(), task);  // through the hazard record of the thread it is on now
  return &after;
}

Worker* Engine::run_hooked(Worker* self, TaskDomain::ThreadRef ref, Task* task, unsigned worker) noexcept {
  const TaskEvent event{worker, task->priority};
  const bool traced = hooks_.recording();
  if (task->kind == weft::detail::TaskKind::future_state) {
    auto* const state = static_cast<weft::detail::FutureStateBase*>(task);
    // Only the winner of the claim runs the task, so only it runs the hooks and is traced: a waiter that ran
    // it inline already did (run_inline), and this queued copy is then an empty shell.
    const std::uint64_t mark = self != nullptr ? switch_mark(*self) : 0;
    Worker* after = self;
    if (state->try_claim()) {
      const std::int64_t start = traced ? hooks_.now() : 0;
      call_hook(hooks_.on_start(), event);
      state->run_claimed();
      after = self != nullptr ? &worker_after(*self, mark) : nullptr;
      // The end hook on the thread the task ended on: a task that suspended on a fiber may have moved.
      const TaskEvent end{after != nullptr ? after->index : worker, event.priority};
      call_hook(hooks_.on_end(), end);
      if (traced) hooks_.task(start, event.priority, end.worker);
    }
    state->release();
    return after;
  }
  const std::int64_t start = traced ? hooks_.now() : 0;
  call_hook(hooks_.on_start(), event);
  Worker* const after = run_and_release(self, ref, task);
  const TaskEvent end{after != nullptr ? after->index : worker, event.priority};
  call_hook(hooks_.on_end(), end);
  if (traced) hooks_.task(start, event.priority, end.worker);
  return after;
}

void Engine::call_hook(const shared_function<void(const TaskEvent&)>& hook, const TaskEvent& event) noexcept {
  if (!hook) return;
  try {
    hook(event);
  } catch (...) {
    report_error(std::current_exception());
  }
}

bool Engine::has_visible_work(const Worker& self) const noexcept {
  if (self.fibers != nullptr && !resumed_.empty_hint()) return true;
  for (const auto& queue : injected_) {
    if (!queue->empty_hint()) return true;
  }
  if (self.mailbox_pending.load(std::memory_order_relaxed) > 0) return true;
  for (const auto& worker : workers_) {
    if (!worker->deque.empty() || !worker->from_outside.empty()) return true;
  }
  const unsigned slots = slots_.count();
  for (unsigned i = 0; i < slots; ++i) {
    if (!slots_.at(i).deque.empty()) return true;
  }
  return false;
}

bool Engine::mailbox_waiting_elsewhere(const Worker& self) const noexcept {
  for (const auto& worker : workers_) {
    if (worker.get() != &self && worker->mailbox_pending.load(std::memory_order_relaxed) > 0) return true;
  }
  return false;
}

void Engine::park(Worker& self) {
  // The checks run after the announcement (scheduler/engine/parking.hpp): a producer either sees this worker as a
  // sleeper and wakes it, or published before the checks, which then see its work.
  const auto key = parking_.prepare_park([&] { return has_visible_work(self) || stops_tasks(); });
  if (!key) return;
  self.counters.parks.bump();
  // Another worker holds a mailbox task: wake up in time to take it over if that worker stays busy. A timed wait
  // parked on a fiber: wake up in time to resume it when it expires.
  auto timeout = mailbox_waiting_elsewhere(self) ? std::chrono::nanoseconds(options_.affinity_patience)
                                                 : std::chrono::nanoseconds::max();
  if (self.fibers != nullptr && timed_parked() != 0) timeout = std::min(timeout, std::chrono::nanoseconds(kTimerSleep));
  const std::int64_t slept_from = hooks_.recording() ? hooks_.now() : -1;
  (void)parking_.sleep(*key, timeout);
  self.counters.wakeups.bump();
  if (slept_from >= 0) [[unlikely]]
    hooks_.park(slept_from, self.index);
}

void Engine::expire_timed_waits(Worker& self) noexcept {
#if WEFT_FIBERS
  const auto now = std::chrono::steady_clock::now();
  if (now < self.next_timer_look) return;
  self.next_timer_look = now + kTimerLook;
  fiber_lot::expire(*this, now);
#else
  (void)self;
#endif
}

void Engine::resume_later(ResumedEntry& resumed) noexcept {
  resumed_.push(resumed);
  signal_work();  // orders the push before the look for sleepers (resumed_queue.hpp)
}

void Engine::run_loop_on_fiber() {
  Worker* const self = this_thread_worker();  // whoever first resumed this fiber
  worker_main(*self);
}

}  // namespace weft::engine
