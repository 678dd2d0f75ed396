// weft::AsyncTask: a task submitted with dependencies on the fly (weft::Pool::submit_after), and the handle later
// tasks depend on in turn.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <utility>

#include "weft/detail/block_cache.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/detail/successor_list.hpp"
#include "weft/detail/task_header.hpp"
#include "weft/pool_options.hpp"

namespace weft {

class Pool;
class AsyncTask;

namespace detail {

struct AsyncAccess;

// The state an AsyncTask handle shares with its task. Public only because Pool::submit_after is a template; users
// never name anything here. One block: the scheduler's header, the successor list, the task's outcome, and (in
// AsyncTaskState below) the user's callable.
//
// Lifetime: refs_ counts the handles plus one for the task itself, which the task gives up once it is final and
// has released its successors. A finished task is kept by its handles only: a successor holds no reference to its
// predecessors (an edge lives in the successor's block, and the predecessor drops it when it finishes).
class AsyncState : public SelfTask {
 public:
  using Successors = BasicSuccessorList<>;
  using Link = Successors::Link;

  AsyncState(const AsyncState&) = delete;
  AsyncState& operator=(const AsyncState&) = delete;

  // True once the task is final (ran, failed, or was skipped or dropped): its outcome is readable.
  [[nodiscard]] bool done() const noexcept { return successors_.closed(); }
  // After done(): the task's exception (or the one it carries from a failed predecessor), null if it succeeded.
  [[nodiscard]] const std::exception_ptr& error() const noexcept { return error_; }

  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }  // relaxed: the caller holds one
  void release() noexcept {
    // acq_rel: the last owner must see every write of the others (the outcome, the callable's end) before freeing.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) manage_(this, Op::destroy);
  }

 protected:
  // What the typed half does for the untyped one: destroy the callable of a task that will not run, or free the
  // block.
  enum class Op : std::uint8_t { discard_callable, destroy };
  using Manage = void (*)(AsyncState*, Op) noexcept;
  AsyncState(Finish finish, Manage manage) noexcept : SelfTask(finish), manage_(manage) {}
  ~AsyncState() {
    if (links_ != inline_links_) delete[] links_;
  }

  // The task's end, from its finish function: `run` false if the pool dropped it unrun (a DropPending shutdown).
  // Publishes the outcome, wakes the waiters, releases the successors (running those now free to run, settling
  // those that inherit a failure), then gives up the task's reference: the state may be gone on return.
  static void finish_state(AsyncState* state, bool run) noexcept;
  // A predecessor failed or the callable threw: the first such exception becomes this task's (relaxed: the
  // claimant's arrive or finish publishes error_ to whoever reads it next).
  void record_failure(std::exception_ptr error) noexcept {
    if (!failed_.exchange(true, std::memory_order_relaxed)) error_ = std::move(error);
  }
  // True if this task is to run its callable: no predecessor failed.
  [[nodiscard]] bool should_run() const noexcept { return !failed_.load(std::memory_order_relaxed); }

 private:
  friend struct AsyncAccess;
  friend class weft::AsyncTask;

  static constexpr std::size_t kInlineLinks = 2;  // edges held in the block itself; more are one allocation

  Manage manage_;
  Pool* pool_ = nullptr;
  std::atomic<std::uint32_t> refs_{2};  // the handle submit_after returns, and the task
  std::atomic<bool> failed_{false};     // error_ is claimed (a predecessor's failure or the callable's exception)
  // The waiters' word (scheduler/sync/word_protocol.hpp, Event's bits): set once the task is final.
  std::atomic<std::uint32_t> wake_{0};
  Successors successors_{0};
  std::exception_ptr error_;
  Link* links_ = inline_links_;
  AsyncState* next_settled_ = nullptr;  // finish_state's work list: successors settled without running
  Link inline_links_[kInlineLinks];
};

// The typed half: the user's callable, destroyed as soon as the task ran (or will never run), so that what it
// captured is not kept alive by the handles.
template <class F>
class AsyncTaskState final : public AsyncState {
 public:
  template <class G>
  explicit AsyncTaskState(G&& f) : AsyncState(&finish_task, &manage_state) {
    ::new (static_cast<void*>(&storage_)) F(std::forward<G>(f));
  }

  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(AsyncTaskState)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(AsyncTaskState));
  }

 private:
  ~AsyncTaskState() = default;
  F& callable() noexcept { return *std::launder(reinterpret_cast<F*>(&storage_)); }

  static void finish_task(SelfTask* task, bool run) noexcept {
    auto* const self = static_cast<AsyncTaskState*>(task);
    if (run && self->should_run()) {
      try {
        (void)std::invoke(self->callable());
      } catch (...) {
        self->record_failure(std::current_exception());
      }
    }
    self->callable().~F();
    finish_state(self, run);
  }
  static void manage_state(AsyncState* state, Op op) noexcept {
    auto* const self = static_cast<AsyncTaskState*>(state);
    if (op == Op::discard_callable) {
      self->callable().~F();
    } else {
      delete self;
    }
  }

  alignas(F) std::byte storage_[sizeof(F)];
};

// Pool::as_async_task's halves. make_future_async: an AsyncTask of `pool` with no callable, final only once
// settle_future_async is called on its state (which takes over the task's reference: the state may be gone on
// return). settle_future_async makes it final: failed with `error` if not null (its successors skipped), else done
// (its successors released).
[[nodiscard]] AsyncTask make_future_async(Pool& pool);
[[nodiscard]] AsyncState* async_state(const AsyncTask& task) noexcept;
void settle_future_async(AsyncState* state, std::exception_ptr error) noexcept;
// The outcome of a final future state as an AsyncTask's: null (a value), its exception, or task_dropped (dropped by
// a shutdown). Takes the exception out of `future`.
template <class T>
[[nodiscard]] std::exception_ptr take_future_error(FutureResult<T>& future) noexcept;
[[nodiscard]] std::exception_ptr future_async_dropped() noexcept;

// Pool::as_async_task's continuation of a future not final yet (attached as Future::then's are, run as a task on
// the future's pool once the future is final): settles the AsyncTask from the future's outcome, and frees the
// future's state (its value discarded). If it never runs (the pool refused or dropped it at a shutdown), it settles
// the AsyncTask with task_dropped instead: the successors are never left waiting.
template <class T>
class FutureGate final : public FutureResult<void> {
 public:
  FutureGate(Pool* pool, AsyncState* target) noexcept : FutureResult<void>(nullptr, pool), target_(target) {}
  // Takes over the caller's reference to the future's state.
  void set_antecedent(FutureResult<T>* antecedent) noexcept { antecedent_ = antecedent; }

  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(FutureGate)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(FutureGate));
  }

 private:
  ~FutureGate() { forget_antecedent(); }

  Status run_task() noexcept override {
    // The future is final: its finisher scheduled us (acquiring what it wrote).
    FutureResult<T>* const antecedent = std::exchange(antecedent_, nullptr);
    std::exception_ptr error = take_future_error(*antecedent);
    antecedent->release();
    settle_future_async(std::exchange(target_, nullptr), std::move(error));
    return has_value;
  }
  void destroy() noexcept override { delete this; }
  void forget_antecedent() noexcept override {
    if (antecedent_ != nullptr) std::exchange(antecedent_, nullptr)->release();
    if (target_ != nullptr) settle_future_async(std::exchange(target_, nullptr), future_async_dropped());
  }

  FutureResult<T>* antecedent_ = nullptr;
  AsyncState* target_;  // the task's reference to the AsyncTask's state, until settled
};

// Pool::submit_after's untyped half (scheduler/sync/async_task.cpp): checks `after` and `options`, links `state`
// after the tasks of `after` not final yet, and queues it if none is. Takes the state over: on a throw it is freed
// (its callable unrun).
[[nodiscard]] AsyncTask submit_async(Pool& pool, AsyncState* state, std::span<const AsyncTask> after,
                                     const TaskOptions& options);
// The pool a valid AsyncTask was submitted to (co_await on an AsyncTask queues its resumption there: weft/task.hpp).
[[nodiscard]] Pool* async_task_pool(const AsyncTask& task) noexcept;

template <class T>
std::exception_ptr take_future_error(FutureResult<T>& future) noexcept {
  switch (future.status()) {  // acquire: the finisher's writes (the exception) are seen
    case FutureStateBase::has_exception:
      return future.take_error();
    case FutureStateBase::dropped:
      return future_async_dropped();
    default:
      return nullptr;
  }
}

}  // namespace detail

// A task submitted with dependencies on the fly (Pool::submit_after), and the handle that later tasks depend on:
// Taskflow's dependent_async, or a node added to a running oneTBB flow graph. A shared handle: copies refer to the
// same task, and the task's state lives while a handle does (the task itself never keeps a finished task alive).
//
// Contract:
// - Copyable and movable, from any thread; copies may be used concurrently (every member is const but
//   assignment). A default-constructed or moved-from handle is empty: valid() is false, and every other member
//   throws std::logic_error on it.
// - done() never blocks. wait() blocks until the task is final; get() waits, then rethrows the task's exception
//   (or the failed predecessor's exception it carries), any number of times, from any number of threads. On a
//   worker of a pool the wait runs other tasks (with fibers it suspends the waiting task), as every weft wait.
// - A task is final once it ran (its callable returned or threw), was skipped because a predecessor failed, or was
//   dropped unrun by a DropPending shutdown (get() throws weft::task_dropped).
//
// Example:
//   weft::AsyncTask a = pool.submit_after({}, [] { load(); });
//   weft::AsyncTask b = pool.submit_after({a}, [] { parse(); });
//   weft::AsyncTask c = pool.submit_after({a, b}, [] { report(); });
//   c.get();  // after a and b; rethrows the first failure of the chain
class [[nodiscard]] AsyncTask {
 public:
  // An empty handle, of no task.
  AsyncTask() noexcept = default;
  // Another handle of other's task.
  AsyncTask(const AsyncTask& other) noexcept : state_(other.state_) {
    if (state_ != nullptr) state_->retain();
  }
  // Takes over other's task; `other` is left empty.
  AsyncTask(AsyncTask&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  // Lets go of this handle's task (which still runs), then refers to other's.
  AsyncTask& operator=(const AsyncTask& other) noexcept {
    AsyncTask(other).swap(*this);
    return *this;
  }
  // Lets go of this handle's task (which still runs), then takes over other's; `other` is left empty.
  AsyncTask& operator=(AsyncTask&& other) noexcept {
    AsyncTask(std::move(other)).swap(*this);
    return *this;
  }
  // Lets go of the task without waiting: it still runs, and its outcome is discarded with the last handle.
  ~AsyncTask() {
    if (state_ != nullptr) state_->release();
  }

  // True unless empty (default-constructed or moved from).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // True once the task is final (ran, was skipped after a failed predecessor, or was dropped). Never blocks.
  [[nodiscard]] bool done() const;
  // Blocks until done(). Does not throw the task's exception (get() does).
  void wait() const;
  // wait(), then rethrows the task's exception, or the exception of the failed predecessor that skipped it.
  void get() const;

  // Exchanges the tasks of two handles.
  void swap(AsyncTask& other) noexcept { std::swap(state_, other.state_); }

 private:
  friend struct detail::AsyncAccess;
  explicit AsyncTask(detail::AsyncState* state) noexcept : state_(state) {}

  detail::AsyncState* state_ = nullptr;
};

}  // namespace weft
