// Where the producer of a multi-token node's tokens stops when the inbox is full, and who goes on. The
// producer never waits for room: it parks its position here and returns, and the next executor that pops a
// token takes the producer's role over. Templated on the memory model so that the very same protocol is
// model-checked under Relacy (tests/limiter/producer_park_model.cpp).
//
// Why not wait: a producer waiting for room would hold whatever lies below it on its worker's stack (a join,
// a Future::get) until the node is nearly done, and a waiting thread nested too deep could stall the pool.
#pragma once

#include <atomic>
#include <cstdint>

#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"

namespace weft::inbox {

template <class M = atomics::StdMemoryModel>
class BasicProducerPark {
 public:
  // Before the node's activation, while no executor of it runs.
  void reset() noexcept { parked_.store(kNone, std::memory_order_relaxed); }

  // The producer found the inbox full at `token`. `has_room` looks at the inbox again: whether the slot the
  // push needs has been emptied. Returns true if the producer must go on from `token` itself (room came and no
  // executor took the role), false if it must leave: an executor that pops goes on.
  template <class HasRoom>
  [[nodiscard]] bool park(std::uint64_t token, HasRoom has_room) noexcept {
    // The word holds the position itself, not a flag: a popper may take this park over, park again at a later
    // position, and our compare-exchange below must then fail (with a flag it would take that newer park
    // back and produce from our stale position: a token twice, which the differential test caught).
    std::uint64_t parked = token + 1;
    // seq_cst store and fence: Dekker with take_after_pop(). Either our look below sees the pop that freed
    // room, or that popper's look sees the park.
    parked_.store(parked, std::memory_order_seq_cst);
    if (!WEFT_PLANTED("producer_park.park_without_fence")) {
      M::thread_fence(std::memory_order_seq_cst);
    }
    if (!has_room()) return false;
    // acq_rel: exactly one of us and the poppers that saw this park takes it back. The value may be an
    // identical park made again by a taker that pushed nothing: taking that one is the same.
    if (WEFT_PLANTED("producer_park.take_back_any")) {
      return parked_.exchange(kNone, std::memory_order_acq_rel) != kNone;  // planted bug: takes any park back
    }
    return parked_.compare_exchange_strong(parked, kNone, std::memory_order_acq_rel, std::memory_order_relaxed);
  }

  // An executor popped a token: true if it took over a parked producer's role, and must then produce from
  // `token`. Called after every pop of a node whose producer may park.
  [[nodiscard]] bool take_after_pop(std::uint64_t& token) noexcept {
    if (!WEFT_PLANTED("producer_park.pop_without_fence")) {
      // seq_cst fence: the other half of the Dekker in park(); orders our pop before the look at the park.
      M::thread_fence(std::memory_order_seq_cst);
    }
    // relaxed: a look; the exchange decides (acq_rel: orders the parker's pushes before ours).
    if (parked_.load(std::memory_order_relaxed) == kNone) return false;
    const std::uint64_t parked = parked_.exchange(kNone, std::memory_order_acq_rel);
    if (parked == kNone) return false;
    token = parked - 1;
    return true;
  }

  [[nodiscard]] bool parked() const noexcept { return parked_.load(std::memory_order_acquire) != kNone; }

 private:
  static constexpr std::uint64_t kNone = 0;  // else the parked position + 1
  typename M::template atomic<std::uint64_t> parked_{kNone};
};

using ProducerPark = BasicProducerPark<>;

}  // namespace weft::inbox
