// The circular array behind ChaseLevDeque: a power-of-two ring of atomic slots indexed by the deque's
// ever-growing logical positions.
//
// Slots are atomics, and every slot is initialised: a thief reads slot `top` before its CAS on top decides
// whether the read counted, so it may read a slot the owner is overwriting one lap later, or (after a
// growth) a slot the copy did not fill. Either way its CAS fails and the value is discarded, but the read
// itself must be neither a data race nor a read of an uninitialised object.
#pragma once

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "scheduler/atomics/memory_model.hpp"

namespace weft::lockfree {

// What a deque slot can hold: a value that fits in one lock-free machine word and can be copied bit by bit
// (the scheduler stores task pointers or small ids, never closures: a wider value would tear or need a lock).
template <class T>
concept DequeItem = std::is_trivially_copyable_v<T> && std::default_initializable<T> && sizeof(T) <= sizeof(void*) &&
                    std::atomic<T>::is_always_lock_free;

// Logical positions of top and bottom. Signed on purpose: take() computes bottom - 1 on an empty deque, and
// with an unsigned type that wraps to a huge index that compares "non-empty" and hands out garbage (the model's
// planted bug deque.unsigned_index makes pop() compare as unsigned and must fail).
using DequeIndex = std::int64_t;

template <DequeItem T, atomics::MemoryModel M>
class DequeArray {
  using Slot = typename M::template atomic<T>;

 public:
  // The largest capacity the ring accepts: far beyond any real deque, small enough that the byte count and
  // doubling cannot overflow.
  static constexpr DequeIndex max_capacity = DequeIndex{1} << 40;

  // A ring of `capacity` slots, each holding T{}. `capacity` must be a power of two in [1, max_capacity];
  // anything else is a programming error in the deque and throws std::length_error. May throw bad_alloc.
  explicit DequeArray(DequeIndex capacity) : capacity_(checked(capacity)), mask_(capacity - 1) {
    slots_ = static_cast<Slot*>(::operator new(sizeof(Slot) * static_cast<std::size_t>(capacity_)));
    for (DequeIndex i = 0; i < capacity_; ++i) new (slots_ + i) Slot(T{});
  }

  DequeArray(const DequeArray&) = delete;
  DequeArray& operator=(const DequeArray&) = delete;

  ~DequeArray() {
    for (DequeIndex i = 0; i < capacity_; ++i) slots_[i].~Slot();
    ::operator delete(slots_);
  }

  // Number of slots; fixed for the array's lifetime.
  [[nodiscard]] DequeIndex capacity() const noexcept { return capacity_; }

  // Relaxed: the order between a slot access and the deque's state is carried by the deque's operations on
  // bottom, top and the array pointer (see chase_lev_deque.hpp); the slot is atomic only so that a thief's
  // discarded read of a slot being rewritten is not a data race.
  [[nodiscard]] T load(DequeIndex position) const noexcept {
    return slots_[position & mask_].load(std::memory_order_relaxed);
  }
  // Relaxed for the same reason: push publishes the slot with release on bottom.
  void store(DequeIndex position, T item) noexcept { slots_[position & mask_].store(item, std::memory_order_relaxed); }

  // A new array of twice the capacity holding this array's items at positions [top, bottom). Called by the
  // owner only; the copy is published to thieves by the deque's store of the array pointer. Relaxed slot
  // loads suffice: the owner wrote every slot in [top, bottom) itself. May throw bad_alloc / length_error,
  // leaving this array untouched.
  [[nodiscard]] DequeArray* grown(DequeIndex top, DequeIndex bottom) const {
    auto* bigger = new DequeArray(capacity_ * 2);
    for (DequeIndex i = top; i != bottom; ++i) bigger->store(i, load(i));
    return bigger;
  }

  // The owner's intrusive list of arrays replaced by growth and not yet freed. Owner-only: no thief reads it.
  DequeArray* next_retired = nullptr;

 private:
  static DequeIndex checked(DequeIndex capacity) {
    if (capacity < 1 || capacity > max_capacity || (capacity & (capacity - 1)) != 0) {
      throw std::length_error("weft::lockfree::DequeArray: capacity must be a power of two in [1, 2^40]");
    }
    return capacity;
  }

  DequeIndex capacity_;
  DequeIndex mask_;
  Slot* slots_ = nullptr;
};

}  // namespace weft::lockfree
