// weft::Task<T>: a C++20 coroutine that runs on weft's pools, and what it may co_await: another Task, a
// weft::Future, a weft::AsyncTask, Pool::schedule(), and weft::when_all over Tasks. sync_wait and spawn (which
// start a Task from outside a coroutine) are in weft/sync_wait.hpp; weft::Generator in weft/generator.hpp.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "weft/async_task.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/errors.hpp"
#include "weft/future.hpp"
#include "weft/pool.hpp"

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

 protected:
  void rethrow_if_failed() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::coroutine_handle<> continuation_ = std::noop_coroutine();
  TaskJoin* join_ = nullptr;
  std::exception_ptr error_;
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
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    TaskAccess::mark_started(task_);
    const auto handle = TaskAccess::handle(task_);
    handle.promise().set_continuation(awaiting);
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

template <class T>
using when_all_value_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
when_all_value_t<T> take_when_all_value(Task<T>& task) {
  if constexpr (std::is_void_v<T>) {
    TaskAccess::handle(task).promise().take_result();
    return {};
  } else {
    return TaskAccess::handle(task).promise().take_result();
  }
}

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
//   pool.schedule(), weft::when_all(tasks...) or another Task. Awaiting a weft Future or AsyncTask that is not
//   finished suspends the coroutine without holding a thread or a fiber stack: the coroutine resumes as a task on
//   the pool that made it once it finishes. If that pool was shut down before it could, the co_await throws
//   weft::task_dropped.
// - A blocking wait inside the body (Future::get, Event::wait) works as in any task: on a worker with fibers it
//   suspends the fiber, and the coroutine with it.
// - Move-only. Destroying a Task frees its frame and everything in it: a Task never started, or one that ended.
//   A Task must not be destroyed while its body is suspended on a weft Future, AsyncTask or pool.schedule(): the
//   pool would resume a freed frame. weft's own starters (co_await, sync_wait, spawn, when_all) never do.
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

// The awaitable weft::when_all(tasks...) returns: co_await on it runs every Task, in parallel on the pool whose
// task is awaiting it, and gives a std::tuple of their values (std::monostate for a Task<void>).
//
// Contract:
// - Lazily started, as a Task: nothing runs until it is awaited, once (again throws std::logic_error).
// - The first Task runs on the awaiting thread (symmetric transfer); each other one is queued as a task on the
//   pool whose task (or whose inline run) is awaiting. Awaited from no pool's task (a coroutine that sync_wait
//   started on a plain thread, before its first suspension), the others start one after another on that thread
//   and run until each first suspends.
// - The awaiting coroutine resumes once every Task ended, on the thread of the last one to end.
// - If some Tasks threw, the co_await rethrows the exception of the first of them in argument order, after every
//   Task ended; the other exceptions are dropped.
template <class... T>
class [[nodiscard]] WhenAll {
 public:
  // The tasks to run; each must be valid and never started (checked when awaited).
  explicit WhenAll(Task<T>&&... tasks) noexcept : tasks_(std::move(tasks)...) {}
  // Takes over other's Tasks (before it is awaited; moving a started one throws std::logic_error).
  // Not noexcept: moving one that is being awaited is a bug in the caller, reported rather than terminating.
  WhenAll(WhenAll&& other) : tasks_(std::move(other.tasks_)) {  // NOLINT(performance-noexcept-move-constructor)
    if (other.started_) throw std::logic_error("weft::when_all: moved while awaited");
  }
  WhenAll& operator=(WhenAll&&) = delete;
  WhenAll(const WhenAll&) = delete;
  WhenAll& operator=(const WhenAll&) = delete;
  ~WhenAll() = default;

  [[nodiscard]] bool await_ready() {
    if (started_) throw std::logic_error("weft::when_all: awaited already (it runs its Tasks once)");
    std::apply([](const Task<T>&... tasks) { (detail::TaskAccess::require_unstarted(tasks, "weft::when_all"), ...); },
               tasks_);
    return sizeof...(T) == 0;
  }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    started_ = true;
    join_.parent = awaiting;
    join_.remaining.store(sizeof...(T), std::memory_order_relaxed);  // published by the queueing of each member
    std::apply([this](Task<T>&... tasks) { (start(tasks), ...); }, tasks_);
    // The first member is not started yet, so none of the others can be the last to end: the awaiting coroutine
    // cannot resume (and free this object) before it is; it runs now, on this thread.
    return first_;
  }
  std::tuple<detail::when_all_value_t<T>...> await_resume() {
    // Braced: the members are taken in argument order, so the first one that threw is the one rethrown.
    return std::apply(
        [](Task<T>&... tasks) {
          return std::tuple<detail::when_all_value_t<T>...>{detail::take_when_all_value(tasks)...};
        },
        tasks_);
  }

 private:
  template <class U>
  void start(Task<U>& task) noexcept {
    detail::TaskAccess::mark_started(task);
    const auto handle = detail::TaskAccess::handle(task);
    handle.promise().set_join(&join_);
    if (!first_) {
      first_ = handle;
      return;
    }
    if (Pool* const pool = detail::coro_current_pool()) {
      try {
        pool->post(detail::CoroResumer(handle, nullptr));
      } catch (...) {
        // Refused (shut down): the resumer's destructor has run the member here.
      }
    } else {
      handle.resume();
    }
  }

  std::tuple<Task<T>...> tasks_;
  detail::TaskJoin join_;
  std::coroutine_handle<> first_;
  bool started_ = false;
};

// Runs the Tasks in parallel and gives their values: co_await weft::when_all(f(), g()) (see WhenAll).
//
// Example:
//   weft::Task<int> fib(int n) {
//     if (n < 2) co_return n;
//     auto [a, b] = co_await weft::when_all(fib(n - 1), fib(n - 2));
//     co_return a + b;
//   }
//   weft::Task<int> fib_on(weft::Pool& pool, int n) {
//     co_await pool.schedule();  // on a worker: when_all's members then run in parallel on the pool
//     co_return co_await fib(n);
//   }
template <class... T>
[[nodiscard]] WhenAll<T...> when_all(Task<T>&&... tasks) noexcept {
  return WhenAll<T...>(std::move(tasks)...);
}

}  // namespace weft
