// Chase–Lev work-stealing deque: one owner pushes and pops at the bottom, any number of thieves steal at the
// top. Memory orders follow Lê, Pop, Cohen, Zappa Nardelli, "Correct and Efficient Work-Stealing for Weak
// Memory Models" (PPoPP 2013), with three fixes found since: push reloads the array after growing (the paper
// does not; found by CDSChecker, OOPSLA 2013), indices are signed 64-bit (with unsigned ones a pop on an empty
// deque reads garbage), and slots are initialised atomics (a thief reads a slot before its CAS). When
// M::fences_invisible (TSan), the standalone fences are replaced by the equivalent ordered operations on the
// atomics themselves.
//
// Reclamation of arrays replaced by growth: a thief announces itself in `thieves_` before it loads the array
// pointer and withdraws after its last slot read. The owner frees retired arrays at its next push/pop that
// sees `thieves_ == 0`. Why that is safe is written at reclaim_if_quiescent(). Retired arrays are each half
// the size of their successor, so together they hold fewer slots than the current array: memory stays within
// twice the live array even if thieves never pause, and all of it is freed at the first quiescent moment.
//
// Batch steals (MaxBatch > 1): a thief may take up to MaxBatch of the oldest items with one CAS of top from t
// to t + k, reading their slots before it, so pop() may no longer take item b without a CAS merely because
// t < b: a batch CAS from t may still cover b. pop() takes b without a CAS only when b - t >= MaxBatch (no
// batch from t reaches b, and a thief that sees a later top also sees the lowered bottom: see pop()).
// Otherwise it claims everything left, [t, b], with one CAS of top to b + 1, keeps b and puts the others
// back at the bottom in their order, so the owner's order stays LIFO. With MaxBatch == 1 this is exactly the
// paper's algorithm (t < b, then the CAS for the last item). When the owner's last look at top (top_seen_, a
// lower bound) already shows fewer than MaxBatch items, pop() goes straight to that CAS without lowering bottom
// or fencing (claim_from): it takes its items as a thief would, and the fence was only needed for the CAS-free
// case. The scheduler batches only the outside threads' slots, whose owner pops only while it waits; a worker's
// deque keeps MaxBatch = 1 and its cheap pops.
//
// Planted bugs for the model test (tests/deque/deque_model.cpp) are the WEFT_PLANTED("deque.*") lines
// (scheduler/atomics/plant.hpp): constant false outside the Relacy model build, so production builds compile
// exactly the correct text.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <utility>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "scheduler/lockfree/deque_array.hpp"
#include "scheduler/lockfree/steal_result.hpp"

namespace weft::lockfree {

template <DequeItem T, atomics::MemoryModel M = atomics::StdMemoryModel, std::size_t MaxBatch = 1>
  requires(MaxBatch >= 1 && MaxBatch <= 64)
class ChaseLevDeque {
  using Array = DequeArray<T, M>;

 public:
  // An empty deque whose first array holds `initial_capacity` items, rounded up to a power of two; it grows
  // by doubling. Throws std::invalid_argument for 0 and std::length_error above Array::max_capacity.
  explicit ChaseLevDeque(std::size_t initial_capacity = 64)
      : top_(DequeIndex{0}),
        thieves_(std::uint32_t{0}),
        bottom_(DequeIndex{0}),
        array_(new Array(rounded(initial_capacity))) {}

  ChaseLevDeque(const ChaseLevDeque&) = delete;
  ChaseLevDeque& operator=(const ChaseLevDeque&) = delete;

  // Frees every array. Every steal() must have returned before (happens-before) destruction.
  ~ChaseLevDeque() {
    free_retired();
    delete array_.load(std::memory_order_relaxed);  // relaxed: no other thread is left (contract above)
  }

  // Owner only. Adds `item` at the bottom, doubling the array when full. Throws std::bad_alloc (or
  // std::length_error past Array::max_capacity) from growth, leaving the deque unchanged.
  void push(T item) {
    // The common case inline: nothing retired to free, and room by the owner's last look at top. The rest
    // (freeing retired arrays, a fresh look at top, growth) is out of line, so the spawn path that inlines
    // this stays small (fib pays this call on every spawn; docs/perf-log.md).
    const DequeIndex b = bottom_.load(std::memory_order_relaxed);  // relaxed: only the owner writes bottom_
    Array* a = array_.load(std::memory_order_relaxed);             // relaxed: only the owner writes array_
    if (retired_ != nullptr || b - top_seen_ >= a->capacity()) [[unlikely]] {
      push_slow(item);
      return;
    }
    a->store(b, item);
    publish_bottom(b + 1);
  }

 private:
  // push() when something is retired or the array looks full.
  [[gnu::noinline]] void push_slow(T item) {
    reclaim_if_quiescent();
    const DequeIndex b = bottom_.load(std::memory_order_relaxed);  // relaxed: only the owner writes bottom_
    Array* a = array_.load(std::memory_order_relaxed);             // relaxed: only the owner writes array_
    // The slot b overwrites is the one of index b - capacity. It is free to overwrite once top is past that
    // index, and top only grows, so a top seen earlier that is already past it still proves it: the thieves'
    // line (which every steal writes) is read only when the array looks full from the owner's last look.
    if (b - top_seen_ >= a->capacity()) {
      // acquire: a thief reads slot t and then CASes top past t (seq_cst, so release). Every write of top_
      // is such an RMW, so reading any later value synchronizes with that CAS: the thief's slot read happens
      // before our overwrite of the same slot one lap later, and it never returns an item pushed after the
      // one it won. The synchronization stays in effect for every later push that relies on top_seen_.
      top_seen_ = top_.load(std::memory_order_acquire);
      // Reload after growth (the paper kept writing into the old array; found by CDSChecker).
      if (b - top_seen_ >= a->capacity()) {
        if (WEFT_PLANTED("deque.no_reload")) {
          (void)grow(a, top_seen_, b);  // planted bug: writes into the retired array
        } else {
          a = grow(a, top_seen_, b);
        }
      }
    }
    a->store(b, item);
    publish_bottom(b + 1);
  }

 public:
  // Owner only. How many push() calls from now on certainly do not grow the array (so cannot throw): the
  // free slots counted from a fresh look at top. Costs one load of the thieves' line.
  [[nodiscard]] std::size_t room() noexcept {
    top_seen_ = top_.load(std::memory_order_acquire);  // acquire: as in push(), which relies on it later
    const DequeIndex used = bottom_.load(std::memory_order_relaxed) - top_seen_;  // relaxed: owner's own
    const DequeIndex capacity = array_.load(std::memory_order_relaxed)->capacity();
    return used >= capacity ? 0 : static_cast<std::size_t>(capacity - std::max<DequeIndex>(used, 0));
  }

  // Owner only (the paper's take). Removes and returns the most recently pushed item still present, or
  // nullopt when the deque is empty or a thief won the race for its last item.
  // Always inlined: called out of line, g++ 12 returns the optional through a byte store and a word load of the
  // same stack slot, a failed store-to-load forwarding on every recursive spawn (docs/perf-log.md).
  [[nodiscard, gnu::always_inline]] std::optional<T> pop() noexcept {
    reclaim_if_quiescent();
    const DequeIndex b = bottom_.load(std::memory_order_relaxed) - 1;  // relaxed: only the owner writes it
    Array* a = array_.load(std::memory_order_relaxed);                 // relaxed: only the owner writes it
    // Few items left by the owner's last look at top (a lower bound of top: the real count is no larger), so
    // the pop below would end in a CAS of top anyway: claim with that CAS alone, as a thief would, leaving
    // bottom where it is. No reservation of b, so no fence: the CAS on top is the only point of agreement
    // with the thieves, as for a steal. A submit + get from an outside thread pops its slot's only item.
    if (WEFT_PLANTED("deque.unsigned_index")) {
      // planted bug (see below): as unsigned, an empty deque's b - top wraps and never looks "few"
      if (static_cast<std::uint64_t>(b - top_seen_) < MaxBatch) return claim_from(top_seen_, b, a);
    } else if (b - top_seen_ < static_cast<DequeIndex>(MaxBatch)) {
      return claim_from(top_seen_, b, a);
    }
    DequeIndex t;
    // Reserve slot b by lowering bottom, then read top: the store-buffering (Dekker) pattern with steal(),
    // which reads top then bottom. Sequential consistency between the two sides guarantees that either we
    // see a thief's CAS of top past b, or that thief sees our lowered bottom and backs off: never both miss.
    if constexpr (M::fences_invisible) {
      // seq_cst RMW: takes part in the single order S with steal()'s seq_cst loads; being an RMW it also
      // continues push's release sequence, so a thief reading this value still synchronizes with pushes.
      bottom_.exchange(b, std::memory_order_seq_cst);
      if (WEFT_PLANTED("deque.no_take_fence")) {
        t = top_.load(std::memory_order_acquire);  // planted bug: escapes the order S
      } else {
        t = top_.load(std::memory_order_seq_cst);  // seq_cst: the reading half of the Dekker pattern
      }
    } else {
      bottom_.store(b, std::memory_order_relaxed);  // relaxed: ordered by the fence below
      if (!WEFT_PLANTED("deque.no_take_fence")) {
        M::thread_fence(std::memory_order_seq_cst);  // seq_cst fence: pairs with steal()'s fence (Dekker)
      }
      t = top_.load(std::memory_order_relaxed);  // relaxed: ordered by the fence above
    }
    // No thief takes b: one whose CAS from t succeeds takes at most [t, t + MaxBatch), which stops before b;
    // one that reads a top later than t read it after that top's CAS, which comes after our fence in S (we
    // read t after it), so its fence comes after ours too and it sees bottom <= b.
    if (WEFT_PLANTED("deque.batch_ignored")) {
      if (t < b) return a->load(b);  // planted bug: the single-steal test, which a batch from t overruns
    } else if (WEFT_PLANTED("deque.unsigned_index")) {
      // planted bug: positions compared as unsigned, where bottom - 1 on an empty deque wraps to "non-empty"
      if (static_cast<std::uint64_t>(b - t) >= MaxBatch) return a->load(b);
    } else if (b - t >= static_cast<DequeIndex>(MaxBatch)) {
      return a->load(b);
    }
    if (t > b) {
      // Empty. Undo the reservation. Relaxed: a thief that reads this value with a stale top fails its CAS,
      // because every top value below b + 1 has already been CASed away.
      bottom_.store(b + 1, std::memory_order_relaxed);
      return std::nullopt;
    }
    // t <= b < t + MaxBatch: a batch from t could cover b, so claim all of [t, b] with one CAS of top to
    // b + 1. seq_cst as the paper's last-item CAS, so the winner is agreed in S; a failure means thieves took
    // [t, t'), and we try again from the t' it returns (relaxed: the slots we then read are ours, written by
    // us). Lock-free: each failure is some thief's success.
    while (!top_.compare_exchange_weak(t, b + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) {
      if (t > b) {
        bottom_.store(b + 1, std::memory_order_relaxed);  // relaxed: as above
        return std::nullopt;
      }
    }
    // The CAS read the last thief's top, so it synchronizes with that thief (our acquire on its release):
    // a lower bound push() may use, as one it read itself.
    top_seen_ = b + 1;
    const T taken = a->load(b);
    if (t == b) {
      // The last item (always so when MaxBatch == 1): the deque is empty, top == bottom == b + 1.
      bottom_.store(b + 1, std::memory_order_relaxed);  // relaxed: nothing new to publish
      return taken;
    }
    put_back(a, t, b);
    return taken;
  }

  // Any thread. Takes the oldest item. StealStatus::empty when the deque looked empty; lost_race when
  // another thief or the owner took that item first (the deque may still hold items: retrying is sensible).
  [[nodiscard]] StealResult<T> steal() noexcept {
    T item{};
    return {steal_oldest(&item, 1).status, item};
  }

  // Any thread. Takes up to min(out.size(), MaxBatch) of the oldest items, but never more than half of those
  // present (rounded up), so that the owner and other thieves keep the rest. Writes them to `out`, oldest
  // first, and reports how many; the statuses mean what they mean for steal(). An empty `out` takes nothing
  // and reports empty.
  [[nodiscard]] BatchStealResult steal_batch(std::span<T> out) noexcept {
    if (out.empty()) return {StealStatus::empty, 0};
    return steal_oldest(out.data(), std::min(out.size(), MaxBatch));
  }

  // Any thread. Approximate number of items: exact when no one else is operating, otherwise some value the
  // deque held during the call or a value off by the operations in flight. For heuristics only (which
  // victim to pick, whether to wake a worker), never for correctness. Relaxed loads for that reason.
  [[nodiscard]] std::size_t size_hint() const noexcept {
    const DequeIndex b = bottom_.load(std::memory_order_relaxed);
    const DequeIndex t = top_.load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }

  // Any thread. Approximate, as size_hint(): a steal() after `false` may still find the deque empty.
  [[nodiscard]] bool empty() const noexcept { return size_hint() == 0; }

  // Owner only. Slots in the current array.
  [[nodiscard]] std::size_t capacity() const noexcept {
    return static_cast<std::size_t>(array_.load(std::memory_order_relaxed)->capacity());  // owner writes it
  }

  // Owner only (tests and diagnostics). Arrays replaced by growth and not yet freed, and their total slots;
  // the latter is always below capacity().
  [[nodiscard]] std::size_t retired_arrays() const noexcept { return retired_count_; }
  [[nodiscard]] std::size_t retired_slots() const noexcept { return retired_slots_; }

 private:
  // Owner only, pop()'s path when few items are left: claims all of [t, b] (t a top the owner read with
  // acquire, or an earlier one) with one CAS of top to b + 1, with bottom still at b + 1, and keeps item b.
  // The thieves' side is unchanged: every item leaves the deque through a CAS of top, so each is taken once.
  [[gnu::always_inline]] std::optional<T> claim_from(DequeIndex t, DequeIndex b, Array* a) noexcept {
    for (;;) {
      // Empty: top is past every item (a CAS from t == b + 1 would "succeed" and take a slot nobody filled).
      if (t > b && !WEFT_PLANTED("deque.claim_past_bottom")) return std::nullopt;
      // seq_cst, as the paper's last-item CAS: the winner of [t, b] is agreed in S with the thieves' CASes.
      // acquire on failure: the top read is then a lower bound push() may rely on (see push_slow), and the
      // next try starts from it.
      if (top_.compare_exchange_weak(t, b + 1, std::memory_order_seq_cst, std::memory_order_acquire)) break;
      top_seen_ = t;
    }
    top_seen_ = b + 1;  // the CAS read the last thief's top: a lower bound, as in pop()
    const T taken = a->load(b);
    if (t == b) return taken;  // the last item: top == bottom == b + 1, nothing to put back
    put_back(a, t, b);         // bottom was never lowered: it is b + 1 already
    return taken;
  }

  // Owner only, after a CAS of top to b + 1 claimed [t, b] and b was kept: puts [t, b) back, in order, at b + 1
  // onwards, and publishes them. Nobody else writes slots, and thieves that read the old ones fail their CAS
  // (top is b + 1 now), so reading them all first is enough even where the new positions share ring slots with
  // the old. Fewer than MaxBatch items, and they fitted before.
  void put_back(Array* a, DequeIndex t, DequeIndex b) noexcept {
    std::array<T, MaxBatch> back;
    const auto count = static_cast<std::size_t>(b - t);
    for (std::size_t i = 0; i < count; ++i) back[i] = a->load(t + static_cast<DequeIndex>(i));
    for (std::size_t i = 0; i < count; ++i) a->store(b + 1 + static_cast<DequeIndex>(i), back[i]);
    publish_bottom(b + 1 + static_cast<DequeIndex>(count));
  }

  // Takes up to `limit` (>= 1) of the oldest items into out[0..count).
  BatchStealResult steal_oldest(T* out, std::size_t limit) noexcept {
    DequeIndex t;
    DequeIndex b;
    if constexpr (M::fences_invisible) {
      t = top_.load(std::memory_order_seq_cst);     // seq_cst: the other side of pop()'s Dekker pattern
      b = bottom_.load(std::memory_order_seq_cst);  // seq_cst (so acquire): sees the slots pushed before b
    } else {
      // acquire (as in the paper): synchronizes with the CAS that advanced top to t, so our loads of
      // bottom_ and array_ below return values at least as new as those that made t - 1 valid to its thread.
      t = top_.load(std::memory_order_acquire);
      M::thread_fence(std::memory_order_seq_cst);   // seq_cst fence: pairs with pop()'s fence (Dekker)
      b = bottom_.load(std::memory_order_acquire);  // acquire: pairs with push's release fence: slots visible
    }
    if (t >= b) return {StealStatus::empty, 0};
    // Half of what is there, rounded up, and at most `limit` (which is at most MaxBatch: pop() relies on it).
    const auto count = static_cast<DequeIndex>(std::min<std::size_t>(limit, static_cast<std::size_t>((b - t + 1) / 2)));
    // Announce before loading the array pointer; seq_cst so that it is ordered in S against the owner's
    // seq_cst store of a grown array and its seq_cst check of thieves_ (see reclaim_if_quiescent()).
    thieves_.fetch_add(1, std::memory_order_seq_cst);
    // seq_cst (stronger than the paper's acquire): the second half of the announcement argument; acquire
    // is included, so the copied slots of a grown array are visible.
    const Array* a = array_.load(std::memory_order_seq_cst);
    for (DequeIndex i = 0; i < count; ++i) out[i] = a->load(t + i);
    // release: our slot reads happen before the owner's free once it reads the count this leaves.
    thieves_.fetch_sub(1, std::memory_order_release);
    // seq_cst as in the paper: the winner of positions [t, t + count) is agreed in S with pop()'s CAS.
    // Nothing is read on failure, hence relaxed.
    if (!top_.compare_exchange_strong(t, t + count, std::memory_order_seq_cst, std::memory_order_relaxed)) {
      return {StealStatus::lost_race, 0};
    }
    return {StealStatus::success, static_cast<std::size_t>(count)};
  }

  // Owner only: makes the slots written before it visible to thieves that read `bottom` (or a later value).
  void publish_bottom(DequeIndex bottom) noexcept {
    if (WEFT_PLANTED("deque.relaxed_publish")) {
      bottom_.store(bottom, std::memory_order_relaxed);  // planted bug: the slot writes are not published
      return;
    }
    if constexpr (M::fences_invisible) {
      // release: a thief that acquires this value sees the slot writes (and a growth's copy) before it.
      // pop()'s exchange is an RMW, so it continues this release sequence.
      bottom_.store(bottom, std::memory_order_release);
    } else {
      // release fence: orders the slot writes before this and every later store to bottom_, including
      // pop()'s relaxed ones, so a thief that acquires any of them sees the items.
      M::thread_fence(std::memory_order_release);
      bottom_.store(bottom, std::memory_order_relaxed);  // relaxed: published by the fence above
    }
  }

  static DequeIndex rounded(std::size_t requested) {
    if (requested == 0) throw std::invalid_argument("weft::lockfree::ChaseLevDeque: initial capacity must be >= 1");
    if (requested > static_cast<std::size_t>(Array::max_capacity)) {
      throw std::length_error("weft::lockfree::ChaseLevDeque: initial capacity above 2^40");
    }
    DequeIndex capacity = 1;
    while (static_cast<std::size_t>(capacity) < requested) capacity *= 2;
    return capacity;
  }

  // Owner only: doubles the array, publishes it and retires the old one. Returns the new array.
  Array* grow(Array* old, DequeIndex t, DequeIndex b) {
    Array* bigger = old->grown(t, b);
    // seq_cst (release would publish the copy): it must precede in S the owner's later seq_cst check of
    // thieves_, for the announcement argument in reclaim_if_quiescent().
    array_.store(bigger, std::memory_order_seq_cst);
    old->next_retired = retired_;
    retired_ = old;
    ++retired_count_;
    retired_slots_ += static_cast<std::size_t>(old->capacity());
    return bigger;
  }

  // Owner only, at the start of push/pop: frees the retired arrays if no thief is between its announcement
  // and its withdrawal. Safe because all counter operations except the release decrement are seq_cst, and
  // grow()'s store of array_ is seq_cst and sequenced before this load, so in the single order S:
  //  - a thief whose increment comes after this load in S loads array_ after that store: it reads the
  //    current array (or a later one), never one retired before this check;
  //  - a thief whose increment comes before this load in S is counted until its decrement; reading 0 means
  //    reading that decrement or a later RMW of its release sequence, so its slot read happens before the
  //    free (seq_cst includes acquire).
  // Cheap: the owner-private list is empty except after growth, and thieves_ shares top_'s cache line,
  // which push and pop read anyway.
  void reclaim_if_quiescent() noexcept {
    if (retired_ == nullptr) return;
    if (!WEFT_PLANTED("deque.early_free") && thieves_.load(std::memory_order_seq_cst) != 0) return;
    free_retired();
  }

  void free_retired() noexcept {
    while (retired_ != nullptr) delete std::exchange(retired_, retired_->next_retired);
    retired_count_ = 0;
    retired_slots_ = 0;
  }

  // Thieves' line: top and the announcement counter, both written by thieves' RMWs.
  alignas(atomics::kCacheLine) typename M::template atomic<DequeIndex> top_;
  typename M::template atomic<std::uint32_t> thieves_;
  // Owner's line: bottom and the array pointer (written only by the owner), then owner-private state.
  alignas(atomics::kCacheLine) typename M::template atomic<DequeIndex> bottom_;
  typename M::template atomic<Array*> array_;
  DequeIndex top_seen_{0};  // top_ as the owner's push last read it (acquire): a lower bound of top_
  Array* retired_ = nullptr;
  std::size_t retired_count_ = 0;
  std::size_t retired_slots_ = 0;
};

}  // namespace weft::lockfree
