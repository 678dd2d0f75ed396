// weft::TaskGroup: fork-join anywhere. Children run on a pool, and the group waits for exactly its own children.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "weft/detail/block_cache.hpp"
#include "weft/detail/child_count.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/detail/task_header.hpp"
#include "weft/pool_options.hpp"

namespace weft {

class Pool;

// What TaskGroup::wait() (and run_and_wait) found once every child had finished.
enum class TaskGroupStatus : std::uint8_t {
  complete,   // the group was not cancelled: every child ran
  cancelled,  // cancel() was called (or a child threw, and the exception is rethrown instead of returned)
};

// A group of child tasks on a pool, waited for together (oneTBB's task_group, Taskflow's per-call task group).
// Open one in any function, on any thread or inside any task, nested as deep as the recursion goes.
//
// Example (recursive fib):
//   long fib(weft::Pool& pool, int n) {
//     if (n < 2) return n;
//     long a = 0, b = 0;
//     weft::TaskGroup g{pool};
//     g.run([&] { a = fib(pool, n - 1); });
//     g.run_and_wait([&] { b = fib(pool, n - 2); });  // b on this thread, then waits for a
//     return a + b;
//   }
//
// Contract:
// - run(f) queues f() on the pool as a child of this group; from the group's own code, from its children (a child
//   may add siblings) or from any other thread. The children are counted in the group alone: wait() waits for
//   them and for nothing else (not for the children of an enclosing group, nor for the pool's other work). A
//   thread that is neither the owner nor a child must not run() while a wait may be returning (as with oneTBB):
//   a child it adds then may be counted in no wait; add from outside before the wait, or from a child.
// - wait() returns once every child run so far has finished. Inside a task of a pool it waits as every weft wait
//   does: with fibers (PoolOptions::fibers) it first runs the newest tasks of its worker's own deque (the group's
//   children, most often) while the stack allows, then suspends the task; without them its worker runs other
//   tasks meanwhile, its own deque's newest first. On another thread it runs the group's children that still sit
//   in its own queue of the pool, then sleeps. Everything it waits for is queued on the pool (or ran already), so
//   a wait can always finish, even on a pool of one worker.
// - wait(), run_and_wait() and the destructor belong to the code that made the group: the same thread, or the
//   same task (which may move between workers with fibers). Called elsewhere, wait() throws std::logic_error;
//   called from one of the group's own children (or their descendants), which the wait would wait for, it throws
//   weft::would_deadlock.
// - Exceptions: the first exception of a child (or of run_and_wait's f) cancels the group and is rethrown by
//   wait(); later ones are discarded (as oneTBB does). A child the pool dropped unrun (Shutdown::DropPending)
//   counts as an exception, weft::task_dropped. After wait() returns or throws, the group is empty and may be
//   used again.
// - cancel(), from any thread: children not started yet are skipped (destroyed unrun); running ones finish
//   (they may poll is_cancelling()). wait() then returns TaskGroupStatus::cancelled, and clears the cancellation.
//   A cancellation reaches this group only, not groups opened inside its children.
// - Destructor: a group destroyed with children not waited for waits for them (noexcept); if an exception is
//   unwinding the stack it first cancels, so children not started are skipped. An exception no wait() rethrew
//   goes to the pool's error handler (PoolOptions::on_error, else Pool::take_errors): nothing is lost.
// - Depth: run() and wait() throw weft::nesting_too_deep when the calling thread's stack could not serve one
//   more nested wait (see errors.hpp), never overflow it; a recursion of any depth finishes or throws that.
// - Priority: children are queued at the group's priority: the one given to the constructor, else the priority
//   of the group whose child is running here (so nested groups of a High group stay High), else Normal.
//   Affinity: children carry none (they exist to run in parallel; one worker's mailbox would serialise them);
//   what the caller runs itself (run_and_wait's f) runs where the caller runs, so its affinity holds for that.
// - Not copyable or movable: children refer to the group by address.
class TaskGroup {
 public:
  // A group on the pool whose task the calling code runs (the pool of the innermost task on this thread: a
  // group's child, a posted task, a graph node). Throws std::logic_error on a thread that runs no task of a
  // pool: name the pool there (TaskGroup g{pool}).
  TaskGroup();
  // A group on `pool`, from any thread; its priority as the contract says.
  explicit TaskGroup(Pool& pool);
  // A group on `pool` whose children run at `priority`.
  TaskGroup(Pool& pool, Priority priority);
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  // Waits for children not waited for (see the contract); never throws.
  ~TaskGroup();

  // Queues f() (f is moved or copied into the child) on the pool as a child of this group. Throws pool_closed if
  // the pool is shutting down (f is not run), nesting_too_deep if this thread's stack could not serve the wait.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void run(F&& f) {
    detail::require_callable(f, "weft::TaskGroup::run");
    using Child = ChildTask<std::decay_t<F>>;
    spawn_child(new Child(this, std::forward<F>(f)), &Child::destroy);  // counted only once it exists
  }

  // Calls f() on the calling thread (unless the group is cancelled already), then wait(). An exception of f is
  // the group's like a child's: it cancels the group, and wait() rethrows the first one.
  template <class F>
    requires std::invocable<F&>
  TaskGroupStatus run_and_wait(F&& f) {
    detail::require_callable(f, "weft::TaskGroup::run_and_wait");
    if (!is_cancelling()) {
      try {
        std::invoke(f);
      } catch (...) {
        record_exception(std::current_exception());
      }
    }
    return wait();
  }

  // Waits until every child run so far (and the children they ran into this group) finished; rethrows the first
  // exception, else returns whether the group was cancelled. See the contract for where it may be called.
  TaskGroupStatus wait();

  // Skips the children not started yet; wait() returns TaskGroupStatus::cancelled. Any thread.
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }  // relaxed: a hint children poll

  // True once cancel() was called (or a child threw) and the group was not waited for since.
  [[nodiscard]] bool is_cancelling() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

  // The pool the children run on.
  [[nodiscard]] Pool& pool() const noexcept { return *pool_; }

 private:
  // A child as the pool queues it: one block (the scheduler's header, the group, the user's callable) from the
  // thread's block cache, run or dropped by one call of its finish function, which frees the block and only then
  // tells the group, so nothing of the child is left once wait() returns.
  template <class F>
  class ChildTask final : public detail::SelfTask {
   public:
    template <class G>
    ChildTask(TaskGroup* group, G&& f) : SelfTask(&finish_task), group_(group), f_(std::forward<G>(f)) {}

    static void* operator new(std::size_t bytes) { return detail::allocate_future_state(bytes, alignof(ChildTask)); }
    static void operator delete(void* p, std::size_t bytes) noexcept {
      detail::deallocate_future_state(p, bytes, alignof(ChildTask));
    }

    // Frees a child that was never counted (spawn_child refused it before counting).
    static void destroy(detail::SelfTask* task) noexcept { delete static_cast<ChildTask*>(task); }

   private:
    ~ChildTask() = default;

    static void finish_task(detail::SelfTask* task, bool run) noexcept {
      auto* const self = static_cast<ChildTask*>(task);
      TaskGroup* const group = self->group_;
      if (!run) {
        delete self;
        group->child_dropped();
        return;
      }
      TaskGroup* const outer = group->enter_child();
      if (!group->is_cancelling()) {
        try {
          self->f_();
        } catch (...) {
          group->record_exception(std::current_exception());
        }
      }
      delete self;  // the user's callable, before the group can see this child finished
      group->leave_child(outer);
    }

    TaskGroup* group_;
    F f_;
  };

  // Counts `child` and queues it (see run()); a refused child is freed uncounted (`destroy`) or dropped.
  void spawn_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept);
  // A child starts on this thread: marks this group's child as the one running here (a task-local slot, which
  // follows the task across a fiber switch); returns the group whose child ran here before.
  TaskGroup* enter_child() noexcept;
  // The child returned and its block is freed: restores `outer`, then counts the child finished (the last access
  // to this group: its owner may return from wait() the moment the count lands).
  void leave_child(TaskGroup* outer) noexcept;
  // A child the pool dropped unrun: recorded as task_dropped, then counted finished.
  void child_dropped() noexcept;
  // Counts a child finished from the calling stack; wakes a sleeping owner if it was the last.
  void child_finished() noexcept;
  void record_exception(std::exception_ptr error) noexcept;
  // wait() without its refusals: until no child is unfinished (the destructor's wait).
  void wait_children() noexcept;
  struct WaitSleeper;  // scheduler/sync/task_group.cpp: wait_children's way to sleep
  [[nodiscard]] bool on_owner_stack() const noexcept;

  Pool* pool_;
  // The group whose child was running here when this one was made (null if none): its priority is inherited, and
  // wait() walks the chain to refuse a wait from one of this group's own descendants.
  TaskGroup* parent_;
  Priority priority_;
  int uncaught_;  // std::uncaught_exceptions() at construction: the destructor runs during an unwinding if more
  // The stack the owner runs on (fiber::current_stack_id()): children finished on it count in the plain field.
  std::uintptr_t owner_stack_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> failed_{false};  // the first exception claimed error_
  std::exception_ptr error_;
  // Where the owner sleeps once it announced itself (weft/detail/primitive_word.hpp bits): the last child sets it
  // in one read-modify-write, then wakes the word by its address only, so the group may be gone right after.
  std::atomic<std::uint32_t> wake_{0};
  // Children run and not finished (weft/detail/child_count.hpp, as a Subflow's).
  detail::ChildCount children_;
};

}  // namespace weft
