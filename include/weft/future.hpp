// weft::Future<T>: the result of Pool::submit.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <chrono>
#include <concepts>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "weft/detail/deadline.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/pool_options.hpp"

namespace weft {

namespace detail {
struct FutureAccess;
}

template <class T>
class Future;

// A callable Future<T>::then accepts: f(T&&) (any parameter a T prvalue binds to), or f() for a Future<void>.
namespace detail {
template <class F, class T>
struct is_continuation_for : std::bool_constant<std::is_invocable_v<F&, T&&>> {};
template <class F>
struct is_continuation_for<F, void> : std::bool_constant<std::is_invocable_v<F&>> {};
}  // namespace detail
template <class F, class T>
concept ContinuationFor = detail::is_continuation_for<std::decay_t<F>, T>::value;

// The future then(f) returns on a Future<T>.
template <class T, class F>
using then_future_t = Future<typename detail::then_result<T, std::decay_t<F>>::type>;

// The eventual result of one submitted task. Move-only; get() may be called once.
//
// Contract:
// - get() blocks until the task finished, then returns its value or rethrows its exception. If the task was
//   dropped by a Shutdown::DropPending shutdown, get() throws weft::task_dropped.
// - Waiting never deadlocks a pool: on one of the pool's workers, get() runs other tasks while it waits; on any
//   thread, a task that no worker has started yet (and that has no affinity) is run inline by the waiter, as
//   oneTBB's task_group::wait does.
// - Destroying a Future without get() does not cancel the task: it still runs, its result is discarded.
// - get() or wait() on an invalid Future (default-constructed, moved-from, or after get()) throws
//   std::logic_error.
// - then(f) chains a continuation that runs as a task on the same pool once the value is set (see then()).
// - One Future, like a std::future, is not shared: its const members (valid, ready, wait, wait_for) may run
//   concurrently with each other, but get(), then() and assignment only while no other thread uses the same
//   Future object (hand it over with a move, or wait on separate futures).
//
// Example:
//   weft::Pool pool;
//   weft::Future<int> answer = pool.submit([](int a) { return a * 2; }, 21);
//   int v = answer.get();  // 42
template <class T>
class [[nodiscard]] Future {
  static_assert(!std::is_reference_v<T>,
                "weft::Future<T&> is not supported: return a pointer or std::reference_wrapper instead");

 public:
  // An invalid future, of no task: every member but valid() and assignment throws std::logic_error on it.
  Future() noexcept = default;
  // Takes over other's task; `other` is left invalid.
  Future(Future&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  // Lets go of this future's task (which still runs: nothing is cancelled), then takes over other's; `other` is
  // left invalid. Self-assignment changes nothing.
  Future& operator=(Future&& other) noexcept {
    if (this != &other) {
      reset();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;
  // Lets go of the task without waiting for it: it still runs, and its result (or exception) is discarded.
  ~Future() { reset(); }

  // True until get() is called or the future is moved from.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  // True once get() would not block.
  [[nodiscard]] bool ready() const {
    require_valid("ready");
    return state_->ready();
  }

  // Blocks until ready (see the contract for what the waiting thread does meanwhile).
  void wait() const {
    require_valid("wait");
    wait_valid();
  }

  // Waits at most `timeout`; returns ready().
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    require_valid("wait_for");
    return state_->ready() || detail::wait_until_ready_for(*state_, detail::clamp_to_nanoseconds(timeout));
  }

  // A continuation without a scope: consumes this future and returns the future of f(value) (f() for a
  // Future<void>), which runs as a task on the pool that made this future, with `options` (priority, affinity),
  // once the value is set; at once (queued, never called here) if it already is.
  //
  // Contract:
  // - f is called at most once, always on one of the pool's workers: never by the thread that sets the value
  //   (the finished task's worker only queues it), never inline by a thread waiting for the returned future.
  //   So a chain of any length (a million then()s) never nests on a stack.
  // - If this future's task threw, f is not called and the returned future rethrows the same exception; so
  //   an exception travels down a chain. If f throws, the returned future rethrows that.
  // - Nothing is lost silently: if the task was dropped by a shutdown, or the pool refuses the continuation
  //   (shut down before it could be queued), f is not called and the returned future throws task_dropped.
  // - The pool that made the future (Pool::submit or an earlier then) must not have been destroyed when then()
  //   is called; after a shutdown (not destroyed) then() is fine and reports task_dropped as above. Every
  //   Future comes from a pool: there is no pool-less Future to chain on.
  // - Rvalue-only (std::move(fut).then(f)): a future has one consumer, and it is either get() or then().
  // - Throws std::logic_error on an invalid future, std::invalid_argument for an empty f (null function
  //   pointer, empty std::function), weft::invalid_option for options the pool cannot honour (an affinity past
  //   its workers); in each case this future is left unchanged.
  //
  // Example:
  //   weft::Future<int> a = pool.submit([] { return 20; });
  //   weft::Future<std::string> b = std::move(a).then([](int v) { return std::to_string(v + 1); });
  //   weft::Future<void> c = std::move(b).then([](std::string s) { std::puts(s.c_str()); });
  //   c.get();  // "21" printed; rethrows the first exception of the chain
  template <class F>
    requires ContinuationFor<F, T>
  [[nodiscard]] then_future_t<T, F> then(F&& f, TaskOptions options = {}) && {
    using U = typename detail::then_result<T, std::decay_t<F>>::type;
    static_assert(!std::is_reference_v<U>,
                  "weft::Future::then(f): f returns a reference; return a pointer or std::reference_wrapper instead");
    require_valid("then");
    detail::require_callable(f, "weft::Future::then");
    detail::validate_continuation_options(state_->pool(), options);
    auto* next = new detail::ThenTask<U, T, std::decay_t<F>>(state_->pool(), options, std::forward<F>(f));
    Future<U> result(next);
    detail::FutureResult<T>* const antecedent = std::exchange(state_, nullptr);
    next->set_antecedent(antecedent);  // our reference goes to the continuation
    // If the antecedent is already final this queues `next` now; else its finisher will. `antecedent` may be
    // gone once this returns (the continuation releases it when it runs).
    antecedent->attach_continuation(next);
    return result;
  }

  // Waits, then returns the value or rethrows the task's exception. Leaves the future invalid.
  T get() {
    require_valid("get");
    if (!state_->ready()) detail::wait_until_ready_for_get(*state_);
    Holder holder{std::exchange(state_, nullptr)};
    switch (holder.state->status()) {
      case detail::FutureStateBase::has_exception:
        std::rethrow_exception(holder.state->take_error());
      case detail::FutureStateBase::dropped:
        // Worded for both policies that drop (Shutdown::DropPending, shutdown_for's deadline): the result does
        // not know its pool.
        throw task_dropped(
            "weft::Future::get: the task was dropped before it started by a shutdown that drops pending work "
            "(Shutdown::DropPending or shutdown_for's deadline)");
      default:
        return holder.state->take_value();
    }
  }

 private:
  friend struct detail::FutureAccess;
  template <class>
  friend class Future;  // then() makes the Future of another type
  explicit Future(detail::FutureResult<T>* state) noexcept : state_(state) {}

  struct Holder {
    detail::FutureResult<T>* state;
    ~Holder() { state->release(); }
  };

  void require_valid(const char* what) const {
    if (state_ == nullptr)
      throw std::logic_error(std::string("weft::Future::") + what +
                             ": the future has no state (default-constructed, moved from, or get() already called)");
  }
  void wait_valid() const {
    if (!state_->ready()) detail::wait_until_ready(*state_);
  }
  void reset() noexcept {
    if (state_ != nullptr) std::exchange(state_, nullptr)->release();
  }

  detail::FutureResult<T>* state_ = nullptr;
};

namespace detail {
// Makes futures for Pool; their constructor is private so that users cannot make one from a raw state.
struct FutureAccess {
  template <class T>
  static Future<T> adopt(FutureResult<T>* state) noexcept {
    return Future<T>(state);
  }
  // The state a valid future holds (co_await on a Future attaches its resumption there: weft/task.hpp).
  template <class T>
  static FutureResult<T>* state(const Future<T>& future) noexcept {
    return future.state_;
  }
};
}  // namespace detail

}  // namespace weft
