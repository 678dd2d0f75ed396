// The pool's timers: the heap and its thread (timer_queue.hpp), Pool's timer entry and weft::Timer's members.
#include "scheduler/engine/timer_queue.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/spawn_path.hpp"
#include "scheduler/engine/timer_phase.hpp"
#include "src/os_thread.hpp"
#include "weft/errors.hpp"

namespace weft::detail {

TimerState::~TimerState() {
  // A future's state never handed to the pool (the timer was dropped, or schedule refused it): its queue reference
  // goes here, and the future reports task_dropped. A cancelled one was settled and cleared by cancel().
  if (future != nullptr) (void)FutureStateBase::finish_queued(future, false);
}

}  // namespace weft::detail

namespace weft {

namespace {

using Phase = detail::TimerState::Phase;

// Lets go of the work of a timer whose phase this caller moved to `cancelled`.
void discard_cancelled(detail::TimerState& state) noexcept {
  state.work = nullptr;
  if (detail::FutureStateBase* future = std::exchange(state.future, nullptr)) {
    (void)future->complete_with_error(std::make_exception_ptr(task_cancelled(
        "weft::Future::get: the task was not run: its timer was cancelled (Timer::cancel) before it was due")));
    future->release();  // the queue's reference, which the timer held
  }
}

}  // namespace

bool Timer::cancel() noexcept {
  if (state_ == nullptr) return false;
  detail::TimerState& state = *state_;
  const std::uint8_t from = engine::timer_phase::cancel(state.phase);
  if (from == Phase::cancelled) return false;  // not live: fired, cancelled or dropped before
  // From `waiting` nobody else touches the work any more: let go of it here. From `queued` or `running`, the
  // periodic run task lets go of it when it finds the phase cancelled.
  if (from == Phase::waiting) discard_cancelled(state);
  return true;
}

bool Timer::pending() const noexcept {
  if (state_ == nullptr) return false;
  const std::uint8_t phase = state_->phase.load(std::memory_order_acquire);
  return phase == Phase::waiting || phase == Phase::queued || phase == Phase::running;
}

Timer Pool::schedule_timer(std::shared_ptr<detail::TimerState> state, std::chrono::steady_clock::time_point when,
                           const char* what) {
  const TaskOptions& options = state->options;
  if (options.affinity && *options.affinity >= size())
    throw invalid_option(std::string("weft::Pool::") + what +
                         ": TaskOptions::affinity = " + std::to_string(*options.affinity) + ": the pool has " +
                         std::to_string(size()) + " workers (0.." + std::to_string(size() - 1) + ")");
  if (options.priority > Priority::Low)
    throw invalid_option(std::string("weft::Pool::") + what +
                         ": TaskOptions::priority = " + std::to_string(static_cast<unsigned>(options.priority)) +
                         ": not a weft::Priority (High, Normal or Low)");
  state->next_due = when;
  if (!engine_->timers().schedule(state, when)) throw_closed(what);
  return Timer(std::move(state));
}

void Pool::throw_bad_period(std::chrono::nanoseconds period) {
  throw std::invalid_argument("weft::Pool::post_every: period = " + std::to_string(period.count()) +
                              " ns: a periodic timer needs a positive period");
}

}  // namespace weft

namespace weft::engine {

namespace {

using weft::detail::TimerState;
using Phase = TimerState::Phase;

// A periodic timer's run, as a pool task. Destroyed unrun (a shutdown dropped it), it drops the timer.
class PeriodicRun {
 public:
  PeriodicRun(TimerQueue& queue, std::shared_ptr<TimerState> state) noexcept
      : queue_(&queue), state_(std::move(state)) {}
  PeriodicRun(PeriodicRun&& other) noexcept : queue_(other.queue_), state_(std::move(other.state_)) {}
  PeriodicRun& operator=(PeriodicRun&&) = delete;
  PeriodicRun(const PeriodicRun&) = delete;
  PeriodicRun& operator=(const PeriodicRun&) = delete;
  ~PeriodicRun() {
    if (state_ != nullptr) queue_->periodic_dropped(*state_);
  }
  void operator()() noexcept {
    const std::shared_ptr<TimerState> state = std::move(state_);  // ran: the destructor drops nothing
    queue_->run_periodic(state);
  }

 private:
  TimerQueue* queue_;
  std::shared_ptr<TimerState> state_;
};

}  // namespace

bool TimerQueue::schedule(std::shared_ptr<TimerState> state, std::chrono::steady_clock::time_point when) {
  std::unique_lock lock(mutex_);
  if (stopping_) return false;
  if (!thread_.joinable()) thread_ = std::thread([this] { thread_main(); });
  if (heap_.size() >= compact_at_) {
    compact();
    compact_at_ = std::max(kCompactFloor, heap_.size() * 2);
  }
  heap_.push_back({when, next_sequence_++, std::move(state)});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  // The thread sleeps until the earliest deadline: only a new earliest one moves it.
  const bool earliest = heap_.front().sequence == next_sequence_ - 1;
  lock.unlock();
  if (earliest) changed_.notify_one();
  return true;
}

void TimerQueue::compact() {
  const auto gone = [](const Entry& e) {
    const std::uint8_t phase = e.state->phase.load(std::memory_order_relaxed);  // a hint: fire() decides
    return phase != Phase::waiting;
  };
  heap_.erase(std::remove_if(heap_.begin(), heap_.end(), gone), heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), Later{});
}

std::size_t TimerQueue::size() const {
  const std::lock_guard lock(mutex_);
  return heap_.size();
}

void TimerQueue::thread_main() noexcept {
  (void)os::set_current_thread_name("weft-timer");
  std::vector<Entry> due;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (heap_.empty()) {
      changed_.wait(lock);
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    // A copy: wait_until reads its deadline again after the wait, when a schedule() may have moved the heap.
    const std::chrono::steady_clock::time_point earliest = heap_.front().when;
    if (earliest > now) {
      // steady_clock: libstdc++ waits with pthread_cond_clockwait on CLOCK_MONOTONIC, a futex wait with a timeout.
      changed_.wait_until(lock, earliest);
      continue;
    }
    while (!heap_.empty() && heap_.front().when <= now) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      due.push_back(std::move(heap_.back()));
      heap_.pop_back();
    }
    // Fired outside the lock: a hand-over may wait for room (max_queued), and schedules go on meanwhile.
    lock.unlock();
    for (Entry& entry : due) fire(entry);
    due.clear();
    lock.lock();
  }
}

void TimerQueue::fire(Entry& entry) noexcept {
  TimerState& state = *entry.state;
  if (state.period.count() == 0) {
    // The winner owns the work (timer_phase.hpp).
    if (timer_phase::claim(state.phase, Phase::waiting, Phase::fired) != Phase::waiting) return;  // cancelled first
    fired_.fetch_add(1, std::memory_order_relaxed);
    try {
      if (weft::detail::FutureStateBase* future = std::exchange(state.future, nullptr)) {
        if (engine_.enqueue(future, state.options, weft::detail::Admission::block, {}, weft::detail::kWorkersOnly) !=
            SubmitStatus::Accepted) {
          dropped_.fetch_add(1, std::memory_order_relaxed);
          (void)weft::detail::FutureStateBase::finish_queued(future, false);  // task_dropped
        }
      } else if (engine_.enqueue(std::move(state.work), state.options, weft::detail::Admission::block, {}) !=
                 SubmitStatus::Accepted) {
        dropped_.fetch_add(1, std::memory_order_relaxed);  // the closure was destroyed unrun by the refusal
      }
    } catch (...) {
      engine_.report_error(std::current_exception());  // queueing failed (out of memory): said, not lost
    }
    state.work = nullptr;
    return;
  }
  if (timer_phase::claim(state.phase, Phase::waiting, Phase::queued) != Phase::waiting) return;  // cancelled first
  fired_.fetch_add(1, std::memory_order_relaxed);
  try {
    // A refusal destroys the PeriodicRun unrun, which drops the timer (periodic_dropped).
    (void)engine_.enqueue(small_function<void()>(PeriodicRun(*this, entry.state)), state.options,
                          weft::detail::Admission::block, {});
  } catch (...) {
    engine_.report_error(std::current_exception());
  }
}

void TimerQueue::run_periodic(const std::shared_ptr<TimerState>& state_ptr) noexcept {
  TimerState& state = *state_ptr;
  if (timer_phase::claim(state.phase, Phase::queued, Phase::running) != Phase::queued) {
    state.work = nullptr;  // cancelled while queued: ours to let go of
    return;
  }
  try {
    state.work();
  } catch (...) {
    engine_.report_error(std::current_exception());  // the schedule goes on
  }
  const auto now = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point next;
  if (state.mode == TimerMode::fixed_delay) {
    next = now + state.period;
  } else {
    // Due times stay on start + k * period: the next one is a period after this run's. A run that overran skips
    // the due times it passed, so runs never pile up.
    next = state.next_due + state.period;
    if (next <= now) next += state.period * ((now - next) / state.period + 1);
  }
  state.next_due = next;
  // Whoever takes the phase next (fire, cancel) sees the work as this run left it.
  if (!timer_phase::end_run(state.phase)) {
    state.work = nullptr;  // cancelled during the run
    return;
  }
  bool queued = false;
  try {
    queued = schedule(state_ptr, next);
  } catch (...) {
    engine_.report_error(std::current_exception());
  }
  if (!queued && timer_phase::claim(state.phase, Phase::waiting, Phase::dropped) == Phase::waiting) drop_taken(state);
}

void TimerQueue::periodic_dropped(TimerState& state) noexcept {
  const std::uint8_t seen = timer_phase::claim(state.phase, Phase::queued, Phase::dropped);
  if (seen == Phase::queued) {
    drop_taken(state);
  } else if (seen == Phase::cancelled) {
    state.work = nullptr;  // cancelled while queued, and never run: ours to let go of
  }
}

void TimerQueue::drop_taken(TimerState& state) noexcept {
  dropped_.fetch_add(1, std::memory_order_relaxed);
  state.work = nullptr;
  if (weft::detail::FutureStateBase* future = std::exchange(state.future, nullptr))
    (void)weft::detail::FutureStateBase::finish_queued(future, false);  // task_dropped
}

std::uint64_t TimerQueue::stop() noexcept {
  std::vector<Entry> left;
  {
    const std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable() && heap_.empty()) return 0;
    stopping_ = true;
  }
  changed_.notify_all();
  // Whatever the thread popped is handed to the pool before it exits: the pool still accepts tasks here.
  if (thread_.joinable()) thread_.join();
  {
    const std::lock_guard lock(mutex_);
    left.swap(heap_);
  }
  std::uint64_t count = 0;
  for (Entry& entry : left) {
    TimerState& state = *entry.state;
    if (timer_phase::claim(state.phase, Phase::waiting, Phase::dropped) == Phase::waiting) {
      drop_taken(state);
      ++count;
    }
  }
  return count;
}

}  // namespace weft::engine
