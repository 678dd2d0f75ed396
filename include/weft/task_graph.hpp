// weft::TaskGraph: a graph of nodes and edges, compiled once and run many times on a weft::Pool.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/deadline.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/node_options.hpp"
#include "weft/small_function.hpp"
#include "weft/subflow.hpp"

namespace weft {

class Pool;
class TaskGraph;

namespace detail {
class GraphImpl;  // graph/graph_impl.hpp: nodes, edges, the compiled layout
struct GraphAccess;

// Whose call a graph operation serves, so that its errors name the public call the user made and what that
// call's nodes are: TaskGraph's own ("weft::TaskGraph::add_node", "node"), or a layer built on TaskGraph
// ("weft::TaskScope::then", "job"; "weft::parallel_for").
struct Caller {
  const char* call;
  const char* noun = "node";
};

// What a node body is called with: the execution's Subflow and the token index.
struct NodeCall {
  Subflow& subflow;
  std::size_t token;
};
// 56 bytes inline (64 in all): a graph of a million nodes is walked once per run, so a node's closure is kept to
// one cache line; a callable that captures more is stored on the heap, once, when the node is added.
inline constexpr std::size_t kNodeBodyCapacity = 56;
using NodeBody = small_function<void(NodeCall&), kNodeBodyCapacity>;

// The node body adapter: f may take (Subflow&, std::size_t), (Subflow&), (std::size_t) or nothing.
template <class F>
class NodeBodyAdapter {
 public:
  template <class G>
  explicit NodeBodyAdapter(G&& f) : f_(std::forward<G>(f)) {}
  void operator()(NodeCall& call) {
    if constexpr (std::is_invocable_v<F&, Subflow&, std::size_t>) {
      f_(call.subflow, call.token);
    } else if constexpr (std::is_invocable_v<F&, Subflow&>) {
      f_(call.subflow);
    } else if constexpr (std::is_invocable_v<F&, std::size_t>) {
      f_(call.token);
    } else {
      f_();
    }
  }

 private:
  F f_;
};
}  // namespace detail

// A callable a node can run: it takes nothing, the token index (std::size_t), the execution's Subflow&, or both
// (Subflow&, std::size_t). Its result, if any, is discarded (TaskScope keeps results).
template <class F>
concept NodeCallable =
    std::invocable<std::decay_t<F>&> || std::invocable<std::decay_t<F>&, std::size_t> ||
    std::invocable<std::decay_t<F>&, Subflow&> || std::invocable<std::decay_t<F>&, Subflow&, std::size_t>;

// A node of one TaskGraph: a small copyable handle (index plus the graph's identity).
class Node {
 public:
  Node() noexcept = default;
  [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
  [[nodiscard]] bool valid() const noexcept { return graph_ != 0; }
  friend bool operator==(const Node&, const Node&) noexcept = default;

 private:
  friend class detail::GraphImpl;
  Node(std::uint32_t index, std::uint64_t graph) noexcept : index_(index), graph_(graph) {}
  std::uint32_t index_ = 0;
  std::uint64_t graph_ = 0;  // a process-unique id of the owning graph; 0: no graph
};

// How a run ended, when it did not throw.
enum class RunStatus : std::uint8_t {
  completed,  // every node ran all its tokens (less those its Overflow::Drop inbox dropped)
  cancelled,  // Run::cancel() stopped it: nodes not started were skipped
};

// What happened in one run. Exact once the run is done; before that the counts are a snapshot and
// dropped_by_node is empty.
struct RunStats {
  std::uint64_t dropped = 0;     // tokens dropped by Overflow::Drop inboxes, all nodes
  // Executions (tokens, subflow children) not started because the run was cancelled; under
  // ErrorPolicy::KeepGoing also those of nodes descending from a failed node, and the tokens an Overflow::Fail
  // node had left when its inbox was full.
  std::uint64_t skipped = 0;
  std::uint64_t exceptions = 0;  // exceptions thrown by bodies and children; the first is rethrown by wait()
  std::vector<std::uint64_t> dropped_by_node;  // indexed by Node::index()
  // Items dropped by the Overflow::Drop stages of a TaskScope's pipelines, as {"pipeline/stage", count}, for
  // each stage that dropped any (also counted in `dropped`).
  std::vector<std::pair<std::string, std::uint64_t>> dropped_by_stage;
};

// What a run does when a node fails: its body or one of its subflow children throws, or its Overflow::Fail inbox
// is full. Failures of the run itself (the pool refused or dropped one of its tasks) cancel it under either.
enum class ErrorPolicy : std::uint8_t {
  CancelRun,  // the first failure cancels the run: no node or token starts after it (the default)
  KeepGoing,  // a failed node's descendants (through every path) are skipped; every other node runs
};

// How TaskGraph::run(pool, options) runs. The defaults are what TaskGraph::run(pool) does.
//
// Contract:
// - on_error: see ErrorPolicy. Under KeepGoing, Run::wait() still rethrows the run's first exception, once the
//   whole run is over, and RunStats::exceptions counts them all; Run::cancel() still cancels.
// - record_outcomes: keep each node's NodeOutcome, for Run::outcome() after the run. Implied by KeepGoing and by
//   record_times.
// - record_times: also keep each node's start and end times (NodeOutcome::start, end).
// Recording costs one array of per-node records (sized when the run starts; nothing is allocated per node) and a
// few atomic operations per execution; a default run pays one predictable test per node execution.
//
// Example:
//   weft::Run run = graph.run(pool, weft::RunOptions{.on_error = weft::ErrorPolicy::KeepGoing});
//   try { run.wait(); } catch (const std::exception&) { /* the first failure, after the whole run */ }
//   if (run.outcome(link).state == weft::NodeState::Skipped) { /* link descends from a failed node */ }
struct RunOptions {
  ErrorPolicy on_error = ErrorPolicy::CancelRun;
  bool record_outcomes = false;
  bool record_times = false;
};

// What became of one node in a run (NodeOutcome::state). A node with several tokens, or with subflow children,
// has one state for all its executions, the first that applies in this order:
enum class NodeState : std::uint8_t {
  // Nothing of it started and nothing skipped or cancelled it: the run ended without reaching it, which happens
  // only when the pool refused or dropped a task of the run (wait() throws pool_closed or task_dropped).
  NotRun,
  // Every execution ran its body to the end without an exception (children included), none was dropped.
  Ran,
  // An execution's body or subflow child threw, or its Overflow::Fail inbox was full (NodeOutcome::error holds
  // the node's first such exception). Its other tokens still run unless the run is cancelled.
  Failed,
  // ErrorPolicy::KeepGoing only: it descends from a failed node (NodeOutcome::failed_ancestor) and none of its
  // executions started.
  Skipped,
  // The run was cancelled (Run::cancel(), a failure under CancelRun, a DropPending shutdown) before it, some of
  // its tokens, or some of its subflow children started; and none failed.
  Cancelled,
  // Some of its tokens were dropped by its Overflow::Drop inbox; none failed and none was cancelled.
  Dropped,
};

// One node's outcome in a run (Run::outcome).
struct NodeOutcome {
  NodeState state = NodeState::NotRun;
  // Failed: the first exception of this node (a body's or a child's, or weft::inbox_full). Else empty.
  std::exception_ptr error;
  // Skipped: the failed node it descends from; of several, the one with the lowest index (so the same in every
  // run of the same failures). Else empty.
  std::optional<Node> failed_ancestor;
  // With RunOptions::record_times, for a node that started a body: the steady_clock time its first execution
  // started and its last one ended (subflow children joined). Else empty.
  std::optional<std::chrono::steady_clock::time_point> start;
  std::optional<std::chrono::steady_clock::time_point> end;
};

// One run of a TaskGraph. Move-only.
//
// Contract:
// - wait() blocks until the run is over (on a worker of a weft pool it runs other tasks meanwhile), then
//   rethrows the first exception of the run, if any (a body's, weft::inbox_full from an Overflow::Fail node,
//   weft::pool_closed / task_dropped if the pool refused or dropped its tasks); else returns how it ended.
//   It may be called more than once; each call rethrows the same exception. Called from inside the run (one of
//   its nodes, or a subflow child of one), where it could never return, it throws weft::would_deadlock.
// - cancel(): no node or token starts after it; running ones finish; wait() returns RunStatus::cancelled.
// - The destructor waits for the run (never throws: an exception nobody waited for is only counted).
// - outcome(node), outcomes(): what became of each node (NodeOutcome), once the run is over (done()), if the
//   run recorded outcomes (RunOptions). Before the end, or if the run did not record them, they throw
//   std::logic_error saying so; a node of another graph throws weft::invalid_graph. They stay valid after the
//   graph is changed, run again or destroyed.
//
// Example:
//   weft::Run run = graph.run(pool);
//   if (run.wait() == weft::RunStatus::cancelled) { /* ... */ }
class [[nodiscard]] Run {
 public:
  Run() noexcept = default;
  Run(Run&&) noexcept = default;
  Run& operator=(Run&& other) noexcept;
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run();

  RunStatus wait();
  // Waits at most `timeout`; true if the run is over (then wait() returns at once).
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    return wait_for_ns(detail::clamp_to_nanoseconds(timeout));
  }
  void cancel() noexcept;
  [[nodiscard]] bool done() const noexcept;
  [[nodiscard]] RunStats stats() const;
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // The outcome of `node` in this run (see the contract above).
  // Example: if (run.outcome(n).state == weft::NodeState::Failed) std::rethrow_exception(run.outcome(n).error);
  [[nodiscard]] NodeOutcome outcome(Node node) const;
  // Every node's outcome, indexed by Node::index().
  // Example: for (const weft::NodeOutcome& o : run.outcomes()) failed += o.state == weft::NodeState::Failed;
  [[nodiscard]] std::vector<NodeOutcome> outcomes() const;

 private:
  friend class detail::GraphImpl;
  friend struct detail::GraphAccess;
  explicit Run(std::shared_ptr<detail::RunState> state) noexcept : state_(std::move(state)) {}
  bool wait_for_ns(std::chrono::nanoseconds timeout);
  void require_valid(const char* what) const;

  std::shared_ptr<detail::RunState> state_;
};

// A graph of work, built once and run many times.
//
// Contract:
// - add_node/add_edge build it; compile() checks it (a cycle throws weft::cycle_error naming its nodes) and
//   lays it out for speed; the first run compiles it if needed, and changes after a compile recompile lazily.
// - A node runs after all its predecessors finished (their tokens and subflows), `tokens` times per run, with
//   the limits of its NodeOptions. Nodes without predecessors start when the run starts.
// - One run at a time: run() while a run is in flight, or add_node/add_edge/compile then, throw weft::graph_busy.
//   When the run is over the graph may be changed or run again.
// - Bad input throws, naming the call: an edge from or to a node of another graph or no graph, or a self-edge
//   (weft::invalid_graph, saying which end and naming the node: by name if it is this graph's, else by the
//   index it carries); an option out of range (weft::invalid_option, naming the node, option and value).
// - The destructor waits for a run in flight. Movable (not while running); a moved-from graph may only be
//   destroyed or assigned.
//
// Example:
//   weft::Pool pool;
//   weft::TaskGraph g;
//   auto n1 = g.add_node([] { /* ... */ });
//   auto n2 = g.add_node([] { /* ... */ }, weft::NodeOptions{.concurrency = 2, .capacity = 64,
//                                                             .overflow = weft::Overflow::Block});
//   g.add_edge(n1, n2);
//   g.run(pool).wait();  // and again: g.run(pool).wait();
class TaskGraph {
 public:
  TaskGraph();
  ~TaskGraph();
  TaskGraph(TaskGraph&& other) noexcept;
  TaskGraph& operator=(TaskGraph&& other);
  TaskGraph(const TaskGraph&) = delete;
  TaskGraph& operator=(const TaskGraph&) = delete;

  // Adds a node running f (see NodeCallable). Throws invalid_option for an option out of range,
  // std::invalid_argument for an empty callable (a null function pointer or an empty std::function).
  template <class F>
    requires NodeCallable<F>
  Node add_node(F&& f, NodeOptions options = {}) {
    // A callable that can be empty (a std::function, a function pointer) is refused now, not when it runs.
    detail::require_callable(f, "weft::TaskGraph::add_node");
    return add_node_body(detail::NodeBody(detail::NodeBodyAdapter<std::decay_t<F>>(std::forward<F>(f))),
                         std::move(options), detail::Caller{"weft::TaskGraph::add_node"});
  }
  // `to` runs after `from`. Adding the same edge twice is allowed and counts once.
  void add_edge(Node from, Node to);
  // Every node of `to` runs after `from`:  g.add_edges(load, {parse, index});  A bad node anywhere in the list
  // throws as add_edge does, naming its position, and adds none of the edges.
  void add_edges(Node from, std::initializer_list<Node> to);
  // Room for this many nodes and edges in all, so that building a large graph does not reallocate. A graph
  // holds at most 2^32 - 1 nodes and 2^32 - 2 edges: more (here, or by add_node or add_edge) throws
  // std::length_error naming the count and the limit, and changes nothing.
  void reserve(std::size_t nodes, std::size_t edges = 0);
  // Checks and lays out the graph now (else the first run does). Allocates each multi-token node's inbox
  // (see NodeOptions); out of memory throws weft::out_of_memory naming the node whose inbox it was.
  void compile();
  // Starts a run on `pool`. Throws graph_busy if a run is in flight, cycle_error, invalid_option (an affinity
  // past the pool's workers), pool_closed.
  Run run(Pool& pool);
  // The same, with an error policy and what to record (see RunOptions). run(pool, {}) is run(pool).
  // Example: weft::Run run = graph.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing, .record_times = true});
  Run run(Pool& pool, RunOptions options);

  [[nodiscard]] std::size_t size() const noexcept;         // nodes
  [[nodiscard]] std::size_t edge_count() const;            // distinct edges
  [[nodiscard]] std::string name(Node node) const;         // the node's NodeOptions::name or "node <index>"
  [[nodiscard]] bool running() const noexcept;             // a run is in flight
  // Writes the graph in Graphviz DOT (nodes by name, with their non-default options), e.g. for `dot -Tsvg`.
  void dump(std::ostream& out) const;

 private:
  friend struct detail::GraphAccess;
  Node add_node_body(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller);

  std::unique_ptr<detail::GraphImpl> impl_;
};

namespace detail {
// For weft's own layers over TaskGraph (TaskScope, parallel_for): the same operations, with errors that name
// the layer's public call (`caller`) instead of TaskGraph's.
struct GraphAccess {
  template <class F>
  static Node add_node(TaskGraph& graph, const Caller& caller, F&& f, NodeOptions options) {
    return graph.add_node_body(NodeBody(NodeBodyAdapter<std::decay_t<F>>(std::forward<F>(f))), std::move(options),
                               caller);
  }
  static Run run(TaskGraph& graph, Pool& pool, const Caller& caller);
  // run(), and before any node starts, stores the run's state into `live` (for cancel_live: a node may cancel
  // its own run before run() has returned).
  static Run run(TaskGraph& graph, Pool& pool, const Caller& caller, std::atomic<void*>& live,
                 const RunOptions& options = {});
  // Cancels the run whose state run() stored (it stays alive while a node of it or a Run handle exists).
  static void cancel_live(void* live) noexcept;
  // Run::wait(), except that a call from inside the run (one of its nodes or their subflow children), which
  // could never return, throws weft::would_deadlock naming caller.call.
  static RunStatus wait(Run& run, const Caller& caller);
};
}  // namespace detail

}  // namespace weft
