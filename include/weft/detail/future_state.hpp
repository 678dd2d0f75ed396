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

#include "weft/detail/block_cache.hpp"
#include "weft/detail/task_header.hpp"
#include "weft/pool_options.hpp"

namespace weft {
class Pool;
}

namespace weft::detail {

// The pool's count of tasks a waiter ran inline (scheduler/engine/engine.hpp), so that wait_idle and Drain also wait
// for a task that an outside thread is running in Future::get.
struct InlineRunCounter;

// The hand-over of a continuation (Future::then) between the thread that finishes a future's task and the
// thread that attaches a continuation to it: one word, 0 (nothing attached), a continuation's address, or
// kSettled (the task is final). Both sides do one read-modify-write of the word, so in its modification order
// exactly one of them comes second, and that one schedules the continuation: the finisher if it finds an
// address, the attacher if its CAS finds kSettled. A template over the atomic (and, for the model test's
// planted bugs, the orders) so that tests/model checks this very text under Relacy.
template <template <class> class Atomic = std::atomic, std::memory_order kSettleOrder = std::memory_order_acq_rel,
          std::memory_order kAttachFailureOrder = std::memory_order_acquire>
class BasicContinuationWord {
 public:
  static constexpr std::uintptr_t kSettled = 1;  // never a continuation's address (states are aligned)

  // The attacher: true if `continuation` is now attached (the finisher will schedule it); false if the task
  // is already final, and the caller schedules it.
  [[nodiscard]] bool try_attach(std::uintptr_t continuation) noexcept {
    std::uintptr_t expected = 0;
    // Success, release (in acq_rel): the finisher's exchange acquires it and sees the continuation fully
    // constructed before scheduling it. Failure, acquire: we read kSettled, which the finisher wrote (release)
    // after the final status and the result, so the continuation the caller now schedules sees both.
    return word_.compare_exchange_strong(expected, continuation, std::memory_order_acq_rel, kAttachFailureOrder);
  }
  // The finisher, once the status is final: the attached continuation's address, or 0 if none (a later
  // try_attach fails and its caller schedules). acq_rel: release for the failing attacher (above); acquire
  // for the continuation's construction. One RMW per finished future, on a line the finisher just wrote.
  [[nodiscard]] std::uintptr_t settle() noexcept { return word_.exchange(kSettled, kSettleOrder); }

 private:
  Atomic<std::uintptr_t> word_{0};
};

// Lifecycle: pending -> running -> value | exception, or pending -> dropped. Whoever moves it from pending to
// running (a worker, or a waiter running the task inline) is the only one to call the task.
//
// The state is queued as itself (a TaskHeader): the pool routes it with no task block or closure around it,
// and the queue's hold on it is one of its two references (see finish_queued).
//
// Continuations (Future::then): at most one state may be attached as this one's continuation. Whoever reaches
// this state's end (publish, drop_if_unclaimed) settles continuation_ after the final status and schedules
// what it found; then() attaches, and schedules itself if the state was already settled: exactly one side
// does (BasicContinuationWord).
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
  // For the thread inside Future::get that took this state's queued copy out of its own slot: it then holds
  // both references (the queue's and the future's), and no other thread can reach the state. Nobody else can
  // claim it (the queued copy is gone, and a waiter other than get() would use the Future concurrently with
  // get(), which its contract forbids), nobody attaches a continuation (then() needs the Future that get()
  // holds), nobody sleeps on it. So the task runs with no read-modify-write: no claim, no wake, no settle, and
  // the queue's reference is dropped by a plain store. The status still becomes final (release), for get().
  void run_exclusive() noexcept {
    status_.store(running, std::memory_order_relaxed);
    const Status final_status = run_task();
    status_.store(final_status, std::memory_order_release);
    refs_.store(1, std::memory_order_relaxed);  // the future's reference alone is left
  }

  // The queued task was destroyed without running (DropPending shutdown): tell the future.
  // Returns false if a waiter had claimed it (and ran it, or is running it inline): nothing was dropped.
  bool drop_if_unclaimed() noexcept {
    std::uint32_t expected = pending;
    // seq_cst: like publish(), it must be in the single total order with the waiter's add_waiter and re-check,
    // or both sides could miss each other and the waiter sleep forever.
    if (!status_.compare_exchange_strong(expected, dropped, std::memory_order_seq_cst, std::memory_order_relaxed))
      return false;
    wake_waiters();
    forget_antecedent();
    if (FutureStateBase* next = take_continuation()) schedule_continuation(next);
    return true;
  }

  // For a state settled from outside its task (a cancelled timer's future, weft/when.hpp's combined futures):
  // claims it and makes it final with `error`, unless someone claimed it first (then returns false and changes
  // nothing). Waiters wake and an attached continuation is scheduled, as when a task throws.
  bool complete_with_error(std::exception_ptr error) noexcept {
    if (!try_claim()) return false;
    error_ = std::move(error);
    publish(has_exception);
    return true;
  }

  // For the pool, which queues the state as itself (TaskKind::future_state): runs it (unless a waiter
  // already ran it inline) or, if `run` is false, reports it dropped; then gives up the queue's reference, so
  // the state may be gone on return.
  // Returns whether this call ran or dropped the task (false: a waiter had claimed it).
  static bool finish_queued(TaskHeader* task, bool run) noexcept {
    auto* const state = static_cast<FutureStateBase*>(task);
    const bool took = run ? state->run_if_unclaimed() : state->drop_if_unclaimed();
    state->release();
    return took;
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

  // The pool that made this state (its tasks, and continuations attached to it, run there).
  [[nodiscard]] Pool* pool() const noexcept { return pool_; }

  // Future::then: makes `next` (a continuation state holding this state's reference) this state's
  // continuation. If this state is already final, schedules it at once; else whoever finishes this state does.
  void attach_continuation(FutureStateBase* next) noexcept {
    if (!continuation_.try_attach(reinterpret_cast<std::uintptr_t>(next))) schedule_continuation(next);
  }
  void release() noexcept {
    // A count of 1 read here is our own reference: the other holder has let go (its release RMW, which this
    // acquire load reads from or from a later value, happens-before our destroy), and nobody can take a new
    // one without holding one. Skips the RMW whenever the other side finished first (a task a worker ran
    // before get(), a get() that ran the task itself).
    if (refs_.load(std::memory_order_acquire) == 1) {
      destroy();
      return;
    }
    // acq_rel: the last owner must see every write the other owner made before destroying.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }

 protected:
  FutureStateBase(InlineRunCounter* inline_runs, Pool* pool) noexcept : inline_runs_(inline_runs), pool_(pool) {
    kind = TaskKind::future_state;
  }
  ~FutureStateBase() = default;

  // For a state settled from outside its task (weft/when.hpp's combined futures), by the caller that won
  // try_claim(): makes `final_status` final (the value or error_ stored before), wakes waiters, schedules the
  // continuation.
  void complete_claimed(Status final_status) noexcept { publish(final_status); }

  std::exception_ptr error_;

 private:
  virtual Status run_task() noexcept = 0;
  virtual void destroy() noexcept = 0;
  // A continuation's options (then()); plain tasks are never scheduled as continuations.
  [[nodiscard]] virtual TaskOptions continuation_options() const noexcept { return {}; }
  // A continuation that will never run gives up its antecedent now (not in its destructor): a long chain of
  // dropped continuations is then freed one link at a time, never by a recursion through the chain.
  virtual void forget_antecedent() noexcept {}

  void publish(Status final_status) noexcept {
    if (FutureStateBase* next = settle(final_status)) schedule_continuation(next);
  }
  // Makes the status final, wakes waiters and returns the attached continuation (null if none) for the caller
  // to schedule: a chain of continuations that end without running is walked by a loop, not a recursion.
  [[nodiscard]] FutureStateBase* settle(Status final_status) noexcept {
    // seq_cst store + the seq_cst load in wake_waiters() pair with add_waiter() and the waiter's seq_cst
    // re-check: either the waiter sees the final status, or we see its announcement and wake it.
    status_.store(final_status, std::memory_order_seq_cst);
    wake_waiters();
    return take_continuation();
  }
  [[nodiscard]] FutureStateBase* take_continuation() noexcept {
    const std::uintptr_t found = continuation_.settle();  // after the final status (see BasicContinuationWord)
    return found == 0 ? nullptr : reinterpret_cast<FutureStateBase*>(found);
  }
  // Queues `next` (a continuation that now owns its queue reference) on its pool; if the pool refuses it (shut
  // down) or queueing throws, settles it with task_dropped (or the exception) without running it, and goes on
  // with its own continuation, in a loop (scheduler/engine/future_then.cpp).
  static void schedule_continuation(FutureStateBase* next) noexcept;
  void wake_waiters() noexcept;

  std::atomic<std::uint32_t> status_{pending};
  std::atomic<std::uint32_t> waiters_{0};
  std::atomic<std::uint32_t> refs_{2};  // the future and the queue (finish_queued, or the submitter if refused)
  InlineRunCounter* const inline_runs_;
  Pool* const pool_;
  BasicContinuationWord<> continuation_;  // the continuation attached by then(), if any
};

// Memory for future states (and Subflow children): allocate_future_state and deallocate_future_state
// (weft/detail/block_cache.hpp), a per-thread cache of recycled blocks in front of a process-wide pool
// (scheduler/engine/future_alloc.cpp), so that a steady stream of submit + get calls no malloc. Process-wide, not per
// pool, because a Future may outlive its pool.

// Blocks until the state is ready. On a worker of a weft pool the worker runs other tasks meanwhile; anywhere,
// a task nobody has started yet (and that has no affinity) is run inline by the waiter.
void wait_until_ready(FutureStateBase& state);
// Future::get's wait: as wait_until_ready, and the state's task, if this thread finds it in its own slot, runs
// there with no read-modify-write (FutureStateBase::run_exclusive): get() is the Future's only user meanwhile.
void wait_until_ready_for_get(FutureStateBase& state);
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
  FutureTask(InlineRunCounter* inline_runs, Pool* pool, G&& f, A&&... args)
      : FutureResult<R>(inline_runs, pool), f_(std::forward<G>(f)), args_(std::forward<A>(args)...) {}

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

// Throws weft::invalid_option, naming weft::Future::then, if `options` do not fit `pool` (an affinity past its
// workers, a priority that is not a weft::Priority): refused at the call, not when the antecedent finishes.
void validate_continuation_options(Pool* pool, const TaskOptions& options);
// The exception a continuation reports when its antecedent was dropped by a shutdown.
[[nodiscard]] std::exception_ptr antecedent_dropped_error() noexcept;

// The result of then(f) on a Future<T>: f(T&&), or f() for a Future<void>.
template <class T, class F>
struct then_result {
  using type = std::invoke_result_t<F&, T&&>;
};
template <class F>
struct then_result<void, F> {
  using type = std::invoke_result_t<F&>;
};

// Future::then's state: run as a task on the antecedent's pool once the antecedent is final. It never runs
// inline in a waiter (no InlineRunCounter): before the antecedent is final it must not run at all, and after,
// the pool runs it.
template <class U, class T, class F>
class ThenTask final : public FutureResult<U> {
 public:
  template <class G>
  ThenTask(Pool* pool, TaskOptions options, G&& f)
      : FutureResult<U>(nullptr, pool), options_(options), f_(std::forward<G>(f)) {}
  // Takes over the caller's reference to the antecedent (the consumed Future's).
  void set_antecedent(FutureResult<T>* antecedent) noexcept { antecedent_ = antecedent; }

  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(ThenTask)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(ThenTask));
  }

 private:
  ~ThenTask() { forget_antecedent(); }

  FutureStateBase::Status run_task() noexcept override {
    // The antecedent is final: we were scheduled by its finisher, or by then() after it saw kSettled (both
    // acquire what the finisher wrote).
    struct Release {
      FutureResult<T>* state;
      ~Release() { state->release(); }
    } antecedent{std::exchange(antecedent_, nullptr)};
    switch (antecedent.state->status()) {
      case FutureStateBase::has_exception:
        this->error_ = antecedent.state->take_error();
        return FutureStateBase::has_exception;
      case FutureStateBase::dropped:
        this->error_ = antecedent_dropped_error();
        return FutureStateBase::has_exception;
      default:
        break;
    }
    try {
      if constexpr (std::is_void_v<T>) {
        if constexpr (std::is_void_v<U>) {
          std::invoke(f_);
        } else {
          this->emplace_value(std::invoke(f_));
        }
      } else {
        if constexpr (std::is_void_v<U>) {
          std::invoke(f_, antecedent.state->take_value());
        } else {
          this->emplace_value(std::invoke(f_, antecedent.state->take_value()));
        }
      }
      return FutureStateBase::has_value;
    } catch (...) {
      this->error_ = std::current_exception();
      return FutureStateBase::has_exception;
    }
  }
  void destroy() noexcept override { delete this; }
  [[nodiscard]] TaskOptions continuation_options() const noexcept override { return options_; }
  void forget_antecedent() noexcept override {
    if (antecedent_ != nullptr) std::exchange(antecedent_, nullptr)->release();
  }

  FutureResult<T>* antecedent_ = nullptr;
  TaskOptions options_;
  F f_;
};

}  // namespace weft::detail
