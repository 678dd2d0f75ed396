// weft::Event, weft::WaitGroup and weft::ConditionVariable: each a condition over its own atomics, waited for
// through the scheduler's wait (scheduler/signal.hpp): suspending on a worker with fibers, running other tasks
// on a worker without them, spinning briefly then sleeping elsewhere.
#include <stdexcept>
#include <string>

#include "scheduler/signal.hpp"
#include "weft/condition_variable.hpp"
#include "weft/errors.hpp"
#include "weft/event.hpp"
#include "weft/wait_group.hpp"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

// wait_until's sleeper for a primitive's WaitSignal.
struct SignalSleeper {
  detail::WaitSignal& word;
  template <class Ready>
  void sleep(Ready& ready, std::chrono::nanoseconds slice) noexcept {
    sched::sleep_on_signal(word, ready, slice);
  }
};

// sched::wait_until for a primitive's wait named `what`: on a worker, a shutdown of its pool that drops pending
// work (Shutdown::DropPending, shutdown_for's deadline) ends the wait with weft::task_dropped, so that a task
// waiting for a signal that may never come lets its pool stop. Returns ready() (false on the deadline).
template <class Ready>
bool wait_or_drop(Ready ready, detail::WaitSignal& word, Clock::time_point deadline, const char* what) {
  sched::Worker* const worker = sched::Engine::this_thread_worker();
  if (worker == nullptr) {
    SignalSleeper sleeper{word};
    return sched::wait_until(ready, sleeper, deadline);
  }
  // A task moves between workers of one pool only: the engine stays right after a suspension.
  const sched::Engine& engine = worker->engine;
  bool dropped = false;
  SignalSleeper sleeper{word};
  const bool done = sched::wait_until(
      [&] {
        if (ready()) return true;
        dropped = engine.dropping();
        return dropped;
      },
      sleeper, deadline);
  if (dropped) {
    throw task_dropped(std::string(what) +
                       ": the pool began a shutdown that drops pending work (Shutdown::DropPending, or "
                       "shutdown_for's deadline) while this task waited");
  }
  return done;
}

}  // namespace

// --- Event -------------------------------------------------------------------------------------------------------

bool Event::try_take() noexcept {
  if (mode_ == Mode::Manual) return state_.load(std::memory_order_acquire) != 0;
  std::uint32_t expected = 1;
  // acquire: what the signaller did before signal() is visible to the wait that takes the signal.
  return state_.compare_exchange_strong(expected, 0, std::memory_order_acquire, std::memory_order_relaxed);
}

void Event::signal() noexcept {
  // release: pairs with try_take's acquire.
  state_.store(1, std::memory_order_release);
  sched::notify_signal(signal_);
}

void Event::clear() noexcept { state_.store(0, std::memory_order_relaxed); }

bool Event::wait_until(Clock::time_point deadline) {
  // An Auto event's signal is taken once: the predicate remembers that it took it, as wait_until may ask again.
  bool taken = false;
  return wait_or_drop(
      [&] {
        if (!taken) taken = try_take();
        return taken;
      },
      signal_, deadline, "weft::Event::wait");
}

void Event::wait() { (void)wait_until(Clock::time_point::max()); }

bool Event::wait_for(std::chrono::nanoseconds timeout) { return wait_until(detail::deadline_after(timeout)); }

// --- WaitGroup ---------------------------------------------------------------------------------------------------

void WaitGroup::add(std::uint32_t n) {
  std::uint32_t count = count_.load(std::memory_order_relaxed);
  do {
    if (n > UINT32_MAX - count) {
      throw std::overflow_error("weft::WaitGroup::add(" + std::to_string(n) + "): " + std::to_string(count) +
                                " are outstanding already, and the count holds at most 4294967295");
    }
  } while (!count_.compare_exchange_weak(count, count + n, std::memory_order_relaxed));
}

void WaitGroup::done() {
  std::uint32_t count = count_.load(std::memory_order_relaxed);
  do {
    if (count == 0) {
      throw std::logic_error(
          "weft::WaitGroup::done: the count is already zero (done() called more times than add() added)");
    }
    // release: what this caller did is visible to a waiter that sees the count reach zero (acquire).
  } while (!count_.compare_exchange_weak(count, count - 1, std::memory_order_acq_rel, std::memory_order_relaxed));
  if (count == 1) sched::notify_signal(signal_);
}

bool WaitGroup::wait_until(Clock::time_point deadline) {
  return wait_or_drop([this] { return count_.load(std::memory_order_acquire) == 0; }, signal_, deadline,
                      "weft::WaitGroup::wait");
}

void WaitGroup::wait() { (void)wait_until(Clock::time_point::max()); }

bool WaitGroup::wait_for(std::chrono::nanoseconds timeout) { return wait_until(detail::deadline_after(timeout)); }

// --- ConditionVariable -------------------------------------------------------------------------------------------

void ConditionVariable::notify_one() noexcept { notify_all(); }

void ConditionVariable::notify_all() noexcept {
  // release: a waiter that sees the new generation sees what the notifier did before (it re-locks anyway).
  generation_.fetch_add(1, std::memory_order_release);
  sched::notify_signal(signal_);
}

bool ConditionVariable::wait_generation(std::uint32_t seen, Clock::time_point deadline) {
  return wait_or_drop([&] { return generation_.load(std::memory_order_acquire) != seen; }, signal_, deadline,
                      "weft::ConditionVariable::wait");
}

void ConditionVariable::wait(std::unique_lock<std::mutex>& lock) {
  (void)wait_until(lock, Clock::time_point::max());
}

std::cv_status ConditionVariable::wait_until(std::unique_lock<std::mutex>& lock, Clock::time_point deadline) {
  if (!lock.owns_lock()) {
    throw std::logic_error(
        "weft::ConditionVariable::wait: the lock does not hold its mutex (lock it before waiting)");
  }
  // Read with the mutex held: a notify after the caller checked its condition (under the mutex) bumps it past
  // this value, so the wait below cannot miss it.
  const std::uint32_t seen = generation_.load(std::memory_order_acquire);
  lock.unlock();
  bool notified = false;
  try {
    notified = wait_generation(seen, deadline);
  } catch (...) {
    lock.lock();  // the caller's lock holds its mutex again, whatever happened
    throw;
  }
  lock.lock();
  return notified ? std::cv_status::no_timeout : std::cv_status::timeout;
}

}  // namespace weft
