// Per-node options of a TaskGraph node or TaskScope job (limits, back-pressure, priority, affinity), and the
// options of a TaskScope loop job (weft::LoopOptions: the same, plus the loop's grain).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "weft/pool_options.hpp"

namespace weft {

class Semaphore;  // weft/semaphore.hpp

// What a node's bounded inbox does with a token that finds it full. Only an inbox smaller than one activation's
// tokens (capacity < tokens) can ever be full: any other never drops or fails a token, whatever this says.
enum class Overflow : std::uint8_t {
  Block,  // the token waits for room: its producer parks, and the next execution to start goes on with it.
          // Nothing is lost, and no thread is held waiting
  Drop,   // the token is dropped and counted (RunStats::dropped, and per node RunStats::dropped_by_node)
  Fail,   // the node fails: the run is cancelled (ErrorPolicy::KeepGoing: only its descendants are skipped);
          // Run::wait() throws weft::inbox_full naming the node
};

// No limit on concurrent executions of a node.
inline constexpr unsigned kUnlimited = std::numeric_limits<unsigned>::max();
// No bound on a node's inbox.
inline constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();
// The largest capacity of an inbox that can overflow (Overflow::Drop or Fail with capacity < tokens): such an
// inbox really holds `capacity` tokens, 16 bytes each, allocated when the graph is compiled (16 MiB at this
// limit), since when it is full is what Drop and Fail act on. Any other inbox holds at most 4096 (see below),
// so its capacity may be anything.
inline constexpr std::size_t kMaxInboxCapacity = std::size_t{1} << 20;

// Options of one node. Every member has a default, so designated initializers naming only some compile cleanly:
//   weft::NodeOptions{.concurrency = 2, .capacity = 64, .overflow = weft::Overflow::Block}
// Out-of-range values (concurrency 0, capacity 0, tokens 0, an inbox that can overflow with a capacity above
// kMaxInboxCapacity, an affinity past the pool's workers, a bad semaphores list) throw weft::invalid_option
// naming the call, the node, the option, the value and the limit: when the node is added, or for affinity when
// the graph is run on a pool.
//
// Memory: a node with tokens > 1 gets its inbox when the graph is compiled, 16 bytes per slot:
// - an inbox that can overflow (Drop or Fail, capacity < tokens): exactly `capacity` slots;
// - any other (Block, unbounded, or capacity >= tokens, which never overflows): min(capacity, tokens, 4096)
//   slots. Past them the producer parks, which holds no thread and changes nothing observable: under Block the
//   capacity only bounds how many tokens wait. It costs a little time per token once the inbox is full.
// So a node of 2^32 tokens and capacity 2^32 takes 64 KiB, not 64 GiB, and a node of few tokens takes little
// whatever its capacity. If the allocation fails anyway, compile() (or the run() that compiles) throws
// weft::out_of_memory naming the call and the node.
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
  // Units the node takes before its body starts and gives back when its execution ends (after its subflow
  // joined, before its successors start; also if it throws or the run is cancelled): one unit of each entry,
  // so a semaphore listed twice gives two. All or none are taken; a node that cannot take them waits without
  // holding a worker (see weft::Semaphore). Every semaphore must outlive the runs. Refused with
  // weft::invalid_option: a null entry, more units of one semaphore than its count (the node could never
  // start), and semaphores on a node with tokens > 1 (docs/graph.md, "Semaphores"). A node with semaphores is
  // always posted to the pool, never run in place by the thread that made it ready.
  std::vector<Semaphore*> semaphores{};
};

// Options of a TaskScope loop job (parallel_for, parallel_reduce, parallel_transform_reduce and the scans): the
// NodeOptions a job can use, and the loop's tuning. Every member has a default, so designated initializers
// naming only some compile cleanly: scope.parallel_for(0, n, f, {.name = "scale", .grain = 1024}). The node
// members mean what NodeOptions' do and are checked the same way (weft::invalid_option naming the call, the
// job and the NodeOptions member); tokens, capacity and overflow are not here, since a job runs exactly once.
struct LoopOptions {
  // Shown in errors, dumps and statistics; default "job <index>".
  std::string name{};
  // Run-time priority of the job's tasks (see weft::Priority).
  Priority priority = Priority::Normal;
  // Run on this worker of the pool when it can (see TaskOptions::affinity).
  std::optional<unsigned> affinity{};
  // At most this many chunks (parallel_for) or blocks (reduce, scan) executing at once (>= 1).
  unsigned concurrency = kUnlimited;
  // As NodeOptions::semaphores: taken once for the whole loop, held while all its chunks run.
  std::vector<Semaphore*> semaphores{};
  // 0: automatic partitioning (see weft::parallel_for); g > 0: chunks (or reduce and scan blocks) of at most g
  // elements.
  std::size_t grain = 0;
};

}  // namespace weft
