// Per-node options of a TaskGraph node or TaskScope job: limits, back-pressure, priority, affinity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "weft/pool_options.hpp"

namespace weft {

// What a node's bounded inbox does with a token that finds it full.
enum class Overflow : std::uint8_t {
  Block,  // the token waits for room: its producer parks, and the next execution to start goes on with it.
          // Nothing is lost, and no thread is held waiting
  Drop,   // the token is dropped and counted (RunStats::dropped, NodeRunStats::dropped)
  Fail,   // the run is cancelled; Run::wait() throws weft::inbox_full naming the node
};

// No limit on concurrent executions of a node.
inline constexpr unsigned kUnlimited = std::numeric_limits<unsigned>::max();
// No bound on a node's inbox.
inline constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

// Options of one node. Every member has a default, so designated initializers naming only some compile cleanly:
//   weft::NodeOptions{.concurrency = 2, .capacity = 64, .overflow = weft::Overflow::Block}
// Out-of-range values (concurrency 0, capacity 0, tokens 0, an inbox past 2^32 tokens, an affinity past the
// pool's workers) throw weft::invalid_option naming the node, the option and the value: when the node is added,
// or for affinity when the graph is run on a pool. The inbox is allocated when the graph is compiled, with
// min(capacity, tokens) slots of 16 bytes; an unbounded one (the default) with min(4096, tokens), its tokens
// waiting for room past that as under Block, so a node of a billion tokens takes 64 KiB, not 16 GB. An
// unbounded inbox never drops or fails a token, whatever `overflow` says.
//
// A node runs `tokens` times each time it is activated (once per run, when all its predecessors have finished).
// Its tokens pass through its inbox, a bounded queue of at most `capacity` tokens waiting to start, and at most
// `concurrency` of them execute at once. Its successors are activated when every token has finished (or been
// dropped). The body may take the token's index, 0 .. tokens-1, as a std::size_t argument.
struct NodeOptions {
  // Shown in errors, cycles and statistics; default "node <index>".
  std::string name{};
  // Run-time priority of the node's tasks (see weft::Priority).
  Priority priority = Priority::Normal;
  // Run on this worker of the pool when it can (see TaskOptions::affinity).
  std::optional<unsigned> affinity{};
  // At most this many executions of the node at once (>= 1).
  unsigned concurrency = kUnlimited;
  // At most this many tokens waiting in the node's inbox (>= 1).
  std::size_t capacity = kUnbounded;
  // What a token that finds the inbox full does.
  Overflow overflow = Overflow::Block;
  // Executions per activation (>= 1).
  std::size_t tokens = 1;
};

}  // namespace weft
