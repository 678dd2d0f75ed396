#include "scheduler/engine/slot_lease.hpp"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

namespace weft::engine::slot_lease {
namespace {

std::atomic<std::uint64_t> g_next_id{1};

struct Lease {
  std::uint64_t engine_id;
  std::shared_ptr<OutsideSlot> slot;
};

// Trivially destructible, so the fast path needs no thread-local guard: the last slot looked up.
thread_local std::uint64_t tls_last_id = 0;
thread_local OutsideSlot* tls_last_slot = nullptr;
thread_local bool tls_exited = false;

struct Leases {
  std::vector<Lease> held;
  ~Leases() {
    // The thread exits: nothing may find these slots through it any more, then each is given up. Tasks still in
    // a slot stay for workers to steal. release: the next owner's acquire (its adopting CAS) sees our deque
    // and counter writes.
    tls_exited = true;
    tls_last_id = 0;
    tls_last_slot = nullptr;
    for (auto& lease : held) lease.slot->owned.store(false, std::memory_order_release);
    held.clear();
  }
};
thread_local Leases tls_leases;

}  // namespace

std::uint64_t next_engine_id() noexcept {
  return g_next_id.fetch_add(1, std::memory_order_relaxed);  // relaxed: only uniqueness matters
}

OutsideSlot* find(std::uint64_t engine_id) noexcept {
  if (tls_last_id == engine_id) return tls_last_slot;
  if (tls_exited) return nullptr;
  for (const auto& lease : tls_leases.held) {
    if (lease.engine_id == engine_id) {
      tls_last_id = engine_id;
      tls_last_slot = lease.slot.get();
      return tls_last_slot;
    }
  }
  return nullptr;
}

bool remember(std::uint64_t engine_id, std::shared_ptr<OutsideSlot> slot) noexcept {
  OutsideSlot* raw = slot.get();
  if (!tls_exited) {
    auto& held = tls_leases.held;
    // relaxed: a dead engine's flag was set before that engine was destroyed; a stale read only delays pruning.
    std::erase_if(held, [](const Lease& lease) { return !lease.slot->engine_alive.load(std::memory_order_relaxed); });
    try {
      held.push_back({engine_id, std::move(slot)});
      tls_last_id = engine_id;
      tls_last_slot = raw;
      return true;
    } catch (...) {
      // Out of memory for the bookkeeping: give the slot back below.
    }
  }
  raw->owned.store(false, std::memory_order_release);  // release: as in ~Leases
  return false;
}

}  // namespace weft::engine::slot_lease
