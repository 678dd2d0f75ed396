// One run of a TaskGraph: what is still to do, whether it was cancelled, its first exception, its statistics.
// The executor (graph/executor.cpp) drives it: it finishes nodes, counts down join counters, runs a ready
// successor in place and posts the others to the pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "graph/graph_impl.hpp"
#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/engine/pool_access.hpp"
#include "scheduler/sync/signal.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"

namespace weft::graph {

// A parked node of a run (graph/semaphore.cpp): one per node with semaphores, allocated with the run, linked
// into the waiters of the semaphore it lacked units of.
struct SemaphoreWaiter {
  SemaphoreWaiter* next = nullptr;
  RunState* run = nullptr;
  std::uint32_t node = kNoIndex;
  std::size_t units = 0;  // of the semaphore it is parked on
  // Set by the release that re-posted it (under that semaphore's lock), cleared by the retry: the retry tries
  // that semaphore first, or, if it never tries it, hands the wake-up on (graph/semaphore.cpp).
  Semaphore* woken_from = nullptr;
};

// The kinds of pool task a run posts.
enum class GraphTaskKind : std::uint8_t {
  node,        // run a one-token node, then whatever it makes ready in place
  activation,  // push a multi-token node's tokens into its inbox (parks on a full one; a pop goes on)
  executor,    // run tokens from a multi-token node's inbox
  roots,       // claim roots from the graph's roots cursor and start them (index 0: the run's first task)
  members,     // claim the in-place members of join group `index` from its cursor and run them
  done,        // the run is over: call its RunOptions::on_done, then tell its waiters (index unused)
};

class RunState {
 public:
  // Sizes what the run's end fills in (may throw bad_alloc; nothing has started then).
  // `options`: see RunOptions (weft/task_graph.hpp); the per-node records it asks for are allocated here.
  RunState(GraphImpl& graph, Pool& pool, const RunOptions& options = {});
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // Posts the roots. `self` keeps this state alive until the last unit of work has told the waiters.
  // Returns false if the pool refused the run (shut down): the run has then already ended, failed.
  [[nodiscard]] bool start(std::shared_ptr<RunState> self) noexcept;
  // Starts a run that was queued behind another run of its graph (GraphImpl::run_ended / start_queued), on the
  // thread that hands the graph over. A loop, not a recursion: a run that ends inside its own start() (the pool
  // refused it, it was cancelled while queued, it has no roots) hands the graph on to the next queued run from
  // in there, and that one is started by the loop up the stack, so a long queue cannot grow the stack.
  static void start_queued(std::shared_ptr<RunState> run) noexcept;
  // Before start(): makes the run several passes (run_n / run_until; see pass_ended).
  void set_repeat(std::unique_ptr<RunRepeat> repeat) noexcept { repeat_ = std::move(repeat); }
  // What the run's errors call a node (Caller::noun: "node" for a TaskGraph's, "job" for a TaskScope's).
  void set_noun(const char* noun) noexcept { noun_ = noun; }

  // For Run.
  // `spin_outside` false: a thread that is not a worker sleeps at once (a wait known to be long).
  RunStatus wait(bool spin_outside = true);
  bool wait_until(sync::Clock::time_point deadline, bool spin_outside = true);
  void cancel() noexcept;
  [[nodiscard]] bool done() const noexcept { return done_.load(std::memory_order_acquire); }
  // detail::GraphAccess::attach_waiter: a coroutine's waiter, woken by complete() after done_ is set; false if
  // the run is over already. `keep` (may be empty) is held until this state is freed.
  [[nodiscard]] bool attach_waiter(detail::CoroWaiter& waiter, std::shared_ptr<const void> keep) {
    if (keep) {
      // One keeper per run (the TaskScope's, from run() before it returns): nothing else writes it.
      coro_keep_ = std::move(keep);
    }
    return coro_waiters_.push(waiter);
  }
  [[nodiscard]] RunStats stats() const;
  // An outside thread about to wait: if no worker has started the roots yet, start them here (as oneTBB's
  // caller does in its arena slot), so a small graph runs without a hand-off to a sleeping worker.
  void help_from_outside() noexcept;
  // Blocks until done without rethrowing (destructors).
  void wait_quietly() noexcept;
  // Before an untimed wait on a thread outside the pool: starts the roots if no worker has, then helps with
  // the run's tasks from the thread's own slot (help_from_own_slot).
  void help_as_outside_waiter() noexcept;
  // What this run's tasks carry, so that an outside thread waiting for the run may run them from its own slot.
  [[nodiscard]] detail::InlineTag inline_tag() const noexcept { return reinterpret_cast<detail::InlineTag>(this); }
  // An outside thread waiting without a deadline for `ready`: runs this run's tasks from its own slot while
  // there are any (the roots and whatever the tasks it runs make ready) and some worker is idle, as oneTBB's
  // waiting thread does in its arena slot. Returns ready(). Does nothing on a worker, or nested deeper than
  // kMaxHelpDepth.
  template <class Ready>
  bool help_from_own_slot(Ready ready) noexcept;
  static constexpr unsigned kMaxHelpDepth = 16;

  // For the executor's pool tasks (GraphTask) and Subflow.
  void run_task(GraphTaskKind kind, std::uint32_t index) noexcept;
  void task_dropped(GraphTaskKind kind, std::uint32_t index) noexcept;
  void record_exception(std::exception_ptr error) noexcept;
  // An exception of an execution of `node` (its body, a subflow child, a pipeline stage run by it): the node
  // failed. Cancels the run, or under ErrorPolicy::KeepGoing only marks the node failed.
  void record_exception(std::uint32_t node, std::exception_ptr error) noexcept;
  // A subflow child of `node` was not started because the run was cancelled.
  void child_skipped(std::uint32_t node) noexcept;
  // For Run::outcome / outcomes: throw std::logic_error before the end or if the run recorded none.
  [[nodiscard]] NodeOutcome outcome(Node node) const;
  [[nodiscard]] std::vector<NodeOutcome> outcomes() const;
  // Fails the run with weft::task_dropped(message) (a task of it was refused or dropped by the pool).
  void fail_dropped(const char* message) noexcept;
  // A DropPending shutdown began before `node` ran: fails the run with task_dropped naming the node.
  void stop_for_drop_pending(std::uint32_t node) noexcept;
  // Fails the run with task_dropped("weft::TaskGraph: " (or "weft::TaskScope: ") + before + the noun + " '" +
  // the node's name + after).
  void fail_dropped_at(std::uint32_t node, const char* before, const char* after) noexcept;
  void add_skipped(std::uint64_t count) noexcept { skipped_.fetch_add(count, std::memory_order_relaxed); }
  // Items a pipeline stage dropped (Overflow::Drop): counted in the run's statistics under `name`.
  void add_stage_drops(std::string name, std::uint64_t count) noexcept;
  [[nodiscard]] bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }
  [[nodiscard]] Pool& pool() const noexcept { return pool_; }
  [[nodiscard]] const GraphImpl& graph() const noexcept { return graph_; }
  // Subflow joiners sleep here; a subflow whose last child finished notifies it.
  [[nodiscard]] sync::Signal& subflow_signal() noexcept { return subflow_signal_; }
  // Where Subflow spawns record the children of this run (RunOptions::retain_subflows), or null.
  [[nodiscard]] RetainedSubflows* retained() const noexcept { return retained_; }
  // A unit of work of this run (a queued or running task) begins / ends; the run ends when none is left.
  // add_unit may only be called by a holder of a unit (so the count cannot reach zero meanwhile).
  void add_unit() noexcept { pending_.fetch_add(1, std::memory_order_relaxed); }
  void finish_unit() noexcept;
  // The units not finished, read once (relaxed): for tests that check what holds a unit and what does not.
  [[nodiscard]] std::uint64_t units() const noexcept { return pending_.load(std::memory_order_relaxed); }
  // A node of this run parked on a semaphore was woken: posts it again (it retries taking its units), and ends
  // the unit it held while parked (graph/semaphore.cpp).
  void resume_parked(std::uint32_t node) noexcept;
  // Module nodes (TaskGraph::add_graph): the inner runs in flight, cancelled when this run is (cancel(), or an
  // error). attach_child cancels `child` at once if this run already is; detach_child before `child` may go.
  void attach_child(RunState& child);
  void detach_child(RunState& child) noexcept;
  // The run whose node the calling thread is executing (innermost), or null.
  [[nodiscard]] static RunState* current() noexcept;
  // True if the calling thread is inside one of this run's nodes or subflow children: waiting for the run
  // from here could never end.
  [[nodiscard]] bool is_caller_inside() const noexcept;
  // The trace this run records into (RunOptions::trace, else the pool's), or null; and the run's number in it.
  [[nodiscard]] tracing::TraceImpl* tracer() const noexcept { return tracer_; }
  [[nodiscard]] std::uint32_t trace_run() const noexcept { return trace_run_; }

 private:
  void run_node(std::uint32_t node) noexcept;
  // Semaphores (graph/semaphore.cpp). A task of a node with semaphores: takes its units (or parks it), runs it,
  // gives them back, then goes on with its successors as run_node does.
  void run_node_with_semaphores(std::uint32_t node) noexcept;
  enum class Take : std::uint8_t { taken, parked, skip };
  // All of the node's units, or none: parked (the task ends; a release re-posts it), or skip (cancelled).
  [[nodiscard]] Take take_semaphores(std::uint32_t node) noexcept;
  // Gives back the units of the node's first `count` needs, starting at need `start` (wrapping).
  void give_semaphores(std::uint32_t slot, std::uint32_t start, std::uint32_t count) noexcept;
  // A task of a node with semaphores was dropped: hands on a wake-up it was given (see SemaphoreWaiter).
  void semaphore_task_dropped(std::uint32_t node) noexcept;
  // After cancelled_ is set: re-posts this run's parked nodes, which then skip.
  void wake_parked_on_cancel() noexcept;
  // add_unit for a thread that may not hold one: false if the run has already ended.
  [[nodiscard]] bool try_add_unit() noexcept;
  // A multi-token node's side of this run, as its token flow (graph/inbox/token_flow.hpp) asks for it.
  class NodeTokens;
  // Runs one execution of `node` (skips it if cancelled), joining its subflow. Returns the branch a condition
  // node picked (kNoBranch for other nodes, and for a skipped or failed execution).
  std::size_t execute(std::uint32_t node, std::uint64_t token) noexcept;
  // execute() with (kRecording) or without the RunOptions hooks (outcomes, times, KeepGoing's skipping).
  template <bool kRecording>
  std::size_t execute_as(std::uint32_t node, std::uint64_t token) noexcept;
  // The node finished: counts down its successors; returns one to run in place (or kNoIndex), posts the rest.
  // `branch`: what execute() returned (used by condition nodes only).
  [[nodiscard]] std::uint32_t finish_node(std::uint32_t node, std::size_t branch) noexcept;
  // run_node and finish_node with (kSpecial) or without the per-node hooks of special_: the plain loop of a
  // default run without condition nodes tests no flag per node for them (callgrind figures in
  // docs/perf-log.md).
  template <bool kSpecial>
  void run_node_as(std::uint32_t node) noexcept;
  template <bool kSpecial>
  [[nodiscard]] std::uint32_t finish_node_as(std::uint32_t node, std::size_t branch) noexcept;
  // finish_node of a condition node: starts its `branch`-th successor, if there is one, ignoring join counters.
  // Out of line: inlined into finish_node, it changed that function's code for every node (callgrind, chain_1k:
  // more instructions per node; docs/perf-log.md); out of line, the common path pays the flag test only.
  [[nodiscard, gnu::noinline]] std::uint32_t finish_condition(std::uint32_t node, std::size_t branch) noexcept;
  // Finishes `node` (a multi-token node's last token, or a node that held semaphores) and runs what it made
  // ready. `branch`: what execute() returned, for a condition node (a multi-token node is never one).
  void run_node_successors(std::uint32_t node, std::size_t branch = detail::kNoBranch) noexcept;
  void cancel_from_inside() noexcept;
  // Cancels the inner runs of module nodes in flight (after cancelled_ was set).
  void cancel_children() noexcept;
  void post(GraphTaskKind kind, std::uint32_t index, const NodeOptions* options) noexcept;
  // Claims roots and starts them until none is left (or, on an outside thread, no worker is idle).
  void run_roots(bool outside) noexcept;
  // Join group `index`'s counter reached zero: makes its members with options ready, claims one in-place
  // member for the caller to run (if `in_place` is free) and queues a members task for the others.
  void start_group(std::uint32_t index, std::uint32_t& in_place) noexcept;
  // Claims members of join group `index` and runs them until none is left (or, on an outside thread, no
  // worker is idle).
  void run_members(std::uint32_t index, bool outside) noexcept;
  [[nodiscard]] bool claim_roots() noexcept;
  // Starts a pass: resets the roots' cursor and claim, and posts the first roots task (with its two units).
  void post_roots() noexcept;
  // The pass's last unit finished: collects its statistics, then either starts the next pass (run_n /
  // run_until) from this thread, or ends the run. Out of line: a unit that is not the last never gets here.
  [[gnu::noinline]] void pass_ended() noexcept;
  // run_n / run_until: whether another pass is to start (never after an exception or a cancel).
  [[nodiscard]] bool another_pass() noexcept;
  // The last pass is over: calls on_done_ in a pool task of its own (or, refused, here), then complete().
  void end_run() noexcept;
  // Calls on_done_; its exception goes to the pool's error handler.
  void call_on_done() noexcept;
  // Hands the graph on (to the next queued run, if any) and tells the waiters: the run is over.
  void complete() noexcept;
  void ready(std::uint32_t node) noexcept;
  void fail(std::exception_ptr error) noexcept;

  // What RunOptions adds (outcomes, times, KeepGoing), all behind recording_ / keep_going_ so that a default run
  // pays one test per execution. One record per node, sized when the run starts; written with relaxed atomics
  // while the run goes, read once it is over (the pending count's acq_rel orders every write before the end).
  struct NodeRecord {
    std::atomic<std::uint8_t> flags{0};          // RecordFlag bits
    std::atomic<std::uint32_t> cause{kNoIndex};  // KeepGoing: the lowest failed ancestor, or kNoIndex
    std::exception_ptr error;                    // written once, by whoever set kFailed
    std::atomic<std::int64_t> start{kNoStart};   // steady_clock ticks: the earliest start of an execution
    std::atomic<std::int64_t> end{kNoEnd};       // the latest end of one
  };
  static constexpr std::int64_t kNoStart = std::numeric_limits<std::int64_t>::max();
  static constexpr std::int64_t kNoEnd = std::numeric_limits<std::int64_t>::min();
  enum RecordFlag : std::uint8_t {
    kStarted = 1,    // an execution started its body
    kFailed = 2,     // an execution (or child) threw, or the Overflow::Fail inbox was full
    kDropped = 4,    // Overflow::Drop dropped a token
    kCancelled = 8,  // an execution, token or child was not started: the run was cancelled
    kSkipped = 16,   // KeepGoing: not run, it descends from a failed node
  };
  // Marks the node failed with `error` (its first one is kept) and fails the run: cancels it, or under
  // KeepGoing only keeps the run's first exception for wait().
  void fail_node(std::uint32_t node, std::exception_ptr error) noexcept;
  void mark(std::uint32_t node, std::uint8_t flag) noexcept {
    records_[node].flags.fetch_or(flag, std::memory_order_relaxed);
  }
  // KeepGoing: if a predecessor passed a failed ancestor on, marks the node skipped (counting `executions`)
  // and returns true: it must not run, but finishes as usual so that its successors learn of the failure.
  [[nodiscard]] bool skip_for_failed_ancestor(std::uint32_t node, std::uint64_t executions) noexcept;
  // Tracing: a node's execution that started at `from` (TraceImpl::now) ended now.
  void trace_node(std::uint32_t node, std::int64_t from) const noexcept {
    tracer_->complete(tracing::TraceCategory::node, trace_names_[node], from, node, trace_run_);
  }
  void started(std::uint32_t node) noexcept;  // an execution of it starts its body now
  void ended(std::uint32_t node) noexcept;    // one ended now (children joined)
  // KeepGoing, as `node` finishes: if it failed or was skipped, lowers each successor's cause to its failed
  // ancestor, before finish_node counts them down (the join counter's acq_rel then publishes it).
  void pass_failure_on(std::uint32_t node) noexcept;
  [[nodiscard]] NodeOutcome outcome_of(std::uint32_t index) const;
  void require_outcomes(const char* call) const;

  GraphImpl& graph_;
  Pool& pool_;
  std::shared_ptr<RunState> self_;
  // pending_ is kept off every other field's cache line, and cancelled_ off pending_'s, by a line of padding on
  // each side of pending_, not by alignas: an over-aligned RunState would be allocated through the aligned new,
  // which glibc serves with memalign. callgrind, one-node graph run and waited for: allocating and freeing the
  // state that way took a large share of the run's instructions (docs/perf-log.md).
  [[maybe_unused]] std::byte line_before_pending_[atomics::kCacheLine];
  // Units of work not finished: each queued or running pool task of this run, plus the starter while it posts
  // the roots. The run is over when it reaches zero: then no task of the run touches the graph any more.
  std::atomic<std::uint64_t> pending_{1};
  [[maybe_unused]] std::byte line_after_pending_[atomics::kCacheLine];
  std::atomic<bool> cancelled_{false};  // read by every node before it runs; written once, if ever
  // RunOptions: records kept (outcomes, times or KeepGoing asked for them), KeepGoing, times. Read by every
  // execution beside cancelled_, on its cache line.
  const bool recording_;
  const bool outcomes_;  // RunOptions asked for outcomes (recording_ may be on for a trace alone)
  const bool keep_going_;
  const bool timing_;
  // Something of this run needs the per-node hooks: RunOptions that record (KeepGoing included), or condition
  // nodes in the graph. Else run_node takes the plain instantiation, which tests none of them per node.
  const bool special_;
  // RunOptions::retain_subflows: where this run's spawns record their children (null: they record nothing, at
  // the cost of this one test per spawn). Owned by retained_owner_ until start() hands it to the graph.
  RetainedSubflows* const retained_;
  std::unique_ptr<RetainedSubflows> retained_owner_;
  std::atomic<bool> done_{false};
  sync::Signal done_signal_;
  // Coroutines awaiting the run (and a TaskScope's job awaiters, through its ScopeShared::run_over): closed by
  // complete() after done_; coro_keep_ keeps the owner of a waiter pushed with a keeper alive until then.
  detail::CoroWaitList coro_waiters_;
  std::shared_ptr<const void> coro_keep_;
  sync::Signal subflow_signal_;

  std::atomic<bool> has_error_{false};
  std::exception_ptr first_error_;  // written once by whoever set has_error_; read after done_
  std::atomic<std::uint64_t> exceptions_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<bool> lost_tasks_{false};  // the pool refused or dropped a task of this run (task_dropped)
  std::size_t node_count_ = 0;
  std::uint32_t roots_count_ = 0;
  // The first roots task was claimed, by a worker running it or by an outside waiter (help_from_outside). True
  // until post_roots makes the roots claimable: a queued run's waiter must not start them before its turn.
  std::atomic<bool> roots_claimed_{true};
  // run_n / run_until (null: one pass). Touched only by start() and pass_ended(), which the pending count
  // orders one after another.
  std::unique_ptr<RunRepeat> repeat_;
  std::atomic<std::uint64_t> passes_{0};  // relaxed: read by stats() as a snapshot, exact once done
  std::atomic<bool> refused_{false};      // the pool refused a pass's roots task (start() reports it)
  // Filled at the end of each pass (sized at the start, so ending allocates nothing): {node, tokens dropped}.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> dropped_by_limiter_;
  // One per node with semaphores, indexed as graph_.semaphore_nodes() (null if there are none).
  std::unique_ptr<SemaphoreWaiter[]> semaphore_waiters_;
  // Module nodes' inner runs in flight (see attach_child). has_children_ spares cancel() the lock in a run
  // that never had any.
  std::atomic<bool> has_children_{false};
  std::mutex children_lock_;
  std::vector<RunState*> children_;
  const char* noun_ = "node";        // set_noun
  shared_function<void()> on_done_;  // RunOptions::on_done (empty: none)
  [[nodiscard]] bool scope_run() const noexcept { return noun_[0] == 'j'; }
  const std::uint64_t graph_id_;           // for Run::outcome's check of its node (the graph may be gone)
  std::unique_ptr<NodeRecord[]> records_;  // one per node if recording_, else null
  // RunOptions::trace, else the pool's PoolOptions::trace (null: not tracing): held for the run's life; its
  // recorder; this run's number in it; and each node's name interned in it (null if not tracing).
  std::shared_ptr<Trace> trace_;
  tracing::TraceImpl* tracer_ = nullptr;
  std::uint32_t trace_run_ = 0;
  std::unique_ptr<std::uint32_t[]> trace_names_;
  std::mutex stage_drops_lock_;
  std::vector<std::pair<std::string, std::uint64_t>> stage_drops_;  // {"pipeline/stage", items dropped}
};

// See line_before_pending_: a run's state must come from the plain operator new.
static_assert(alignof(RunState) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "RunState would need the aligned operator new");

// The scheduler's task-local slots (scheduler/engine/task_locals.hpp) that graph code uses: they follow a task that
// suspends on a fiber and resumes on another worker.
inline constexpr unsigned kCurrentRunSlot = 0;    // the RunState whose task runs here (executor.cpp)
inline constexpr unsigned kCurrentChildSlot = 1;  // the Subflow child running here (subflow.cpp)

namespace run_state_detail {
// How deep the calling outside thread is in help_from_own_slot (a node it runs may wait for another run, and
// help with that one): bounded, so that nested runs cannot grow its stack without limit.
inline thread_local unsigned outside_help_depth = 0;
}  // namespace run_state_detail

template <class Ready>
bool RunState::help_from_own_slot(Ready ready) noexcept {
  if (ready()) return true;
  if (engine::Engine::this_thread_worker() != nullptr) return false;
  unsigned& depth = run_state_detail::outside_help_depth;
  if (depth >= kMaxHelpDepth) return false;
  ++depth;
  engine::Engine& engine = detail::PoolAccess::engine(pool_);
  // Only while a worker is idle: when every worker is busy, a helping caller would be one thread more than
  // there are cores for compute-bound nodes (a parallel_for slows; docs/perf-log.md); it then
  // sleeps, and the workers steal what is left in its slot.
  (void)engine.help_from_own_slot([&] { return ready() || !engine.has_idle_worker(); }, inline_tag());
  --depth;
  return ready();
}

}  // namespace weft::graph
