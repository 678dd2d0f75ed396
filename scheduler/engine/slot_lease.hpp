// Which outside slots (scheduler/engine/outside_slot.hpp) the calling thread owns, one per engine, and giving them up
// when the thread exits. Engines are named by a process-unique id, never by address, so that a lease on a
// destroyed engine can never match a new engine allocated at the same address.
#pragma once

#include <cstdint>
#include <memory>

#include "scheduler/engine/outside_slot.hpp"

namespace weft::engine::slot_lease {

// A fresh engine id (never 0, never reused).
[[nodiscard]] std::uint64_t next_engine_id() noexcept;

// The slot the calling thread owns in engine `engine_id`, or null. A thread-local compare on the fast path.
[[nodiscard]] OutsideSlot* find(std::uint64_t engine_id) noexcept;

// Records that the calling thread now owns `slot` in engine `engine_id` (the caller has just set `owned`).
// Returns false, having given ownership back, if the thread is exiting (its leases are already gone) or the
// bookkeeping could not allocate; the caller then uses the shared queues. Prunes leases on dead engines.
[[nodiscard]] bool remember(std::uint64_t engine_id, std::shared_ptr<OutsideSlot> slot) noexcept;

}  // namespace weft::engine::slot_lease
