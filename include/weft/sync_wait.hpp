// weft::sync_wait and weft::spawn: starting a weft::Task from code that is not a coroutine, waiting for it or not.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <coroutine>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/event.hpp"
#include "weft/pool.hpp"
#include "weft/task.hpp"
#include "weft/task_when.hpp"

namespace weft {

namespace detail {

// The coroutine sync_wait runs: awaits the awaitable, keeps its value or exception, then signals the event. It
// stops at its end so that sync_wait, not the signalling thread, frees it.
class SyncWaitCoro {
 public:
  struct promise_type {
    Event* done = nullptr;
    SyncWaitCoro get_return_object() noexcept {
      return SyncWaitCoro(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Signal {
      [[nodiscard]] bool await_ready() const noexcept { return false; }
      // The waiter may free the frame as soon as signal() releases it: nothing of the frame is touched after.
      void await_suspend(std::coroutine_handle<promise_type> self) noexcept { self.promise().done->signal(); }
      void await_resume() const noexcept {}
    };
    Signal final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // the body catches everything
  };
  SyncWaitCoro(SyncWaitCoro&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  SyncWaitCoro& operator=(SyncWaitCoro&&) = delete;
  ~SyncWaitCoro() {
    if (handle_) handle_.destroy();
  }
  // Runs the body on this thread until it first suspends (or ends), then waits for its end.
  void run() {
    Event done;
    handle_.promise().done = &done;
    handle_.resume();
    done.wait();
  }

 private:
  explicit SyncWaitCoro(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  std::coroutine_handle<promise_type> handle_;
};

// The body: references to sync_wait's locals, which outlive it.
template <class A, class R>
SyncWaitCoro sync_wait_body(A& awaitable, std::optional<R>& value, std::exception_ptr& error) {
  try {
    value.emplace(co_await std::move(awaitable));
  } catch (...) {
    error = std::current_exception();
  }
}
template <class A>
SyncWaitCoro sync_wait_body(A& awaitable, std::exception_ptr& error) {
  try {
    co_await std::move(awaitable);
  } catch (...) {
    error = std::current_exception();
  }
}

template <class A, class R>
R sync_wait_impl(A& awaitable) {
  std::exception_ptr error;
  if constexpr (std::is_void_v<R>) {
    sync_wait_body(awaitable, error).run();
    if (error) std::rethrow_exception(error);
  } else {
    std::optional<R> value;
    sync_wait_body(awaitable, value, error).run();
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
}

// The coroutine spawn runs: owned by nobody once started (it frees itself at its end); an exception goes to its
// pool's error handler.
class DetachedCoro {
 public:
  struct promise_type {
    Pool* pool;
    template <class... A>
    explicit promise_type(Pool& owner, A&... /*arguments*/) noexcept : pool(&owner) {}
    DetachedCoro get_return_object() noexcept {
      return DetachedCoro(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { coro_report_error(*pool, std::current_exception()); }
  };
  [[nodiscard]] std::coroutine_handle<promise_type> handle() const noexcept { return handle_; }

 private:
  explicit DetachedCoro(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  std::coroutine_handle<promise_type> handle_;
};

template <class T>
DetachedCoro spawn_body(Pool& /*pool*/, Task<T> task) {
  co_await std::move(task);
}

// Starts a spawned coroutine when the pool runs it; frees it unstarted if the pool never does.
class SpawnStart {
 public:
  explicit SpawnStart(std::coroutine_handle<> handle) noexcept : handle_(handle) {}
  SpawnStart(SpawnStart&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  SpawnStart& operator=(SpawnStart&&) = delete;
  SpawnStart(const SpawnStart&) = delete;
  SpawnStart& operator=(const SpawnStart&) = delete;
  ~SpawnStart() {
    if (handle_) handle_.destroy();
  }
  void operator()() noexcept { std::exchange(handle_, {}).resume(); }

 private:
  std::coroutine_handle<> handle_;
};

}  // namespace detail

// Runs a Task (or a weft::when_all) to its end from code that is not a coroutine: returns its value or rethrows
// its exception.
//
// Contract:
// - The Task starts on the calling thread and runs there until it first suspends (on a Future, pool.schedule(),
//   ...); it then continues wherever it is resumed (a pool's workers), and the caller waits as weft::Event::wait
//   does: a plain thread blocks; on a worker of a pool with fibers the calling task suspends its fiber, and the
//   worker runs other tasks; on a worker without fibers the worker runs other tasks of its pool meanwhile. So,
//   like Future::get, it never deadlocks a pool; but inside a coroutine, co_await the Task instead: that holds
//   no fiber and no worker.
// - The Task must be valid and never started (else std::logic_error); it is consumed.
//
// Example:
//   weft::Task<int> twice(weft::Pool& pool, int x) {
//     co_await pool.schedule();
//     co_return 2 * x;
//   }
//   int forty_two(weft::Pool& pool) { return weft::sync_wait(twice(pool, 21)); }  // computed on a worker
template <class T>
T sync_wait(Task<T>&& task) {
  detail::TaskAccess::require_unstarted(task, "weft::sync_wait");
  Task<T> owned = std::move(task);  // consumed: the caller's Task is left empty, and the frame freed here
  return detail::sync_wait_impl<Task<T>, T>(owned);
}

// sync_wait over weft::when_all(tasks...): the tuple of their values, or the first exception in argument order.
template <class... T>
std::tuple<detail::when_all_value_t<T>...> sync_wait(WhenAll<T...>&& all) {
  WhenAll<T...> owned = std::move(all);
  return detail::sync_wait_impl<WhenAll<T...>, std::tuple<detail::when_all_value_t<T>...>>(owned);
}

// sync_wait over weft::when_any(tasks...): the first Task to end, its index and value, or its exception; the
// others run on to their ends after this returns (see WhenAny).
template <class... T>
typename WhenAny<T...>::value_type sync_wait(WhenAny<T...>&& any) {
  WhenAny<T...> owned = std::move(any);
  return detail::sync_wait_impl<WhenAny<T...>, typename WhenAny<T...>::value_type>(owned);
}

// sync_wait over weft::when_all(std::vector<Task<T>>): their values in the vector's order, or the first exception
// in that order.
template <class T>
std::vector<detail::when_all_value_t<T>> sync_wait(WhenAllRange<T>&& all) {
  WhenAllRange<T> owned = std::move(all);
  return detail::sync_wait_impl<WhenAllRange<T>, std::vector<detail::when_all_value_t<T>>>(owned);
}

// sync_wait over weft::when_any(std::vector<Task<T>>): the first Task to end, its index and value, or its
// exception; the others run on to their ends after this returns (see WhenAnyRange).
template <class T>
typename WhenAnyRange<T>::value_type sync_wait(WhenAnyRange<T>&& any) {
  WhenAnyRange<T> owned = std::move(any);
  return detail::sync_wait_impl<WhenAnyRange<T>, typename WhenAnyRange<T>::value_type>(owned);
}

// Fire and forget: runs the Task as a task on `pool`, and nobody waits for it. pool.spawn(task) is the same call
// (Pool::spawn forwards here).
//
// Contract:
// - The Task starts as a task on one of the pool's workers and runs to its end; its value is discarded, and an
//   exception it lets out goes to the pool's PoolOptions::on_error (else kept for Pool::take_errors), as a
//   posted task's does.
// - Throws weft::pool_closed if the pool is shut down (the Task is then freed unstarted), std::logic_error for an
//   empty or started Task. A Shutdown::DropPending shutdown that drops it before it started frees it unstarted.
// - Pool::wait_idle and a draining shutdown wait for the spawned Task's first run only: a Task suspended on a
//   Future keeps no task queued. Keep what it uses alive until it ends (sync_wait it, or signal an Event at its
//   end).
//
// Example:
//   weft::Task<void> greet() {
//     std::puts("hello from a worker");
//     co_return;
//   }
//   void start(weft::Pool& pool) { weft::spawn(pool, greet()); }  // or pool.spawn(greet())
template <class T>
void spawn(Pool& pool, Task<T>&& task) {
  detail::TaskAccess::require_unstarted(task, "weft::spawn");
  detail::DetachedCoro coro = detail::spawn_body(pool, std::move(task));
  pool.post(detail::SpawnStart(coro.handle()));
}

// Pool::spawn(task): weft::spawn(pool, task), as a member (see there).
template <class T>
void Pool::spawn(Task<T>&& task) {
  weft::spawn(*this, std::move(task));
}

}  // namespace weft
