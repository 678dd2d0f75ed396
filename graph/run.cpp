// weft::Run and the waiting side of a RunState: wait, cancel, statistics.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/errors.hpp"
#include "weft/task_graph.hpp"

namespace weft::graph {

namespace {
// The trace a run records into: its own, else its pool's.
[[nodiscard]] const std::shared_ptr<Trace>& trace_for(Pool& pool, const RunOptions& options) noexcept {
  return options.trace ? options.trace : detail::PoolAccess::engine(pool).trace();
}
}  // namespace

RunState::RunState(GraphImpl& graph, Pool& pool, const RunOptions& options)
    : graph_(graph),
      pool_(pool),
      recording_(options.record_outcomes || options.record_times || options.on_error == ErrorPolicy::KeepGoing ||
                 trace_for(pool, options) != nullptr),
      outcomes_(options.record_outcomes || options.record_times || options.on_error == ErrorPolicy::KeepGoing),
      keep_going_(options.on_error == ErrorPolicy::KeepGoing),
      timing_(options.record_times),
      special_(recording_ || graph.has_conditions()),
      retained_(options.retain_subflows ? new RetainedSubflows : nullptr),
      retained_owner_(retained_),
      on_done_(options.on_done),
      graph_id_(graph.id()) {
  // Here, not in start(): a queued run's waiter reads them (help_from_outside) while another thread starts it.
  // The graph is compiled by now and cannot change before the run ends.
  node_count_ = graph.size();
  roots_count_ = static_cast<std::uint32_t>(graph.roots().size());
  dropped_by_limiter_.assign(graph.limiter_count(), {kNoIndex, 0});
  const std::vector<SemaphoreNode>& semaphore_nodes = graph.semaphore_nodes();
  if (!semaphore_nodes.empty()) {
    semaphore_waiters_ = std::make_unique<SemaphoreWaiter[]>(semaphore_nodes.size());
    for (std::size_t i = 0; i < semaphore_nodes.size(); ++i) {
      semaphore_waiters_[i].run = this;
      semaphore_waiters_[i].node = semaphore_nodes[i].node;
    }
  }
  if (recording_) records_ = std::make_unique<NodeRecord[]>(graph.size());
  trace_ = trace_for(pool, options);
  tracer_ = tracing::TraceAccess::impl(trace_);
  if (tracer_ != nullptr) {
    trace_run_ = tracer_->next_run();
    trace_names_ = std::make_unique<std::uint32_t[]>(graph.size());
    for (std::uint32_t node = 0; node < graph.size(); ++node) trace_names_[node] = tracer_->intern(graph.name(node));
  }
}

bool RunState::is_caller_inside() const noexcept {
  return current() == this || detail::SubflowAccess::current_child_run() == this;
}

RunStatus RunState::wait(bool spin_outside) {
  // The innermost first: a child runs nested inside its node's join on one worker, inside both.
  if (detail::SubflowAccess::current_child_run() == this)
    throw would_deadlock(
        "weft::Run::wait: called from a subflow child of one of the run's own nodes; the run cannot end while "
        "it waits");
  if (current() == this)
    throw would_deadlock(
        "weft::Run::wait: called from inside one of the run's own nodes; the run cannot end while it waits");
  if (!done()) fiber::require_stack("weft::Run::wait (or TaskScope::wait)");
  help_as_outside_waiter();
  (void)wait_until(sync::Clock::time_point::max(), spin_outside);
  if (has_error_.load(std::memory_order_acquire)) std::rethrow_exception(first_error_);
  return cancelled() ? RunStatus::Cancelled : RunStatus::Completed;
}

void RunState::help_as_outside_waiter() noexcept {
  if (engine::Engine::this_thread_worker() != nullptr) return;  // a worker waits through wait_on_worker
  help_from_outside();
  (void)help_from_own_slot([this] { return done(); });
}

bool RunState::wait_until(sync::Clock::time_point deadline, bool spin_outside) {
  return sync::wait_until([this] { return done(); }, done_signal_, deadline,
                          spin_outside ? sync::kOutsideSpin : std::chrono::nanoseconds::zero());
}

void RunState::wait_quietly() noexcept {
  if (is_caller_inside()) return;  // a node (or subflow child) of this very run: waiting could never end
  try {
    help_as_outside_waiter();
    (void)wait_until(sync::Clock::time_point::max());
  } catch (...) {
    // Waiting itself does not throw; nothing to report from a destructor anyway.
  }
}

void RunState::cancel() noexcept {
  // A producer parked on a full inbox needs no wake-up: the next pop takes its role over and sees this.
  if (done()) return;
  cancelled_.store(true, std::memory_order_seq_cst);
  // Nodes parked on a semaphore skip at once instead of waiting for units that another run may hold for long.
  wake_parked_on_cancel();
  cancel_children();
}

void RunState::attach_child(RunState& child) {
  {
    const std::lock_guard<std::mutex> hold(children_lock_);
    children_.push_back(&child);
  }
  has_children_.store(true, std::memory_order_seq_cst);
  // seq_cst, with cancel()'s store of cancelled_ and then its look at has_children_ / the list: either the
  // canceller finds `child` in the list or this load finds the run cancelled.
  if (cancelled()) child.cancel();
}

void RunState::detach_child(RunState& child) noexcept {
  const std::lock_guard<std::mutex> hold(children_lock_);
  std::erase(children_, &child);
}

void RunState::cancel_children() noexcept {
  if (!has_children_.load(std::memory_order_seq_cst)) return;
  // Under the lock: a child is detached (and may go) only after its module node stopped waiting for it.
  const std::lock_guard<std::mutex> hold(children_lock_);
  for (RunState* child : children_) child->cancel();
}

void RunState::add_stage_drops(std::string name, std::uint64_t count) noexcept {
  dropped_.fetch_add(count, std::memory_order_relaxed);
  try {
    const std::lock_guard<std::mutex> hold(stage_drops_lock_);
    stage_drops_.emplace_back(std::move(name), count);
  } catch (...) {  // out of memory: the total above still counts them
  }
}

RunStats RunState::stats() const {
  RunStats stats;
  stats.dropped = dropped_.load(std::memory_order_relaxed);
  stats.skipped = skipped_.load(std::memory_order_relaxed);
  stats.exceptions = exceptions_.load(std::memory_order_relaxed);
  if (done()) {
    stats.dropped_by_node.assign(node_count_, 0);
    for (const auto& [node, dropped] : dropped_by_limiter_)
      if (node != kNoIndex) stats.dropped_by_node[node] = dropped;
    stats.dropped_by_stage = stage_drops_;
  }
  stats.passes = passes_.load(std::memory_order_relaxed);
  return stats;
}

void RunState::require_outcomes(const char* call) const {
  if (!done()) {
    throw std::logic_error(std::string(call) +
                           ": the run is not over yet; outcomes are known once it is (call wait() first)");
  }
  if (!outcomes_) {
    throw std::logic_error(std::string(call) +
                           ": this run did not record outcomes; start it with "
                           "graph.run(pool, weft::RunOptions{.record_outcomes = true}) (record_times and "
                           "ErrorPolicy::KeepGoing record them too)");
  }
}

NodeOutcome RunState::outcome_of(std::uint32_t index) const {
  // Read after the run is over: the pending count's acq_rel ordered every write before done_'s release.
  const NodeRecord& record = records_[index];
  const std::uint8_t flags = record.flags.load(std::memory_order_relaxed);
  NodeOutcome outcome;
  if ((flags & kFailed) != 0) {
    outcome.state = NodeState::Failed;
    outcome.error = record.error;
  } else if ((flags & kSkipped) != 0) {
    outcome.state = NodeState::Skipped;
    outcome.failed_ancestor = GraphImpl::make_node(record.cause.load(std::memory_order_relaxed), graph_id_);
  } else if ((flags & kCancelled) != 0) {
    outcome.state = NodeState::Cancelled;
  } else if ((flags & kDropped) != 0) {
    outcome.state = NodeState::Dropped;
  } else if ((flags & kStarted) != 0) {
    outcome.state = NodeState::Ran;
  }
  const std::int64_t start = record.start.load(std::memory_order_relaxed);
  const std::int64_t end = record.end.load(std::memory_order_relaxed);
  using Clock = std::chrono::steady_clock;
  if (start != kNoStart) outcome.start = Clock::time_point(Clock::duration(start));
  if (end != kNoEnd) outcome.end = Clock::time_point(Clock::duration(end));
  return outcome;
}

NodeOutcome RunState::outcome(Node node) const {
  require_outcomes("weft::Run::outcome");
  if (GraphImpl::graph_of(node) != graph_id_ || node.index() >= node_count_) {
    std::string message = "weft::Run::outcome(node): `node` is ";
    if (!node.valid()) {
      message += "an empty weft::Node (default-constructed), of no graph";
    } else {
      message += "node " + std::to_string(node.index());
      message += GraphImpl::graph_of(node) != graph_id_
                     ? " of another graph"
                     : ", past the " + std::to_string(node_count_) + " nodes the run's graph had when it ran";
    }
    message += ", not a node of this run's graph";
    throw invalid_graph(message);
  }
  return outcome_of(node.index());
}

std::vector<NodeOutcome> RunState::outcomes() const {
  require_outcomes("weft::Run::outcomes");
  std::vector<NodeOutcome> all;
  all.reserve(node_count_);
  for (std::size_t i = 0; i < node_count_; ++i) all.push_back(outcome_of(static_cast<std::uint32_t>(i)));
  return all;
}

}  // namespace weft::graph

namespace weft {

Run& Run::operator=(Run&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) state_->wait_quietly();
    state_ = std::move(other.state_);
  }
  return *this;
}

Run::~Run() {
  if (state_ != nullptr) state_->wait_quietly();
}

RunStatus Run::wait() {
  require_valid("wait");
  return state_->wait();
}

bool Run::wait_for_ns(std::chrono::nanoseconds timeout) {
  require_valid("wait_for");
  if (!state_->done()) fiber::require_stack("weft::Run::wait_for");
  return state_->wait_until(detail::deadline_after(timeout));  // saturates one short of max() ("no deadline")
}

void Run::cancel() noexcept {
  if (state_ != nullptr) state_->cancel();
}

bool Run::done() const noexcept { return state_ == nullptr || state_->done(); }

RunStats Run::stats() const {
  require_valid("stats");
  return state_->stats();
}

NodeOutcome Run::outcome(Node node) const {
  require_valid("outcome");
  return state_->outcome(node);
}

std::vector<NodeOutcome> Run::outcomes() const {
  require_valid("outcomes");
  return state_->outcomes();
}

void Run::require_valid(const char* what) const {
  if (state_ == nullptr) {
    std::string message = "weft::Run::";
    message += what;
    message += ": the run handle is empty (default-constructed or moved from)";
    throw std::logic_error(message);
  }
}

}  // namespace weft
