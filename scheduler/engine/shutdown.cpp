// Shutdown: the gate closed and drained, the state raised (lifecycle.hpp), pending tasks dropped (and counted, user
// work only), workers joined. Idle detection, which a Drain waits for, is idle.cpp's.
#include <atomic>
#include <string>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::engine {
using namespace engine_internal;

namespace {

// Set by a dropped closure's destructor that had nothing left to do (Engine::note_drop_was_empty).
thread_local bool tls_drop_was_empty = false;

// Set once by a static initializer (weft::sync's coroutine lot), read by every shutdown after its join.
std::atomic<StoppedHook> stopped_hook{nullptr};

}  // namespace

void set_stopped_hook(StoppedHook hook) noexcept { stopped_hook.store(hook, std::memory_order_release); }

void Engine::begin_shutdown(State target, DropCause cause) {
  lifecycle_.close();
  bound_.wake_all();  // submitters blocked on a full queue hold the gate: they must see it close
  lifecycle_.drain_entered();
  raise_state(target, cause);
}

void Engine::raise_state(State target, DropCause cause) noexcept {
  lifecycle_.raise(target, cause);
  parking_.notify_all();
  bound_.wake_all();  // before the wait below: a submitter blocked on a full queue looks again
  if (Lifecycle::stops_tasks(target)) lifecycle_.await_submitters();
#if WEFT_FIBERS
  // Tasks suspended in waits look again: a wait on a primitive (weft::Event) gives up when the pool drops. One
  // that suspends after this pass finds dropping() true under its bucket's lock and does not park (see
  // fiber_lot::enter in scheduler/engine/fiber_worker.cpp): take_owned's fence and the lot's Dekker pairing order the
  // two.
  if (dropping()) fiber_lot::wake_all_of(*this);
#endif
}

std::uint64_t Engine::finish_shutdown() {
  // Registered first: nothing below allocates, so a shutdown that gets past this line always completes.
  auto handle = domain_.register_thread();
  const auto ref = handle.ref();
  std::uint64_t count = 0;
  if (lifecycle_.state() == State::dropping) {
    // A worker inside a nested wait (Future::get in a task) would go on taking pending tasks. Drop them from
    // here, before joining: their futures report task_dropped, so those waits end and the workers can exit.
    count += drop_pending_while_running(ref);
  }
  // Then await_submitters: an outside thread the closed gate admitted (admits_own_work_while_closed) has its push
  // in place before the final drops below, or sees the pool stopped and is refused.
  lifecycle_.stop();
  parking_.notify_all();
  bound_.wake_all();
  lifecycle_.await_submitters();
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
  // The workers are gone: this thread now owns every deque, and drops whatever was never started.
  for (auto& worker : workers_) {
    while (auto task = worker->deque.pop()) {
      count += drop(*task, ref);
    }
    while (auto task = worker->from_outside.pop()) {
      count += drop(*task, ref);
    }
    while (auto task = worker->mailbox.try_pop(ref)) {
      count += drop(*task, ref);
    }
    worker->mailbox_pending.store(0, std::memory_order_relaxed);
  }
  count += drop_slots(ref);
  for (std::size_t s = 0; s < injected_.size(); ++s) {
    while (auto task = injected_[s]->try_pop(ref)) {
      count += drop(*task, ref);
      injected_dropped_.fetch_add(1, std::memory_order_relaxed);  // stats only
    }
  }
  count += dropped_by_waiters_.load(std::memory_order_relaxed);  // the joins ordered these
  dropped_.fetch_add(count, std::memory_order_relaxed);
  joined_ = true;
  idle_.notify();
  return count;
}

void Engine::resume_parked_coroutines() noexcept {
  // Coroutines parked for this pool (co_await on an Event, WaitGroup or ConditionVariable) resume here, on this
  // thread, with task_dropped: lifecycle_.stop() in finish_shutdown refuses any that would park from then on, so
  // one pass takes them all. Called with shutdown_mutex_ released, so that a coroutine which shuts the same pool
  // down on its way out finds it joined instead of waiting for itself.
  if (const StoppedHook hook = stopped_hook.load(std::memory_order_acquire); hook != nullptr && pool_ != nullptr) {
    hook(*pool_);
  }
}

std::uint64_t Engine::drop_pending_while_running(TaskDomain::ThreadRef ref) noexcept {
  // steal() and try_pop() are safe from any thread while the owners still run. Workers refuse new submissions
  // once the state is dropping, so this pass and the one after the join between them catch everything.
  std::uint64_t count = 0;
  for (auto& worker : workers_) {
    for (auto* deque : {&worker->deque, &worker->from_outside}) {
      while (Task* task = steal_until_taken_or_empty(*deque)) {
        count += drop(task, ref);
      }
    }
    while (auto task = worker->mailbox.try_pop(ref)) {
      worker->mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // a hint only
      count += drop(*task, ref);
    }
  }
  for (auto& queue : injected_) {
    while (auto task = queue->try_pop(ref)) {
      count += drop(*task, ref);
      injected_dropped_.fetch_add(1, std::memory_order_relaxed);  // stats only
    }
  }
  return count + drop_slots(ref);
}

std::uint64_t Engine::drop_slots(TaskDomain::ThreadRef ref) noexcept {
  // steal(), never pop(): the owning thread may still be alive (it only pops, and only while not dropping).
  std::uint64_t count = 0;
  const unsigned slots = slots_.count();
  for (unsigned i = 0; i < slots; ++i) {
    OutsideSlot& slot = slots_.at(i);
    while (Task* task = steal_until_taken_or_empty(slot.deque)) count += drop(task, ref);
  }
  return count;
}

void Engine::note_drop_was_empty() noexcept { tls_drop_was_empty = true; }

std::uint64_t Engine::drop(Task* task, TaskDomain::ThreadRef ref) noexcept {
  // A closure destroyed unrun, a future's state told so, or a SelfTask finished unrun (destroy_task): the
  // future, if any, reports task_dropped; a Subflow child tells its parent, which fails the run.
  tls_drop_was_empty = false;
  if (task->kind == weft::detail::TaskKind::future_state) {
    // A state a waiter claimed (Future::get runs its task inline) was run there, or is running: not a drop.
    if (!weft::detail::FutureStateBase::finish_queued(task, false)) tls_drop_was_empty = true;
  } else {
    destroy_task(ref, task);
  }
  idle_.abandoned();
  return std::exchange(tls_drop_was_empty, false) ? 0 : 1;
}

std::uint64_t Engine::shutdown(Shutdown policy) {
  if (policy != Shutdown::Drain && policy != Shutdown::DropPending)
    throw invalid_option("weft::Pool::shutdown: policy = " + std::to_string(static_cast<unsigned>(policy)) +
                         ": not a weft::Shutdown (Drain or DropPending)");
  refuse_on_own_worker("shutdown");
  std::uint64_t dropped = 0;
  {
    const std::lock_guard lock(shutdown_mutex_);
    if (joined_) return 0;
    // Timers first, whatever the policy: those not handed to the pool yet are dropped (PoolStats::timers_dropped),
    // so a Drain never waits for a timer due later; what the timer thread handed over before is accepted work.
    (void)timers_.stop();
    begin_shutdown(policy == Shutdown::Drain ? State::draining : State::dropping);
    if (policy == Shutdown::Drain) wait_idle();
    dropped = finish_shutdown();
  }
  resume_parked_coroutines();
  return dropped;
}

ShutdownResult Engine::shutdown_for(std::chrono::nanoseconds timeout) {
  refuse_on_own_worker("shutdown_for");
  bool drained = false;
  std::uint64_t dropped = 0;
  {
    const std::lock_guard lock(shutdown_mutex_);
    if (joined_) return {true, 0};
    const auto deadline = weft::detail::deadline_after(timeout);  // saturating: nanoseconds::max() never overflows
    (void)timers_.stop();                                         // as in shutdown()
    begin_shutdown(State::draining);
    drained = idle_.wait_until([this] { return idle(); }, deadline);
    // At the deadline, what is left is dropped as DropPending drops it: pending tasks, and tasks suspended in a
    // wait (woken here, they end with task_dropped), so that finish_shutdown's join can end.
    if (!drained) raise_state(State::dropping, DropCause::deadline);
    dropped = finish_shutdown();
  }
  resume_parked_coroutines();
  return {drained && dropped == 0, dropped};
}

}  // namespace weft::engine
