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

#include "weft/detail/coro_wait_list.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/node_options.hpp"
#include "weft/shared_function.hpp"
#include "weft/small_function.hpp"
#include "weft/subflow.hpp"
#include "weft/trace.hpp"

namespace weft {

class Pool;
class TaskGraph;

namespace graph {  // graph/: the TaskGraph executor behind the public classes
class GraphImpl;   // graph/graph_impl.hpp: nodes, edges, the compiled layout
class RunState;    // graph/run_state.hpp: one run of a TaskGraph
}  // namespace graph

namespace detail {
struct GraphAccess;

// Whose call a graph operation serves, so that its errors name the public call the user made and what that
// call's nodes are: TaskGraph's own ("weft::TaskGraph::add_node", "node"), or a layer built on TaskGraph
// ("weft::TaskScope::then", "job"; "weft::parallel_for").
struct Caller {
  const char* call;
  const char* noun = "node";
};

// No branch: what a condition node's execution that did not return (skipped, threw) leaves in NodeCall::branch,
// and what any other node's leaves there.
inline constexpr std::size_t kNoBranch = static_cast<std::size_t>(-1);

// What a node body is called with: the execution's Subflow and the token index; a condition node's body writes
// the successor it picked into `branch`.
struct NodeCall {
  Subflow& subflow;
  std::size_t token;
  std::size_t branch = kNoBranch;
};
// 56 bytes inline (64 in all): a graph of a million nodes is walked once per run, so a node's closure is kept to
// one cache line; a callable that captures more is stored on the heap, once, when the node is added.
inline constexpr std::size_t kNodeBodyCapacity = 56;
using NodeBody = small_function<void(NodeCall&), kNodeBodyCapacity>;
// run_until's predicate, type-erased once per call (not per pass).
using RunPredicate = small_function<bool()>;

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
// A condition node's body adapter: f takes nothing or the execution's Subflow&, and returns an integer; a
// negative one picks no successor, as one past the last does.
template <class F>
class ConditionBodyAdapter {
 public:
  template <class G>
  explicit ConditionBodyAdapter(G&& f) : f_(std::forward<G>(f)) {}
  void operator()(NodeCall& call) {
    if constexpr (std::is_invocable_v<F&, Subflow&>) {
      call.branch = to_branch(f_(call.subflow));
    } else {
      call.branch = to_branch(f_());
    }
  }

 private:
  template <class I>
  static std::size_t to_branch(I value) noexcept {
    if constexpr (std::is_signed_v<I>) {
      if (value < 0) return kNoBranch;
    }
    return static_cast<std::uint64_t>(value) > static_cast<std::uint64_t>(kNoBranch) ? kNoBranch
                                                                                     : static_cast<std::size_t>(value);
  }
  F f_;
};

template <class R>
concept BranchIndex = std::integral<R> && !std::same_as<std::remove_cv_t<R>, bool>;

// Whether a node body that takes the token index takes it as std::size_t (by value or reference), not as int or
// another type the token would silently convert to. Checked where the parameter types can be read: a function
// (pointer), or a class with one operator() that is not a template (a lambda). A generic lambda is not checked.
template <class... A>
struct token_params_ok : std::true_type {};
template <class A>
struct token_params_ok<A>
    : std::bool_constant<std::is_same_v<A, Subflow&> || std::is_same_v<std::remove_cvref_t<A>, std::size_t>> {};
template <class S, class A>
struct token_params_ok<S, A> : std::bool_constant<std::is_same_v<std::remove_cvref_t<A>, std::size_t>> {};
template <class Signature>
struct signature_token_ok : std::true_type {};
template <class R, class... A>
struct signature_token_ok<R(A...)> : token_params_ok<A...> {};
template <class R, class... A>
struct signature_token_ok<R(A...) noexcept> : token_params_ok<A...> {};
template <class M>
struct call_signature {};
template <class R, class C, class... A>
struct call_signature<R (C::*)(A...)> {
  using type = R(A...);
};
template <class R, class C, class... A>
struct call_signature<R (C::*)(A...) const> {
  using type = R(A...);
};
template <class R, class C, class... A>
struct call_signature<R (C::*)(A...) noexcept> {
  using type = R(A...);
};
template <class R, class C, class... A>
struct call_signature<R (C::*)(A...) const noexcept> {
  using type = R(A...);
};
template <class F>
[[nodiscard]] consteval bool takes_token_as_size_t() {
  using D = std::decay_t<F>;
  if constexpr (std::is_pointer_v<D> && std::is_function_v<std::remove_pointer_t<D>>) {
    return signature_token_ok<std::remove_pointer_t<D>>::value;
  } else if constexpr (requires { &D::operator(); }) {
    if constexpr (requires { typename call_signature<decltype(&D::operator())>::type; }) {
      return signature_token_ok<typename call_signature<decltype(&D::operator())>::type>::value;
    } else {
      return true;
    }
  } else {
    return true;
  }
}

// Whether a condition's callable returns bool (callable with nothing, or with Subflow&).
template <class F>
[[nodiscard]] consteval bool condition_returns_bool() {
  using D = std::decay_t<F>;
  if constexpr (std::is_invocable_v<D&>) {
    return std::is_same_v<std::remove_cv_t<std::invoke_result_t<D&>>, bool>;
  } else if constexpr (std::is_invocable_v<D&, Subflow&>) {
    return std::is_same_v<std::remove_cv_t<std::invoke_result_t<D&, Subflow&>>, bool>;
  } else {
    return false;
  }
}
}  // namespace detail

// A callable a condition node can run: it takes nothing or the execution's Subflow&, and returns an integer
// (not bool: false and true would silently mean the first and second successor), the index of the successor
// to start.
template <class F>
concept ConditionCallable = (std::invocable<std::decay_t<F>&> &&
                             detail::BranchIndex<std::invoke_result_t<std::decay_t<F>&>>) ||
                            (std::invocable<std::decay_t<F>&, Subflow&> &&
                             detail::BranchIndex<std::invoke_result_t<std::decay_t<F>&, Subflow&>>);

// A callable a node can run: it takes nothing, the token index (std::size_t), the execution's Subflow&, or both
// (Subflow&, std::size_t). Its result, if any, is discarded (TaskScope keeps results). add_node refuses a body
// that takes the token as another type (int, unsigned, ...) with a static_assert: write std::size_t.
template <class F>
concept NodeCallable = std::invocable<std::decay_t<F>&> || std::invocable<std::decay_t<F>&, std::size_t> ||
                       std::invocable<std::decay_t<F>&, Subflow&> ||
                       std::invocable<std::decay_t<F>&, Subflow&, std::size_t>;

// A node of one TaskGraph: a small copyable handle (index plus the graph's identity).
// Handles are compared, copied and stored freely; a graph checks that a handle is its own before using it.
class Node {
 public:
  // An empty handle, of no graph (valid() is false): every graph refuses it with weft::invalid_graph.
  Node() noexcept = default;
  // The node's position in its graph, 0 .. size()-1 in the order nodes were added: the index of RunStats::
  // dropped_by_node and Run::outcomes(), and the <index> of the default name "node <index>".
  [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
  // True if the handle was returned by a graph (add_node, add_graph, add_condition, placeholder); false if
  // default-made.
  [[nodiscard]] bool valid() const noexcept { return graph_ != 0; }
  // Equal if both name the same node of the same graph (or both are empty): index and graph identity compared.
  friend bool operator==(const Node&, const Node&) noexcept = default;

 private:
  friend class graph::GraphImpl;
  Node(std::uint32_t index, std::uint64_t graph) noexcept : index_(index), graph_(graph) {}
  std::uint32_t index_ = 0;
  std::uint64_t graph_ = 0;  // a process-unique id of the owning graph; 0: no graph
};

// How a run ended, when it did not throw.
enum class RunStatus : std::uint8_t {
  Completed,  // every node ran all its tokens (less those its Overflow::Drop inbox dropped)
  Cancelled,  // Run::cancel() stopped it: nodes not started were skipped
};

// What happened in one run. Exact once the run is done; before that the counts are a snapshot and
// dropped_by_node is empty.
struct RunStats {
  std::uint64_t dropped = 0;  // tokens dropped by Overflow::Drop inboxes, all nodes
  // Executions (tokens, subflow children) not started because the run was cancelled; under
  // ErrorPolicy::KeepGoing also those of nodes descending from a failed node, and the tokens an Overflow::Fail
  // node had left when its inbox was full.
  std::uint64_t skipped = 0;
  std::uint64_t exceptions = 0;  // exceptions thrown by bodies and children; the first is rethrown by wait()
  std::vector<std::uint64_t> dropped_by_node;  // indexed by Node::index()
  // Items dropped by the Overflow::Drop stages of a TaskScope's pipelines, as {"pipeline/stage", count}, for
  // each stage that dropped any (also counted in `dropped`).
  std::vector<std::pair<std::string, std::uint64_t>> dropped_by_stage;
  // Passes of the graph this Run started: 1 for run(), up to n for run_n, as many as the predicate allowed for
  // run_until (0 if it stopped before the first). The counts above add up over all passes.
  std::uint64_t passes = 0;
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
// - retain_subflows: keep the Subflow children this run spawns (Taskflow's retain), for TaskGraph::dump, which
//   draws them inside the node that spawned them: each child (named by Subflow::spawn's or spawn_after's `name`,
//   else "child <k>") and the edges spawn_after made. The graph keeps them until its next run starts (which
//   replaces them, with nothing if that run does not retain) or until it is destroyed. Costs a lock and a record
//   per child; a default run records nothing, and a spawn pays one test for it.
// Recording costs one array of per-node records (sized when the run starts; nothing is allocated per node) and a
// few atomic operations per execution; a default run pays one predictable test per node execution.
//
// Example:
//   weft::Run run = graph.run(pool, weft::RunOptions{.on_error = weft::ErrorPolicy::KeepGoing});
//   try { run.wait(); } catch (const std::exception&) { /* the first failure, after the whole run */ }
//   if (run.outcome(link).state == weft::NodeState::Skipped) { /* link descends from a failed node */ }
struct RunOptions {
  ErrorPolicy on_error = ErrorPolicy::CancelRun;  // what a node's failure does to the run (see ErrorPolicy)
  bool record_outcomes = false;                   // keep each node's NodeOutcome for Run::outcome(s)
  bool record_times = false;                      // also keep NodeOutcome::start and end (implies outcomes)
  bool retain_subflows = false;                   // keep this run's Subflow children for TaskGraph::dump
  // If set, each execution of each node (and each pipeline stage's body on each item) of this run is recorded
  // into it (see weft::Trace). Unset, the run records into its pool's PoolOptions::trace, if the pool has one.
  std::shared_ptr<Trace> trace{};
  // If set, called once when the run is over (Taskflow's executor.run(taskflow, callback)): after its last node
  // (and its last pass, for run_n / run_until), whether it completed, failed, was cancelled or never started a
  // node, and before its Run's wait() returns and before the graph's next queued run starts. It is called in a
  // pool task of its own, so on a worker; only if the pool refuses that task (shut down) is it called on the
  // thread that ended the run. An exception from it goes to the pool's error handler (PoolOptions::on_error,
  // else Pool::take_errors), never to wait(). It must not wait for its own run (Run::wait throws
  // weft::would_deadlock there), nor run its own graph (weft::graph_busy: the graph is handed to the next
  // queued run only once the callback has returned). A copy of RunOptions shares the one callable
  // (weft::shared_function).
  shared_function<void()> on_done{};
};

// What became of one node in a run (NodeOutcome::state). A node with several tokens, or with subflow children,
// has one state for all its executions, the first that applies in this order:
enum class NodeState : std::uint8_t {
  // Nothing of it started and nothing skipped or cancelled it: the run ended without reaching it. That happens
  // when no condition node picked it (a branch not taken, a loop left), or when the pool refused or dropped a
  // task of the run (wait() throws pool_closed or task_dropped).
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
  // What became of the node (see NodeState for the order in which the states apply).
  NodeState state = NodeState::NotRun;
  // Failed: the first exception of this node (a body's or a child's, or weft::inbox_full). Else empty.
  std::exception_ptr error;
  // Skipped: the failed node it descends from; of several, the one with the lowest index (so the same in every
  // run of the same failures). Else empty.
  std::optional<Node> failed_ancestor;
  // With RunOptions::record_times, for a node that started a body: the steady_clock time its first execution
  // started and its last one ended (subflow children joined). Else empty.
  std::optional<std::chrono::steady_clock::time_point> start;
  // With RunOptions::record_times: when the node's last execution ended (see start). Else empty.
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
// - cancel(): no node or token starts after it; running ones finish; wait() returns RunStatus::Cancelled. A run
//   still queued behind another run of its graph (TaskGraph::run) never starts a node: it ends, cancelled, when
//   its turn comes.
// - The destructor waits for the run (never throws: an exception nobody waited for is only counted).
// - A Run may outlive its pool: the pool's destruction (a Drain shutdown) lets the run finish first, and a
//   finished run's wait(), done(), stats(), outcome(s), assignment and destructor no longer touch the pool.
// - outcome(node), outcomes(): what became of each node (NodeOutcome), once the run is over (done()), if the
//   run recorded outcomes (RunOptions). Before the end, or if the run did not record them, they throw
//   std::logic_error saying so; a node of another graph throws weft::invalid_graph. They stay valid after the
//   graph is changed, run again or destroyed.
//
// Example:
//   weft::Run run = graph.run(pool);
//   if (run.wait() == weft::RunStatus::Cancelled) { /* ... */ }
class [[nodiscard]] Run {
 public:
  // An empty handle of no run (valid() is false): wait, wait_for, stats and outcome(s) throw std::logic_error
  // on it; cancel() does nothing and done() is true.
  Run() noexcept = default;
  // Takes over other's run; `other` is left empty (valid() false) and its destructor waits for nothing.
  Run(Run&&) noexcept = default;
  // Waits for the run this handle had, if any (as the destructor does), then takes over other's run and leaves
  // `other` empty. Self-assignment changes nothing.
  Run& operator=(Run&& other) noexcept;
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  // Waits for the run if it is not over; never throws (see the contract).
  ~Run();

  // Blocks until the run is over, then rethrows its first exception or returns how it ended (see the contract).
  // Throws std::logic_error on an empty handle.
  RunStatus wait();
  // Waits at most `timeout`; true if the run is over (then wait() returns at once). Never rethrows the run's
  // exception: call wait() for it. Throws std::logic_error on an empty handle.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    return wait_for_ns(detail::clamp_to_nanoseconds(timeout));
  }
  // Stops the run: no node or token starts after it; running ones finish. Callable from any thread, from inside
  // the run too, any number of times; does nothing on an empty handle or a run that is over.
  void cancel() noexcept;
  // True once the run is over (every node finished or was skipped): wait() would not block. Also true on an
  // empty handle, which has nothing to wait for.
  [[nodiscard]] bool done() const noexcept;
  // The run's counts (see RunStats): exact once done(), a snapshot before. Throws std::logic_error on an empty
  // handle.
  [[nodiscard]] RunStats stats() const;
  // True if this handle refers to a run (returned by run, run_n or run_until, not moved from).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // The outcome of `node` in this run (see the contract above).
  // Example: if (run.outcome(n).state == weft::NodeState::Failed) std::rethrow_exception(run.outcome(n).error);
  [[nodiscard]] NodeOutcome outcome(Node node) const;
  // Every node's outcome, indexed by Node::index().
  // Example: for (const weft::NodeOutcome& o : run.outcomes()) failed += o.state == weft::NodeState::Failed;
  [[nodiscard]] std::vector<NodeOutcome> outcomes() const;

 private:
  friend class graph::GraphImpl;
  friend struct detail::GraphAccess;
  explicit Run(std::shared_ptr<graph::RunState> state) noexcept : state_(std::move(state)) {}
  bool wait_for_ns(std::chrono::nanoseconds timeout);
  void require_valid(const char* what) const;

  std::shared_ptr<graph::RunState> state_;
};

// A graph of work, built once and run many times.
//
// Contract:
// - add_node/add_edge build it; compile() checks it (a cycle throws weft::cycle_error naming its nodes) and
//   lays it out for speed; the first run compiles it if needed, and changes after a compile recompile lazily.
// - placeholder() adds a node whose body set_work gives later, once; a graph with a placeholder still without
//   one does not run or compile (weft::invalid_graph naming it).
// - A node runs after all its predecessors finished (their tokens and subflows), `tokens` times per run, with
//   the limits of its NodeOptions. Nodes without predecessors start when the run starts.
// - One run at a time, the others queued: run(), run_n or run_until while a run is in flight (or others are
//   queued) does not start it but queues it behind them (as Taskflow's executor does); the queued runs start
//   one after another in the order they were submitted, each when the one before it has ended, each with its
//   own Run (wait, exceptions, stats, cancel). A queued run was checked (placeholders, affinities) when it was
//   submitted, and runs the graph as it was then: while any run is in flight or queued, changing or compiling
//   the graph (add_node, add_edge, placeholder, set_work, compile, ...) throws weft::graph_busy naming the call.
//   Cancelling a queued run: it never starts a node; it ends, cancelled, when its turn comes. A queued run whose
//   pool is shut down by its turn does not start: its wait() throws weft::task_dropped. run() from inside a node
//   of the graph's own run in flight throws weft::graph_busy (its Run could only be waited for after that node,
//   and so that run, has ended). When the last run is over the graph may be changed again.
// - Bad input throws, naming the call: an edge from or to a node of another graph or no graph, or a self-edge
//   (weft::invalid_graph, saying which end and naming the node: by name if it is this graph's, else by the
//   index it carries); an option out of range (weft::invalid_option, naming the node, option and value).
// - The destructor waits for the run in flight and every queued run (they still run). Movable (not while running); a
// moved-from graph may only be
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
  // An empty graph: no nodes, no edges.
  TaskGraph();
  // Waits for the run in flight and the queued runs (each runs as it would have), then frees the graph.
  ~TaskGraph();
  // Takes over other's nodes, edges and layout; `other` may then only be destroyed or assigned.
  TaskGraph(TaskGraph&& other) noexcept;
  // Frees this graph's contents (waiting for a run of them in flight, as the destructor does), then takes over
  // other's; `other` must not be running, and may then only be destroyed or assigned.
  TaskGraph& operator=(TaskGraph&& other) noexcept;
  TaskGraph(const TaskGraph&) = delete;
  TaskGraph& operator=(const TaskGraph&) = delete;

  // Adds a node running f (see NodeCallable). Throws invalid_option for an option out of range,
  // std::invalid_argument for an empty callable (a null function pointer or an empty std::function).
  template <class F>
    requires NodeCallable<F>
  Node add_node(F&& f, NodeOptions options = {}) {
    static_assert(detail::takes_token_as_size_t<F>(),
                  "weft::TaskGraph::add_node: a body that takes the token index must take it as std::size_t: write "
                  "[](std::size_t token) { ... } (or (weft::Subflow&, std::size_t)), not int or another type the "
                  "token would convert to");
    // A callable that can be empty (a std::function, a function pointer) is refused now, not when it runs.
    detail::require_callable(f, "weft::TaskGraph::add_node");
    return add_node_body(detail::NodeBody(detail::NodeBodyAdapter<std::decay_t<F>>(std::forward<F>(f))),
                         std::move(options), detail::Caller{"weft::TaskGraph::add_node"});
  }
  // Adds a placeholder (Taskflow's placeholder()): a node without a body yet, given one later by set_work.
  // It takes edges, options and a name as any node does; the graph may not run (nor compile) until every
  // placeholder has its body: run(), run_n, run_until and compile() throw weft::invalid_graph naming the first
  // one left without (and how many are), and start nothing. Throws invalid_option for an option out of range,
  // graph_busy while a run is in flight. Below, a wavefront: every node first, edges right and down, bodies
  // afterwards.
  //
  // Example:
  //   std::vector<weft::Node> cell(n * n);
  //   for (weft::Node& c : cell) c = g.placeholder();
  //   for (std::size_t i = 0; i < n; ++i)
  //     for (std::size_t j = 0; j < n; ++j) {
  //       if (j + 1 < n) g.add_edge(cell[i * n + j], cell[i * n + j + 1]);
  //       if (i + 1 < n) g.add_edge(cell[i * n + j], cell[(i + 1) * n + j]);
  //     }
  //   for (std::size_t k = 0; k < n * n; ++k) g.set_work(cell[k], [k, &value] { value[k] = k; });
  //   g.run(pool).wait();
  Node placeholder(NodeOptions options = {});
  // Gives the placeholder `node` its body f (see NodeCallable; as add_node's f). A body is given once: a node
  // that has one (from add_node, add_condition, add_graph, or an earlier set_work) is refused, so a node that
  // took part in a run (which it could only with a body) keeps the body it ran. A placeholder added between
  // runs (the graph may grow then) takes its body before the next run. Throws invalid_graph for a node of
  // another graph or no graph, or a node that has a body, naming it; std::invalid_argument for an empty
  // callable; graph_busy while a run is in flight. A refused call changes nothing.
  template <class F>
    requires NodeCallable<F>
  void set_work(Node node, F&& f) {
    static_assert(detail::takes_token_as_size_t<F>(),
                  "weft::TaskGraph::set_work: a body that takes the token index must take it as std::size_t: "
                  "write [](std::size_t token) { ... } (or (weft::Subflow&, std::size_t)), not int or another "
                  "type the token would convert to");
    detail::require_callable(f, "weft::TaskGraph::set_work");
    set_work_body(node, detail::NodeBody(detail::NodeBodyAdapter<std::decay_t<F>>(std::forward<F>(f))));
  }
  // True if `node` has a body: every node but a placeholder not yet given one by set_work. Throws
  // invalid_graph for a node of another graph or no graph.
  [[nodiscard]] bool has_work(Node node) const;
  // How many placeholders are still without a body (0: the graph may run).
  [[nodiscard]] std::size_t placeholders_left() const noexcept;
  // Adds a module node (Taskflow's composed_of): each execution runs `inner` on the same pool as one run of it,
  // and ends when that run has ended. `inner` keeps its own compiled layout (compiled by its first run, reused
  // by every later one), is shared, not copied: it must outlive every run of this graph, and may be changed
  // only while neither graph runs. While the inner run is in flight the module node's thread waits through the
  // scheduler's wait point (a worker runs other tasks meanwhile). An exception of the inner run fails the
  // module node as a body exception would (wait() rethrows the inner one); cancelling this graph's run (or its
  // failing) cancels the inner run in flight. A graph runs once at a time: if `inner` is already running when
  // the module node starts (two module nodes of it that may run at once, a graph composed into a graph that is
  // composed into it, or a run of it started elsewhere), the module node fails with weft::graph_busy naming it.
  // Throws invalid_graph if `inner` is this graph or was moved from; invalid_option for tokens > 1 (one
  // graph cannot run twice at once). Dump shows a module node as a 3-D box.
  //
  // Example:
  //   weft::TaskGraph inner;
  //   inner.add_node([] { /* ... */ });
  //   weft::TaskGraph outer;
  //   auto before = outer.add_node([] { /* ... */ });
  //   auto module = outer.add_graph(inner, weft::NodeOptions{.name = "inner"});
  //   outer.add_edge(before, module);
  //   outer.run(pool).wait();
  Node add_graph(TaskGraph& inner, NodeOptions options = {});
  // Adds a condition node (Taskflow's condition task): f (see ConditionCallable) returns i, and the i-th
  // successor of the node, in the order its edge was first added, starts at once; an i out of range (or
  // negative) starts none, which is how a loop ends. Edges out of a condition node are weak: they do not count
  // in their target's join counter, and a cycle through one is allowed (a loop); compile() still refuses a
  // cycle of ordinary (strong) edges only, with cycle_error. A node may so run several times in one run; a
  // strong edge from it counts once per execution. The run starts with the nodes that have no incoming edge at
  // all, strong or weak. A node picked by a condition starts whatever its strong predecessors did (so give a
  // node that is the target of weak edges strong ones only where they cannot race with them, as in Taskflow).
  // If f throws, the run fails with it and no successor starts; a skipped execution (cancelled) starts none.
  // Throws invalid_option for tokens > 1 (a condition picks one successor per execution).
  //
  // Example:
  //   int i = 0;
  //   auto init = g.add_node([&] { i = 0; });
  //   auto body = g.add_node([&] { ++i; });
  //   auto again = g.add_condition([&] { return i < 10 ? 0 : 1; });
  //   auto done = g.add_node([] { /* ... */ });
  //   g.add_edge(init, body);
  //   g.add_edge(body, again);
  //   g.add_edges(again, {body, done});  // 0: loop back to body, 1: on to done
  //   g.run(pool).wait();                // body ran 10 times
  template <class F>
  Node add_condition(F&& f, NodeOptions options = {}) {
    // Refused with what to write instead, not a failed concept's "no operand of the disjunction is satisfied".
    static_assert(std::is_invocable_v<std::decay_t<F>&> || std::is_invocable_v<std::decay_t<F>&, Subflow&>,
                  "weft::TaskGraph::add_condition: f must take nothing, or weft::Subflow&");
    static_assert(!detail::condition_returns_bool<F>(),
                  "weft::TaskGraph::add_condition: f must return an integer index, not bool (false and true would "
                  "silently pick the first and the second successor): return 0 or 1");
    static_assert(ConditionCallable<F>,
                  "weft::TaskGraph::add_condition: f must return an integer index, the successor to start");
    detail::require_callable(f, "weft::TaskGraph::add_condition");
    return add_condition_body(detail::NodeBody(detail::ConditionBodyAdapter<std::decay_t<F>>(std::forward<F>(f))),
                              std::move(options));
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
  // Starts a run on `pool`, or queues it if a run of the graph is in flight or queued (see the contract: runs
  // start in the order submitted, each with its own Run). Throws cycle_error, invalid_graph (a placeholder left),
  // invalid_option (an affinity past the pool's workers), pool_closed (the pool is shut down and the graph idle),
  // graph_busy when called from inside a node of this graph's own run in flight.
  //
  // Example:
  //   weft::Run first = g.run(pool);
  //   weft::Run second = g.run(pool);  // queued: starts when `first` has ended
  //   second.wait();                   // both are over
  Run run(Pool& pool);
  // The same, with an error policy and what to record (see RunOptions). run(pool, {}) is run(pool).
  // Example: weft::Run run = graph.run(pool, {.on_error = weft::ErrorPolicy::KeepGoing, .record_times = true});
  Run run(Pool& pool, RunOptions options);
  // Runs the graph `n` times in a row, as one Run (Taskflow's run_n): each pass starts when the previous one has
  // ended, started by the last unit of work of that pass (no thread waits in between). The passes stop early
  // after an exception (wait() rethrows it) or cancel() (wait() says cancelled). n == 0: the Run is over at once
  // and completed. RunStats add up over the passes (RunStats::passes counts them). Throws as run() does.
  //
  // Example:
  //   std::atomic<int> count{0};
  //   g.add_node([&] { ++count; });
  //   g.run_n(pool, 5).wait();  // count == 5
  Run run_n(Pool& pool, std::size_t n);
  // run_n with an error policy, what to record and a completion callback (see RunOptions).
  // Example: weft::Run r = g.run_n(pool, 3, {.on_done = [&] { done.signal(); }});  // done: a weft::Event
  Run run_n(Pool& pool, std::size_t n, RunOptions options);
  // Runs the graph again and again, as one Run, until predicate() returns true (Taskflow's run_until). The
  // predicate is called before each pass, the first included (true at once: no pass runs), so it is called
  // once more than there are passes, the last call being the one that returns true; it is never called
  // concurrently with a pass nor with itself, on the thread that ends a pass (a pool worker) or, the first
  // time, on the caller's. If it throws, the run fails with that exception. Stops early like run_n.
  // It must not wait for the pool to be idle or shut it down (pool.wait_idle(), pool.shutdown(Shutdown::Drain),
  // shutdown_for): it runs as the end of a pass, which the pool counts as work in flight (a pool task, or the
  // in-place run of an outside waiter that took the roots over), so such a wait would wait for itself: it throws
  // weft::would_deadlock where the pool can tell (on a worker, inside a task), and may otherwise never return.
  //
  // Example:
  //   int passes = 0;
  //   g.run_until(pool, [&] { return passes++ == 3; }).wait();  // the graph ran 3 times
  template <class P>
    requires std::predicate<std::decay_t<P>&>
  Run run_until(Pool& pool, P&& predicate) {
    return run_until(pool, std::forward<P>(predicate), RunOptions{});
  }
  // run_until with an error policy, what to record and a completion callback (see RunOptions).
  template <class P>
    requires std::predicate<std::decay_t<P>&>
  Run run_until(Pool& pool, P&& predicate, RunOptions options) {
    detail::require_callable(predicate, "weft::TaskGraph::run_until");
    return run_until_erased(pool,
                            detail::RunPredicate([f = std::decay_t<P>(std::forward<P>(predicate))]() mutable -> bool {
                              return static_cast<bool>(f());
                            }),
                            options);
  }

  [[nodiscard]] std::size_t size() const noexcept;  // nodes
  [[nodiscard]] std::size_t edge_count() const;     // distinct edges
  [[nodiscard]] std::string name(Node node) const;  // the node's NodeOptions::name or "node <index>"
  [[nodiscard]] bool running() const noexcept;      // a run is in flight (or queued)
  // Writes the graph in Graphviz DOT (nodes by name, with their non-default options), e.g. for `dot -Tsvg`. A node
  // whose Subflow children the last run retained (RunOptions::retain_subflows) is drawn with them, and the edges
  // spawn_after made between them, as a cluster (`subgraph cluster_n<index>`); children of children appear in the
  // same cluster. Not while a run of the graph is in flight: a run that starts replaces what the last one retained.
  void dump(std::ostream& out) const;

 private:
  friend struct detail::GraphAccess;
  Node add_node_body(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller);
  void set_work_body(Node node, detail::NodeBody&& body);
  Run run_until_erased(Pool& pool, detail::RunPredicate&& predicate, const RunOptions& options);
  Node add_condition_body(detail::NodeBody&& body, NodeOptions&& options);

  std::unique_ptr<graph::GraphImpl> impl_;
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
  // could never return, throws weft::would_deadlock naming caller.call. `spin_outside` false: a thread that is
  // not a worker sleeps at once instead of looking for a while first (a wait known to be long).
  static RunStatus wait(Run& run, const Caller& caller, bool spin_outside = true);
  // For coroutines awaiting a run (weft/task.hpp) and a TaskScope's jobs: pushes `waiter` on the run's list of
  // waiters, woken once, on the thread that ends the run, after done() became true; false if the run is over
  // already (nothing pushed). `keep`, if given, is held by the run's state until the state is freed (so that the
  // waiter it owns outlives the wake-up). `run` must be valid.
  static bool attach_waiter(const Run& run, CoroWaiter& waiter, std::shared_ptr<const void> keep = {});
  // The pool the run was started on. `run` must be valid.
  [[nodiscard]] static Pool& pool_of(const Run& run) noexcept;
  // A second handle to the same run (an awaiter's own, so that the run's result outlives the caller's handle).
  [[nodiscard]] static Run share(const Run& run) noexcept { return Run(run.state_); }
};
}  // namespace detail

}  // namespace weft
