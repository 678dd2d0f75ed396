// A bounded multi-producer multi-consumer FIFO of exactly `capacity` items: the storage behind a TaskGraph
// node's inbox (tokens now, pipeline values later). No locks, no allocation after construction; try_push and
// try_pop never wait.
//
// Algorithm: a ring of slots, each with a turn counter (the scheme of Vyukov's bounded queue and of
// Rigtorp's MPMCQueue, written here from the idea). Positions 0, 1, 2, ... are claimed by CAS on `head_`
// (pushers) and `tail_` (poppers). Position p lives in slot p % capacity on lap p / capacity; the slot is
// writable for that lap when its turn is 2·lap and readable when it is 2·lap + 1. Unlike Vyukov's
// "sequence = position" encoding, two states per lap keep "empty for lap k + 1" and "full for lap k" apart even
// when capacity is 1, so any capacity >= 1 is exact.
//
// Progress: every call finishes in a bounded number of its own steps unless other calls keep winning its
// CAS (lock-free in that sense), but a thread stopped between its CAS and its turn store holds its slot: an
// unfinished push makes try_pop report empty for that position, an unfinished pop makes try_push report full
// for it. Hence the contracts below count an operation in flight as still occupying its slot, and the queue
// never holds more than capacity() items, even transiently. A consumer that parks on nullopt can therefore
// miss an item whose push is still in flight: the pusher must wake consumers after try_push returns (the
// EventCount protocol: publish, then notify), never rely on the consumer's re-check alone.
//
// Planted bugs for the model test (tests/bounded_queue/bounded_queue_model.cpp) are the
// WEFT_PLANTED("bounded_queue.*") lines (scheduler/atomics/plant.hpp): constant false outside that test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "weft/errors.hpp"

namespace weft::inbox {

template <class T, class M = weft::atomics::StdMemoryModel>
class BoundedQueue {
  static_assert(weft::atomics::MemoryModel<M>);
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>,
                "BoundedQueue<T>: T must be nothrow-move-constructible and nothrow-destructible (a claimed slot "
                "that is never filled or emptied would stall the ring)");

  using Turn = std::uint64_t;

  struct Slot {
    // Set by the constructor: a claimer reads it before any push or pop wrote it.
    typename M::template atomic<Turn> turn;
    alignas(T) std::byte storage[sizeof(T)];

    T* value() noexcept { return std::launder(reinterpret_cast<T*>(storage)); }
  };

 public:
  using value_type = T;

  // The largest capacity accepted. Far beyond any inbox; it keeps the slot array's size representable and
  // lap * 2 + 1 far from overflow (2^64 positions are never reached).
  static constexpr std::size_t max_capacity() noexcept {
    constexpr std::size_t by_memory = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) /
                                      sizeof(Slot);
    constexpr std::size_t by_design = std::size_t{1} << 32;
    return by_memory < by_design ? by_memory : by_design;
  }

  // An empty queue holding at most `capacity` items. Throws weft::invalid_option naming the value when
  // capacity is 0 or above max_capacity(), std::bad_alloc if the slots cannot be allocated.
  explicit BoundedQueue(std::size_t capacity)
      : slots_(new Slot[checked(capacity)]),
        capacity_(capacity),
        pow2_shift_(shift_if_power_of_two(capacity)),
        head_(Turn{0}),
        tail_(Turn{0}) {
    // relaxed: the queue is not shared until the constructor returns (publishing it is the caller's job).
    for (std::size_t i = 0; i < capacity_; ++i) slots_[i].turn.store(writable(i, 0), std::memory_order_relaxed);
  }

  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Destroys the items still queued. Every other call must have returned before (happens-before) this.
  ~BoundedQueue() {
    // relaxed: no concurrent user (contract above), so these are the final values.
    const Turn head = head_.load(std::memory_order_relaxed);
    for (Turn p = tail_.load(std::memory_order_relaxed); p != head; ++p) slots_[split(p).index].value()->~T();
    delete[] slots_;
  }

  // Appends v unless the queue holds capacity() items (an unfinished pop still counts its item); returns
  // whether it did. Never waits; v is left untouched on false.
  [[nodiscard]] bool try_push(T&& v) noexcept { return push_impl(std::move(v)); }

  // As above, by copy. The copy is made before a slot is claimed, so a throwing copy constructor leaves the
  // queue unchanged (it propagates) and a claimed slot is always filled.
  [[nodiscard]] bool try_push(const T& v) noexcept(std::is_nothrow_copy_constructible_v<T>) {
    if constexpr (std::is_nothrow_copy_constructible_v<T>) {
      return push_impl(v);
    } else {
      T copy(v);
      return push_impl(std::move(copy));
    }
  }

  // Removes and returns the oldest item, or nullopt if there is none that is fully pushed at the head of the
  // queue (an unfinished push of the oldest position makes the queue look empty until it completes).
  [[nodiscard]] std::optional<T> try_pop() noexcept {
    // relaxed: only a starting guess; the CAS below validates it and the slot's turn carries the data.
    Turn pos = tail_.load(std::memory_order_relaxed);
    for (;;) {
      const Where w = split(pos);
      Slot& slot = slots_[w.index];
      // acquire: pairs with the pusher's release store of 2·lap + 1, so its construction of the item is
      // visible to the move below. (Planted bug: relaxed, the value is not acquired.)
      const Turn turn = slot.turn.load(WEFT_PLANTED("bounded_queue.relaxed_claim_load") ? std::memory_order_relaxed
                                                                                        : std::memory_order_acquire);
      if (turn == readable(pos, w.lap)) {
        // relaxed: the CAS only decides which popper owns position pos (RMW atomicity is enough); the item's
        // visibility comes from the acquire above. On failure `pos` is refreshed and we retry.
        if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
          std::optional<T> out(std::move(*slot.value()));
          slot.value()->~T();
          // release: our move and destruction above happen before the next lap's pusher (which acquires this
          // value) constructs into the same storage. (Planted bug: relaxed, the move out is not ordered before
          // the next lap's construction.)
          slot.turn.store(writable(pos + capacity_, w.lap + 1), WEFT_PLANTED("bounded_queue.relaxed_release")
                                                                    ? std::memory_order_relaxed
                                                                    : std::memory_order_release);
          return out;
        }
      } else {
        // Not readable: either empty at pos, or pos was taken (our guess was stale). relaxed: as above;
        // if the acquire of turn saw a later lap's state, the popper that produced it claimed pos first, so
        // coherence makes this load return a newer tail and we retry.
        const Turn seen = std::exchange(pos, tail_.load(std::memory_order_relaxed));
        if (seen == pos) return std::nullopt;
      }
    }
  }

  // The exact capacity given at construction.
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

  // Approximately how many items are queued, in [0, capacity()]: exact when no call is in flight, otherwise
  // off by the calls in flight. For statistics and wake-up heuristics only, never for correctness (a caller
  // that needs "a push that returned before my fence is seen" must issue the fence itself).
  [[nodiscard]] std::size_t size_hint() const noexcept {
    // relaxed: a hint. Tail first: tail only grows and never passes head, so reading it first makes
    // head - tail >= 0 in the usual case; the clamps cover the reorderings relaxed loads allow.
    const Turn tail = tail_.load(std::memory_order_relaxed);
    const Turn head = head_.load(std::memory_order_relaxed);
    if (head <= tail) return 0;
    const Turn n = head - tail;
    return n >= capacity_ ? capacity_ : static_cast<std::size_t>(n);
  }

  // size_hint() == 0, with the same caveats.
  [[nodiscard]] bool empty_hint() const noexcept { return size_hint() == 0; }

  // True if the slot of the next push position has been emptied for it: a push now would succeed unless
  // another pusher takes that position first. Exact for a queue with one pusher at a time (a node's producer,
  // graph/inbox/producer_park.hpp), whose look after a seq_cst fence sees every pop whose own fence came earlier.
  [[nodiscard]] bool push_would_succeed_hint() const noexcept {
    // relaxed: a single pusher reads its own last head; the turn's acquire pairs with the popper's release.
    const Turn pos = head_.load(std::memory_order_relaxed);
    const Where w = split(pos);
    return slots_[w.index].turn.load(std::memory_order_acquire) == writable(pos, w.lap);
  }

 private:
  struct Where {
    std::size_t index;
    Turn lap;
  };

  static std::size_t checked(std::size_t capacity) {
    if (capacity == 0 || capacity > max_capacity()) {
      std::string message = "weft::inbox::BoundedQueue: capacity ";
      message += std::to_string(capacity);
      message += " is out of range (must be 1..";
      message += std::to_string(max_capacity());
      message += ")";
      throw weft::invalid_option(message);
    }
    return capacity;
  }

  // log2(capacity) for a power of two (the common inbox sizes), else 0xff: lets split() shift and mask
  // instead of dividing. Capacity 1 is 2^0.
  static unsigned char shift_if_power_of_two(std::size_t capacity) noexcept {
    if ((capacity & (capacity - 1)) != 0) return 0xff;
    unsigned char shift = 0;
    while ((std::size_t{1} << shift) < capacity) ++shift;
    return shift;
  }

  Where split(Turn pos) const noexcept {
    if (pow2_shift_ != 0xff) return {static_cast<std::size_t>(pos & (capacity_ - 1)), pos >> pow2_shift_};
    return {static_cast<std::size_t>(pos % capacity_), pos / capacity_};
  }

  // The turn values of position pos (on lap `lap`): writable before its push, readable after it.
  static constexpr Turn writable(Turn pos, Turn lap) noexcept {
    // planted bug: Vyukov's sequence = position; at capacity 1 "full at p" = "empty at p + 1"
    if (WEFT_PLANTED("bounded_queue.vyukov_turn")) return pos;
    (void)pos;
    return 2 * lap;
  }
  static constexpr Turn readable(Turn pos, Turn lap) noexcept { return writable(pos, lap) + 1; }

  // Requires that constructing T from U cannot throw (the callers arrange it): a slot, once claimed, must be
  // filled, or every later lap would wait on it forever.
  template <class U>
  bool push_impl(U&& v) noexcept {
    // relaxed: only a starting guess, validated by the CAS.
    Turn pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      const Where w = split(pos);
      Slot& slot = slots_[w.index];
      // acquire: pairs with the previous lap's popper's release store, so its move out of and destruction of
      // the old item happen before our construction below.
      const Turn turn = slot.turn.load(std::memory_order_acquire);
      if (turn == writable(pos, w.lap)) {
        // relaxed: the CAS only decides which pusher owns position pos (RMW atomicity); the slot's turn
        // carries every ordering on the data. Only the owner of pos changes this slot's turn next, so the
        // value read above is still current once we win.
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
          ::new (static_cast<void*>(slot.storage)) T(std::forward<U>(v));
          // release: the construction above happens before the popper's acquire of this value reads it.
          // (Planted bug: relaxed, not published.)
          slot.turn.store(readable(pos, w.lap), WEFT_PLANTED("bounded_queue.relaxed_publish")
                                                    ? std::memory_order_relaxed
                                                    : std::memory_order_release);
          return true;
        }
      } else {
        // Not writable: full at pos (its previous item not yet popped, or its pop unfinished), or pos was
        // already taken. relaxed: if the acquire above saw pos's own pusher's store, that pusher's CAS
        // happens before this load, which therefore returns a newer head and we retry.
        const Turn seen = std::exchange(pos, head_.load(std::memory_order_relaxed));
        if (seen == pos) return false;
      }
    }
  }

  // Read-only after construction; on their own line so that head/tail traffic does not evict them.
  Slot* slots_;
  std::size_t capacity_;
  unsigned char pow2_shift_;
  // Pushers' line.
  alignas(weft::atomics::kCacheLine) typename M::template atomic<Turn> head_;
  // Poppers' line. alignas also rounds the queue's size up, so whatever follows stays off this line.
  alignas(weft::atomics::kCacheLine) typename M::template atomic<Turn> tail_;
};

}  // namespace weft::inbox
