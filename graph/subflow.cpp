// weft::Subflow: children counted per subflow, joined through the scheduler's wait point.
#include "weft/subflow.hpp"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/engine/pool_access.hpp"
#include "scheduler/engine/task_locals.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "scheduler/sync/signal.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft {

bool Subflow::on_owner_stack() const noexcept { return owner_stack_ == fiber::current_stack_id(); }

namespace {
// Records a child of `node` in the run's retained children; returns its id. May throw (out of memory).
std::uint32_t retain_child(graph::RetainedSubflows& retained, std::uint32_t node, std::string_view name) {
  const std::lock_guard lock(retained.lock);
  retained.children.push_back({node, std::string(name)});
  return static_cast<std::uint32_t>(retained.children.size() - 1);
}
}  // namespace

void Subflow::retain_spawned(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept,
                             std::string_view name) {
  graph::RetainedSubflows* const retained = run_->retained();
  if (retained == nullptr) return;
  try {
    (void)retain_child(*retained, node_, name);
  } catch (...) {
    destroy(child);  // not counted yet: the spawn throws, nothing of it is left
    throw;
  }
}

void Subflow::spawn_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept) {
  // A default run retains nothing: one test of the run's field, and a tail call away when it does, so that the
  // common path keeps the frame it had (an inlined record cost ~8 instructions a spawn in saved registers).
  if (run_->retained() != nullptr) [[unlikely]] {
    spawn_named_child(child, destroy, {});
    return;
  }
  post_child(child, destroy);
}

void Subflow::spawn_named_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept,
                                std::string_view name) {
  retain_spawned(child, destroy, name);
  post_child(child, destroy);
}

void Subflow::post_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept) {
  if (fiber::stack_low()) [[unlikely]] {
    destroy(child);
    fiber::stack_guard_detail::throw_too_deep("weft::Subflow::spawn");
  }
  // Counted before the child can run. Not a unit of the run: the node execution this Subflow descends from holds
  // one, and cannot end before the child (see children_).
  children_.spawned(on_owner_stack());
  // Until the pool accepts it, the child is ours: refused (closed) or thrown (allocation), it is dropped here,
  // which tells this Subflow; the pool_closed exception then reaches the body that spawned.
  struct Hold {
    detail::SelfTask* child;
    ~Hold() {
      if (child != nullptr) detail::SelfTask::finish(child, false);
    }
  } hold{child};
  TaskOptions options{};
  options.priority = priority_;
  const SubmitStatus status = detail::PoolAccess::post_task(run_->pool(), child, options, run_->inline_tag());
  if (status == SubmitStatus::Accepted) {
    hold.child = nullptr;
    return;
  }
  detail::SelfTask::finish(std::exchange(hold.child, nullptr), false);
  detail::PoolAccess::admit_or_throw(status, "post");
}

namespace {
// The Subflow child running on the calling thread (a task-local slot: it follows a child that suspends on a
// fiber to the worker where it resumes).
Subflow* current_child() noexcept { return static_cast<Subflow*>(engine::task_local(graph::kCurrentChildSlot)); }
}  // namespace

Subflow* Subflow::exchange_current(Subflow* next) noexcept {
  return static_cast<Subflow*>(engine::exchange_task_local(graph::kCurrentChildSlot, next));
}

Subflow* Subflow::enter_body() noexcept {
  owner_stack_ = fiber::current_stack_id();
  return exchange_current(this);
}

bool Subflow::begin_body(Subflow*& outer) noexcept {
  if (cancelled()) {
    record_skipped();
    return false;
  }
  outer = enter_body();
  return true;
}

void Subflow::end_body(bool started, Subflow* outer) noexcept {
  Subflow* const parent = parent_;
  // Nested in the parent's execution, on its stack: counted in the parent's plain field, no locked instruction.
  // Marked as the running child until the parent is told: the parent's join still counts this child.
  parent->child_finished((started && outer == parent) || parent->on_owner_stack());  // the run may end here
  if (started) (void)exchange_current(outer);
}

const graph::RunState* detail::SubflowAccess::current_child_run() noexcept {
  const Subflow* child = current_child();
  return child != nullptr ? child->run_ : nullptr;
}

void Subflow::join() { join(true); }

void Subflow::join(bool spin_outside) {
  // The running child counts in each of its ancestors' children until it returns: joining one of them
  // from here could never end. A child joining its own Subflow (the usual case) is none of its own ancestors:
  // it skips the walk, which costs a load per level of nesting (callgrind, fib(20) through Subflow: a
  // cost on every join, more the deeper the recursion; docs/perf-log.md).
  const Subflow* const child = current_child();
  if (child != this) {
    if (child != nullptr) {
      for (const Subflow* ancestor = child->parent_; ancestor != nullptr; ancestor = ancestor->parent_) {
        if (ancestor == this)
          throw would_deadlock(
              "weft::Subflow::join: called from one of this Subflow's own children (or their descendants), which "
              "it would wait for; join a child's own Subflow instead");
      }
    }
    // A child's Subflow is joined by that child's body (which marks itself as the running child): its plain
    // count of the children spawned and finished on the body's stack is the body's alone.
    if (parent_ != nullptr)
      throw std::logic_error(
          "weft::Subflow::join: a child's Subflow joined from outside that child's body (another thread or "
          "task); only the body it was given to may join it");
  }
  // Nothing to wait for (every child ran already, most often nested in an inner join of the same Subflow): no
  // wait, and nothing to reset (only a wait announces a sleeper, and it resets the count before it returns).
  if (!has_unfinished()) return;
  fiber::require_stack("weft::Subflow::join");
  join_children(spin_outside);
}

// How a joiner sleeps: it announces itself first, so that the last child knows to wake it.
struct Subflow::JoinSleeper {
  Subflow& subflow;
  template <class Ready>
  void sleep(Ready& ready, std::chrono::nanoseconds slice) noexcept {
    subflow.announce_sleeper();
    subflow.run_->subflow_signal().sleep(ready, slice);
  }
};

void Subflow::announce_sleeper() noexcept {
  if (children_.announced()) return;
  // The unit the waking child will end. This joiner holds one (its execution's), so the run cannot end here.
  run_->add_unit();
  // Every child had finished already: none will take the unit.
  if (!children_.announce()) run_->finish_unit();  // never the run's last: this joiner's execution holds another
}

void Subflow::join_children(bool spin_outside) noexcept {
  // An outside thread running this node (it helps its run) does not run the children itself: they are
  // usually a parallel_for's chunks, and with every worker busy the caller would be one thread more than there
  // are cores, which slows a compute-bound parallel_for (docs/perf-log.md).
  JoinSleeper sleeper{*this};
  sync::wait_until([this] { return !has_unfinished(); }, sleeper, sync::Clock::time_point::max(),
                   spin_outside ? sync::kOutsideSpin : std::chrono::nanoseconds::zero());
  // No child is left to touch the count (the last one's decrement was its final access): clear the announcement,
  // whose unit that child owns now.
  children_.reset();
}

void Subflow::check_after(std::span<const SubflowChild> after) const {
  for (std::size_t i = 0; i < after.size(); ++i) {
    const detail::SubflowChildState* state = after[i].state_;
    if (state == nullptr)
      throw std::invalid_argument("weft::Subflow::spawn_after: after[" + std::to_string(i) +
                                  "] is an empty SubflowChild handle (default-constructed or moved from)");
    if (state->owner_ != this)
      throw std::invalid_argument("weft::Subflow::spawn_after: after[" + std::to_string(i) +
                                  "] is a child of another Subflow; a child may depend only on children of its own "
                                  "Subflow");
  }
}

void Subflow::link_and_start(detail::SubflowChildState& state, std::span<const SubflowChild> after,
                             std::string_view name) {
  try {
    if (graph::RetainedSubflows* const retained = run_->retained(); retained != nullptr) [[unlikely]] {
      // The child and its edges, before anything is linked (out of memory: the child is skipped, below).
      state.retained_id_ = retain_child(*retained, node_, name);
      const std::lock_guard lock(retained->lock);
      for (const SubflowChild& handle : after) {
        const std::uint32_t from = handle.state_->retained_id_;
        if (from != detail::SubflowChildState::kNotRetained) retained->edges.emplace_back(from, state.retained_id_);
      }
    }
    for (const SubflowChild& handle : after) {
      detail::SubflowChildState& predecessor = *handle.state_;
      const std::lock_guard lock(predecessor.mutex_);
      if (!predecessor.done_) {
        predecessor.successors_.push_back(&state);  // may throw: nothing linked for this predecessor
        state.retain();
        // relaxed: the spawner's hold keeps pending_ above zero; the predecessor's decrement (acq_rel) follows
        // this increment through the lock.
        state.pending_.fetch_add(1, std::memory_order_relaxed);
      } else if (predecessor.failed_) {
        state.predecessor_failed_.store(true, std::memory_order_relaxed);  // read by this thread, or after the hold
      }
    }
  } catch (...) {
    // Out of memory while linking: the child will not run (its successors are skipped alike), and the spawner
    // hears of it. The predecessors linked already still release it; the last hold skips it.
    state.predecessor_failed_.store(true, std::memory_order_relaxed);
    if (state.pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) start_ready(&state, false);
    throw;
  }
  // acq_rel: the last predecessor's work (and its failed flag) is seen by whoever starts the child.
  if (state.pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) start_ready(&state, true);
}

namespace {
// Children skipped in a cascade (a failed predecessor skips its successors, theirs in turn): one loop per thread
// works them off, so that a long chain does not nest one destructor per link on the stack.
thread_local std::vector<detail::SubflowChildState*>* skip_list = nullptr;
}  // namespace

void Subflow::start_ready(detail::SubflowChildState* state, bool rethrow) {
  if (!state->predecessor_failed_.load(std::memory_order_relaxed)) {  // the acq_rel decrement ordered it
    detail::SelfTask* const task = std::exchange(state->task_, nullptr);
    Subflow* const owner = state->owner_;  // alive: a predecessor (or the spawner) of this child still runs
    if (rethrow) {
      owner->post_child(task, state->destroy_);  // recorded already, when it was linked
      return;
    }
    try {
      owner->post_child(task, state->destroy_);
    } catch (...) {
      // Refused by a closed pool (the run is failed with task_dropped already) or a stack too short: the child
      // was freed, and its successors skipped. The run hears of it.
      owner->record_exception(std::current_exception());
    }
    return;
  }
  if (skip_list != nullptr) {
    skip_list->push_back(state);
    return;
  }
  std::vector<detail::SubflowChildState*> list{state};
  skip_list = &list;
  while (!list.empty()) {
    detail::SubflowChildState* const next = list.back();
    list.pop_back();
    next->owner_->record_skipped();
    // Frees the child unrun: its Tracked tells its state, which adds the successors it releases to the list.
    next->destroy_(std::exchange(next->task_, nullptr));
  }
  skip_list = nullptr;
}

void Subflow::child_completed(detail::SubflowChildState* state, bool ran) noexcept {
  std::vector<detail::SubflowChildState*> successors;
  {
    const std::lock_guard lock(state->mutex_);
    state->done_ = true;
    state->failed_ = !ran;
    successors.swap(state->successors_);
  }
  for (detail::SubflowChildState* successor : successors) {
    if (!ran) successor->predecessor_failed_.store(true, std::memory_order_relaxed);  // before the decrement
    // acq_rel: publishes this child's work to the successor's start (and through it to the successor).
    if (successor->pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) start_ready(successor, false);
    successor->release();  // the edge's reference
  }
  state->release();  // the child's reference
}

void detail::SubflowAccess::add_dropped(Subflow& subflow, std::string name, std::uint64_t count) noexcept {
  subflow.run_->add_stage_drops(std::move(name), count);
}

bool Subflow::cancelled() const noexcept { return run_->cancelled(); }

Pool& Subflow::pool() const noexcept { return run_->pool(); }

void Subflow::child_finished(bool on_owner_stack) noexcept {
  // Read before the count: once it lands, a joiner may return and this Subflow vanish.
  graph::RunState* run = run_;
  if (!children_.finished(on_owner_stack)) return;
  // The last child, and a joiner announced itself: wake it, then end the unit it took for this (the run may end
  // here; this Subflow may be gone already).
  run->subflow_signal().notify();
  run->finish_unit();
}

void Subflow::child_dropped() noexcept {
  graph::RunState* run = run_;
  run->fail_dropped(
      "weft::Subflow: a child task was not run: the pool refused it (shut down, or out of memory) or dropped it "
      "(shut down)");
  run->add_skipped(1);
  child_finished(false);  // last: this Subflow's execution may end here, and with it the run
}

void Subflow::record_exception(std::exception_ptr error) noexcept { run_->record_exception(node_, std::move(error)); }

void Subflow::record_skipped() noexcept { run_->child_skipped(node_); }

}  // namespace weft
