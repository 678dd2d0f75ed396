// The fiber lot: where suspended fibers wait, by the address of the 32-bit word they park on (a user-space futex
// for fibers; scheduler/engine/fiber_worker.hpp parks and resumes them through it). A template on the memory model so
// that tests/fiber/fiber_lot_model.cpp can check its protocol under Relacy.
//
// The protocol, with the words' own wakers (scheduler/engine/wait_word.hpp):
// - A waiter enters only if its word still holds the value it saw and its owner does not refuse it (a pool that
//   drops: take_owned may already have passed), both checked under its bucket's lock.
// - A waker changes the word first, then calls take(); the lock orders it against a waiter in the same bucket.
// - `parked` lets take() skip the buckets when nobody is parked (the common case). Its Dekker pairing: the waiter
//   raises it (seq_cst RMW) and fences before it reads the word; the waker changed the word before it fences and
//   reads it. Either the waker sees the count and looks in the bucket, or the waiter sees the changed word.
// - A waiter leaves the lot exactly once, taken out under its bucket's lock by whoever comes first: a wake-up on
//   its word, its owner's shutdown (take_owned), or its deadline (take_owned with a time).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "scheduler/atomics/spin_lock.hpp"

namespace weft::fiber {

template <atomics::MemoryModel M = atomics::StdMemoryModel>
class BasicFiberLot {
 public:
  using Clock = std::chrono::steady_clock;

  // A parked fiber's entry, on the fiber's own (suspended) stack: valid until whoever took it out hands its
  // payload on. The lot writes `next` only.
  struct Waiter {
    const void* word = nullptr;
    const void* owner = nullptr;                            // whose fiber it is (an engine): take_owned selects by it
    void* payload = nullptr;                                // what the taker resumes (a Resumable)
    Clock::time_point deadline = Clock::time_point::max();  // a timed wait's; max() for an untimed one
    Waiter* next = nullptr;
    [[nodiscard]] bool timed() const noexcept { return deadline != Clock::time_point::max(); }
  };

  BasicFiberLot() = default;
  BasicFiberLot(const BasicFiberLot&) = delete;
  BasicFiberLot& operator=(const BasicFiberLot&) = delete;

  // Parks `waiter` on `word` unless the word no longer holds `expected` or refused() holds; returns whether it
  // parked. Once it has, another thread may take it out at any time: the caller must not touch it any more.
  // refused(), read under the bucket's lock after the fence, is the owner's "stop parking" (its pool drops): as
  // for the word, whoever sets it before take_owned either finds the waiter or is seen by refused().
  template <class Word, class Refused = bool (*)() noexcept>
  bool enqueue_if(Word& word, std::uint32_t expected, Waiter& waiter, Refused refused = &never_refused) {
    // seq_cst RMW + fence: the waiter's half of the Dekker pairing (see the top of this file).
    parked_.fetch_add(1, std::memory_order_seq_cst);
    if (!WEFT_PLANTED("fiber_lot.park_without_fence")) {
      M::thread_fence(std::memory_order_seq_cst);
    }
    Bucket& bucket = bucket_of(&word);
    const std::lock_guard lock(bucket.lock);
    // acquire: the waker's change of the word, and what it published before, is visible to the resumed task.
    // (Planted bug fiber_lot.park_ignores_refusal: parks although refused.)
    const bool refuse = !WEFT_PLANTED("fiber_lot.park_ignores_refusal") && refused();
    if (word.load(std::memory_order_acquire) != expected || refuse) {
      parked_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    waiter.next = bucket.head.load();
    bucket.head.store(&waiter);
    return true;
  }

  // Takes out the waiters parked on `word` (all of them, or the first found), as a list linked by `next`.
  // The caller changed the word before.
  [[nodiscard]] Waiter* take(const void* word, bool all) {
    // seq_cst fence: the waker's half of the Dekker pairing.
    if (!WEFT_PLANTED("fiber_lot.wake_without_fence")) {
      M::thread_fence(std::memory_order_seq_cst);
    }
    if (parked_.load(std::memory_order_relaxed) == 0) return nullptr;
    Bucket& bucket = bucket_of(word);
    const std::lock_guard lock(bucket.lock);
    return unlink(
        bucket, [word](const Waiter& w) { return w.word == word; }, all);
  }

  // Takes out the waiters of `owner` whose deadline is not after `not_after` (Clock::time_point::max(): all of
  // them, timed or not), as a list linked by `next`.
  [[nodiscard]] Waiter* take_owned(const void* owner, Clock::time_point not_after = Clock::time_point::max()) {
    // seq_cst fence, as in take(): the caller changed what waiters test (the word's owner drops).
    if (!WEFT_PLANTED("fiber_lot.owned_without_fence")) {
      M::thread_fence(std::memory_order_seq_cst);
    }
    if (parked_.load(std::memory_order_relaxed) == 0) return nullptr;
    Waiter* taken = nullptr;
    for (Bucket& bucket : buckets_) {
      const std::lock_guard lock(bucket.lock);
      Waiter* const some = unlink(
          bucket, [&](const Waiter& w) { return w.owner == owner && w.deadline <= not_after; }, true);
      taken = append(some, taken);
    }
    return taken;
  }

  // Fibers parked now (a snapshot).
  [[nodiscard]] std::uint64_t parked() const noexcept { return parked_.load(std::memory_order_relaxed); }

 private:
  static bool never_refused() noexcept { return false; }

  // A bucket's lock is held for a few list operations only, never across a switch: a spin lock (a std::mutex cost
  // a ping-pong round more instructions: docs/perf-log.md; scheduler/atomics/spin_lock.hpp), with the model's mutex
  // under a model checker.
  using Lock = std::conditional_t<std::is_same_v<M, atomics::StdMemoryModel>, atomics::SpinLock, typename M::mutex>;

  struct alignas(atomics::kCacheLine) Bucket {
    Lock lock;
    typename M::template var<Waiter*> head{nullptr};
  };
  static constexpr std::size_t kBuckets = 64;

  [[nodiscard]] Bucket& bucket_of(const void* word) noexcept {
    const auto bits = reinterpret_cast<std::uintptr_t>(word) >> 2;
    return buckets_[(bits * 0x9E3779B97F4A7C15ULL) >> 58];  // the top 6 bits: 64 buckets
  }

  // Unlinks the bucket's waiters that `match` (all, or the first), under the bucket's lock; returns them.
  template <class Match>
  Waiter* unlink(Bucket& bucket, Match match, bool all) {
    Waiter* taken = nullptr;
    Waiter* head = bucket.head.load();
    for (Waiter** link = &head; *link != nullptr;) {
      Waiter* const waiter = *link;
      if (!match(*waiter)) {
        link = &waiter->next;
        continue;
      }
      *link = waiter->next;
      waiter->next = taken;
      taken = waiter;
      parked_.fetch_sub(1, std::memory_order_relaxed);
      if (!all) break;
    }
    bucket.head.store(head);
    return taken;
  }

  static Waiter* append(Waiter* list, Waiter* onto) noexcept {
    while (list != nullptr) {
      Waiter* const next = list->next;
      list->next = onto;
      onto = list;
      list = next;
    }
    return onto;
  }

  std::array<Bucket, kBuckets> buckets_{};
  alignas(atomics::kCacheLine) typename M::template atomic<std::uint64_t> parked_{0};
};

}  // namespace weft::fiber
