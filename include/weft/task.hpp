// weft::Task<T>: a C++20 coroutine that runs on weft's pools, and what it may co_await: another Task, a
// weft::Future, a weft::AsyncTask, a TaskScope's weft::Job, a TaskGraph's weft::Run, a weft::Event or WaitGroup,
// a weft::ConditionVariable (weft::notified), Pool::schedule(); a Task's stop token (weft::with_stop_token,
// weft::this_coro::stop_token). weft::when_all, when_any and when_all_settled over Tasks are in
// weft/task_when.hpp; sync_wait and spawn (which start a Task from outside a coroutine) in weft/sync_wait.hpp;
// weft::Generator in weft/generator.hpp.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "weft/async_task.hpp"
#include "weft/condition_variable.hpp"
#include "weft/detail/coro_resumer.hpp"
#include "weft/detail/coro_wait_list.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/detail/job_state.hpp"
#include "weft/errors.hpp"
#include "weft/event.hpp"
#include "weft/future.hpp"
#include "weft/job.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"
#include "weft/wait_group.hpp"

// Task frames from the global heap rather than the block cache: under AddressSanitizer (see TaskPromiseBase).
#if defined(__SANITIZE_ADDRESS__)
#define WEFT_TASK_FRAMES_FROM_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WEFT_TASK_FRAMES_FROM_HEAP 1
#endif
#endif
#ifndef WEFT_TASK_FRAMES_FROM_HEAP
#define WEFT_TASK_FRAMES_FROM_HEAP 0
#endif

namespace weft {

template <class T = void>
class Task;

namespace detail {

// The compiled half (scheduler/sync/coro.cpp).
// The pool of the task the calling thread runs (a worker's, or an outside thread's inline run), or null.
[[nodiscard]] Pool* coro_current_pool() noexcept;
// An exception nobody will rethrow (a spawned Task's): to the pool's PoolOptions::on_error, else kept for
// Pool::take_errors.
void coro_report_error(Pool& pool, std::exception_ptr error) noexcept;

// when_all's count of members still running, and the coroutine the last one resumes.
struct TaskJoin {
  std::atomic<std::uint32_t> remaining{0};
  std::coroutine_handle<> parent;
};

// What every Task's promise holds besides its result: who resumes when the Task ends (the awaiting coroutine,
// or when_all's join), and the exception the body let out.
class TaskPromiseBase {
 public:
  // A Task's frame (the promise, the body's locals, its awaiters) comes from the calling thread's block cache, as
  // a Future's state does (detail/block_cache.hpp): a frame of up to 256 bytes is popped from the thread's own free
  // list and pushed back to whichever thread's list frees it, where the global operator new's malloc and free were
  // half of the instructions of a co_await of a Task that ends at once. A larger frame comes from the heap. Under
  // AddressSanitizer every frame comes from the heap, so that a frame used after its Task was destroyed, or never
  // freed, is reported (a recycled block stays valid memory). Throws std::bad_alloc (the call that makes the Task
  // throws it).
  static void* operator new(std::size_t bytes) {
#if WEFT_TASK_FRAMES_FROM_HEAP
    return ::operator new(bytes);
#else
    return allocate_future_state(bytes, __STDCPP_DEFAULT_NEW_ALIGNMENT__);
#endif
  }
  static void operator delete(void* frame, std::size_t bytes) noexcept {
#if WEFT_TASK_FRAMES_FROM_HEAP
    ::operator delete(frame, bytes);
#else
    deallocate_future_state(frame, bytes, __STDCPP_DEFAULT_NEW_ALIGNMENT__);
#endif
  }

  // Lazily started: the body runs when the Task is awaited (or given to sync_wait, spawn, when_all).
  std::suspend_always initial_suspend() noexcept { return {}; }

  // The end of the body: hands the thread straight to the awaiting coroutine (symmetric transfer, a tail call:
  // a chain of any depth unwinds in constant stack), or to when_all's parent if this is its last member.
  struct FinalAwaiter {
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) noexcept {
      TaskPromiseBase& promise = self.promise();
      if (TaskJoin* const join = promise.join_) {
        // acq_rel: release publishes this member's result to the last one; the last one's acquire sees every
        // member's result before it resumes the parent, which reads them. The others touch nothing after.
        if (join->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return std::noop_coroutine();
        return join->parent;
      }
      return promise.continuation_;
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error_ = std::current_exception(); }

  void set_continuation(std::coroutine_handle<> continuation) noexcept { continuation_ = continuation; }
  void set_join(TaskJoin* join) noexcept { join_ = join; }
  // The Task's stop token (weft::with_stop_token, else its awaiter's: see inherit_stop_token).
  [[nodiscard]] const std::stop_token& stop_token() const noexcept { return stop_; }
  void set_stop_token(std::stop_token token) noexcept { stop_ = std::move(token); }
  // Called as the Task is started by `parent` (co_await, when_all): a Task given no token of its own takes its
  // parent's, so that one token reaches a whole tree of Tasks. An empty token costs a null test.
  template <class P>
  void inherit_stop_token(std::coroutine_handle<P> parent) noexcept {
    if constexpr (std::is_base_of_v<TaskPromiseBase, P>) {
      if (!stop_.stop_possible() && parent.promise().stop_.stop_possible()) stop_ = parent.promise().stop_;
    }
  }

 protected:
  void rethrow_if_failed() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::coroutine_handle<> continuation_ = std::noop_coroutine();
  TaskJoin* join_ = nullptr;
  std::exception_ptr error_;
  std::stop_token stop_;
};

template <class T>
class TaskPromise final : public TaskPromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  template <class U = T>
    requires std::convertible_to<U&&, T>
  void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    value_.emplace(std::forward<U>(value));
  }
  // The result for the awaiter: the value, or the body's exception rethrown.
  T take_result() {
    rethrow_if_failed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class TaskPromise<void> final : public TaskPromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take_result() { rethrow_if_failed(); }
};

// Reaches a Task's coroutine handle (when_all, sync_wait and spawn start Tasks).
struct TaskAccess {
  template <class T>
  [[nodiscard]] static std::coroutine_handle<TaskPromise<T>> handle(const Task<T>& task) noexcept {
    return task.handle_;
  }
  // Throws std::logic_error, naming `what`, unless `task` is a Task that was never started.
  template <class T>
  static void require_unstarted(const Task<T>& task, const char* what) {
    if (!task.handle_)
      throw std::logic_error(std::string(what) + ": the weft::Task is empty (default-constructed or moved from)");
    if (task.handle_.done() || task.started_)
      throw std::logic_error(std::string(what) + ": the weft::Task was awaited already (a Task runs once)");
  }
  template <class T>
  static void mark_started(Task<T>& task) noexcept {
    task.started_ = true;
  }
};

// co_await on a Task: starts it on this thread (symmetric transfer) and resumes the awaiter when it ends.
template <class T>
class TaskAwaiter {
 public:
  explicit TaskAwaiter(Task<T>& task) noexcept : task_(task) {}
  [[nodiscard]] bool await_ready() const {
    TaskAccess::require_unstarted(task_, "co_await");
    return false;
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    TaskAccess::mark_started(task_);
    const auto handle = TaskAccess::handle(task_);
    handle.promise().set_continuation(awaiting);
    handle.promise().inherit_stop_token(awaiting);
    return handle;
  }
  T await_resume() { return TaskAccess::handle(task_).promise().take_result(); }

 private:
  Task<T>& task_;
};

// co_await on a Future<T> that is not ready: this state is attached as the future's continuation (the same word
// Future::then uses), so it is queued on the future's pool when the value is set and resumes the coroutine there,
// as a task. Meanwhile the coroutine holds no thread and no stack. One reference: the queue's.
class FutureResume final : public FutureResult<void> {
 public:
  FutureResume(Pool* pool, std::coroutine_handle<> handle, bool* dropped) noexcept
      : FutureResult<void>(nullptr, pool), handle_(handle), dropped_(dropped) {
    release();  // the future's reference: there is no Future of this state
  }
  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(FutureResume)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(FutureResume));
  }

 private:
  ~FutureResume() = default;
  FutureStateBase::Status run_task() noexcept override {
    std::exchange(handle_, {}).resume();
    return FutureStateBase::has_value;
  }
  // Never run (the pool refused or dropped it): resumes the coroutine here, once this block is freed.
  void destroy() noexcept override {
    const std::coroutine_handle<> handle = handle_;
    bool* const dropped = dropped_;
    delete this;
    if (handle) {
      *dropped = true;
      handle.resume();
    }
  }

  std::coroutine_handle<> handle_;
  bool* dropped_;
};

template <class T>
class FutureAwaiter {
 public:
  explicit FutureAwaiter(Future<T>&& future) noexcept : future_(std::move(future)) {}
  // Throws std::logic_error for an invalid future, as get() would.
  [[nodiscard]] bool await_ready() const { return future_.ready(); }
  // Throws std::bad_alloc if the resumption cannot be allocated: nothing is attached then, and the co_await
  // throws it.
  void await_suspend(std::coroutine_handle<> awaiting) {
    FutureResult<T>* const state = FutureAccess::state(future_);
    // Attached or, if the value was set meanwhile, queued at once; either way the coroutine may resume on a
    // worker before this returns, so nothing here is touched after.
    state->attach_continuation(new FutureResume(state->pool(), awaiting, &dropped_));
  }
  T await_resume() {
    if (dropped_)
      throw task_dropped("co_await weft::Future: the pool was shut down before it could resume the awaiting coroutine");
    return future_.get();
  }

 private:
  Future<T> future_;
  bool dropped_ = false;
};

class AsyncTaskAwaiter {
 public:
  explicit AsyncTaskAwaiter(const AsyncTask& task) : task_(task) {}
  // Throws std::logic_error for an empty handle, as done() does.
  [[nodiscard]] bool await_ready() const { return task_.done(); }
  void await_suspend(std::coroutine_handle<> awaiting) noexcept {
    // A successor task on the same pool that resumes the coroutine: run once the task is final, or (if the task
    // failed, and the successor is skipped) its callable is destroyed unrun, which resumes the coroutine too.
    try {
      (void)async_task_pool(task_)->submit_after({task_}, CoroResumer(awaiting, nullptr));
    } catch (...) {
      // The resumer was destroyed unrun (the pool is shut down): the coroutine has resumed already.
    }
  }
  void await_resume() const {
    if (!task_.done())
      throw task_dropped(
          "co_await weft::AsyncTask: the pool was shut down before it could resume the awaiting coroutine");
    task_.get();
  }

 private:
  AsyncTask task_;
};

// The compiled half (scheduler/sync/coro.cpp): co_await on an Event or WaitGroup. Parks the coroutine on the
// primitive's word (it resumes as a task of the pool whose task suspended, or, awaited outside any pool, on the
// thread that signals) and returns true; false if it need not suspend (the event is set, an Auto event's signal
// was taken, the count is zero). Throws std::bad_alloc, and std::length_error for a full Mode::Auto event.
[[nodiscard]] bool coro_await_event(Event& event, std::coroutine_handle<> handle, bool* dropped);
[[nodiscard]] bool coro_await_group(WaitGroup& group, std::coroutine_handle<> handle, bool* dropped);
// co_await weft::notified(cv, lock): reads the generation with `lock` held, unlocks it, and parks the coroutine
// until a notify bumps the generation (true), or returns false with `lock` unlocked if one did already. Awaited
// from no pool's task, waits as cv.wait(lock) (the thread blocks) and returns false with `lock` held. Throws
// std::bad_alloc (`lock` still held then).
[[nodiscard]] bool coro_await_notify(ConditionVariable& cv, std::unique_lock<std::mutex>& lock,
                                     std::coroutine_handle<> handle, bool* dropped);

// Resumes `handle` as a task of `pool` (null: here, on this thread). A pool that refuses the task (shut down)
// resumes it here after setting *dropped.
inline void coro_resume_on(Pool* pool, std::coroutine_handle<> handle, bool* dropped) noexcept {
  if (pool == nullptr) {
    handle.resume();
    return;
  }
  try {
    pool->post(CoroResumer(handle, dropped));
  } catch (...) {
    // Refused: the resumer's destructor has resumed the coroutine here, with *dropped set.
  }
}

class EventAwaiter {
 public:
  explicit EventAwaiter(Event& event) noexcept : event_(event) {}
  // A set Manual event does not suspend (an Auto one takes its signal in await_suspend).
  [[nodiscard]] bool await_ready() const noexcept {
    return event_.mode() == Event::Mode::Manual && event_.is_signaled();
  }
  bool await_suspend(std::coroutine_handle<> awaiting) { return coro_await_event(event_, awaiting, &dropped_); }
  void await_resume() const {
    if (dropped_)
      throw task_dropped("co_await weft::Event: the pool was shut down before it could resume the awaiting coroutine");
  }

 private:
  Event& event_;
  bool dropped_ = false;
};

class WaitGroupAwaiter {
 public:
  explicit WaitGroupAwaiter(WaitGroup& group) noexcept : group_(group) {}
  [[nodiscard]] bool await_ready() const noexcept { return group_.count() == 0; }
  bool await_suspend(std::coroutine_handle<> awaiting) { return coro_await_group(group_, awaiting, &dropped_); }
  void await_resume() const {
    if (dropped_) {
      throw task_dropped(
          "co_await weft::WaitGroup: the pool was shut down before it could resume the awaiting coroutine");
    }
  }

 private:
  WaitGroup& group_;
  bool dropped_ = false;
};

class NotifiedAwaiter {
 public:
  NotifiedAwaiter(ConditionVariable& cv, std::unique_lock<std::mutex>& lock) noexcept : cv_(cv), lock_(lock) {}
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> awaiting) {
    if (!lock_.owns_lock())
      throw std::logic_error("co_await weft::notified: the lock does not hold its mutex (lock it before the wait)");
    return coro_await_notify(cv_, lock_, awaiting, &dropped_);
  }
  // Locks the mutex again, on the thread the coroutine resumed on, before anything else; not when the pool
  // refused the resumption: the coroutine then runs inside the notifier's notify, whose thread may hold the mutex.
  void await_resume() {
    if (dropped_) {
      throw task_dropped(
          "co_await weft::notified: the pool was shut down before it could resume the awaiting coroutine (the lock "
          "does not hold the mutex)");
    }
    if (!lock_.owns_lock()) lock_.lock();
  }

 private:
  ConditionVariable& cv_;
  std::unique_lock<std::mutex>& lock_;
  bool dropped_ = false;
};

// A coroutine's entry in a CoroWaitList (a run's): resumed as a task of `pool` when the list is closed.
struct CoroListWaiter : CoroWaiter {
  CoroListWaiter() noexcept : CoroWaiter{nullptr, &wake_one} {}
  std::coroutine_handle<> handle;
  Pool* pool = nullptr;
  bool* dropped = nullptr;
  static void wake_one(CoroWaiter& self) noexcept {
    auto& waiter = static_cast<CoroListWaiter&>(self);
    coro_resume_on(waiter.pool, waiter.handle, waiter.dropped);  // copies first: the waiter dies with the frame
  }
};

class RunAwaiter {
 public:
  // Shares the run: the awaiter reads the result from its own handle, whatever becomes of the caller's.
  explicit RunAwaiter(const Run& run) noexcept : run_(GraphAccess::share(run)) {}
  // Throws std::logic_error for an empty Run.
  [[nodiscard]] bool await_ready() const {
    if (!run_.valid())
      throw std::logic_error(
          "co_await weft::Run: the Run is empty (default-constructed or moved from): no run to await");
    return run_.done();
  }
  bool await_suspend(std::coroutine_handle<> awaiting) noexcept {
    waiter_.handle = awaiting;
    waiter_.pool = coro_current_pool();
    if (waiter_.pool == nullptr) waiter_.pool = &GraphAccess::pool_of(run_);
    waiter_.dropped = &dropped_;
    // Pushed: the run's end may resume the coroutine on another thread before this returns.
    return GraphAccess::attach_waiter(run_, waiter_);
  }
  void await_resume() {
    if (dropped_)
      throw task_dropped("co_await weft::Run: the pool was shut down before it could resume the awaiting coroutine");
    if (run_.wait() == RunStatus::Cancelled) {
      throw task_cancelled(
          "co_await weft::Run: the run was cancelled (Run::cancel) before its nodes all ran; the nodes not started "
          "were skipped");
    }
  }

 private:
  Run run_;
  CoroListWaiter waiter_;
  bool dropped_ = false;
};

// A coroutine awaiting a job waits on two lists, the job's (it finished) and its scope's run end (it never will):
// the first to wake it resumes it, and the entry is freed by the last of the two (or by the awaiter, for a list
// that refused it).
class JobWait {
 public:
  JobWait(std::shared_ptr<ScopeShared> keep, std::coroutine_handle<> handle, Pool* pool, bool* dropped) noexcept
      : keep_(std::move(keep)), handle_(handle), pool_(pool), dropped_(dropped) {}
  JobWait(const JobWait&) = delete;
  JobWait& operator=(const JobWait&) = delete;
  ~JobWait() = default;

  struct Link : CoroWaiter {
    explicit Link(JobWait& owner) noexcept
        : CoroWaiter{nullptr, [](CoroWaiter& self) noexcept { static_cast<Link&>(self).owner->woken(); }},
          owner(&owner) {}
    JobWait* owner;
  };
  Link on_job{*this};
  Link on_end{*this};

  // The awaiter's side, after pushing on both lists: `refused` (1 or 2) of the two pushes failed (the job or the run is
  // final already). True if the coroutine must suspend (a wake-up has it, and may be running it already).
  [[nodiscard]] bool settle_refused(int refused) noexcept {
    // acq_rel, as in woken(): one claim wins.
    const bool mine = !claimed_.exchange(true, std::memory_order_acq_rel);
    drop(refused);
    return !mine;
  }

 private:
  void woken() noexcept {
    // acq_rel: exactly one of the two wake-ups and the awaiter's own look claims the coroutine; acquire sees the
    // fields the awaiter wrote before pushing (also published by the lists' release).
    if (claimed_.exchange(true, std::memory_order_acq_rel)) {
      drop(1);
      return;
    }
    Pool* const pool = pool_;
    const std::coroutine_handle<> handle = handle_;
    bool* const dropped = dropped_;
    drop(1);
    coro_resume_on(pool, handle, dropped);
  }
  void drop(int refs) noexcept {
    // acq_rel: the last one to drop sees every other's use of the entry before it frees it.
    if (refs_.fetch_sub(refs, std::memory_order_acq_rel) == refs) delete this;
  }

  std::shared_ptr<ScopeShared> keep_;  // the scope's run_end list outlives the entry
  std::coroutine_handle<> handle_;
  Pool* pool_;
  bool* dropped_;
  std::atomic<int> refs_{2};
  std::atomic<bool> claimed_{false};
};

template <class T>
class JobAwaiter {
 public:
  // What co_await gives: a copy of the value (a const reference into the job's slot if T cannot be copied: valid
  // while a copy of the Job lives), nothing for Job<void>.
  using result_type = typename std::conditional_t<std::is_void_v<T> || std::is_copy_constructible_v<T>,
                                                  std::type_identity<T>, std::add_lvalue_reference<const T>>::type;

  explicit JobAwaiter(const Job<T>& job) noexcept : state_(job.state_) {}
  // Throws std::logic_error for an empty Job, or one whose scope was not run yet.
  [[nodiscard]] bool await_ready() const {
    if (!state_)
      throw std::logic_error("co_await weft::Job: the Job is empty (default-constructed): it belongs to no scope");
    // acquire: pairs with the scope's release of the phase (every status is final once it says finished).
    const ScopePhase phase = state_->scope()->phase.load(std::memory_order_acquire);
    if (phase == ScopePhase::building) {
      throw std::logic_error("co_await weft::Job: job '" + state_->name() +
                             "' has not run: its scope was not run yet (call TaskScope::run() before awaiting its "
                             "jobs)");
    }
    return phase == ScopePhase::finished || state_->ready() || state_->scope()->run_end.closed();
  }
  // Throws std::bad_alloc (nothing pushed then).
  bool await_suspend(std::coroutine_handle<> awaiting) {
    const std::shared_ptr<ScopeShared>& scope = state_->shared_scope();
    Pool* pool = coro_current_pool();
    if (pool == nullptr) pool = scope->pool;
    auto* const wait = new JobWait(scope, awaiting, pool, &dropped_);
    // From the first push on, the coroutine may resume elsewhere and free this awaiter: only locals below.
    CoroWaitList& job_list = state_->waiters();
    CoroWaitList& end_list = scope->run_end;
    const int refused = (job_list.push(wait->on_job) ? 0 : 1) + (end_list.push(wait->on_end) ? 0 : 1);
    if (refused == 0) return true;  // both lists have it: either may free it, so it is not touched here
    return wait->settle_refused(refused);
  }
  result_type await_resume() const {
    if (dropped_)
      throw task_dropped("co_await weft::Job: the pool was shut down before it could resume the awaiting coroutine");
    if (!state_->ready()) {
      // Woken by the run's end: the job never ran. Once the scope is marked finished, Job::get's message says
      // why (KeepGoing names the failed job it depends on).
      if (state_->scope()->phase.load(std::memory_order_acquire) == ScopePhase::finished)
        state_->require_value("co_await weft::Job");
      throw job_cancelled("co_await weft::Job: job '" + state_->name() +
                          "' did not run: its scope's run was cancelled or failed before the job started");
    }
    state_->require_value("co_await weft::Job");  // rethrows the job's exception
    if constexpr (!std::is_void_v<T>) return state_->value();
  }

 private:
  std::shared_ptr<JobState<T>> state_;
  bool dropped_ = false;
};

}  // namespace detail

// A coroutine's handle: the body runs when the Task is awaited, not when it is called.
//
// Contract:
// - Lazily started: calling a coroutine that returns Task<T> allocates its frame (with the global operator new)
//   and runs nothing. The body runs when the Task is started: by `co_await task` in another coroutine, by
//   weft::sync_wait, weft::spawn or weft::when_all. A Task runs once; awaiting it again throws std::logic_error,
//   as does awaiting an empty Task (default-constructed or moved from).
// - co_await on a Task runs it on the awaiting thread at once (symmetric transfer): no task is queued. When it
//   ends, the awaiting coroutine continues on the thread it ended on, by a tail call: a chain of awaits of any
//   depth (a million) runs in constant stack in an optimized build (-O2, -O3: docs/guide.md says where not).
// - Its value, or the exception its body let out, is what the co_await returns or throws.
// - Inside a Task: co_await on a weft::Future<T> (an rvalue: it is consumed, as get() would), a weft::AsyncTask,
//   a TaskScope's weft::Job, a TaskGraph's weft::Run, a weft::Event or WaitGroup, pool.schedule(),
//   weft::when_all(tasks...) or another Task. Awaiting one of weft's that is not finished suspends the coroutine
//   without holding a thread or a fiber stack: the coroutine resumes as a task on a pool once it finishes (a
//   Future's or AsyncTask's own pool; for the others, the pool whose task suspended it: see each operator
//   co_await below). If that pool was shut down before it could, the co_await throws weft::task_dropped.
// - Cancellation reaches a coroutine through what it awaits: a cancelled Run throws weft::task_cancelled, a job
//   its scope's cancel (or a failure) skipped throws weft::job_cancelled.
// - A blocking wait inside the body (Future::get, Event::wait) works as in any task: on a worker with fibers it
//   suspends the fiber, and the coroutine with it.
// - Move-only. Destroying a Task frees its frame and everything in it: a Task never started, or one that ended.
//   A Task must not be destroyed while its body is suspended on anything weft resumes it from (a Future, an
//   AsyncTask, a Job, a Run, an Event, a WaitGroup, pool.schedule()): the pool would resume a freed frame. weft's own
//   starters (co_await, sync_wait, spawn, when_all) never do.
//
// Example:
//   weft::Task<int> answer(weft::Pool& pool) {
//     int half = co_await pool.submit([] { return 21; });  // suspends; resumes on a worker
//     co_return half * 2;
//   }
//   int ask(weft::Pool& pool) { return weft::sync_wait(answer(pool)); }  // 42
template <class T>
class [[nodiscard]] Task {
  static_assert(!std::is_reference_v<T>,
                "weft::Task<T&> is not supported: return a pointer or std::reference_wrapper instead");

 public:
  using promise_type = detail::TaskPromise<T>;
  // What co_await on the Task gives.
  using value_type = T;

  // An empty Task, of no coroutine: awaiting it throws std::logic_error.
  Task() noexcept = default;
  // Takes over other's coroutine; `other` is left empty.
  Task(Task&& other) noexcept
      : handle_(std::exchange(other.handle_, {})), started_(std::exchange(other.started_, false)) {}
  // Frees this Task's coroutine (see the contract), then takes over other's; `other` is left empty.
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
      started_ = std::exchange(other.started_, false);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  // Frees the coroutine's frame (a Task never started, or one that ended).
  ~Task() { reset(); }

  // True unless empty (default-constructed or moved from).
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(handle_); }

  // Runs the Task and gives its value (or rethrows its exception) to the awaiting coroutine.
  detail::TaskAwaiter<T> operator co_await() & noexcept { return detail::TaskAwaiter<T>(*this); }
  detail::TaskAwaiter<T> operator co_await() && noexcept { return detail::TaskAwaiter<T>(*this); }

 private:
  friend class detail::TaskPromise<T>;
  friend struct detail::TaskAccess;
  explicit Task(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  void reset() noexcept {
    if (handle_) std::exchange(handle_, {}).destroy();
  }

  std::coroutine_handle<promise_type> handle_;
  bool started_ = false;
};

namespace detail {
template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}
}  // namespace detail

// co_await on a weft::Future<T> (an rvalue: the future is consumed, as get() would): the value, or the task's
// exception rethrown. If the future is ready this is a get() that does not block; else the coroutine suspends
// and resumes as a task on the future's pool once the value is set (see Task's contract).
template <class T>
detail::FutureAwaiter<T> operator co_await(Future<T>&& future) noexcept {
  return detail::FutureAwaiter<T>(std::move(future));
}
// A Future is consumed by co_await, as by get(): write co_await std::move(future).
template <class T>
void operator co_await(Future<T>& future) = delete;

// co_await on a weft::AsyncTask: waits until the task is final, then rethrows its exception as get() does. The
// handle is copied: the AsyncTask stays usable. The coroutine resumes as a task on the AsyncTask's pool.
inline detail::AsyncTaskAwaiter operator co_await(const AsyncTask& task) { return detail::AsyncTaskAwaiter(task); }

// co_await on a TaskScope's weft::Job<T>: waits until the job finished, then gives its value (a copy; a const T&
// into the job's slot if T cannot be copied) or rethrows its exception. The Job is copied: the caller's stays
// usable, and the result outlives the scope.
//
// Contract:
// - The coroutine suspends without holding a thread or a fiber stack, and resumes as a task of the pool whose
//   task suspended it (awaited from no pool's task: of the scope's pool) once the job returned or threw, or once
//   the scope's run is over without having run it.
// - A job that never ran (its run was cancelled, by TaskScope::cancel() or a failure under ErrorPolicy::CancelRun,
//   or a job it depends on failed under KeepGoing) makes the co_await throw weft::job_cancelled.
// - Throws std::logic_error for an empty Job, and for a job whose scope was not run yet (call TaskScope::run()
//   first: a run_and_wait() would wait on the thread). If the pool refuses to resume the coroutine (shut down),
//   the co_await throws weft::task_dropped.
// - The scope may be destroyed while a coroutine awaits one of its jobs: its destructor waits for the run, whose
//   end resumes the coroutine; the job's value stays with the Job.
//
// Example:
//   weft::Task<int> use(weft::TaskScope& scope, weft::Job<int> job) {
//     co_await scope.pool().schedule();
//     co_return co_await job * 2;
//   }
template <class T>
detail::JobAwaiter<T> operator co_await(const Job<T>& job) noexcept {
  return detail::JobAwaiter<T>(job);
}

// co_await on a TaskGraph's weft::Run: waits until the run is over, then returns, or rethrows the run's first
// exception (as Run::wait) or, if the run was cancelled, throws weft::task_cancelled.
//
// Contract:
// - The coroutine suspends without holding a thread or a fiber stack, and resumes as a task of the pool whose
//   task suspended it (awaited from no pool's task: of the run's pool) once the run is over.
// - The run is shared, not taken: the caller's Run stays usable, and may even be destroyed meanwhile (its
//   destructor waits for the run; the awaiter's own share of it keeps the result).
// - Throws std::logic_error for an empty Run; weft::task_dropped if the pool refuses to resume the coroutine.
//
// Example:
//   weft::Task<void> after_graph(weft::TaskGraph& graph, weft::Pool& pool) {
//     co_await pool.schedule();
//     co_await graph.run(pool);  // rethrows a node's exception
//   }
inline detail::RunAwaiter operator co_await(const Run& run) noexcept { return detail::RunAwaiter(run); }

// co_await on a weft::Event: returns once the event is signalled (Mode::Auto: consumes one signal, as wait()).
// co_await on a weft::WaitGroup: returns once its count is zero.
//
// Contract (both):
// - The coroutine suspends without holding a thread or a fiber stack: it is parked by the primitive's address, as
//   a waiting fiber is, and resumes as a task of the pool whose task suspended it; awaited from no pool's task
//   (a coroutine that sync_wait started on a plain thread, before its first suspension), it resumes on the
//   thread that signals, inside signal() or done().
// - What the signalling thread did before signal() / done() is visible after the co_await.
// - The primitive must outlive the wait: destroy it only once no thread and no coroutine waits on it (a
//   coroutine resumed from it may destroy it at once).
// - A coroutine suspended on a primitive that is not signalled before its pool stops is resumed by the pool's
//   shutdown (or destructor), after its workers joined, on that thread, and its co_await throws
//   weft::task_dropped; so its frame is freed as it unwinds, and nothing is left pointing at the pool. It runs
//   inside that shutdown() (or the destructor), after the pool has stopped: a shutdown of the same pool from
//   there returns at once (nothing is left to drop), and it must not destroy the pool. One suspended outside any
//   pool stays suspended until it is signalled.
// - A Mode::Auto event counts a suspended coroutine among its waits in progress (std::length_error past 32,767).
// - If the pool refuses to resume the coroutine (shut down), the co_await throws weft::task_dropped (an Auto
//   event's signal is not consumed then).
//
// Example:
//   weft::Task<void> consumer(weft::Event& ready, weft::WaitGroup& pending) {
//     co_await ready;    // no worker waits meanwhile
//     co_await pending;  // every done() called
//   }
inline detail::EventAwaiter operator co_await(Event& event) noexcept { return detail::EventAwaiter(event); }
inline detail::WaitGroupAwaiter operator co_await(WaitGroup& group) noexcept { return detail::WaitGroupAwaiter(group); }

// co_await weft::notified(cv, lock): ConditionVariable::wait(lock) for a coroutine. Releases `lock`, suspends until
// a notify_one or notify_all of `cv` after this call, and holds the mutex again when the co_await returns.
//
// Contract:
// - As ConditionVariable::wait: `lock` must hold its mutex (else std::logic_error); wake-ups may be spurious
//   (notify_one may release more than one waiter), so re-check the condition in a loop, as the example does.
// - The coroutine suspends without holding a thread or a fiber stack, and resumes as a task of the pool whose task
//   suspended it, where it locks the mutex again (blocking that worker while another thread holds it, as a
//   std::mutex does). A notify made under the mutex is therefore safe: the woken coroutine locks it on a worker.
// - Awaited from no pool's task (a coroutine that sync_wait started on a plain thread, before its first
//   suspension), it blocks that thread as cv.wait(lock) does.
// - If the pool refuses to resume the coroutine (shut down), it resumes inside the notify that woke it, and the
//   co_await throws weft::task_dropped without locking the mutex again (`lock` does not own it then: the
//   notifier's thread may hold it).
// - `cv` must outlive the wait. A coroutine whose notify has not come when its pool stops is resumed by the
//   shutdown with task_dropped, as for an Event (above).
//
// Example:
//   weft::Task<int> take(weft::Pool& pool, std::mutex& m, weft::ConditionVariable& cv, std::deque<int>& queue) {
//     co_await pool.schedule();
//     std::unique_lock lock(m);
//     while (queue.empty()) co_await weft::notified(cv, lock);  // no worker waits meanwhile
//     int item = queue.front();
//     queue.pop_front();
//     co_return item;
//   }
[[nodiscard]] inline detail::NotifiedAwaiter notified(ConditionVariable& cv,
                                                      std::unique_lock<std::mutex>& lock) noexcept {
  return detail::NotifiedAwaiter(cv, lock);
}

// Gives `task` a stop token to poll: the Task, and every Task it starts (by co_await or when_all) that was given
// none of its own, read it with `co_await weft::this_coro::stop_token`. Returns the Task, to be started as any
// (co_await, sync_wait, spawn, when_all).
//
// Contract:
// - A stop token is polled, never enforced: weft does not stop, skip or resume a Task because its token was
//   stopped. The body decides (return early, throw weft::task_cancelled, ...), as a task given a token by
//   Pool::submit(token, f) does once it runs.
// - Inherited at the start: a Task awaited by a Task, or a member of a when_all awaited by one, takes its
//   awaiter's token unless it has one of its own. A Task with neither reads an empty token (stop_possible() false).
// - Throws std::logic_error for an empty or started Task.
//
// Example:
//   weft::Task<int> count_until_stopped(weft::Pool& pool) {
//     co_await pool.schedule();
//     std::stop_token stop = co_await weft::this_coro::stop_token;
//     int n = 0;
//     while (!stop.stop_requested() && n < 1000) ++n;
//     co_return n;
//   }
//   int count_with(weft::Pool& pool) {
//     std::stop_source source;
//     int n = weft::sync_wait(weft::with_stop_token(count_until_stopped(pool), source.get_token()));
//     return n;
//   }
template <class T>
[[nodiscard]] Task<T> with_stop_token(Task<T>&& task, std::stop_token token) {
  detail::TaskAccess::require_unstarted(task, "weft::with_stop_token");
  detail::TaskAccess::handle(task).promise().set_stop_token(std::move(token));
  return std::move(task);
}

namespace detail {
// What weft::this_coro::stop_token is: an awaitable that does not suspend and gives the Task's stop token.
struct StopTokenAwaitable {
  struct Awaiter {
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> self) noexcept {
      static_assert(std::is_base_of_v<TaskPromiseBase, P>,
                    "co_await weft::this_coro::stop_token: only inside a weft::Task coroutine");
      token = self.promise().stop_token();
      return false;  // not suspended: the coroutine goes on at once
    }
    [[nodiscard]] std::stop_token await_resume() noexcept { return std::move(token); }
    std::stop_token token;
  };
  Awaiter operator co_await() const noexcept { return {}; }
};
}  // namespace detail

namespace this_coro {
// `co_await weft::this_coro::stop_token` inside a weft::Task gives the Task's std::stop_token (see
// weft::with_stop_token; empty if it has none). It does not suspend.
inline constexpr detail::StopTokenAwaitable stop_token{};
}  // namespace this_coro

}  // namespace weft
