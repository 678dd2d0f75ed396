// A pool's life, running to stopped, and the gate outside submitters pass: what shutdown changes and every
// submitter, worker loop and wait looks at. Shutdown's steps (shutdown.cpp) drive it; this type keeps the orders
// that make those steps safe.
//
// Contract:
// - The state only rises: running, then draining (a Drain: accepted work finishes) or dropping (DropPending, or
//   shutdown_for's deadline: no pending task starts any more), then stopped. raise() never lowers it.
// - drop_cause() is set once, before the state first stops tasks, and read with the state's acquire: whoever sees
//   a state that stops tasks also sees why (dropping(), drop_policy()).
// - The gate: an outside submitter enters (enter(), held by a Pass until the pass dies) and then queues its task;
//   close() shuts the gate for good. After close() and drain_entered(), every outside submitter either saw the gate
//   closed and was refused, or is out of it with its task queued: the Dekker pairing of the gate's count (or a
//   slot's `entering` flag) with the closed bit, through seq_cst operations, or the asymmetric barriers where the
//   OS has them (a compiler barrier per submission, a system call per shutdown). A worker passes no gate: it
//   reads the state alone, and once the state stops tasks it is refused.
// - While the gate is closed and the state does not stop tasks yet, an outside thread that runs this pool's work
//   in place (a RunningFrame) still passes (admits_own_work_while_closed): that work was accepted, and a Drain
//   lets it finish. await_submitters(), after each raise that stops tasks, waits for such a submitter to be out.
#pragma once

#include <atomic>
#include <cstdint>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/engine/outside_slot.hpp"
#include "scheduler/engine/slot_table.hpp"
#include "src/process_barrier.hpp"

namespace weft::engine {

class Engine;

class Lifecycle {
 public:
  enum class State : std::uint8_t { running, draining, dropping, stopped };
  // Why a shutdown drops pending work (dropping(), drop_policy()); none under Drain, stopped or not.
  enum class DropCause : std::uint8_t { none, drop_pending, deadline };

  // A DropPending shutdown (or shutdown_for's deadline) has begun, or the pool has stopped: no pending task
  // starts any more.
  [[nodiscard]] static constexpr bool stops_tasks(State state) noexcept {
    return state == State::dropping || state == State::stopped;
  }

  // `engine`: whose RunningFrames admit their thread while the gate is closed; `slots`: whose `entering` flags
  // the gate's drains wait for.
  Lifecycle(const Engine& engine, const SlotTable& slots) noexcept : engine_(engine), slots_(slots) {}
  Lifecycle(const Lifecycle&) = delete;
  Lifecycle& operator=(const Lifecycle&) = delete;

  // The state now. acquire: pairs with the shutdown's stores (raise, stop), so a caller that sees a state that
  // stops tasks sees the drop cause and what the shutdown did before.
  [[nodiscard]] State state() const noexcept { return state_.load(std::memory_order_acquire); }
  // No shutdown has begun (a snapshot).
  [[nodiscard]] bool accepting() const noexcept { return state() == State::running; }
  // A DropPending shutdown (or shutdown_for's deadline) has begun (Engine::dropping).
  [[nodiscard]] bool dropping() const noexcept {
    // acquire: pairs with raise()'s store, made before the state says dropping.
    return drop_cause_.load(std::memory_order_acquire) != DropCause::none;
  }
  // While dropping(): "Shutdown::DropPending" or "shutdown_for's deadline".
  [[nodiscard]] const char* drop_policy() const noexcept {
    return drop_cause_.load(std::memory_order_acquire) == DropCause::deadline ? "shutdown_for's deadline"
                                                                              : "Shutdown::DropPending";
  }

  // An outside submitter's hold on the gate: the shared count for a thread without a slot, the slot's own
  // `entering` flag for the others (one store instead of two RMWs). Its destructor lets go of whichever it holds.
  class Pass {
   public:
    Pass() noexcept = default;
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    ~Pass() {
      if (gate_ != nullptr) gate_->fetch_sub(2, std::memory_order_release);  // release: shutdown acquires
      // release: drain_entered and await_submitters acquire it, so our push happens-before the final drop pass.
      if (entering_ != nullptr) entering_->store(false, std::memory_order_release);
    }

   private:
    friend class Lifecycle;
    std::atomic<std::uint64_t>* gate_ = nullptr;
    std::atomic<bool>* entering_ = nullptr;
  };

  // A submitter's way in: true if it may queue its task, holding `pass` (outside threads) until it has. A worker
  // (`worker`) is refused once the state stops tasks; an outside thread once the gate is closed, unless
  // admits_own_work_while_closed(). `slot`: the outside thread's slot, if its task goes there.
  [[gnu::always_inline]] bool enter(bool worker, OutsideSlot* slot, Pass& pass) noexcept {
    if (worker) return !stops_tasks(state());
    if (slot != nullptr) {
      // Dekker with close(): we raise our flag then look at the closed bit; shutdown sets the bit then looks at
      // every flag. One of us sees the other: either we see the bit and refuse, or shutdown sees our flag and
      // waits until we are out. Asymmetric (asymmetric_): a compiler barrier here, and shutdown's heavy barrier
      // (src/process_barrier.hpp) acts as the fence on our side too; else all four seq_cst.
      if (asymmetric_) {
        slot->entering.store(true, std::memory_order_relaxed);
        atomics::StdMemoryModel::light_barrier();
      } else {
        slot->entering.store(true, std::memory_order_seq_cst);
      }
      pass.entering_ = &slot->entering;
      return (gate_.load(std::memory_order_seq_cst) & 1) == 0 || admits_own_work_while_closed();
    }
    // seq_cst: pairs with the fetch_or in close() (seeing the closed bit means shutdown has begun), and is the
    // submitter's half of the Dekker pairing with await_submitters when the closed gate admits it.
    if ((gate_.fetch_add(2, std::memory_order_seq_cst) & 1) != 0 && !admits_own_work_while_closed()) {
      gate_.fetch_sub(2, std::memory_order_release);
      return false;
    }
    pass.gate_ = &gate_;
    return true;
  }
  // enter() would refuse now (a snapshot, for a submitter waiting for room).
  [[nodiscard]] bool closed_to(bool worker) const noexcept {
    if (worker) return stops_tasks(state());
    return (gate_.load(std::memory_order_acquire) & 1) != 0 && !admits_own_work_while_closed();
  }
  // The gate is closed, yet an outside thread may pass it: it runs this pool's work in place (a RunningFrame: an
  // outside waiter running a run's nodes, or a task a waiter claimed), which the pool accepted and a Drain lets
  // finish, and the state does not stop tasks yet.
  [[nodiscard]] bool admits_own_work_while_closed() const noexcept;

  // Shutdown's first step: closes the gate; every outside submitter from here on sees it closed (or is seen by
  // drain_entered). Wake the submitters that wait for room between this and drain_entered: they hold the gate.
  void close() noexcept;
  // After close(): waits until every outside submitter that entered before it is out (its task queued).
  void drain_entered() const noexcept;
  // Raises the state to `target` (never lowers it); a target that stops tasks first records `cause`, unless a
  // cause is recorded already (a deadline's drop is not renamed by a later call).
  void raise(State target, DropCause cause) noexcept;
  // The last state, stored seq_cst: an outside thread the closed gate admitted has its push in place before the
  // final drops, once await_submitters() returns, or sees the pool stopped and is refused.
  void stop() noexcept { state_.store(State::stopped, std::memory_order_seq_cst); }
  // After the state was raised to one that stops tasks: waits until no outside submitter is inside the gate (its
  // count and the slots' `entering` flags), so that a push admitted before the raise is in its queue before the
  // drops that follow look there.
  void await_submitters() const noexcept;

 private:
  const Engine& engine_;
  const SlotTable& slots_;
  alignas(atomics::kCacheLine) std::atomic<State> state_{State::running};
  std::atomic<DropCause> drop_cause_{DropCause::none};  // set once, before the state says dropping
  // Outside submitters inside enter()'s pass, times two, plus 1 once closed.
  std::atomic<std::uint64_t> gate_{0};
  // The slots' `entering` flags pair with the closing of the gate through the asymmetric barriers where the OS
  // has them; else through seq_cst fences.
  const bool asymmetric_ = os::process_barrier_available();
};

}  // namespace weft::engine
