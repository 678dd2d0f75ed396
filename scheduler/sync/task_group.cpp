// weft::TaskGroup: children counted in the group (weft/detail/child_count.hpp, as a Subflow's), posted to the pool
// as self-finishing blocks, waited for through the scheduler's one wait point (signal.hpp); the last child wakes a
// sleeping owner through a word it touches once and then by address only (word_protocol.hpp).
#include "weft/task_group.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <utility>

#include "scheduler/engine/pool_access.hpp"
#include "scheduler/engine/task_locals.hpp"
#include "scheduler/engine/wait_word.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "scheduler/sync/signal.hpp"
#include "scheduler/sync/word_protocol.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft {
namespace {

namespace word = sync::word;

// The task-local slot (scheduler/engine/task_locals.hpp) holding the group whose child runs here: it follows a
// child that suspends on a fiber to the worker where it resumes.
constexpr unsigned kCurrentGroupSlot = 2;

TaskGroup* current_group() noexcept { return static_cast<TaskGroup*>(engine::task_local(kCurrentGroupSlot)); }

using engine::WordParking;  // the futex, or the fiber lot inside a wait that suspends

// sync::wait_until as a call of its own, with the worker's wait loop inlined into it: inlined into wait_children
// instead, g++ kept the loop out of line and the pair cost every wait 12 more instructions (callgrind,
// docs/perf-log.md).
template <class Ready, class Sleeper>
[[gnu::noinline]] void wait_apart(Ready ready, Sleeper& sleeper) noexcept {
  (void)sync::wait_until(ready, sleeper);
}

Pool& pool_here() {
  if (const TaskGroup* group = current_group()) return group->pool();
  if (Pool* pool = detail::PoolAccess::current()) return *pool;
  throw std::logic_error(
      "weft::TaskGroup: made without a pool on a thread that runs no task of a pool; name the pool there: "
      "weft::TaskGroup g{pool}");
}

}  // namespace

TaskGroup::TaskGroup() : TaskGroup(pool_here()) {}

TaskGroup::TaskGroup(Pool& pool)
    : pool_(&pool),
      parent_(current_group()),
      priority_(Priority::Normal),
      uncaught_(std::uncaught_exceptions()),
      owner_stack_(fiber::current_stack_id()) {
  // Inside a child of a group of the same pool: that group's priority (a High group's nested groups stay High).
  if (parent_ != nullptr && parent_->pool_ == &pool) priority_ = parent_->priority_;
}

TaskGroup::TaskGroup(Pool& pool, Priority priority)
    : pool_(&pool),
      parent_(current_group()),
      priority_(priority),
      uncaught_(std::uncaught_exceptions()),
      owner_stack_(fiber::current_stack_id()) {}

TaskGroup::~TaskGroup() {
  if (children_.unfinished()) {
    // Unwinding: the exception is on its way out, and the children not started are of no use to it (oneTBB's
    // choice too). Otherwise a forgotten wait: every child still runs, nothing is lost.
    if (std::uncaught_exceptions() > uncaught_) cancel();
    wait_children();
  }
  // No wait rethrew it: the pool's error handler gets it.
  if (failed_.load(std::memory_order_relaxed)) detail::PoolAccess::report_error(*pool_, std::move(error_));
}

bool TaskGroup::on_owner_stack() const noexcept { return owner_stack_ == fiber::current_stack_id(); }

void TaskGroup::spawn_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept) {
  if (fiber::stack_low()) [[unlikely]] {
    destroy(child);
    fiber::stack_guard_detail::throw_too_deep("weft::TaskGroup::run");
  }
  // Counted before the child can run; its finish, wherever it runs, counts it back.
  children_.spawned(on_owner_stack());
  TaskOptions options{};
  options.priority = priority_;
  SubmitStatus status = SubmitStatus::Closed;
  try {
    // Tagged with this group: an outside owner's wait may run it from its own slot (wait_children).
    status = detail::PoolAccess::post_task(*pool_, child, options, reinterpret_cast<detail::InlineTag>(this));
  } catch (...) {
    destroy(child);  // never queued: the caller's f is gone with it, and the count goes back
    child_finished();
    throw;
  }
  if (status == SubmitStatus::Accepted) return;
  destroy(child);
  child_finished();
  throw pool_closed("weft::TaskGroup::run: the pool is shut down (or shutting down); the child was not run");
}

TaskGroup* TaskGroup::enter_child() noexcept {
  return static_cast<TaskGroup*>(engine::exchange_task_local(kCurrentGroupSlot, this));
}

void TaskGroup::leave_child(TaskGroup* outer) noexcept {
  (void)engine::exchange_task_local(kCurrentGroupSlot, outer);
  child_finished();  // last: the owner may return from wait() the moment the count lands
}

void TaskGroup::child_dropped() noexcept {
  record_exception(std::make_exception_ptr(
      task_dropped("weft::TaskGroup: a child was dropped unrun: the pool shut down with Shutdown::DropPending (or "
                   "reached shutdown_for's deadline)")));
  child_finished();
}

void TaskGroup::child_finished() noexcept {
  // A child that ran nested on the owner's stack counts in the plain field: the owner is below it on that stack.
  if (!children_.finished(on_owner_stack())) return;
  // The last child, and the owner announced itself: it waits for wake_, not for the count, so the group is alive
  // until this RMW lands; after it, the word's address only (word_protocol.hpp).
  word::event_set<WordParking>(wake_);
}

void TaskGroup::record_exception(std::exception_ptr error) noexcept {
  // acq_rel: one claimant among the children; the owner reads error_ after the wait, which the claimant's count
  // (release) orders after its store.
  if (!failed_.exchange(true, std::memory_order_acq_rel)) error_ = std::move(error);
  cancel();
}

TaskGroupStatus TaskGroup::wait() {
  if (!on_owner_stack())
    throw std::logic_error(
        "weft::TaskGroup::wait: called from another thread or task than the one that made the group; only that code "
        "may wait for it (any thread may run() children into it)");
  // The code that made the group runs inside a child of parent_ (or of none): the usual case skips the walk. Else
  // it runs nested on the owner's stack, and must not be one of this group's own descendants.
  const TaskGroup* const here = current_group();
  if (here != parent_) {
    for (const TaskGroup* group = here; group != nullptr && group != parent_; group = group->parent_) {
      if (group == this)
        throw would_deadlock(
            "weft::TaskGroup::wait: called from one of the group's own children (or their descendants), which it "
            "would wait for");
    }
  }
  if (children_.unfinished()) {
    fiber::require_stack("weft::TaskGroup::wait");
    wait_children();
  }
  const bool cancelled = cancelled_.exchange(false, std::memory_order_relaxed);
  if (failed_.load(std::memory_order_relaxed)) {
    failed_.store(false, std::memory_order_relaxed);
    std::rethrow_exception(std::exchange(error_, nullptr));
  }
  return cancelled ? TaskGroupStatus::cancelled : TaskGroupStatus::complete;
}

// How the owner sleeps: announced first (then the last child sets wake_), then on wake_.
struct TaskGroup::WaitSleeper {
  TaskGroup& group;
  template <class Ready>
  void sleep(Ready& /*ready: judged on wake_ once announced*/, std::chrono::nanoseconds slice) noexcept {
    // Announces itself before the first sleep (false: every child had finished, nothing to sleep for).
    if (!group.children_.announced() && !group.children_.announce()) return;
    word::sleep<WordParking>(
        group.wake_, [](std::uint32_t value) { return (value & word::kEventSet) != 0; }, slice);
  }
};

void TaskGroup::wait_children() noexcept {
  // Once announced, the owner waits for the last child's wake_, never for the count alone: the child still touches
  // wake_ after its count landed.
  const auto ready = [this] {
    if (children_.announced()) return (wake_.load(std::memory_order_acquire) & word::kEventSet) != 0;
    return !children_.unfinished();
  };
  WaitSleeper sleeper{*this};
  engine::Engine& engine = detail::PoolAccess::engine(*pool_);
  const engine::Worker* const worker = engine::Engine::this_thread_worker();
  // Not a worker of this pool: run this group's children still in this thread's own slot first (the newest, run
  // nested on the owner's stack), as a waiter on a worker runs its own deque's.
  if (worker == nullptr || &worker->engine != &engine) {
    if (!engine.help_from_own_slot(ready, reinterpret_cast<detail::InlineTag>(this))) wait_apart(ready, sleeper);
  } else {
    wait_apart(ready, sleeper);
  }
  // No child touches the count or the word any more: back to empty.
  children_.reset();
  wake_.store(0, std::memory_order_relaxed);
}

}  // namespace weft
