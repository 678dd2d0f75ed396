// The executor: how a run moves through the graph. A pool task runs a one-token node and then, in place, one
// successor it made ready (so a chain runs on one worker with no queueing); other ready successors are posted.
// The roots, and the members of a join group, are not posted one by one: tasks claim them from a cursor
// (graph/claim_cursor.hpp), a few at a time, keeping one such task queued while any are left.
// Multi-token nodes go through their Limiter: an activation task pushes tokens into the inbox, executor tasks
// (at most `concurrency`) pop and run them.
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "graph/inbox/token_flow.hpp"
#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/engine/pool_access.hpp"
#include "scheduler/engine/task_locals.hpp"
#include "weft/errors.hpp"

namespace weft::graph {
namespace {

// The closure a run posts: 16 bytes, so it sits inline in the pool's task. If the pool destroys it unrun
// (refused at shutdown, or dropped by DropPending), the run is told: nothing is lost silently.
class GraphTask {
 public:
  GraphTask(RunState* run, GraphTaskKind kind, std::uint32_t index) noexcept : run_(run), index_(index), kind_(kind) {}
  GraphTask(GraphTask&& other) noexcept
      : run_(std::exchange(other.run_, nullptr)), index_(other.index_), kind_(other.kind_) {}
  GraphTask& operator=(GraphTask&&) = delete;
  ~GraphTask() {
    if (run_ != nullptr) run_->task_dropped(kind_, index_);
  }
  void operator()() noexcept { std::exchange(run_, nullptr)->run_task(kind_, index_); }

 private:
  RunState* run_;
  std::uint32_t index_;
  GraphTaskKind kind_;
};

}  // namespace

RunState* RunState::current() noexcept { return static_cast<RunState*>(engine::task_local(kCurrentRunSlot)); }

// What a multi-token node's token flow (graph/inbox/token_flow.hpp) does to the run: post executors, run tokens, count
// what is skipped or dropped, fail on a full inbox under Overflow::Fail, finish the node after its last token.
class RunState::NodeTokens {
 public:
  NodeTokens(RunState& run, std::uint32_t limiter_index) noexcept
      : run_(run), node_(run.graph_.limited_node(limiter_index)), limiter_index_(limiter_index) {}

  [[nodiscard]] bool cancelled() const noexcept { return run_.cancelled(); }
  void post_executor() noexcept { run_.post(GraphTaskKind::executor, limiter_index_, &run_.graph_.options(node_)); }
  void execute(std::uint64_t token) noexcept { (void)run_.execute(node_, token); }
  void skipped(std::uint64_t count) noexcept {
    if (run_.recording_) [[unlikely]]
      run_.mark(node_, kCancelled);  // RunOptions: see NodeRecord
    run_.add_skipped(count);
  }
  void dropped() noexcept {
    if (run_.recording_) [[unlikely]]
      run_.mark(node_, kDropped);
    run_.dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  void inbox_full() noexcept {
    inbox::Limiter& limiter = run_.graph_.limiter(limiter_index_);
    try {
      std::string message = "weft::TaskGraph: node '";
      message += run_.graph_.name(node_);
      message += "' found its inbox full (capacity ";
      message += std::to_string(limiter.inbox.capacity());
      message += run_.keep_going_ ? ", Overflow::Fail): the node failed, its descendants are skipped"
                                  : ", Overflow::Fail): the run is cancelled";
      run_.fail_node(node_, std::make_exception_ptr(weft::inbox_full(message)));
    } catch (...) {
      run_.fail_node(node_, std::current_exception());  // out of memory building the message: still fail
    }
  }
  void node_done() noexcept { run_.run_node_successors(node_); }

 private:
  RunState& run_;
  const std::uint32_t node_;
  const std::uint32_t limiter_index_;
};

bool RunState::start(std::shared_ptr<RunState> self) noexcept {
  self_ = std::move(self);
  // The run holds the graph now: the previous run's retained children go, this run's (if any) take their place.
  graph_.replace_retained(std::move(retained_owner_));
  // run_n / run_until start even their first pass in pass_ended (reached at once through the starter's unit),
  // so that the count or predicate is checked before every pass in one place. A run cancelled while it was
  // queued starts no pass (another_pass says no for run_n / run_until).
  if (repeat_ == nullptr && !cancelled()) {
    passes_.store(1, std::memory_order_relaxed);
    post_roots();
  }
  finish_unit();  // the starter's own unit: the run may end right here
  return !refused_.load(std::memory_order_relaxed);
}

namespace {
// Where a start_queued loop up this thread's stack takes the next queued run to start (null: none is running).
// Set only while that loop is inside a start() on this thread, which never suspends: a callback called from in
// there (call_on_done, when the pool refused its task) runs with it cleared, so a fiber that suspends in the
// callback and resumes on another worker leaves no thread pointing at its slot.
thread_local std::shared_ptr<RunState>* queued_start_slot = nullptr;
}  // namespace

void RunState::start_queued(std::shared_ptr<RunState> run) noexcept {
  if (queued_start_slot != nullptr) {
    *queued_start_slot = std::move(run);  // the loop up the stack starts it once the start() it is in returns
    return;
  }
  std::shared_ptr<RunState> slot = std::move(run);
  while (slot != nullptr) {
    const std::shared_ptr<RunState> next = std::move(slot);  // kept alive here until start() has returned
    for (std::size_t i = 0; i < next->graph_.limiter_count(); ++i)
      next->graph_.limiter(static_cast<std::uint32_t>(i)).dropped.store(0, std::memory_order_relaxed);
    queued_start_slot = &slot;
    // Refused (the pool was shut down meanwhile): the run has ended failed (task_dropped), which its wait() says.
    (void)next->start(next);
    queued_start_slot = nullptr;
  }
}

void RunState::post_roots() noexcept {
  // One task starts the roots, claiming them from the roots' cursor (graph/claim_cursor.hpp): posting 2^20
  // roots one by one from an outside thread would push each through the shared injection queue.
  const std::uint32_t roots = roots_count_;
  if (roots == 0) return;
  // Two units: one for the task itself, one for running the roots, which an outside waiter may take over
  // (help_from_outside); whoever claims the roots gives that second unit back once it no longer needs it.
  add_unit();
  add_unit();
  graph::ClaimCursor& cursor = graph_.roots_cursor();
  // The first roots task is counted queued by the reset and posted below whatever happens meanwhile: its unit was
  // added above. (Posted through keep_one_queued, after the store below, it could be skipped: an outside waiter
  // that claimed the roots in between found the cursor with no task queued and queued one of its own, or claimed
  // every root, and the unit of the task never posted held the pass, and the run, forever.)
  cursor.reset(0, roots, 1);
  // A later pass of run_n / run_until: the roots are to claim again. release, after the cursor's reset: an
  // outside waiter that claims them (acq_rel) finds the cursor ready, with this task counted.
  roots_claimed_.store(false, std::memory_order_release);
  try {
    detail::PoolAccess::post(pool_, GraphTask(this, GraphTaskKind::roots, 0), TaskOptions{}, inline_tag());
  } catch (const weft::pool_closed&) {
    // Refused: the task's destructor already failed the run and gave its unit back.
    refused_.store(true, std::memory_order_relaxed);
  } catch (...) {
    // Out of memory: likewise accounted; wait() reports the run failed.
  }
}

void RunState::run_task(GraphTaskKind kind, std::uint32_t index) noexcept {
  // Marks the thread as inside this run once per task, not per node: an in-place chain is one task.
  void* const outer = engine::exchange_task_local(kCurrentRunSlot, this);
  switch (kind) {
    case GraphTaskKind::node:
      if (graph_.node(index).has_semaphores) [[unlikely]] {
        run_node_with_semaphores(index);
      } else {
        run_node(index);
      }
      break;
    case GraphTaskKind::activation: {
      static_assert(inbox::TokenRun<NodeTokens>);
      const std::uint32_t limiter_index = graph_.node(index).limiter;
      // KeepGoing: a node after a failure is skipped whole, its inbox untouched; its successors learn of it.
      if (keep_going_ && skip_for_failed_ancestor(index, graph_.limiter(limiter_index).tokens)) [[unlikely]] {
        run_node_successors(index);
        break;
      }
      NodeTokens tokens(*this, limiter_index);
      inbox::start_activation(graph_.limiter(limiter_index), tokens);
      break;
    }
    case GraphTaskKind::executor: {
      NodeTokens tokens(*this, index);
      inbox::run_executor(graph_.limiter(index), tokens);
      break;
    }
    case GraphTaskKind::roots:
      graph_.roots_cursor().task_started();
      // The first task may give the roots' unit back at once: its own unit covers what it claims. If an outside
      // waiter took the roots over, this task claims beside it.
      if (index == 0 && claim_roots()) finish_unit();
      // An outside waiter may run this task from its own slot (help_from_own_slot): it then claims as one.
      run_roots(engine::Engine::this_thread_worker() == nullptr);
      break;
    case GraphTaskKind::members:
      graph_.group_cursor(index).task_started();
      run_members(index, engine::Engine::this_thread_worker() == nullptr);
      break;
    case GraphTaskKind::done:
      // No unit: the run's units are all finished. Marked as inside the run (above), so that the callback's
      // wait for its own run throws would_deadlock instead of hanging.
      call_on_done();
      (void)engine::exchange_task_local(kCurrentRunSlot, outer);
      complete();
      return;
  }
  (void)engine::exchange_task_local(kCurrentRunSlot, outer);
  finish_unit();
}

bool RunState::claim_roots() noexcept {
  // acq_rel: whoever wins sees the run as started; exactly one of the worker and an outside waiter runs them.
  return !roots_claimed_.exchange(true, std::memory_order_acq_rel);
}

void RunState::help_from_outside() noexcept {
  const auto roots = static_cast<std::uint32_t>(roots_count_);
  if (roots == 0) return;
  // Roots already claimed (a worker's roots task, an earlier waiter, a refused or dropped roots task; always so
  // once the run is over): the claim below would fail, so the pool is not touched at all. A finished Run may
  // outlive its pool, and its wait(), destructor and assignment come here. acquire: pairs with post_roots'
  // release store of false for a later pass; a stale true only skips help the roots task gives anyway.
  if (roots_claimed_.load(std::memory_order_acquire)) return;
  // Counted as an inline run of the pool from before the claim to after the last node it runs here, so that a
  // Drain shutdown (and wait_idle) waits for the nodes this thread runs in place: they are work of a run the pool
  // accepted, whose roots task counts as pending until it has run (after this claim, which it then loses) or been
  // dropped. seq_cst RMW, before the claim's acq_rel exchange, as Engine::run_inline counts before its claim: an
  // idle() that reads the roots task finished (finished before submitted) reads this start too.
  engine::Engine& engine = detail::PoolAccess::engine(pool_);
  weft::detail::InlineRunCounter& inline_runs = engine.inline_runs();
  inline_runs.started.fetch_add(1, std::memory_order_seq_cst);
  if (claim_roots()) {
    void* const outer = engine::exchange_task_local(kCurrentRunSlot, this);
    // As one task of the pool: inside its hooks, and marked so that the pool's waits refuse to wait from here.
    // The roots' unit, which the claim handed to this thread, is given back inside the frame too: if it is the
    // pass's last, this thread ends the pass, and the next pass of run_n / run_until (or the next queued run)
    // is posted from here; outside the frame, a Drain's closed gate would refuse it and fail an accepted run.
    // *this may be gone after finish_unit. Refused (false) if the thread can have no slot in the pool: the
    // roots task runs them all then.
    const bool ran = engine.run_here(Priority::Normal, [this, outer] {
      run_roots(true);
      (void)engine::exchange_task_local(kCurrentRunSlot, outer);  // out of this run, as run_task leaves it
      finish_unit();
    });
    if (!ran) {
      (void)engine::exchange_task_local(kCurrentRunSlot, outer);
      finish_unit();
    }
  }
  // release: idle() reads finished with acquire, and then everything the nodes run here did.
  inline_runs.finished.fetch_add(1, std::memory_order_release);
  engine.inline_run_finished();
}

void RunState::run_roots(bool outside) noexcept {
  graph::ClaimCursor& cursor = graph_.roots_cursor();
  const engine::Engine& engine = detail::PoolAccess::engine(pool_);
  const unsigned threads = engine.size();
  for (bool first = true;; first = false) {
    cursor.keep_one_queued([this] { post(GraphTaskKind::roots, 1, nullptr); });
    // An outside thread is one thread more than there are cores: past its first root it claims only while some
    // worker sleeps (as help_from_own_slot), and leaves the rest to the task just made sure of.
    if (outside && !first && !engine.has_idle_worker()) return;
    // One root at a time on an outside thread, so that it stops as soon as no worker is idle.
    const graph::ClaimCursor::Claim claim = outside ? cursor.claim_one() : cursor.claim(threads);
    if (claim.lo == claim.hi) return;
    for (std::uint32_t item = claim.lo; item != claim.hi; ++item) {
      const std::uint32_t root = graph_.roots()[item];
      // A claimed root waits behind a High task in the pool as run_node's successors do: posted, not run here.
      if (graph_.node(root).runs_in_place && !engine.worker_should_yield_to_high()) {
        run_node(root);
      } else {
        ready(root);
      }
    }
  }
}

void RunState::run_node(std::uint32_t node) noexcept {
  if (special_) [[unlikely]] {
    run_node_as<true>(node);
  } else {
    run_node_as<false>(node);
  }
}

template <bool kSpecial>
void RunState::run_node_as(std::uint32_t node) noexcept {
  const engine::Engine& engine = detail::PoolAccess::engine(pool_);
  while (node != kNoIndex) {
    // Without special_: no recording, and no node is a condition (execute_as<false> returns kNoBranch).
    const std::size_t branch = kSpecial ? execute(node, 0) : execute_as<false>(node, 0);
    node = finish_node_as<kSpecial>(node, branch);
    // A node run in place is Normal: a High task waiting in the pool goes first, as it would at a task boundary.
    if (node != kNoIndex && engine.worker_should_yield_to_high()) [[unlikely]] {
      ready(node);
      return;
    }
  }
}

std::size_t RunState::execute(std::uint32_t node, std::uint64_t token) noexcept {
  // RunOptions that record (outcomes, times, KeepGoing) take the instantiation with the hooks; a default run
  // pays this one predictable test (a test per hook cost every node of a chain more; docs/perf-log.md).
  if (recording_) [[unlikely]]
    return execute_as<true>(node, token);
  return execute_as<false>(node, token);
}

template <bool kRecording>
std::size_t RunState::execute_as(std::uint32_t node, std::uint64_t token) noexcept {
  if constexpr (kRecording) {
    if (keep_going_ && skip_for_failed_ancestor(node, 1)) return detail::kNoBranch;  // KeepGoing: after a failed node
  }
  if (cancelled()) {
    if constexpr (kRecording) mark(node, kCancelled);
    add_skipped(1);
    return detail::kNoBranch;
  }
  if (detail::PoolAccess::engine(pool_).dropping()) [[unlikely]] {
    // A DropPending shutdown has begun: work already running in place (a chain inside one task) stops at this
    // node boundary as the pool's queued tasks stop, and the run fails with task_dropped.
    stop_for_drop_pending(node);
    if constexpr (kRecording) mark(node, kCancelled);
    add_skipped(1);
    return detail::kNoBranch;
  }
  if constexpr (kRecording) started(node);
  [[maybe_unused]] const std::int64_t traced_from = kRecording && tracer_ != nullptr && tracer_->recording()
                                                        ? tracer_->now()
                                                        : -1;
  // A node that runs in place has default options: Normal priority, without an options look-up.
  const Priority priority = graph_.node(node).runs_in_place ? Priority::Normal : graph_.options(node).priority;
  Subflow subflow = detail::SubflowAccess::make_root(*this, priority, node);
  detail::NodeCall call{subflow, static_cast<std::size_t>(token)};
  try {
    graph_.body(node)(call);
  } catch (...) {
    // The node as the subflow on the stack holds it: keeping `node` live across the body cost a saved register.
    record_exception(detail::SubflowAccess::node(subflow), std::current_exception());
  }
  detail::SubflowAccess::join_if_spawned(subflow);
  if constexpr (kRecording) {
    ended(node);
    if (traced_from >= 0) trace_node(node, traced_from);
  }
  return call.branch;  // a condition's pick (kNoBranch if it threw); kNoBranch for any other node
}

std::uint32_t RunState::finish_node(std::uint32_t node, std::size_t branch) noexcept {
  return special_ ? finish_node_as<true>(node, branch) : finish_node_as<false>(node, branch);
}

template <bool kSpecial>
std::uint32_t RunState::finish_node_as(std::uint32_t node, [[maybe_unused]] std::size_t branch) noexcept {
  const CompiledNode& done = graph_.node(node);
  if constexpr (kSpecial) {
    if (keep_going_) pass_failure_on(node);  // RunOptions: before the successors are counted down
    // A condition node starts one successor by index, through a weak edge: no join counter.
    if (done.condition) return finish_condition(node, branch);
  }
  const std::uint32_t* successors = graph_.successors();
  std::uint32_t in_place = kNoIndex;
  // Runs `next` here later or posts it now: the first successor that may run in place is kept for the caller.
  const auto start = [&](std::uint32_t next) {
    if (in_place == kNoIndex && graph_.node(next).runs_in_place) {
      in_place = next;
    } else {
      ready(next);
    }
  };
  // A graph of 2^31 nodes or more has no groups, and node indices with that bit set.
  const bool has_groups = graph_.join_group_count() != 0;
  for (std::uint32_t i = done.succ_begin; i != done.succ_end; ++i) {
    const std::uint32_t next = successors[i];
    if ((next & kJoinGroupBit) != 0 && has_groups) [[unlikely]] {
      // A join group: its members share the first one's counter (see JoinGroup), and start together.
      const JoinGroup& group = graph_.join_group(next & ~kJoinGroupBit);
      std::atomic<std::uint32_t>& join = graph_.join(group.first);
      // acq_rel, and the reset: as for a single node below.
      if (join.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
      join.store(graph_.node(group.first).join_init, std::memory_order_relaxed);
      start_group(next & ~kJoinGroupBit, in_place);
      continue;
    }
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
    start(next);
  }
  return in_place;
}

std::uint32_t RunState::finish_condition(std::uint32_t node, std::size_t branch) noexcept {
  const CompiledNode& done = graph_.node(node);
  // Out of range (or no pick: skipped, threw): no successor starts. That is how a loop ends.
  if (branch >= done.succ_end - done.succ_begin) return kNoIndex;
  // No join groups in a graph with conditions (compile.cpp): the entry is a node.
  const std::uint32_t next = graph_.successors()[done.succ_begin + branch];
  if (graph_.node(next).runs_in_place) return next;
  ready(next);
  return kNoIndex;
}

void RunState::start_group(std::uint32_t index, std::uint32_t& in_place) noexcept {
  // Members with options go out one by one, each as its options say. The default ones are claimed from the
  // group's cursor by one task at a time, not posted one each: a layer of small nodes cost a post and a steal
  // per node (more than a node that sums ten numbers costs), all paid by the thread that finished
  // the layer before. This thread claims the first for itself (to run in place) if it has none yet.
  const JoinGroup& group = graph_.join_group(index);
  graph::ClaimCursor& cursor = graph_.group_cursor(index);
  std::uint32_t first = kNoIndex;
  std::uint32_t last = kNoIndex;
  for (std::uint32_t member = group.first; member != group.end; ++member) {
    if (graph_.node(member).runs_in_place) {
      if (first == kNoIndex) first = member;
      last = member;
    } else {
      ready(member);
    }
  }
  if (first == kNoIndex) return;
  cursor.reset(first, last + 1);  // members with options inside it are skipped by whoever claims them
  while (in_place == kNoIndex) {
    const graph::ClaimCursor::Claim claim = cursor.claim_one();
    if (claim.lo == claim.hi) break;
    if (graph_.node(claim.lo).runs_in_place) in_place = claim.lo;
  }
  cursor.keep_one_queued([this, index] { post(GraphTaskKind::members, index, nullptr); });
}

void RunState::run_members(std::uint32_t index, bool outside) noexcept {
  graph::ClaimCursor& cursor = graph_.group_cursor(index);
  const engine::Engine& engine = detail::PoolAccess::engine(pool_);
  const unsigned threads = engine.size();
  for (;;) {
    cursor.keep_one_queued([this, index] { post(GraphTaskKind::members, index, nullptr); });
    // An outside thread (helping from its own slot) claims as it claims roots: one at a time, while a worker
    // sleeps.
    if (outside && !engine.has_idle_worker()) return;
    const graph::ClaimCursor::Claim claim = outside ? cursor.claim_one() : cursor.claim(threads);
    if (claim.lo == claim.hi) return;
    for (std::uint32_t member = claim.lo; member != claim.hi; ++member) {
      if (!graph_.node(member).runs_in_place) continue;  // made ready on their own by start_group
      // Behind a High task in the pool, as in run_roots.
      if (engine.worker_should_yield_to_high()) [[unlikely]] {
        ready(member);
      } else {
        run_node(member);
      }
    }
  }
}

void RunState::ready(std::uint32_t node) noexcept {
  const CompiledNode& compiled = graph_.node(node);
  if (compiled.limiter != kNoIndex) {
    post(GraphTaskKind::activation, node, &graph_.options(node));
  } else {
    post(GraphTaskKind::node, node, compiled.runs_in_place ? nullptr : &graph_.options(node));
  }
}

void RunState::post(GraphTaskKind kind, std::uint32_t index, const NodeOptions* options) noexcept {
  add_unit();
  TaskOptions task_options{};
  if (options != nullptr) {
    task_options.priority = options->priority;
    task_options.affinity = options->affinity;
  }
  try {
    detail::PoolAccess::post(pool_, GraphTask(this, kind, index), task_options, inline_tag());
  } catch (...) {
    // The pool refused it (shut down) or could not allocate: the GraphTask it was given has been destroyed
    // unrun, and its destructor already failed the run and gave the unit back (task_dropped).
  }
}

void RunState::run_node_successors(std::uint32_t node, std::size_t branch) noexcept {
  const std::uint32_t next = finish_node(node, branch);
  if (next == kNoIndex) return;
  if (detail::PoolAccess::engine(pool_).worker_should_yield_to_high()) [[unlikely]] {
    ready(next);  // behind a High task in the pool, as in run_node
  } else {
    run_node(next);
  }
}

void RunState::task_dropped(GraphTaskKind kind, std::uint32_t index) noexcept {
  if (kind == GraphTaskKind::done) {
    // The pool refused (or dropped) the callback's task: called here, on the thread that ended the run. Outside
    // any start_queued loop's slot (see queued_start_slot): the callback may suspend on a fiber.
    std::shared_ptr<RunState>* const slot = std::exchange(queued_start_slot, nullptr);
    call_on_done();
    queued_start_slot = slot;
    complete();
    return;
  }
  std::uint32_t node = index;
  std::uint64_t lost = 1;
  if (kind == GraphTaskKind::roots || kind == GraphTaskKind::members) {
    // A task of a claimed range: what it loses is whatever is still unclaimed, claimed here so that nobody runs
    // it later. Nothing left (others claimed it all, an outside waiter among them): nothing was lost.
    graph::ClaimCursor& cursor = kind == GraphTaskKind::roots ? graph_.roots_cursor() : graph_.group_cursor(index);
    cursor.task_started();
    if (kind == GraphTaskKind::roots && index == 0 && claim_roots()) finish_unit();  // the roots' own unit
    lost = 0;
    const graph::ClaimCursor::Claim claim = cursor.claim_rest();
    for (std::uint32_t item = claim.lo; item != claim.hi; ++item) {
      const std::uint32_t lost_node = kind == GraphTaskKind::roots ? graph_.roots()[item] : item;
      // A member with options was posted on its own by start_group; every root would have started here.
      if (kind == GraphTaskKind::members && !graph_.node(lost_node).runs_in_place) continue;
      if (lost++ == 0) node = lost_node;
    }
    if (lost == 0) {
      // Not user work: the pool's count of dropped tasks leaves it out.
      engine::Engine::note_drop_was_empty();
      finish_unit();
      return;
    }
  }
  // The dropped task's node never finishes: the join counters after it stop part-way. relaxed: read by the
  // run's last unit, which the pending count's acq_rel orders after this.
  lost_tasks_.store(true, std::memory_order_relaxed);
  if (kind == GraphTaskKind::executor) node = graph_.limited_node(index);
  fail_dropped_at(node, "a task of ",
                  "' was not run: the pool refused it (shut down, or out of memory) or dropped it (shut down)");
  switch (kind) {
    case GraphTaskKind::node:
      if (graph_.node(node).has_semaphores) semaphore_task_dropped(node);
      add_skipped(1);
      break;
    case GraphTaskKind::activation:
      add_skipped(graph_.limiter(graph_.node(node).limiter).tokens);
      break;
    case GraphTaskKind::roots:
    case GraphTaskKind::members:
      add_skipped(lost);  // the roots or members it claimed above (their descendants not counted)
      break;
    case GraphTaskKind::executor: {
      // Tokens this executor would have run: count them, so that nothing is lost without a trace.
      NodeTokens tokens(*this, index);
      inbox::drain_lost_executor(graph_.limiter(index), tokens);
      break;
    }
    case GraphTaskKind::done:  // handled above
      break;
  }
  finish_unit();
}

void RunState::stop_for_drop_pending(std::uint32_t node) noexcept {
  try {
    std::string after = "' (and the ";
    after += noun_;
    after += "s after it) did not run: the pool is shutting down and drops pending work (";
    after += detail::PoolAccess::engine(pool_).drop_policy();
    after += ")";
    fail_dropped_at(node, "", after.c_str());
  } catch (...) {
    fail(std::current_exception());  // out of memory building the message: still fail the run
  }
}

void RunState::fail_dropped_at(std::uint32_t node, const char* before, const char* after) noexcept {
  try {
    // "weft::TaskScope: job '...'" for a scope's run: its user wrote jobs, never a TaskGraph.
    std::string message = scope_run() ? "weft::TaskScope: " : "weft::TaskGraph: ";
    message += before;
    message += noun_;
    message += " '";
    message += graph_.name(node);
    message += after;
    fail(std::make_exception_ptr(weft::task_dropped(message)));
  } catch (...) {
    fail(std::current_exception());  // out of memory building the message: still fail the run
  }
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

void RunState::record_exception(std::uint32_t node, std::exception_ptr error) noexcept {
  exceptions_.fetch_add(1, std::memory_order_relaxed);
  fail_node(node, std::move(error));
}

// RunOptions: the per-node records (NodeRecord) and KeepGoing. Nothing here runs in a default run.

void RunState::fail_node(std::uint32_t node, std::exception_ptr error) noexcept {
  if (recording_) [[unlikely]] {
    NodeRecord& record = records_[node];
    // The first failure of the node writes its error; readers look only after the run is over.
    if ((record.flags.fetch_or(kFailed, std::memory_order_relaxed) & kFailed) == 0) record.error = error;
  }
  if (!keep_going_) return fail(std::move(error));
  // KeepGoing: the run goes on; the node's successors are skipped when it finishes (pass_failure_on). The
  // run's first exception is still kept for wait().
  if (!has_error_.exchange(true, std::memory_order_acq_rel)) first_error_ = std::move(error);
}

void RunState::child_skipped(std::uint32_t node) noexcept {
  if (recording_) [[unlikely]]
    mark(node, kCancelled);
  add_skipped(1);
}

bool RunState::skip_for_failed_ancestor(std::uint32_t node, std::uint64_t executions) noexcept {
  // relaxed: every predecessor wrote `cause` before its join-counter decrement, which this node's start follows.
  if (records_[node].cause.load(std::memory_order_relaxed) == kNoIndex) return false;
  mark(node, kSkipped);
  add_skipped(executions);
  return true;
}

namespace {
[[nodiscard]] std::int64_t now_ticks() noexcept { return std::chrono::steady_clock::now().time_since_epoch().count(); }
}  // namespace

void RunState::started(std::uint32_t node) noexcept {
  NodeRecord& record = records_[node];
  record.flags.fetch_or(kStarted, std::memory_order_relaxed);
  if (!timing_) return;
  // The earliest start of the node's executions (several tokens may start at once).
  const std::int64_t now = now_ticks();
  std::int64_t seen = record.start.load(std::memory_order_relaxed);
  while (now < seen && !record.start.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

void RunState::ended(std::uint32_t node) noexcept {
  if (!timing_) return;
  NodeRecord& record = records_[node];
  const std::int64_t now = now_ticks();
  std::int64_t seen = record.end.load(std::memory_order_relaxed);
  while (now > seen && !record.end.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

void RunState::pass_failure_on(std::uint32_t node) noexcept {
  const NodeRecord& record = records_[node];
  // relaxed: the node's failure was recorded before it finished (its executions, children and tokens all
  // happen before finish_node: subflow joins and the token count's acq_rel order them).
  const std::uint32_t cause = (record.flags.load(std::memory_order_relaxed) & kFailed) != 0
                                  ? node
                                  : record.cause.load(std::memory_order_relaxed);
  if (cause == kNoIndex) return;
  // The lowest failed ancestor wins, whichever predecessor finishes first: the same in every run.
  const auto lower = [&](std::uint32_t next) {
    std::atomic<std::uint32_t>& to = records_[next].cause;
    std::uint32_t seen = to.load(std::memory_order_relaxed);
    while (cause < seen && !to.compare_exchange_weak(seen, cause, std::memory_order_relaxed)) {
    }
  };
  const CompiledNode& done = graph_.node(node);
  const std::uint32_t* successors = graph_.successors();
  const bool has_groups = graph_.join_group_count() != 0;
  for (std::uint32_t i = done.succ_begin; i != done.succ_end; ++i) {
    const std::uint32_t next = successors[i];
    if ((next & kJoinGroupBit) != 0 && has_groups) {
      const JoinGroup& group = graph_.join_group(next & ~kJoinGroupBit);
      for (std::uint32_t member = group.first; member != group.end; ++member) lower(member);
    } else {
      lower(next);
    }
  }
}

void RunState::fail(std::exception_ptr error) noexcept {
  // acq_rel: exactly one writer of first_error_; readers look only after the run is done (pending orders it).
  if (!has_error_.exchange(true, std::memory_order_acq_rel)) first_error_ = std::move(error);
  cancel_from_inside();
}

void RunState::cancel_from_inside() noexcept {
  // A parked producer needs no wake-up: the next pop takes its role over and sees the cancellation.
  cancelled_.store(true, std::memory_order_seq_cst);
  // Nodes parked on a semaphore skip at once instead of waiting for units another run may hold for long.
  wake_parked_on_cancel();
  cancel_children();  // module nodes' inner runs (one load when there are none)
}

void RunState::finish_unit() noexcept {
  // acq_rel: every unit's work happens-before the last decrement, which then publishes the end of the pass.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  pass_ended();
}

void RunState::pass_ended() noexcept {
  // A loop, not a recursion: a pass with nothing to run (no roots) ends inside post_roots' caller at once.
  for (;;) {
    for (std::size_t i = 0; i < graph_.limiter_count(); ++i) {
      inbox::Limiter& limiter = graph_.limiter(static_cast<std::uint32_t>(i));
      const std::uint64_t dropped = limiter.dropped.load(std::memory_order_relaxed);
      if (dropped == 0) continue;
      // Added up over the passes of run_n / run_until; the limiter counts from zero again for the next one.
      dropped_by_limiter_[i].first = graph_.limited_node(static_cast<std::uint32_t>(i));
      dropped_by_limiter_[i].second += dropped;
      limiter.dropped.store(0, std::memory_order_relaxed);
    }
    // A run that lost tasks left join counters part-way down (a run that completes or is cancelled takes every
    // node through finish_node, which counts each one down to zero and back to its start): set them all back,
    // or the next run would start a node before its predecessors finished.
    // A graph with condition nodes may leave counters part-way down in any pass (a branch not taken leaves its
    // target's other strong predecessors' counts in place): set them back too (O(nodes), such graphs only).
    if (lost_tasks_.load(std::memory_order_relaxed) || graph_.has_conditions()) graph_.reset_join_counters();
    if (!another_pass()) break;
    // No unit of the last pass is left, so nothing else touches pending_: this thread holds the starter's unit
    // of the next pass while it posts the roots, as start() does for the first.
    pending_.store(1, std::memory_order_relaxed);
    passes_.fetch_add(1, std::memory_order_relaxed);
    post_roots();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;  // the pass goes on on the pool
  }
  end_run();
}

void RunState::end_run() noexcept {
  if (on_done_) [[unlikely]] {
    // In a task of its own: on a worker, whichever thread ended the run (an outside waiter may run the last
    // node). Its unit count is not touched: the run is over but for this task, which completes it. Refused (a
    // shut-down pool), the task's destructor calls it here (task_dropped).
    try {
      detail::PoolAccess::post(pool_, GraphTask(this, GraphTaskKind::done, 0), TaskOptions{}, detail::kWorkersOnly);
    } catch (...) {
      // The task was destroyed unrun: its destructor called the callback and completed the run.
    }
    return;
  }
  complete();
}

void RunState::call_on_done() noexcept {
  try {
    on_done_();
  } catch (...) {
    detail::PoolAccess::report_error(pool_, std::current_exception());  // PoolOptions::on_error, else kept
  }
}

void RunState::complete() noexcept {
  std::shared_ptr<RunState> keep = std::move(self_);  // this state outlives the wake-up below
  // Hands the graph to the next queued run, or leaves it idle: from here on this run touches the graph no more
  // (it may be changed, run again or destroyed; not destroyed while `next` holds it: the destructor waits).
  const bool handed = graph_.run_ended();
  done_.store(true, std::memory_order_release);
  done_signal_.notify();
  // The coroutines awaiting the run: each is posted to resume (done_ is set, so its co_await reads the result at
  // once). The list's close is an acq_rel exchange: what the run did is visible to a resumed coroutine.
  coro_waiters_.close();
  // After this run's waiters were told: the runs of a graph end in the order they were submitted.
  if (handed) [[unlikely]]
    start_queued(graph_.take_handed());
}

bool RunState::another_pass() noexcept {
  if (repeat_ == nullptr) return false;
  // An exception (the run failed: its first one is what wait() rethrows) or a cancel ends the passes.
  if (cancelled() || has_error_.load(std::memory_order_acquire)) return false;
  if (repeat_->until) {
    try {
      return !repeat_->until();
    } catch (...) {
      fail(std::current_exception());  // the predicate's exception is the run's
      return false;
    }
  }
  if (repeat_->remaining == 0) return false;
  --repeat_->remaining;
  return true;
}

}  // namespace weft::graph
