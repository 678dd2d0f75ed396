// What one run of a TaskScope pipeline keeps per stage and per segment, shared by graph/pipeline/pipeline_run.cpp
// (the carriers) and graph/pipeline/pipeline_layout.cpp (the layout, the slots).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "graph/pipeline/pipeline_run.hpp"

namespace weft::detail::pipeline {

struct alignas(atomics::kCacheLine) Run::StageState {
  // What carriers read of the stage on every item, set once before any runs.
  StageBody* body = nullptr;
  StageKind kind = StageKind::map;
  bool last = false;
  Priority priority = Priority::Normal;
  // The next Order::Input stage of the segment after this one (where a marker from here goes), or kNone.
  std::uint32_t next_ordered = kNone;

  SpinLock lock;
  unsigned running = 0;  // bodies running, or items that took a slot and are on their way to run
  unsigned concurrency = 1;
  std::size_t capacity = 1;
  Overflow overflow = Overflow::Block;
  bool ordered = false;
  SlotList inbox;   // Order::Any: items waiting for a slot, oldest first
  SlotList parked;  // Order::Any, Block: items that found the inbox full, holding their producer's slot
  // Order::Input: waiting items and markers, at their number modulo its size. A sequence or priority stage (never
  // Order::Input) keeps its waiting items here instead, as a heap (held()): one vector for both keeps this state,
  // one per stage of every run, within its cache lines.
  std::vector<Slot*> ring;
  std::uint64_t mask = 0;
  std::uint64_t next_seq = 0;  // Order::Input, or a sequence stage: the number (key) the stage takes next
  std::size_t waiting = 0;     // Order::Input: items (not markers) in the ring
  std::uint64_t dropped = 0;
  // A fan-out stage: the number of its next element, in its segment's order. relaxed: only the numbers' uniqueness
  // matters; a serial Order::Input fan-out stage hands them out in its input's order anyway.
  std::atomic<std::uint64_t> emitted{0};
  // A fork stage: per branch, the number of its next element in that branch's order (relaxed, as `emitted`).
  std::unique_ptr<std::atomic<std::uint64_t>[]> port_emitted;
  // A join stage: per input, the stage that numbered its items (and the branch, after a fork).
  std::vector<Origin> join_origins;

  // A sequence stage: the items waiting for their key's turn, a min-heap by Slot::seq; a priority stage: its
  // waiting items, a heap by the stage's order. Reserved for every item its segments can hold: pushing never
  // allocates.
  [[nodiscard]] std::vector<Slot*>& held() noexcept { return ring; }
  [[nodiscard]] const std::vector<Slot*>& held() const noexcept { return ring; }
};

inline Run::StageState& Run::state(std::uint32_t stage) const noexcept { return states_[stage]; }

struct Run::Segment {
  std::size_t budget = 0;
  std::size_t live = 0;         // slots of the segment taken
  SlotList waiters;             // fan states waiting for a slot of the segment
  bool source_waiting = false;  // the source is waiting for a slot (segment 0)
  std::uint32_t producer = 0;   // the source (0) or the fan-out stage whose elements the segment's items are
};

// Slots are allocated this many at a time.
inline constexpr std::size_t kChunkSlots = 32;

inline std::size_t round_up(std::size_t n, std::size_t align) { return (n + align - 1) / align * align; }

// An E whose message is the parts joined; out of memory building it, the bad_alloc instead (a run still fails).
template <class E, class... Parts>
std::exception_ptr error_of(const Parts&... parts) noexcept {
  try {
    std::string message;
    ((message += parts), ...);
    return std::make_exception_ptr(E(message));
  } catch (...) {
    return std::current_exception();
  }
}

// Inline: deliver() takes it for every item that reaches an Order::Any stage.
inline Run::Arrival Run::admit(Carrier& carrier, Slot* slot, std::uint32_t stage, std::uint32_t producer,
                               std::size_t waiting) noexcept {
  StageState& s = state(stage);
  if (s.running < s.concurrency) {  // nothing waits while a slot is free: it starts now
    ++s.running;
    s.lock.unlock();
    offer(carrier, Step{Step::Kind::stage, stage, slot, nullptr});
    return Arrival::started;
  }
  if (waiting < s.capacity) return Arrival::wait;
  if (s.overflow == Overflow::Block) {
    // An item whose producer holds no slot (a fan-out's element) queues beyond the capacity: the segment's budget
    // bounds those (a priority buffer's heap was reserved for all of them; an inbox is a list of the slots).
    if (producer == kNone) return Arrival::wait;
    slot->held = producer;
    s.parked.push(slot);
    s.lock.unlock();
    return Arrival::parked;
  }
  if (s.overflow == Overflow::Drop) ++s.dropped;
  s.lock.unlock();
  drop(carrier, slot, stage);
  return Arrival::dropped;
}

}  // namespace weft::detail::pipeline
