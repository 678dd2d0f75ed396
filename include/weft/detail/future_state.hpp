// The state a weft::Future shares with its task. Public only because Future<T> is a template; users never
// name anything here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "weft/detail/task_header.hpp"

namespace weft::detail {

// The pool's count of tasks a waiter ran inline (scheduler/engine.hpp), so that wait_idle and Drain also wait
// for a task that an outside thread is running in Future::get.
struct InlineRunCounter;

// Lifecycle: pending -> running -> value | exception, or pending -> dropped. Whoever moves it from pending to
// running (a worker, or a waiter running the task inline) is the only one to call the task.
//
// The state is queued as itself (a TaskHeader): the pool routes it with no task block or closure around it,
// and the queue's hold on it is one of its two references (see finish_queued).
class FutureStateBase : public TaskHeader {
 public:
  enum Status : std::uint32_t { pending, running, has_value, has_exception, dropped };

  FutureStateBase(const FutureStateBase&) = delete;
  FutureStateBase& operator=(const FutureStateBase&) = delete;

  // Runs the task unless someone already claimed it. Called through the queued task, and by waiters.
  bool run_if_unclaimed() noexcept {
    if (!try_claim()) return false;
    run_claimed();
    return true;
  }
  // The two halves of run_if_unclaimed, for a caller that does something around the run (the task hooks):
  // true if this caller won the task, which it must then run_claimed() exactly once.
  [[nodiscard]] bool try_claim() noexcept {
    std::uint32_t expected = pending;
    // acq_rel: the winner sees the state as constructed. acquire on failure: a loser (a worker popping the
    // queued copy) then happens-after the winner's claim, and so after the winner counted its inline run
    // (Engine::run_inline): the loser's "finished" can never be seen without that count.
    return status_.compare_exchange_strong(expected, running, std::memory_order_acq_rel, std::memory_order_acquire);
  }
  void run_claimed() noexcept { publish(run_task()); }

  // The queued task was destroyed without running (DropPending shutdown): tell the future.
  void drop_if_unclaimed() noexcept {
    std::uint32_t expected = pending;
    // seq_cst: like publish(), it must be in the single total order with the waiter's add_waiter and re-check,
    // or both sides could miss each other and the waiter sleep forever.
    if (status_.compare_exchange_strong(expected, dropped, std::memory_order_seq_cst, std::memory_order_relaxed))
      wake_waiters();
  }

  // For the pool, which queues the state as itself (TaskHeader::is_future_state): runs it (unless a waiter
  // already ran it inline) or, if `run` is false, reports it dropped; then gives up the queue's reference, so
  // the state may be gone on return.
  static void finish_queued(TaskHeader* task, bool run) noexcept {
    auto* const state = static_cast<FutureStateBase*>(task);
    if (run) {
      state->run_if_unclaimed();
    } else {
      state->drop_if_unclaimed();
    }
    state->release();
  }

  [[nodiscard]] Status status() const noexcept {
    // acquire: pairs with publish(), so a reader of a final status sees the value or exception stored.
    return static_cast<Status>(status_.load(std::memory_order_acquire));
  }
  [[nodiscard]] bool ready() const noexcept { return status() >= has_value; }
  // False if the task has an affinity: then only the pool may run it, never a waiter inline.
  [[nodiscard]] bool may_run_inline() const noexcept { return inline_runs_ != nullptr; }
  // Where an inline run is counted (null when the task may not run inline).
  [[nodiscard]] InlineRunCounter* inline_runs() const noexcept { return inline_runs_; }

  // For the blocking wait (scheduler): the word a sleeping waiter watches, and its announce/withdraw.
  [[nodiscard]] std::atomic<std::uint32_t>& status_word() noexcept { return status_; }
  void add_waiter() noexcept { waiters_.fetch_add(1, std::memory_order_seq_cst); }
  void remove_waiter() noexcept { waiters_.fetch_sub(1, std::memory_order_relaxed); }

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    // acq_rel: the last owner must see every write the other owner made before destroying.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }

 protected:
  explicit FutureStateBase(InlineRunCounter* inline_runs) noexcept : inline_runs_(inline_runs) {
    is_future_state = true;
  }
  ~FutureStateBase() = default;

  std::exception_ptr error_;

 private:
  virtual Status run_task() noexcept = 0;
  virtual void destroy() noexcept = 0;

  void publish(Status final_status) noexcept {
    // seq_cst store + the seq_cst load in wake_waiters() pair with add_waiter() and the waiter's seq_cst
    // re-check: either the waiter sees the final status, or we see its announcement and wake it.
    status_.store(final_status, std::memory_order_seq_cst);
    wake_waiters();
  }
  void wake_waiters() noexcept;

  std::atomic<std::uint32_t> status_{pending};
  std::atomic<std::uint32_t> waiters_{0};
  std::atomic<std::uint32_t> refs_{2};  // the future and the queue (finish_queued, or the submitter if refused)
  InlineRunCounter* const inline_runs_;
};

// Memory for future states (scheduler/future_alloc.cpp): a per-thread cache of recycled blocks in front of a
// process-wide pool, so that a steady stream of submit + get calls no malloc. Process-wide, not per pool,
// because a Future may outlive its pool. Throws std::bad_alloc.
[[nodiscard]] void* allocate_future_state(std::size_t bytes, std::size_t align);
void deallocate_future_state(void* p, std::size_t bytes, std::size_t align) noexcept;

// Blocks until the state is ready. On a worker of a weft pool the worker runs other tasks meanwhile; anywhere,
// a task nobody has started yet (and that has no affinity) is run inline by the waiter.
void wait_until_ready(FutureStateBase& state);
// As wait_until_ready, giving up at the deadline; returns state.ready().
bool wait_until_ready_for(FutureStateBase& state, std::chrono::nanoseconds timeout);

// The typed half: where the result lives.
template <class R>
class FutureResult : public FutureStateBase {
 public:
  R take_value() { return std::move(*std::launder(reinterpret_cast<R*>(&value_))); }
  std::exception_ptr take_error() noexcept { return std::move(error_); }

 protected:
  using FutureStateBase::FutureStateBase;
  ~FutureResult() {
    if (status() == has_value) std::launder(reinterpret_cast<R*>(&value_))->~R();
  }
  template <class... A>
  void emplace_value(A&&... args) {
    ::new (static_cast<void*>(&value_)) R(std::forward<A>(args)...);
  }

 private:
  alignas(R) std::byte value_[sizeof(R)];
};

template <>
class FutureResult<void> : public FutureStateBase {
 public:
  void take_value() noexcept {}
  std::exception_ptr take_error() noexcept { return std::move(error_); }

 protected:
  using FutureStateBase::FutureStateBase;
  ~FutureResult() = default;
};

// The callable and its arguments, run once by whoever claims the state.
template <class R, class F, class... Args>
class FutureTask final : public FutureResult<R> {
 public:
  template <class G, class... A>
  FutureTask(InlineRunCounter* inline_runs, G&& f, A&&... args)
      : FutureResult<R>(inline_runs), f_(std::forward<G>(f)), args_(std::forward<A>(args)...) {}

 private:
  FutureStateBase::Status run_task() noexcept override {
    try {
      if constexpr (std::is_void_v<R>) {
        std::apply(f_, std::move(args_));
      } else {
        this->emplace_value(std::apply(f_, std::move(args_)));
      }
      return FutureStateBase::has_value;
    } catch (...) {
      this->error_ = std::current_exception();
      return FutureStateBase::has_exception;
    }
  }
  void destroy() noexcept override { delete this; }

 public:
  // Through the future-state pool (above) rather than the global heap.
  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(FutureTask)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(FutureTask));
  }

 private:

  F f_;
  std::tuple<Args...> args_;
};

}  // namespace weft::detail
