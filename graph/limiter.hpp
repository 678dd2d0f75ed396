// A node's limits at run time: its inbox of tokens, its executions in flight, its tokens not yet finished.
// Used only for nodes that run more than one token per activation; a one-token node needs none of it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "graph/bounded_queue.hpp"
#include "graph/execution_slots.hpp"
#include "graph/producer_park.hpp"
#include "weft/node_options.hpp"

namespace weft::graph {

class Limiter {
 public:
  // The slots an unbounded inbox is given at most (64 KiB). Past that its producer parks, as under
  // Overflow::Block: an unbounded inbox never drops or fails a token, and allocating one slot per token would
  // let a node of a billion tokens take 16 GB when the graph is compiled.
  static constexpr std::size_t kUnboundedInboxSlots = 4096;

  // The inbox never needs more room than one activation's tokens.
  explicit Limiter(const NodeOptions& options)
      : inbox(std::min(options.capacity == kUnbounded ? kUnboundedInboxSlots : options.capacity, options.tokens)),
        slots(options.concurrency),
        tokens(options.tokens),
        overflow(options.capacity == kUnbounded ? Overflow::Block : options.overflow) {}

  BoundedQueue<std::uint64_t> inbox;  // token indices waiting to execute
  ExecutionSlots slots;               // executors in flight (each runs tokens one after another)
  std::atomic<std::uint64_t> remaining{0};  // tokens of this activation neither finished nor dropped
  std::atomic<std::uint64_t> dropped{0};    // tokens dropped this run (Overflow::Drop)
  ProducerPark park;                        // where a producer that found the inbox full (Block) stopped
  const std::size_t tokens;
  const Overflow overflow;  // Block for an unbounded inbox, whatever the options said: it never overflows
  // The producer may find the inbox full and park: then every pop looks for it (take_after_pop).
  const bool producer_may_park = overflow == Overflow::Block && inbox.capacity() < tokens;
};

}  // namespace weft::graph
