// The protocol of a weft wait primitive's word (weft::Event, WaitGroup, ConditionVariable; the bits are in
// weft/detail/primitive_word.hpp): the primitive's value and kWordWaiters in one 32-bit word, which waiters also
// park on.
//
// Invariants, and why:
// - A notifier touches the primitive in exactly one read-modify-write: the one that changes the value (and
//   clears kWordWaiters). Whatever follows uses the word's address only (a futex wake, the fiber lot's look-up),
//   never its memory. A waiter that sees the value it waits for may return at once, and its caller may destroy
//   the primitive (a WaitGroup on the stack of the thread that waits for it): the notifier may still be between
//   its RMW and its wake, but it no longer reads or writes the object. A wake that reaches an address reused
//   since is spurious, and every park tolerates spurious wake-ups.
// - No wake-up is lost. A waiter sets kWordWaiters with a CAS from a value it judged not ready, then parks only
//   while the word still holds that value with the bit set. The notifier's RMW is either after the CAS in the
//   word's modification order (it reads the bit and wakes) or before it (the CAS fails; the waiter looks again).
//   One word, one modification order: no fence is needed on either side.
// - Ordering: the RMW that makes the value ready is a release, and waiters read the value with acquire (in their
//   ready predicates), so what a notifier did before is visible after the wait. Earlier RMWs on the word belong
//   to the same release sequence (a WaitGroup's earlier done() calls).
//
// Templates on the word and on `Parking` (static park(word, expected, slice) and wake_all(word)), so that the
// Relacy models in tests/wait/primitive_word_model.cpp and (Event's Mode::Auto) tests/wait/event_auto_model.cpp
// check this text (planted bugs: the WEFT_PLANTED("word.*") lines, scheduler/atomics/plant.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "scheduler/atomics/plant.hpp"
#include "weft/detail/primitive_word.hpp"

namespace weft::sync::word {

using weft::detail::kEventMaxWaits;
using weft::detail::kEventReleases;
using weft::detail::kEventReleaseUnit;
using weft::detail::kEventWaits;
using weft::detail::kEventWaitUnit;
using weft::detail::kWordValue;
using weft::detail::kWordWaiters;

// An Event's set bit (Mode::Auto keeps counts above it).
inline constexpr std::uint32_t kEventSet = weft::detail::kEventSetBit;

// The order of the RMW that makes a waiter's value ready (see the file comment).
// (Planted bug word.relaxed_release: relaxed, the notifiers publish nothing.) A template on the word, so that the
// model's instantiation and the library's never share a symbol.
template <class Word>
[[nodiscard]] std::memory_order publish_order() noexcept {
  return WEFT_PLANTED("word.relaxed_release") ? std::memory_order_relaxed : std::memory_order_release;
}

// After the notifier's RMW, which read `before`: wakes the word's waiters if one had announced itself. Uses the
// word's address only.
template <class Parking, class Word>
void wake_if_announced(Word& word, std::uint32_t before) noexcept {
  if (WEFT_PLANTED("word.look_after_change")) {
    if (word.load(std::memory_order_relaxed) == kWordWaiters) return;
  }
  if ((before & kWordWaiters) != 0) Parking::wake_all(word);
}

// One sleep of a waiter that waits until `ready_at(value)` holds: returns at once if it holds for the word's
// value now; otherwise announces itself (kWordWaiters) and parks for at most `slice` while the word holds the
// value it announced on. May return early; the caller re-checks its condition.
template <class Parking, class Word, class ReadyAt>
void sleep(Word& word, ReadyAt ready_at, std::chrono::nanoseconds slice) noexcept {
  // relaxed, here and in the CAS: readiness is judged on this value only to decide whether to park; the caller's
  // own check after the return reads with acquire.
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  for (;;) {
    if (ready_at(seen & kWordValue)) return;
    if ((seen & kWordWaiters) != 0) break;
    if (WEFT_PLANTED("word.park_unannounced")) {
      break;
    }
    if (word.compare_exchange_weak(seen, seen | kWordWaiters, std::memory_order_relaxed, std::memory_order_relaxed)) {
      seen |= kWordWaiters;
      break;
    }
  }
  Parking::park(word, seen, slice);
}

// --- WaitGroup: the value is the outstanding count ----------------------------------------------------------

// Raises the count by `n`. False if that would pass kWordValue (nothing changes); `count` is the count seen.
template <class Word>
[[nodiscard]] bool group_add(Word& word, std::uint32_t n, std::uint32_t& count) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  do {
    count = seen & kWordValue;
    if (n > kWordValue - count) return false;
    // relaxed: add() publishes nothing; the waiters synchronise with done().
  } while (!word.compare_exchange_weak(seen, seen + n, std::memory_order_relaxed, std::memory_order_relaxed));
  return true;
}

// Lowers the count by one; false if it was zero (nothing changes). The step to zero clears kWordWaiters and
// wakes the waiters.
template <class Parking, class Word>
[[nodiscard]] bool group_done(Word& word) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    const std::uint32_t count = seen & kWordValue;
    if (count == 0) return false;
    next = count == 1 ? 0 : seen - 1;
    // release: what this caller did before done() is visible to a waiter that reads zero (acquire); the
    // earlier done() calls' RMWs are in the same release sequence.
  } while (!word.compare_exchange_weak(seen, next, publish_order<Word>(), std::memory_order_relaxed));
  if (next == 0) wake_if_announced<Parking>(word, seen);
  return true;
}

// --- Event, Mode::Manual (and the model's flag): the value is kEventSet or 0 ----------------------------------

// Sets the event, clearing kWordWaiters, and wakes the waiters.
template <class Parking, class Word>
void event_set(Word& word) noexcept {
  // release: what the signaller did before is visible to the wait that sees (or takes) the signal.
  const std::uint32_t before = word.exchange(kEventSet, publish_order<Word>());
  wake_if_announced<Parking>(word, before);
}

// Takes the signal of a flag event: true if it was set (it is clear now). (weft::Event's Mode::Auto counts its
// waits instead: see below.)
template <class Word>
[[nodiscard]] bool event_take(Word& word) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  do {
    if ((seen & kEventSet) == 0) return false;
    // acquire: pairs with event_set's release.
  } while (!word.compare_exchange_weak(seen, seen & ~kEventSet, std::memory_order_acquire, std::memory_order_relaxed));
  return true;
}

// Clears the event (either mode: an Auto event's releases due stay with their waits); announced waiters stay
// announced.
template <class Word>
void event_clear(Word& word) noexcept {
  word.fetch_and(~kEventSet, std::memory_order_relaxed);
}

// --- Event, Mode::Auto: kEventSet, the releases due (kEventReleases) and the unreleased waits (kEventWaits) -----
//
// A signal releases one wait in progress not released yet, if there is one: it moves one count from the unreleased
// waits to the releases due (the release goes to whichever counted wait takes it first; counts, not identities,
// are what the word keeps). Else it sets the event (kEventSet; again: no change). A wait starting takes kEventSet
// if it is set, else counts itself unreleased and takes a release later. So kEventSet is only ever set with no
// unreleased wait, and a signal is never lost while a wait in progress has not been released.

[[nodiscard]] constexpr std::uint32_t auto_releases(std::uint32_t value) noexcept {
  return (value & kEventReleases) / kEventReleaseUnit;
}
[[nodiscard]] constexpr std::uint32_t auto_unreleased(std::uint32_t value) noexcept {
  return (value & kEventWaits) / kEventWaitUnit;
}

// Releases one wait in progress (waking the waiters), or sets the event.
template <class Parking, class Word>
void auto_signal(Word& word) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    // With nobody to release, set (or leave set): still an RMW with release, in the word's release sequence, so
    // the wait that takes kEventSet sees what this signaller did before, as with a signal of its own.
    next = auto_unreleased(seen) != 0 ? (seen & ~kWordWaiters) - kEventWaitUnit + kEventReleaseUnit : seen | kEventSet;
    if (WEFT_PLANTED("word.signal_keeps_unreleased")) {
      if (auto_unreleased(seen) != 0) next += kEventWaitUnit;
    }
  } while (!word.compare_exchange_weak(seen, next, publish_order<Word>(), std::memory_order_relaxed));
  if (auto_unreleased(seen) != 0) wake_if_announced<Parking>(word, seen);
}

// What a wait found as it started: it took kEventSet, it counts as an unreleased wait now, or kEventMaxWaits
// waits are counted already (nothing changed).
enum class AutoJoin : std::uint8_t { taken, waiting, full };

template <class Word>
[[nodiscard]] AutoJoin auto_join(Word& word) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    if ((seen & kEventSet) != 0) {
      next = seen & ~kEventSet;
    } else if (auto_unreleased(seen) + auto_releases(seen) >= kEventMaxWaits) {
      return AutoJoin::full;
    } else {
      next = seen + kEventWaitUnit;
    }
    // acquire: pairs with auto_signal's release when it takes the signal.
  } while (!word.compare_exchange_weak(seen, next, std::memory_order_acquire, std::memory_order_relaxed));
  return (seen & kEventSet) != 0 ? AutoJoin::taken : AutoJoin::waiting;
}

// A counted wait takes a release due: true if there was one (the wait is uncounted then).
template <class Word>
[[nodiscard]] bool auto_take(Word& word) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  do {
    if (auto_releases(seen) == 0) return false;
    // acquire: pairs with auto_signal's release.
  } while (!word.compare_exchange_weak(seen, seen - kEventReleaseUnit, std::memory_order_acquire,
                                       std::memory_order_relaxed));
  return true;
}

// A counted wait leaves without having taken a release: as an unreleased one if any is counted (false returned).
// Else every wait counted has been released, this one too: on a time-out (`dropped` false) it takes its release
// (true: the wait consumed a signal); a dropped task's wait leaves it as the event's set state.
template <class Word>
[[nodiscard]] bool auto_leave(Word& word, bool dropped) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  std::uint32_t next = 0;
  do {
    if (auto_unreleased(seen) != 0) {
      next = seen - kEventWaitUnit;
    } else {
      next = seen - kEventReleaseUnit;
      if (!WEFT_PLANTED("word.drop_loses_release")) {
        if (dropped) next |= kEventSet;
      }
    }
    // acquire: pairs with auto_signal's release when it takes one.
  } while (!word.compare_exchange_weak(seen, next, std::memory_order_acquire, std::memory_order_relaxed));
  if (WEFT_PLANTED("word.timeout_loses_release")) return false;  // planted bug: drops the release due
  return auto_unreleased(seen) == 0 && !dropped;
}

// --- ConditionVariable: the value is a generation, counted modulo 2^31 --------------------------------------

// Moves the generation on, clearing kWordWaiters, and wakes the waiters.
template <class Parking, class Word>
void generation_bump(Word& word) noexcept {
  std::uint32_t seen = word.load(std::memory_order_relaxed);
  // release: a waiter that sees the new generation sees what the notifier did before (it re-locks anyway).
  while (!word.compare_exchange_weak(seen, (seen + 1) & kWordValue, publish_order<Word>(), std::memory_order_relaxed)) {
  }
  wake_if_announced<Parking>(word, seen);
}

}  // namespace weft::sync::word
