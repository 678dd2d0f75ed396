// weft::Future<T>: the result of Pool::submit.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <chrono>
#include <stdexcept>
#include <utility>

#include "weft/detail/deadline.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/errors.hpp"

namespace weft {

namespace detail {
struct FutureAccess;
}

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
  Future() noexcept = default;
  Future(Future&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  Future& operator=(Future&& other) noexcept {
    if (this != &other) {
      reset();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;
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
    return state_->ready() ||
           detail::wait_until_ready_for(*state_, detail::clamp_to_nanoseconds(timeout));
  }

  // Waits, then returns the value or rethrows the task's exception. Leaves the future invalid.
  T get() {
    require_valid("get");
    wait_valid();
    Holder holder{std::exchange(state_, nullptr)};
    switch (holder.state->status()) {
      case detail::FutureStateBase::has_exception:
        std::rethrow_exception(holder.state->take_error());
      case detail::FutureStateBase::dropped:
        throw task_dropped("weft::Future::get: the task was dropped by a DropPending shutdown before it started");
      default:
        return holder.state->take_value();
    }
  }

 private:
  friend struct detail::FutureAccess;
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
};
}  // namespace detail

}  // namespace weft
