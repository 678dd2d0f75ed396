// Idle detection and shutdown: finished against submitted counts, the gate closed and drained, pending tasks
// dropped (and counted, user work only), workers joined; and the refusal to wait from inside the pool's own tasks.
#include <string>
#include <thread>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"
#include "src/process_barrier.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::engine {
using namespace engine_internal;

namespace {

// Set by a dropped closure's destructor that had nothing left to do (Engine::note_drop_was_empty).
thread_local bool tls_drop_was_empty = false;

}  // namespace

bool Engine::idle() const noexcept {
  // Finished first, then submitted. Every task counted in `finished` was submitted before, and so is counted in
  // `submitted` when that is read later; so finished == submitted means no accepted task is unfinished.
  // Inline runs (a waiter running a task itself) count on both sides: started before the claim, finished after
  // the result, so one still running keeps finished < submitted.
  std::uint64_t finished = abandoned_.load(std::memory_order_acquire);
  finished += inline_runs_.finished.load(std::memory_order_acquire);
  for (const auto& worker : workers_) finished += worker->counters.finished.read();
  // A slot made after this read only adds to `submitted` below (its owner's runs are of its own submissions),
  // which errs towards "not idle".
  const unsigned slots_seen = slots_.count();
  for (unsigned i = 0; i < slots_seen; ++i) finished += slots_.at(i).finished.read();
  std::uint64_t submitted = external_submitted_.load(std::memory_order_acquire);
  submitted += inline_runs_.started.load(std::memory_order_acquire);
  for (const auto& worker : workers_) submitted += worker->counters.spawned.read();
  const unsigned slots = slots_.count();
  for (unsigned i = 0; i < slots; ++i) submitted += slots_.at(i).submitted.read();
  return finished == submitted;
}

void Engine::wait_idle() {
  refuse_on_own_worker("wait_idle");
  idle_changed_.await([this] { return idle(); });
}

void Engine::refuse_on_own_worker(const char* what) const {
  if (const auto worker = current_worker()) {
    throw would_deadlock(std::string("weft::Pool::") + what + ": called from a task on worker " +
                         std::to_string(*worker) + " of the same pool, it would wait for itself");
  }
  if (RunningFrame::inside(*this)) {
    throw would_deadlock(std::string("weft::Pool::") + what +
                         ": called from a task of the same pool that this thread runs itself (while waiting for "
                         "it, or for a graph run), it would wait for itself");
  }
}

bool Engine::inside_own_task() const noexcept { return current_worker() || RunningFrame::inside(*this); }

void Engine::begin_shutdown(State target, DropCause cause) {
  // After this, every external submitter either saw the closed bit or is counted in the gate (acq_rel), or
  // has its slot's `entering` flag up (the Dekker pairing in enqueue_general: seq_cst, or asymmetric).
  gate_.fetch_or(1, std::memory_order_seq_cst);
  // The fence of the slot submitters' side too (see enqueue_general): a submitter whose flag store this
  // barrier did not make visible to the loads below executes its look at the gate after it, and sees the bit.
  if (asymmetric_gate_) os::process_barrier();
  room_available_.notify_all();  // submitters blocked on a full queue must see the gate close
  while (gate_.load(std::memory_order_acquire) >= 2) std::this_thread::yield();
  // seq_cst (count_seq_cst): a slot made after this load published its count (seq_cst) after our fetch_or in S,
  // so its first submitter, which raises its flag after that, sees the closed bit. The flag loads are the other
  // half of the Dekker pairing, and acquire the submitter's release on leaving: its push is visible to the drops.
  const unsigned slots = slots_.count_seq_cst();
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = slots_.at(i);
    while (slot.entering.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
  raise_state(target, cause);
}

void Engine::raise_state(State target, DropCause cause) noexcept {
  if (stops_tasks(target)) {
    // The first cause stays (a deadline's drop is not renamed by a later call). Written before the state, whose
    // CAS below is a release: a thread that reads the raised state (acquire) sees this cause too, so whoever
    // sees the state stop tasks finds a cause. (Reading the cause, as dropping() does, says nothing of the
    // state: it may still be the lower one.)
    DropCause none = DropCause::none;
    (void)drop_cause_.compare_exchange_strong(none, cause, std::memory_order_acq_rel);
  }
  // Never lowers the state (a destructor after a failed shutdown must not turn dropping back into draining).
  // seq_cst: the raise is the first half of await_submitters' Dekker pairing (admits_own_work_while_closed).
  State current = state_.load(std::memory_order_acquire);
  while (current < target && !state_.compare_exchange_weak(current, target, std::memory_order_seq_cst)) {
  }
  parking_.notify_all();
  room_available_.notify_all();  // before the wait below: a submitter blocked on a full queue looks again
  if (stops_tasks(target)) await_submitters();
#if WEFT_FIBERS
  // Tasks suspended in waits look again: a wait on a primitive (weft::Event) gives up when the pool drops. One
  // that suspends after this pass finds dropping() true under its bucket's lock and does not park (see
  // fiber_lot::enter in scheduler/engine/fiber_worker.cpp): take_owned's fence and the lot's Dekker pairing order the
  // two.
  if (dropping()) fiber_lot::wake_all_of(*this);
#endif
}

void Engine::await_submitters() const noexcept {
  // The heavy barrier stands for the fence of the slot submitters' side too (see enqueue_general).
  if (asymmetric_gate_) os::process_barrier();
  while (gate_.load(std::memory_order_seq_cst) >= 2) std::this_thread::yield();
  // seq_cst: the other half of the Dekker pairing; acquire of the submitter's release on leaving, so its push is
  // visible to the drops. seq_cst on the count too: see count_seq_cst.
  const unsigned slots = slots_.count_seq_cst();
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = slots_.at(i);
    while (slot.entering.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
}

const char* Engine::drop_policy() const noexcept {
  return drop_cause_.load(std::memory_order_acquire) == DropCause::deadline ? "shutdown_for's deadline"
                                                                            : "Shutdown::DropPending";
}

std::uint64_t Engine::finish_shutdown() {
  // Registered first: nothing below allocates, so a shutdown that gets past this line always completes.
  auto handle = domain_.register_thread();
  const auto ref = handle.ref();
  std::uint64_t count = 0;
  if (state_.load(std::memory_order_acquire) == State::dropping) {
    // A worker inside a nested wait (Future::get in a task) would go on taking pending tasks. Drop them from
    // here, before joining: their futures report task_dropped, so those waits end and the workers can exit.
    count += drop_pending_while_running(ref);
  }
  // seq_cst, then await_submitters: an outside thread the closed gate admitted (admits_own_work_while_closed)
  // has its push in place before the final drops below, or sees the pool stopped and is refused.
  state_.store(State::stopped, std::memory_order_seq_cst);
  parking_.notify_all();
  room_available_.notify_all();
  await_submitters();
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
  idle_changed_.notify_all();
  return count;
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
  abandoned_.fetch_add(1, std::memory_order_release);  // release: read by idle() with acquire
  return std::exchange(tls_drop_was_empty, false) ? 0 : 1;
}

std::uint64_t Engine::shutdown(Shutdown policy) {
  if (policy != Shutdown::Drain && policy != Shutdown::DropPending)
    throw invalid_option("weft::Pool::shutdown: policy = " + std::to_string(static_cast<unsigned>(policy)) +
                         ": not a weft::Shutdown (Drain or DropPending)");
  refuse_on_own_worker("shutdown");
  const std::lock_guard lock(shutdown_mutex_);
  if (joined_) return 0;
  begin_shutdown(policy == Shutdown::Drain ? State::draining : State::dropping);
  if (policy == Shutdown::Drain) wait_idle();
  return finish_shutdown();
}

ShutdownResult Engine::shutdown_for(std::chrono::nanoseconds timeout) {
  refuse_on_own_worker("shutdown_for");
  const std::lock_guard lock(shutdown_mutex_);
  if (joined_) return {true, 0};
  const auto deadline = weft::detail::deadline_after(timeout);  // saturating: nanoseconds::max() never overflows
  begin_shutdown(State::draining);
  bool drained = idle();
  while (!drained) {
    const auto key = idle_changed_.prepare_wait();
    if ((drained = idle())) {
      idle_changed_.cancel_wait();
      break;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) {
      idle_changed_.cancel_wait();
      break;
    }
    (void)idle_changed_.wait_for(key, left);
    drained = idle();
  }
  // At the deadline, what is left is dropped as DropPending drops it: pending tasks, and tasks suspended in a
  // wait (woken here, they end with task_dropped), so that finish_shutdown's join can end.
  if (!drained) raise_state(State::dropping, DropCause::deadline);
  const std::uint64_t dropped = finish_shutdown();
  return {drained && dropped == 0, dropped};
}

}  // namespace weft::engine
