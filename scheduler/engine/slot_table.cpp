// SlotTable's slow paths: a thread's first slot, and the table going away (slot_table.hpp).
#include "scheduler/engine/slot_table.hpp"

#include <utility>

namespace weft::engine {

SlotTable::~SlotTable() {
  // Threads that still hold a lease on one of our slots prune it at their next look-up. relaxed: read only to
  // prune; the slot's memory stays valid through the shared_ptr either way.
  const unsigned slots = count();
  for (unsigned i = 0; i < slots; ++i) at(i).engine_alive.store(false, std::memory_order_relaxed);
}

OutsideSlot* SlotTable::claim() {
  if (OutsideSlot* slot = mine()) return slot;
  // First submission from this thread (or its slot was never granted): adopt a slot whose owner exited, else
  // make one.
  unsigned slots = count();
  for (unsigned i = 0; i < slots; ++i) {
    OutsideSlot* slot = &at(i);
    bool expected = false;
    // acquire: the previous owner's deque and counter writes (released when it exited) are visible to us.
    if (slot->owned.load(std::memory_order_relaxed) ||
        !slot->owned.compare_exchange_strong(expected, true, std::memory_order_acquire, std::memory_order_relaxed))
      continue;
    const std::lock_guard lock(mutex_);
    return slot_lease::remember(id_, holders_[i]) ? slot : nullptr;
  }
  const std::lock_guard lock(mutex_);
  slots = count_.load(std::memory_order_relaxed);  // relaxed: only written under this mutex
  if (slots >= kMaxSlots) return nullptr;
  std::shared_ptr<OutsideSlot> made;
  try {
    made = std::make_shared<OutsideSlot>();
  } catch (...) {
    return nullptr;  // no memory for a slot: the shared queues still work
  }
  OutsideSlot* slot = made.get();
  slot->index = slots;
  holders_[slots] = made;
  slots_[slots].store(slot, std::memory_order_relaxed);  // relaxed: published by the release store below
  // release: a reader that acquires the new count sees the slot constructed and its pointer stored. seq_cst
  // for the shutdown's scan of the `entering` flags (count_seq_cst).
  count_.store(slots + 1, std::memory_order_seq_cst);
  return slot_lease::remember(id_, std::move(made)) ? slot : nullptr;
}

}  // namespace weft::engine
