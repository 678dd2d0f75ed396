// The executor: how a run moves through the graph. A pool task runs a one-token node and then, in place, one
// successor it made ready (so a chain runs on one worker with no queueing); other ready successors are posted.
// Multi-token nodes go through their Limiter: an activation task pushes tokens into the inbox, executor tasks
// (at most `concurrency`) pop and run them.
#include <exception>
#include <string>
#include <utility>

#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/pool_access.hpp"
#include "weft/errors.hpp"

namespace weft::detail {
namespace {

thread_local RunState* tl_current_run = nullptr;

// The closure a run posts: 16 bytes, so it sits inline in the pool's task. If the pool destroys it unrun
// (refused at shutdown, or dropped by DropPending), the run is told: nothing is lost silently.
class GraphTask {
 public:
  GraphTask(RunState* run, GraphTaskKind kind, std::uint32_t index, std::uint32_t end) noexcept
      : run_(run), index_(index), end_(end), kind_(kind) {}
  GraphTask(GraphTask&& other) noexcept
      : run_(std::exchange(other.run_, nullptr)), index_(other.index_), end_(other.end_), kind_(other.kind_) {}
  GraphTask& operator=(GraphTask&&) = delete;
  ~GraphTask() {
    if (run_ != nullptr) run_->task_dropped(kind_, index_, end_);
  }
  void operator()() noexcept { std::exchange(run_, nullptr)->run_task(kind_, index_, end_); }

 private:
  RunState* run_;
  std::uint32_t index_;
  std::uint32_t end_;  // GraphTaskKind::roots only
  GraphTaskKind kind_;
};

}  // namespace

RunState* RunState::current() noexcept { return tl_current_run; }

bool RunState::start(std::shared_ptr<RunState> self) noexcept {
  self_ = std::move(self);
  node_count_ = graph_.size();
  // One task starts every root: posting 2^20 roots one by one from an outside thread would push each through
  // the shared injection queue; split on the workers instead, they spread over the deques.
  const auto roots = static_cast<std::uint32_t>(graph_.roots().size());
  roots_count_ = roots;
  bool accepted = true;
  if (roots != 0) {
    // Two units: one for the task itself, one for running the roots, which an outside waiter may take over
    // (help_from_outside); whoever claims the roots gives that second unit back when they are started.
    add_unit();
    add_unit();
    try {
      PoolAccess::post(pool_, GraphTask(this, GraphTaskKind::roots, 0, roots), TaskOptions{}, inline_tag());
    } catch (const weft::pool_closed&) {
      // Refused: the task's destructor already failed the run and gave its unit back.
      accepted = false;
    } catch (...) {
      // Out of memory: likewise accounted; wait() reports the run failed.
    }
  }
  finish_unit();  // the starter's own unit: the run may end right here
  return accepted;
}

void RunState::run_task(GraphTaskKind kind, std::uint32_t index, std::uint32_t end) noexcept {
  // Marks the thread as inside this run once per task, not per node: an in-place chain is one task.
  RunState* const outer = std::exchange(tl_current_run, this);
  switch (kind) {
    case GraphTaskKind::node:
      run_node(index);
      break;
    case GraphTaskKind::activation:
      run_activation(index);
      break;
    case GraphTaskKind::executor:
      run_executor(index);
      break;
    case GraphTaskKind::roots:
      if (index != 0) {
        run_roots(index, end);
      } else if (claim_roots()) {  // else an outside waiter took the roots over
        run_roots(0, end);
        finish_unit();
      }
      break;
  }
  tl_current_run = outer;
  finish_unit();
}

bool RunState::claim_roots() noexcept {
  // acq_rel: whoever wins sees the run as started; exactly one of the worker and an outside waiter runs them.
  return !roots_claimed_.exchange(true, std::memory_order_acq_rel);
}

void RunState::help_from_outside() noexcept {
  const auto roots = static_cast<std::uint32_t>(roots_count_);
  if (roots == 0 || !claim_roots()) return;
  RunState* const outer = std::exchange(tl_current_run, this);
  run_roots(0, roots);
  tl_current_run = outer;
  finish_unit();  // the roots' unit, which the claim handed to this thread
}

void RunState::run_roots(std::uint32_t begin, std::uint32_t end) noexcept {
  // Halves go to this worker's deque, where idle workers steal them and split further.
  while (end - begin > 1) {
    const std::uint32_t middle = begin + (end - begin) / 2;
    post(GraphTaskKind::roots, middle, nullptr, end);
    end = middle;
  }
  const std::uint32_t root = graph_.roots()[begin];
  if (graph_.node(root).runs_in_place) {
    run_node(root);
  } else {
    ready(root);
  }
}

void RunState::run_node(std::uint32_t node) noexcept {
  while (node != kNoIndex) {
    execute(node, 0);
    node = finish_node(node);
  }
}

void RunState::execute(std::uint32_t node, std::uint64_t token) noexcept {
  if (cancelled()) {
    add_skipped(1);
    return;
  }
  // A node that runs in place has default options: Normal priority, without an options look-up.
  const Priority priority =
      graph_.node(node).runs_in_place ? Priority::Normal : graph_.options(node).priority;
  Subflow subflow = SubflowAccess::make_root(*this, priority);
  NodeCall call{subflow, static_cast<std::size_t>(token)};
  try {
    graph_.body(node)(call);
  } catch (...) {
    record_exception(std::current_exception());
  }
  SubflowAccess::join_if_spawned(subflow);
}

std::uint32_t RunState::finish_node(std::uint32_t node) noexcept {
  const CompiledNode& done = graph_.node(node);
  const std::uint32_t* successors = graph_.successors();
  std::uint32_t in_place = kNoIndex;
  for (std::uint32_t i = done.succ_begin; i != done.succ_end; ++i) {
    const std::uint32_t next = successors[i];
    const CompiledNode& candidate = graph_.node(next);
    if (candidate.join_init != 1) {
      std::atomic<std::uint32_t>& join = graph_.join(next);
      // acq_rel: each predecessor releases what its body wrote; the last one, by the release sequence of these
      // RMWs, acquires them all, so `next` runs after every predecessor finished.
      if (join.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      // Reset for the next run: nothing else touches this counter in this run, and the next run starts only
      // after this one ended (the run's pending count orders it).
      join.store(candidate.join_init, std::memory_order_relaxed);
    }
    if (in_place == kNoIndex && candidate.runs_in_place) {
      in_place = next;
    } else {
      ready(next);
    }
  }
  return in_place;
}

void RunState::ready(std::uint32_t node) noexcept {
  const CompiledNode& compiled = graph_.node(node);
  if (compiled.limiter != kNoIndex) {
    post(GraphTaskKind::activation, node, &graph_.options(node));
  } else {
    post(GraphTaskKind::node, node, compiled.runs_in_place ? nullptr : &graph_.options(node));
  }
}

void RunState::post(GraphTaskKind kind, std::uint32_t index, const NodeOptions* options,
                    std::uint32_t end) noexcept {
  add_unit();
  TaskOptions task_options{};
  if (options != nullptr) {
    task_options.priority = options->priority;
    task_options.affinity = options->affinity;
  }
  try {
    PoolAccess::post(pool_, GraphTask(this, kind, index, end), task_options, inline_tag());
  } catch (...) {
    // The pool refused it (shut down) or could not allocate: the GraphTask it was given has been destroyed
    // unrun, and its destructor already failed the run and gave the unit back (task_dropped).
  }
}

void RunState::run_activation(std::uint32_t node) noexcept {
  graph::Limiter& limiter = graph_.limiter(graph_.node(node).limiter);
  // relaxed: executors see it through the inbox (a push releases, a pop acquires). No executor of this
  // activation runs yet. The park is left empty by every run (each park is taken over by a later pop, a
  // dropped executor drains like a live one); reset anyway, as remaining is.
  limiter.remaining.store(limiter.tokens, std::memory_order_relaxed);
  limiter.park.reset();
  produce(node, limiter, 0);
}

void RunState::produce(std::uint32_t node, graph::Limiter& limiter, std::uint64_t token) noexcept {
  const std::uint64_t tokens = limiter.tokens;
  const std::uint32_t limiter_index = graph_.node(node).limiter;
  while (token < tokens) {
    if (cancelled()) {
      add_skipped(tokens - token);
      token_done(node, limiter, tokens - token);
      return;
    }
    if (!limiter.inbox.try_push(token)) {
      if (limiter.overflow == Overflow::Drop) {
        limiter.dropped.fetch_add(1, std::memory_order_relaxed);
        dropped_.fetch_add(1, std::memory_order_relaxed);
        ++token;
        token_done(node, limiter, 1);
        continue;
      }
      if (limiter.overflow == Overflow::Fail) {
        std::string message = "weft::TaskGraph: node '";
        message += graph_.name(node);
        message += "' found its inbox full (capacity ";
        message += std::to_string(limiter.inbox.capacity());
        message += ", Overflow::Fail): the run is cancelled";
        fail(std::make_exception_ptr(inbox_full(message)));
        add_skipped(tokens - token);
        token_done(node, limiter, tokens - token);
        return;
      }
      // Overflow::Block: an executor is in flight (every push below claimed one if a slot was free, and one
      // that leaves looks at the inbox again), so a pop will come. Park here rather than wait: the next pop
      // takes the producer's role over (graph/producer_park.hpp). The producer is the only pusher, so room
      // park() sees is the slot the retried push takes.
      if (!limiter.park.park(token, [&] { return limiter.inbox.push_would_succeed_hint(); })) return;
      continue;
    }
    ++token;
    if (limiter.slots.claim_after_push()) post(GraphTaskKind::executor, limiter_index, &graph_.options(node));
  }
}

void RunState::run_executor(std::uint32_t limiter_index) noexcept {
  graph::Limiter& limiter = graph_.limiter(limiter_index);
  const std::uint32_t node = graph_.limited_node(limiter_index);
  for (;;) {
    while (std::optional<std::uint64_t> token = limiter.inbox.try_pop()) {
      // Feed the inbox before running the token, so that other executors have work meanwhile.
      std::uint64_t from = 0;
      if (limiter.producer_may_park && limiter.park.take_after_pop(from)) produce(node, limiter, from);
      execute(node, *token);
      token_done(node, limiter, 1);
    }
    // Give the slot back, unless a token arrived meanwhile (graph/execution_slots.hpp has the protocol).
    if (!limiter.slots.release_or_continue([&] { return limiter.inbox.empty_hint(); })) return;
  }
}

void RunState::token_done(std::uint32_t node, graph::Limiter& limiter, std::uint64_t count) noexcept {
  // acq_rel: the last token's finisher sees what every other token's execution wrote before finishing the node.
  if (limiter.remaining.fetch_sub(count, std::memory_order_acq_rel) != count) return;
  run_node_successors(node);
}

void RunState::run_node_successors(std::uint32_t node) noexcept {
  const std::uint32_t next = finish_node(node);
  if (next != kNoIndex) run_node(next);
}

void RunState::task_dropped(GraphTaskKind kind, std::uint32_t index, std::uint32_t end) noexcept {
  if (kind == GraphTaskKind::roots && index == 0) {
    if (!claim_roots()) {
      finish_unit();  // an outside waiter took the roots over: nothing was lost
      return;
    }
    finish_unit();  // the roots' own unit; the task's unit goes at the end as for every kind
  }
  // The dropped task's node never finishes: the join counters after it stop part-way. relaxed: read by the
  // run's last unit, which the pending count's acq_rel orders after this.
  lost_tasks_.store(true, std::memory_order_relaxed);
  const std::uint32_t node = kind == GraphTaskKind::executor ? graph_.limited_node(index)
                             : kind == GraphTaskKind::roots  ? graph_.roots()[index]
                                                             : index;
  try {
    std::string message = "weft::TaskGraph: a task of node '";
    message += graph_.name(node);
    message += "' was not run: the pool refused it (shut down, or out of memory) or dropped it (shut down)";
    fail(std::make_exception_ptr(weft::task_dropped(message)));
  } catch (...) {
    fail(std::current_exception());  // out of memory building the message: still fail the run
  }
  switch (kind) {
    case GraphTaskKind::node:
      add_skipped(1);
      break;
    case GraphTaskKind::activation:
      add_skipped(graph_.limiter(graph_.node(node).limiter).tokens);
      break;
    case GraphTaskKind::roots:
      add_skipped(end - index);  // the roots it would have started (descendants not counted)
      break;
    case GraphTaskKind::executor: {
      // Tokens this executor would have run: count them, so that nothing is lost without a trace.
      // A producer parked on the full inbox is taken over as after any pop (the run has failed, so it counts
      // the tokens it had left as skipped). It leaves as an executor does (release_or_continue): a token pushed
      // while it drained, whose producer saw this slot still taken, would otherwise stay in the inbox into the
      // graph's next run.
      graph::Limiter& limiter = graph_.limiter(index);
      do {
        while (limiter.inbox.try_pop()) {
          add_skipped(1);
          std::uint64_t from = 0;
          if (limiter.producer_may_park && limiter.park.take_after_pop(from)) produce(node, limiter, from);
        }
      } while (limiter.slots.release_or_continue([&] { return limiter.inbox.empty_hint(); }));
      break;
    }
  }
  finish_unit();
}

void RunState::fail_dropped(const char* message) noexcept {
  try {
    fail(std::make_exception_ptr(weft::task_dropped(message)));
  } catch (...) {
    fail(std::current_exception());
  }
}

void RunState::record_exception(std::exception_ptr error) noexcept {
  exceptions_.fetch_add(1, std::memory_order_relaxed);
  fail(std::move(error));
}

void RunState::fail(std::exception_ptr error) noexcept {
  // acq_rel: exactly one writer of first_error_; readers look only after the run is done (pending orders it).
  if (!has_error_.exchange(true, std::memory_order_acq_rel)) first_error_ = std::move(error);
  cancel_from_inside();
}

void RunState::cancel_from_inside() noexcept {
  // A parked producer needs no wake-up: the next pop takes its role over and sees the cancellation.
  cancelled_.store(true, std::memory_order_seq_cst);
}

void RunState::finish_unit() noexcept {
  // acq_rel: every unit's work happens-before the last decrement, which then publishes the end of the run.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::shared_ptr<RunState> keep = std::move(self_);  // this state outlives the wake-up below
  for (std::size_t i = 0; i < graph_.limiter_count(); ++i) {
    graph::Limiter& limiter = graph_.limiter(static_cast<std::uint32_t>(i));
    const std::uint64_t dropped = limiter.dropped.load(std::memory_order_relaxed);
    if (dropped != 0) dropped_by_limiter_[i] = {graph_.limited_node(static_cast<std::uint32_t>(i)), dropped};
  }
  // A run that lost tasks left join counters part-way down (a run that completes or is cancelled takes every
  // node through finish_node, which counts each one down to zero and back to its start): set them all back,
  // or the next run would start a node before its predecessors finished.
  if (lost_tasks_.load(std::memory_order_relaxed)) graph_.reset_join_counters();
  graph_.run_ended();  // from here on the graph may be changed, run again or destroyed: touch it no more
  done_.store(true, std::memory_order_release);
  done_signal_.notify();
}

}  // namespace weft::detail
