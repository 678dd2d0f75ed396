// The execution slots of a multi-token node: at most `limit` executors run its tokens at once, and a token
// pushed into the inbox is never left there with no executor. Templated on the memory model so that the very
// same protocol is model-checked under Relacy (tests/limiter/limiter_model.cpp).
#pragma once

#include <atomic>

#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"

namespace weft::inbox {

template <class M = atomics::StdMemoryModel>
class BasicExecutionSlots {
 public:
  explicit BasicExecutionSlots(unsigned limit) noexcept : limit_(limit) {}

  // A producer pushed a token: true if it claimed a slot, and so must start an executor.
  [[nodiscard]] bool claim_after_push() noexcept {
    if (!WEFT_PLANTED("execution_slots.push_without_fence")) {
      // seq_cst fence: Dekker with release_or_continue(): either we see the leaving executor's slot released and
      // claim one, or that executor's re-check sees our token.
      M::thread_fence(std::memory_order_seq_cst);
    }
    return try_claim();
  }

  // An executor found the inbox empty: gives its slot back, then looks once more. True if it must go on
  // (a token arrived meanwhile and it got a slot back).
  template <class InboxEmpty>
  [[nodiscard]] bool release_or_continue(InboxEmpty inbox_empty) noexcept {
    // acq_rel: the release pairs with the next claimer's acquire.
    running_.fetch_sub(1, std::memory_order_acq_rel);
    if (!WEFT_PLANTED("execution_slots.leave_without_fence")) {
      // seq_cst fence: the other half of the Dekker in claim_after_push().
      M::thread_fence(std::memory_order_seq_cst);
    }
    return !inbox_empty() && try_claim();
  }

  // An executor that will never run (its task was dropped) gives its slot back.
  void release() noexcept { running_.fetch_sub(1, std::memory_order_acq_rel); }

  [[nodiscard]] unsigned running() const noexcept { return running_.load(std::memory_order_acquire); }
  [[nodiscard]] unsigned limit() const noexcept { return limit_; }

 private:
  [[nodiscard]] bool try_claim() noexcept {
    unsigned now = running_.load(std::memory_order_relaxed);
    while (now < limit_) {
      // acq_rel: a claim orders after the release of the slot it takes.
      if (running_.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
        return true;
    }
    return false;
  }

  typename M::template atomic<unsigned> running_{0};
  const unsigned limit_;
};

using ExecutionSlots = BasicExecutionSlots<>;

}  // namespace weft::inbox
