// The outside threads' slots of one engine (outside_slot.hpp): at most kMaxSlots, made on a thread's first
// submission and adopted by a later thread once their owner exited.
//
// Contract:
// - at(i) for i < count() is set and never changes: a slot is constructed and its pointer stored before the count
//   that covers it is published (a release store, read with acquire), so readers take no lock.
// - The count and the pointers are written only under the table's mutex (claim()); every slot made stays alive
//   (holders_) until the table and the thread that owns it have both let go: the table's destructor marks each
//   dead, and a thread that still holds a lease prunes it at its next look-up (slot_lease.hpp).
// - mine() is the calling thread's slot in this engine, if it has one; claim() adopts or makes one for it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "scheduler/engine/outside_slot.hpp"
#include "scheduler/engine/slot_lease.hpp"

namespace weft::engine {

class SlotTable {
 public:
  // At most this many outside threads at a time get a slot in one engine; more use the shared queues.
  static constexpr unsigned kMaxSlots = 64;

  SlotTable() noexcept : id_(slot_lease::next_engine_id()) {}
  ~SlotTable();
  SlotTable(const SlotTable&) = delete;
  SlotTable& operator=(const SlotTable&) = delete;

  // The slots published so far. acquire: pairs with the release store in claim(), so every at(i) below it is set.
  [[nodiscard]] unsigned count() const noexcept { return count_.load(std::memory_order_acquire); }
  // count() for the shutdown's scan of the `entering` flags (Engine::begin_shutdown, await_submitters). seq_cst:
  // a slot made after this load published its count (seq_cst, in claim()) after the gate closed in S, so its first
  // submitter, which raises its flag after that, sees the gate closed; acquire as count() otherwise.
  [[nodiscard]] unsigned count_seq_cst() const noexcept { return count_.load(std::memory_order_seq_cst); }
  // Slot i < count(). relaxed: set before the count that covers it was published (acquired there), never changed.
  [[nodiscard]] OutsideSlot& at(unsigned i) const noexcept { return *slots_[i].load(std::memory_order_relaxed); }

  // The calling thread's slot in this engine, or null if it has none.
  [[nodiscard]] OutsideSlot* mine() const noexcept { return slot_lease::find(id_); }
  // The calling thread's slot: its own, else one adopted from an owner that exited, else a new one; null if all
  // kMaxSlots are owned or no memory was left for a slot (the shared queues still work).
  [[nodiscard]] OutsideSlot* claim();

 private:
  // Engine-wide identity for the threads' leases (slot_lease.hpp): never reused, unlike an address.
  const std::uint64_t id_;
  std::array<std::atomic<OutsideSlot*>, kMaxSlots> slots_{};
  std::atomic<unsigned> count_{0};
  std::mutex mutex_;
  std::array<std::shared_ptr<OutsideSlot>, kMaxSlots> holders_{};  // under mutex_
};

}  // namespace weft::engine
