// A node's limits at run time: its inbox of tokens, its executions in flight, its tokens not yet finished.
// Used only for nodes that run more than one token per activation; a one-token node needs none of it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "graph/inbox/bounded_queue.hpp"
#include "graph/inbox/execution_slots.hpp"
#include "graph/inbox/producer_park.hpp"
#include "weft/node_options.hpp"

namespace weft::inbox {

class Limiter {
 public:
  // The slots an inbox that cannot overflow is given at most (64 KiB): an unbounded one, one under Block, or
  // one that holds a whole activation (capacity >= tokens). Past them its producer parks, which holds no thread
  // and changes nothing observable: under Block the capacity only bounds how many tokens wait, and the others
  // never drop or fail a token. Why not more:
  // - memory, allocated when the graph is compiled: min(capacity, tokens) slots took 64 GiB for a node of
  //   2^32 tokens and capacity 2^32, and 256 MiB at 2^24;
  // - queued tasks: with unlimited concurrency every push that finds a free execution slot posts an executor,
  //   so while the workers are busy the queued tasks grow with the tokens waiting: a node of 2^20 + 1000
  //   tokens took more memory and more time with 2^20 slots than with 4096 (docs/perf-log.md);
  // - speed otherwise: once the inbox is full, each pop takes the producer's role over for one push
  //   (token_flow.hpp), so a larger ring only lets the producer run further ahead. That take-over costs
  //   instructions on every token (docs/graph.md), which a node whose capacity and tokens both exceed 4096 now
  //   pays where it did not.
  static constexpr std::size_t kParkingInboxSlots = 4096;
  static_assert(kMaxInboxCapacity <= BoundedQueue<std::uint64_t>::max_capacity());

  // Whether Drop or Fail can ever act on the node's inbox: only if it holds fewer tokens than one activation
  // (an unbounded one, kUnbounded, never). Such an inbox gets exactly `capacity` slots, since when it is full
  // is observable; validation keeps that within kMaxInboxCapacity.
  [[nodiscard]] static bool may_overflow(const NodeOptions& options) noexcept {
    return options.overflow != Overflow::Block && options.capacity < options.tokens;
  }
  // The inbox's slots: exactly `capacity` if it may overflow, else at most kParkingInboxSlots (see above).
  [[nodiscard]] static std::size_t inbox_slots(const NodeOptions& options) noexcept {
    if (may_overflow(options)) return options.capacity;
    return std::min({options.capacity, options.tokens, kParkingInboxSlots});
  }

  explicit Limiter(const NodeOptions& options)
      : inbox(inbox_slots(options)),
        slots(options.concurrency),
        tokens(options.tokens),
        overflow(may_overflow(options) ? options.overflow : Overflow::Block) {}

  BoundedQueue<std::uint64_t> inbox;        // token indices waiting to execute
  ExecutionSlots slots;                     // executors in flight (each runs tokens one after another)
  std::atomic<std::uint64_t> remaining{0};  // tokens of this activation neither finished nor dropped
  std::atomic<std::uint64_t> dropped{0};    // tokens dropped this run (Overflow::Drop)
  ProducerPark park;                        // where a producer that found the inbox full (Block) stopped
  const std::size_t tokens;
  const Overflow overflow;  // Block for an inbox that cannot overflow (may_overflow), whatever the options said
  // The producer may find the inbox full and park: then every pop looks for it (take_after_pop).
  const bool producer_may_park = overflow == Overflow::Block && inbox.capacity() < tokens;
};

}  // namespace weft::inbox
