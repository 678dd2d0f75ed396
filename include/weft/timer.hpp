// weft::Timer: the handle of a task scheduled for later on a weft::Pool (Pool::post_after, post_at, post_every,
// submit_after_delay, submit_at), and the options of a periodic one.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "weft/future.hpp"
#include "weft/pool_options.hpp"
#include "weft/small_function.hpp"

namespace weft {

// How Pool::post_every places the runs of a periodic timer after the first (at start + period).
enum class TimerMode : std::uint8_t {
  // Each run is due at start + k * period (no drift over many periods). A run that ends past one or more of the
  // next due times skips them: the next run is due at the first start + k * period after it ended, so runs
  // never overlap and never pile up.
  fixed_rate,
  // Each run is due `period` after the previous run ended (the schedule drifts by the runs' durations).
  fixed_delay,
};

namespace detail {
// What a Timer and the pool's timer queue share (scheduler/engine/timer_queue.hpp). Users never name it.
//
// The phase decides, by compare-and-swap, who owns the timer's work: the timer queue (waiting -> queued or
// fired), cancel() (-> cancelled), the periodic run (queued -> running -> waiting), or the shutdown (-> dropped).
// Whoever moves it out of `waiting` (or `queued`, or `running`) owns the work from then on: a timer's task is
// run or cancelled or dropped, exactly one of them, never two. Every move is in scheduler/engine/timer_phase.hpp.
// A coroutine's `co_await pool.sleep_for(d)` (weft/pool.hpp) is a one-shot timer whose work resumes it.
struct TimerState {
  enum Phase : std::uint8_t { waiting, queued, running, fired, cancelled, dropped };
  std::atomic<std::uint8_t> phase{waiting};
  // post_after / post_at / post_every: the callable (periodic: called once per run).
  small_function<void()> work;
  // submit_after_delay / submit_at: the future's state, holding its queue reference until the timer fires.
  FutureStateBase* future = nullptr;
  std::chrono::nanoseconds period{0};  // zero: one-shot
  // The due time of the current (or next) run: fixed_rate's next run is due a whole number of periods after it.
  std::chrono::steady_clock::time_point next_due{};
  TimerMode mode = TimerMode::fixed_rate;
  TaskOptions options;

  TimerState() = default;
  TimerState(const TimerState&) = delete;
  TimerState& operator=(const TimerState&) = delete;
  // A state never handed on lets go of its future's queue reference (the future reports task_dropped).
  ~TimerState();
};
}  // namespace detail

// The handle of a scheduled task. Dropping the handle does not cancel the timer (the task still runs when due);
// keep it to cancel. Copyable: every copy names the same timer.
//
// Contract:
// - cancel() is race-free against the timer's firing: a one-shot timer's task either is handed to the pool (and
//   runs, or is dropped by a shutdown like any accepted task) or is cancelled, never both, never neither;
//   cancel() returns true exactly when it cancelled. The cancelled callable is destroyed (what it captured
//   released) by cancel() itself, or, for a periodic timer whose run is in progress, as that run returns.
// - A periodic timer: cancel() returns true if the schedule was still live; no run starts after it returns (a run
//   already running finishes). False once cancelled before, or dropped by a shutdown.
// - A shutdown (any policy) drops every timer not yet due, counted in PoolStats::timers_dropped: cancel() on it
//   returns false; the future of submit_after_delay throws task_dropped.
// - The handle may outlive the pool: cancel() then returns false.
//
// Example:
//   weft::Timer t = pool.post_after(std::chrono::seconds(5), [] { std::puts("five seconds later"); });
//   bool stopped = t.cancel();  // true: it had not fired; the lambda never runs
class [[nodiscard]] Timer {
 public:
  // A handle of no timer: cancel() returns false.
  Timer() noexcept = default;
  // Cancels the timer if its task has not been handed to the pool yet (one-shot), or stops the schedule
  // (periodic). Returns whether this call cancelled it. Thread-safe; any number of calls, from any thread.
  bool cancel() noexcept;
  // True if this handle names a timer (it may have fired, or been cancelled, since).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // True while the timer may still run its task later: a one-shot timer not yet fired nor cancelled, a periodic
  // timer not cancelled nor dropped. A snapshot.
  [[nodiscard]] bool pending() const noexcept;

 private:
  friend class Pool;
  explicit Timer(std::shared_ptr<detail::TimerState> state) noexcept : state_(std::move(state)) {}

  std::shared_ptr<detail::TimerState> state_;
};

// What Pool::submit_after_delay and Pool::submit_at return: the future of the task (its value, its exception,
// or task_cancelled if `timer.cancel()` won, task_dropped if a shutdown dropped it) and the timer that runs it.
template <class T>
struct [[nodiscard]] DelayedFuture {
  Future<T> future;  // the task's result; get() waits for the deadline and the run
  Timer timer;       // cancel() before the deadline: the task never runs, and future.get() throws task_cancelled
};

}  // namespace weft
