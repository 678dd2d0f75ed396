// EventCount: lets an idle thread sleep on "no work" without missing the wake-up of the thread that makes
// work available — the parking primitive of the scheduler's workers and of every blocking wait.
//
// Protocol for a waiter (the order matters; the check must sit between prepare and wait):
//
//   for (;;) {
//     if (auto task = try_get_work()) { run(*task); continue; }
//     const auto key = events.prepare_wait();        // from here on, a notify is not missed
//     if (auto task = try_get_work()) { events.cancel_wait(); run(*task); continue; }
//     events.wait(key);                              // sleeps unless notified since prepare_wait
//   }
//
// and for a notifier: publish the work first (any store), then call notify_one() or notify_all().
// notify_* cost a fence and a load when nobody waits (a compiler barrier and a load when asymmetric), so
// calling them on every publish is cheap.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <type_traits>

#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "scheduler/engine/wait_word.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::engine {

// M is the memory model (scheduler/atomics/memory_model.hpp). Under a model checker nothing sleeps: the Relacy test
// checks the protocol itself — that a waiter which would sleep is always followed by an epoch bump.
template <atomics::MemoryModel M = atomics::StdMemoryModel>
class BasicEventCount {
  static constexpr bool sleeps = std::is_same_v<M, atomics::StdMemoryModel>;

 public:
 public:
  // What a waiter saw when it announced itself: wait() sleeps only while no notify has happened since.
  class [[nodiscard]] Key {
    friend class BasicEventCount;
    explicit Key(std::uint32_t epoch) noexcept : epoch_(epoch) {}
    std::uint32_t epoch_;
  };

  // `asymmetric`: notifiers order their publish before their look for waiters with a compiler barrier
  // (M::light_barrier) instead of a fence, and prepare_wait() pays for both sides with M::heavy_barrier()
  // (src/process_barrier.hpp, a system call). For counts whose notifies are frequent and whose waits are rare
  // (wait_idle); pass it only where M::heavy_barrier_available(). False: a seq_cst fence on each side.
  explicit BasicEventCount(bool asymmetric = false) noexcept : asymmetric_(asymmetric) {}
  BasicEventCount(const BasicEventCount&) = delete;
  BasicEventCount& operator=(const BasicEventCount&) = delete;

  // Announces the caller as a waiter. Follow with a check of the condition, then wait() or cancel_wait().
  Key prepare_wait() noexcept {
    // seq_cst RMW + seq_cst fence pair with the fence in notify(): either this waiter's next check of the
    // condition sees the notifier's published work, or the notifier sees waiters_ > 0 and bumps the epoch.
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    if (!WEFT_PLANTED("event_count.prepare_without_fence")) {
      M::thread_fence(std::memory_order_seq_cst);
    }
    // acquire: if this reads an epoch bumped by a notify, that notify's published work is visible to the
    // caller's check (the bump is a release), so the check will find it and the caller will not wait.
    // Asymmetric: the other half of the notifiers' light barrier. A notifier whose look for waiters missed our
    // announcement made its publish visible before that look, and so before this barrier returns.
    if (asymmetric_) M::heavy_barrier();
    return Key{epoch_.load(std::memory_order_acquire)};
  }

  // Sleeps until done() holds: announce, check, then withdraw or sleep, so that a notify between the check and
  // the sleep is never missed. Notifiers make done() true before they notify.
  template <class Done>
  void await(Done done) noexcept(noexcept(done())) {
    while (!done()) {
      const Key key = prepare_wait();
      if (done()) {
        cancel_wait();
        return;
      }
      wait(key);
    }
  }

  // Withdraws a prepare_wait() whose check found work.
  void cancel_wait() noexcept {
    // relaxed: a stale count only costs a notifier one needless epoch bump and futex call.
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }

  // Sleeps until a notify that happened after prepare_wait() returned `key` (returns at once if one did).
  void wait(Key key) noexcept {
    // acquire: pairs with the release bump in notify_*, so work published before it is visible after.
    while (epoch_.load(std::memory_order_acquire) == key.epoch_) {
      if constexpr (sleeps) park_word(epoch_, key.epoch_, std::chrono::nanoseconds::max());
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  }

  // One sleep of at most `timeout` (nanoseconds::max(): no limit) unless notified since prepare_wait(); returns
  // whether a notify has happened. May return early. For a caller that loops itself (Engine::wait_on_worker): a
  // task on a fiber parks once, and never falls back to blocking its worker's thread in a second sleep.
  bool wait_once(Key key, std::chrono::nanoseconds timeout) noexcept {
    if (epoch_.load(std::memory_order_acquire) == key.epoch_) {
      if constexpr (sleeps) park_word(epoch_, key.epoch_, timeout);
    }
    // acquire: as in wait().
    const bool notified = epoch_.load(std::memory_order_acquire) != key.epoch_;
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    return notified;
  }
  // As wait(), but gives up after `timeout`. Returns true if woken by a notify, false on timeout.
  bool wait_for(Key key, std::chrono::nanoseconds timeout) noexcept {
    // Saturating: callers pass what is left of a deadline that may itself sit near time_point::max().
    const auto deadline = weft::detail::deadline_after(timeout);
    bool notified = true;
    while (epoch_.load(std::memory_order_acquire) == key.epoch_) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) {
        notified = false;
        break;
      }
      if constexpr (sleeps) park_word(epoch_, key.epoch_, left);
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    return notified;
  }

  // Wakes one waiter, if any. Call after publishing the work the waiter should find. Returns whether there
  // was a waiter to wake.
  bool notify_one() noexcept {
    if (!bump_if_waiting()) return false;
    if constexpr (sleeps) wake_word_one(epoch_);
    return true;
  }

  // Wakes every waiter, if any (shutdown, or work that every waiter should see).
  void notify_all() noexcept {
    if (bump_if_waiting()) {
      if constexpr (sleeps) wake_word_all(epoch_);
    }
  }

  // Threads between prepare_wait() and the end of wait()/cancel_wait(); a snapshot, for statistics and tests.
  [[nodiscard]] std::uint32_t waiters() const noexcept { return waiters_.load(std::memory_order_relaxed); }

 private:
  bool bump_if_waiting() noexcept {
    if (asymmetric_) {
      if (WEFT_PLANTED("event_count.look_before_barrier")) {
        if (waiters_.load(std::memory_order_relaxed) == 0) return false;  // planted bug: looks before the barrier
        M::light_barrier();
      } else {
        M::light_barrier();
        if (waiters_.load(std::memory_order_relaxed) == 0) return false;
      }
    } else {
      // seq_cst fence: the Dekker half that pairs with prepare_wait() (see there).
      if (!WEFT_PLANTED("event_count.notify_without_fence")) {
        M::thread_fence(std::memory_order_seq_cst);
      }
      if (waiters_.load(std::memory_order_relaxed) == 0) return false;
    }
    // release: a waiter that reads the new epoch also sees the work published before this notify.
    // The 32-bit epoch wraps after 2^32 notifies; a waiter would have to sleep through exactly that many
    // to miss one, which cannot happen between its prepare_wait() and its futex call in practice.
    epoch_.fetch_add(1, std::memory_order_release);
    return true;
  }

  alignas(64) typename M::template atomic<std::uint32_t> epoch_{0};
  typename M::template atomic<std::uint32_t> waiters_{0};
  const bool asymmetric_;  // see the constructor
};

using EventCount = BasicEventCount<>;

}  // namespace weft::engine
