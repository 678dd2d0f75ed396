// The pool's life and the outside submitters' gate: the shutdown's side of the Dekker pairings (lifecycle.hpp).
#include "scheduler/engine/lifecycle.hpp"

#include <thread>

#include "scheduler/engine/engine.hpp"

namespace weft::engine {

bool Lifecycle::admits_own_work_while_closed() const noexcept {
  // Work an outside thread runs in place for the pool (RunningFrame) is counted unfinished while it runs (an
  // inline run, or a task of the thread's slot), so a Drain's wait_idle cannot end before it, and the tasks it
  // posts are part of runs the pool accepted: admitted as a worker's are, until the pool stops tasks. seq_cst:
  // the caller's flag store (or gate RMW) came first; await_submitters, after the raise of the state, reads
  // the flags (Dekker): either this load sees the raised state and refuses, or the raise waits for the push.
  // Under the asymmetric gate the caller's side has a compiler barrier and await_submitters the heavy one.
  return !stops_tasks(state_.load(std::memory_order_seq_cst)) && RunningFrame::inside(engine_);
}

void Lifecycle::close() noexcept {
  // After this, every outside submitter either saw the closed bit or is counted in the gate (acq_rel), or has
  // its slot's `entering` flag up (the Dekker pairing in enter(): seq_cst, or asymmetric).
  gate_.fetch_or(1, std::memory_order_seq_cst);
  // The fence of the slot submitters' side too (see enter()): a submitter whose flag store this barrier did not
  // make visible to drain_entered's loads executes its look at the gate after it, and sees the bit.
  if (asymmetric_) os::process_barrier();
}

void Lifecycle::drain_entered() const noexcept {
  while (gate_.load(std::memory_order_acquire) >= 2) std::this_thread::yield();
  // seq_cst (count_seq_cst): a slot made after this load published its count (seq_cst) after close()'s fetch_or in
  // S, so its first submitter, which raises its flag after that, sees the closed bit. The flag loads are the other
  // half of the Dekker pairing, and acquire the submitter's release on leaving: its push is visible to the drops.
  const unsigned slots = slots_.count_seq_cst();
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = slots_.at(i);
    while (slot.entering.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
}

void Lifecycle::raise(State target, DropCause cause) noexcept {
  if (stops_tasks(target)) {
    // The first cause stays. Written before the state, whose CAS below is a release: a thread that reads the
    // raised state (acquire) sees this cause too, so whoever sees the state stop tasks finds a cause. (Reading
    // the cause, as dropping() does, says nothing of the state: it may still be the lower one.)
    DropCause none = DropCause::none;
    (void)drop_cause_.compare_exchange_strong(none, cause, std::memory_order_acq_rel);
  }
  // Never lowers the state (a destructor after a failed shutdown must not turn dropping back into draining).
  // seq_cst: the raise is the first half of await_submitters' Dekker pairing (admits_own_work_while_closed).
  State current = state_.load(std::memory_order_acquire);
  while (current < target && !state_.compare_exchange_weak(current, target, std::memory_order_seq_cst)) {
  }
}

void Lifecycle::await_submitters() const noexcept {
  // The heavy barrier stands for the fence of the slot submitters' side too (see enter()).
  if (asymmetric_) os::process_barrier();
  while (gate_.load(std::memory_order_seq_cst) >= 2) std::this_thread::yield();
  // seq_cst: the other half of the Dekker pairing; acquire of the submitter's release on leaving, so its push is
  // visible to the drops. seq_cst on the count too: see count_seq_cst.
  const unsigned slots = slots_.count_seq_cst();
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = slots_.at(i);
    while (slot.entering.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
}

}  // namespace weft::engine
