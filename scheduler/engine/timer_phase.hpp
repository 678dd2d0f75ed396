// The protocol of a timer's phase word (weft::detail::TimerState::phase, weft/timer.hpp): who owns the timer's work,
// decided by compare-and-swap. The timer queue (timer_queue.cpp), Timer::cancel and the periodic run task call these
// and nothing else on the word; the Relacy model (tests/pool/timer_phase_model.cpp) runs the same text over its
// own atomics, with the planted bugs below (WEFT_PLANTED, names in tests/model/plant.hpp).
//
// The phases and their owners:
//   waiting  --fire-->   fired      (one-shot: the queue hands the work to the pool)
//   waiting  --fire-->   queued     (periodic: a run task is on its way)
//   queued   --begin-->  running    (the run task calls the work)
//   running  --end-->    waiting    (the run task rearms: the queue fires it again when due)
//   waiting, queued, running --cancel--> cancelled
//   waiting, queued --drop--> dropped (a shutdown; a run task destroyed unrun)
// Whoever moves the word out of a live phase owns the work from then on, and every move is acq_rel: the new
// owner sees the work as the last owner left it (a periodic run mutates its callable; cancel() then destroys it).
// cancel() from `queued` or `running` does not own the work: the run task, which finds `cancelled` at its next
// move, lets go of it.
#pragma once

#include <atomic>
#include <cstdint>

#include "scheduler/atomics/plant.hpp"
#include "weft/timer.hpp"

namespace weft::engine::timer_phase {

using Phase = weft::detail::TimerState::Phase;

// Moves the word from `from` to `to` if it is at `from`. Returns the phase it found: `from` when this call moved
// it (and owns the work now), another phase when someone else moved it first.
template <class Atomic>
std::uint8_t claim(Atomic& phase, std::uint8_t from, std::uint8_t to) noexcept {
  std::uint8_t seen = from;
  // acq_rel: acquire sees the work as its last owner left it; release hands it on as this owner leaves it.
  // acquire on failure: the loser may act on what it found (a run task that finds `cancelled` destroys the work).
  (void)phase.compare_exchange_strong(seen, to, std::memory_order_acq_rel, std::memory_order_acquire);
  return seen;
}

// The periodic run task's end: running -> waiting, so that the queue (or a cancel) may take the word again. True
// if this call rearmed it; false if a cancel() came during the run (the run task then lets go of the work).
template <class Atomic>
bool end_run(Atomic& phase) noexcept {
  std::uint8_t seen = Phase::running;
  if (WEFT_PLANTED("timer.relaxed_rearm")) {
    // The bug: the run's writes to the work are not published to the next owner.
    return phase.compare_exchange_strong(seen, Phase::waiting, std::memory_order_relaxed, std::memory_order_acquire);
  }
  // release: the next owner (the queue firing the next run, or cancel() destroying the work) sees this run's
  // writes to the work. On failure the work stays this thread's to destroy (cancel() from `running` left it).
  return phase.compare_exchange_strong(seen, Phase::waiting, std::memory_order_acq_rel, std::memory_order_acquire);
}

// Timer::cancel: moves a live word (waiting, queued, running) to cancelled. Returns the phase it moved it from, or
// Phase::cancelled if it was not live (fired, cancelled, dropped: this call cancelled nothing).
template <class Atomic>
std::uint8_t cancel(Atomic& phase) noexcept {
  std::uint8_t seen = phase.load(std::memory_order_acquire);
  for (;;) {
    // Anything but waiting, queued or running is final.
    if (seen != Phase::waiting && seen != Phase::queued && seen != Phase::running) return Phase::cancelled;
    if (WEFT_PLANTED("timer.cancel_check_then_set")) {
      // The bug: a look, then a store. A firing between the two is not seen: both it and this cancel win.
      phase.store(Phase::cancelled, std::memory_order_release);
      return seen;
    }
    // acq_rel: the winner owns the work (acquire: sees it as its last owner left it); the periodic run that finds
    // `cancelled` acquires our release.
    if (phase.compare_exchange_weak(seen, Phase::cancelled, std::memory_order_acq_rel, std::memory_order_acquire))
      return seen;
  }
}

}  // namespace weft::engine::timer_phase
