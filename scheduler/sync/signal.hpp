// How weft waits for a condition that other threads make true: a run's end, room in an inbox, a subflow's
// children, a weft::Event. Every such wait goes through wait_until below, which on a worker hands over to the
// scheduler's one wait point (Engine::wait_on_worker: with fibers the waiting task suspends) and elsewhere spins
// briefly, then sleeps on the word.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "scheduler/atomics/cpu_relax.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/wait_word.hpp"

namespace weft::sync {

using Clock = std::chrono::steady_clock;

// A word threads sleep on until some condition they test holds. Notifiers change the condition first, then
// call notify(); it costs a fence and a load unless somebody sleeps. The notifier reads the Signal after it
// changed the condition, so the Signal must outlive every notify: the graph front-end's run state holds them.
// (The public wait primitives, which a waiter may destroy as soon as it returns, use one word instead:
// scheduler/sync/word_protocol.hpp.)
class Signal {
 public:
  // Called after the condition changed.
  void notify() noexcept {
    // seq_cst fence: Dekker with sleep(): either the sleeper's announcement (seq_cst RMW) is ordered before this
    // fence and we see it, or its re-check of the condition is ordered after and sees the change.
    atomics::StdMemoryModel::thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) == 0) return;
    // release: a sleeper that reads the new epoch also sees the condition's change (park_word compares the word).
    epoch_.fetch_add(1, std::memory_order_release);
    engine::wake_word_all(epoch_);
  }
  // Sleeps for at most `slice` unless ready() holds once announced (then returns at once).
  template <class Ready>
  void sleep(Ready& ready, std::chrono::nanoseconds slice) noexcept {
    // seq_cst RMW + seq_cst fence: the announcement half of the handshake in notify(). The fence, not the RMW
    // alone, orders the announcement before ready()'s loads (acquire or relaxed): without it the C++ model (and
    // RCpc hardware: ARMv8.3 LDAPR, POWER) lets ready() read the condition from before the change while the
    // notifier, past its fence, reads sleepers_ == 0, and both miss: a lost wake-up. With the two fences one of
    // them is first in the single total order, and the other side reads what the first one's thread wrote.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    atomics::StdMemoryModel::thread_fence(std::memory_order_seq_cst);
    const std::uint32_t seen = epoch_.load(std::memory_order_acquire);
    if (!ready()) engine::park_word(epoch_, seen, slice);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<std::uint32_t> epoch_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};

// How long a thread that is not a worker keeps looking before it sleeps.
inline constexpr std::chrono::microseconds kOutsideSpin{100};

// Waits until ready() holds or the deadline passes (Clock::time_point::max(): none); returns ready().
// On a worker of any weft pool the worker runs other tasks meanwhile; elsewhere the thread sleeps on `signal`.
// `signal` is a Signal, or anything with Signal's sleep(ready, slice) that ends in one (a waiter that must
// announce itself to its notifiers before each sleep: Subflow's join). `outside_spin`: how long a thread that is not
// a worker looks before it sleeps (0 for a wait known to be long, where the spin would only take a core from the
// workers).
template <class Ready, class Sleeper = Signal>
bool wait_until(Ready ready, Sleeper& signal, Clock::time_point deadline = Clock::time_point::max(),
                std::chrono::nanoseconds outside_spin = kOutsideSpin) {
  if (ready()) return true;
  if (engine::Worker* self = engine::Engine::this_thread_worker()) {
    return self->engine.wait_on_worker(*self, ready, deadline,
                                       [&](std::chrono::nanoseconds slice) { signal.sleep(ready, slice); });
  }
  // Off a worker: look again for a short while before sleeping. A small run ends within tens of microseconds,
  // and a futex sleep plus the wake-up would cost as much again. It spins with pause only: yielding handed the
  // CPU to a searching worker and cost a context switch each time (perf: a 50-node run's samples in
  // __schedule), which made a small run markedly longer (docs/perf-log.md). The spin is bounded
  // (kOutsideSpin), so on a machine with fewer cores than threads it delays the workers by at most that.
  const auto spin_until = outside_spin == std::chrono::nanoseconds::zero()
                              ? Clock::time_point::min()
                              : std::min(deadline, Clock::now() + outside_spin);
  while (Clock::now() < spin_until) {
    if (ready()) return true;
    atomics::cpu_relax();
  }
  while (!ready()) {
    if (deadline == Clock::time_point::max()) {
      signal.sleep(ready, std::chrono::nanoseconds::max());
      continue;
    }
    const auto left = deadline - Clock::now();
    if (left <= Clock::duration::zero()) return ready();
    signal.sleep(ready, std::chrono::duration_cast<std::chrono::nanoseconds>(left));
  }
  return true;
}

}  // namespace weft::sync
