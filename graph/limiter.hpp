// A node's limits at run time: its inbox of tokens, its executions in flight, its tokens not yet finished.
// Used only for nodes that run more than one token per activation; a one-token node needs none of it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "graph/bounded_queue.hpp"
#include "graph/wait.hpp"
#include "weft/node_options.hpp"

namespace weft::graph {

class Limiter {
 public:
  // The inbox never needs more room than one activation's tokens.
  Limiter(const NodeOptions& options)
      : inbox(std::min(options.capacity, options.tokens)),
        concurrency(options.concurrency),
        tokens(options.tokens),
        overflow(options.overflow) {}

  // Claims an execution slot if fewer than `concurrency` executions run: then the caller starts an executor.
  [[nodiscard]] bool try_claim() noexcept {
    unsigned now = running.load(std::memory_order_relaxed);
    while (now < concurrency) {
      // acq_rel: the claim orders against an executor's release of its slot (see RunState::run_executor).
      if (running.compare_exchange_weak(now, now + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
        return true;
    }
    return false;
  }

  BoundedQueue<std::uint64_t> inbox;  // token indices waiting to execute
  std::atomic<unsigned> running{0};   // executors in flight (each runs tokens one after another)
  std::atomic<std::uint64_t> remaining{0};  // tokens of this activation neither finished nor dropped
  std::atomic<std::uint64_t> dropped{0};    // tokens dropped this run (Overflow::Drop)
  Signal room;                              // producers blocked on a full inbox sleep here
  const unsigned concurrency;
  const std::size_t tokens;
  const Overflow overflow;
};

}  // namespace weft::graph
