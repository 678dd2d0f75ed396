// weft::Event, weft::WaitGroup and weft::ConditionVariable: each one word (scheduler/sync/word_protocol.hpp holds its
// protocol), waited for through the scheduler's wait (scheduler/sync/signal.hpp): suspending on a worker with fibers,
// running other tasks on a worker without them, spinning briefly then sleeping elsewhere.
#include <stdexcept>
#include <string>

#include "scheduler/engine/wait_word.hpp"
#include "scheduler/sync/coro_word.hpp"
#include "scheduler/sync/signal.hpp"
#include "scheduler/sync/word_protocol.hpp"
#include "weft/condition_variable.hpp"
#include "weft/errors.hpp"
#include "weft/event.hpp"
#include "weft/wait_group.hpp"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;
namespace word = sync::word;
using detail::kWordValue;

// How a primitive's waiters sleep on its word: the futex, or the fiber lot inside a wait that suspends. Its
// notifier also wakes the coroutines awaiting the primitive (co_await event).
struct PrimitiveParking {
  static void park(std::atomic<std::uint32_t>& w, std::uint32_t expected, std::chrono::nanoseconds slice) noexcept {
    engine::WordParking::park(w, expected, slice);
  }
  static void wake_all(std::atomic<std::uint32_t>& w) noexcept {
    engine::WordParking::wake_all(w);
    sync::coro_wake_word(w);
  }
};

// wait_until's sleeper for a primitive's word; `ready_at` judges the word's value.
template <class ReadyAt>
struct WordSleeper {
  std::atomic<std::uint32_t>& w;
  ReadyAt ready_at;
  template <class Ready>
  void sleep(Ready& /*ready: judged on the word's value instead*/, std::chrono::nanoseconds slice) noexcept {
    word::sleep<PrimitiveParking>(w, ready_at, slice);
  }
};

// sync::wait_until for a primitive's wait named `what`, until ready() holds (it reads the word with acquire;
// `ready_at` is the same condition judged on a value of the word). On a worker, a shutdown of its pool that drops
// pending work (Shutdown::DropPending, shutdown_for's deadline) ends the wait with weft::task_dropped, so that a
// task waiting for a signal that may never come lets its pool stop. Returns ready() (false on the deadline).
template <class Ready, class ReadyAt>
bool wait_or_drop(Ready ready, std::atomic<std::uint32_t>& w, ReadyAt ready_at, Clock::time_point deadline,
                  const char* what) {
  WordSleeper<ReadyAt> sleeper{w, ready_at};
  engine::Worker* const worker = engine::Engine::this_thread_worker();
  if (worker == nullptr) return sync::wait_until(ready, sleeper, deadline);
  // A task moves between workers of one pool only: the engine stays right after a suspension.
  const engine::Engine& engine = worker->engine;
  bool dropped = false;
  const bool done = sync::wait_until(
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

void Event::signal() noexcept {
  if (mode_ == Mode::Manual) {
    word::event_set<PrimitiveParking>(state_);
  } else {
    word::auto_signal<PrimitiveParking>(state_);
  }
}

void Event::clear() noexcept { word::event_clear(state_); }

bool Event::wait_until(Clock::time_point deadline) {
  if (mode_ == Mode::Auto) return wait_until_auto(deadline);
  return wait_or_drop([this] { return (state_.load(std::memory_order_acquire) & word::kEventSet) != 0; }, state_,
                      [](std::uint32_t value) { return (value & word::kEventSet) != 0; }, deadline,
                      "weft::Event::wait");
}

bool Event::wait_until_auto(Clock::time_point deadline) {
  switch (word::auto_join(state_)) {
    case word::AutoJoin::taken:
      return true;
    case word::AutoJoin::full:
      throw std::length_error("weft::Event::wait: " + std::to_string(detail::kEventMaxWaits) +
                              " waits are in progress on this Mode::Auto event already, the most it counts");
    case word::AutoJoin::waiting:
      break;
  }
  // Counted among the waits now: every way out uncounts it. The predicate remembers that it took a release, as
  // wait_until may ask again.
  bool taken = false;
  try {
    if (wait_or_drop(
            [&] {
              if (!taken) taken = word::auto_take(state_);
              return taken;
            },
            state_, [](std::uint32_t value) { return word::auto_releases(value) != 0; }, deadline,
            "weft::Event::wait")) {
      return true;
    }
    // The time ran out: if every wait counted was released, this one was too, and it takes its release.
    return word::auto_leave(state_, false);
  } catch (...) {
    // A dropped task (or any other way out by exception) consumes no signal: one it took goes back, one due to
    // it stays with the event.
    if (taken) {
      word::auto_signal<PrimitiveParking>(state_);
    } else {
      (void)word::auto_leave(state_, true);
    }
    throw;
  }
}

void Event::wait() { (void)wait_until(Clock::time_point::max()); }

bool Event::wait_for(std::chrono::nanoseconds timeout) { return wait_until(detail::deadline_after(timeout)); }

// --- WaitGroup ---------------------------------------------------------------------------------------------------

WaitGroup::WaitGroup(std::uint32_t initial) : state_(initial) {
  if (initial > kWordValue) {
    throw std::overflow_error("weft::WaitGroup(" + std::to_string(initial) + "): the count holds at most " +
                              std::to_string(kWordValue));
  }
}

void WaitGroup::add(std::uint32_t n) {
  std::uint32_t count = 0;
  if (!word::group_add(state_, n, count)) {
    throw std::overflow_error("weft::WaitGroup::add(" + std::to_string(n) + "): " + std::to_string(count) +
                              " are outstanding already, and the count holds at most " + std::to_string(kWordValue));
  }
}

void WaitGroup::done() {
  if (!word::group_done<PrimitiveParking>(state_)) {
    throw std::logic_error(
        "weft::WaitGroup::done: the count is already zero (done() called more times than add() added)");
  }
}

bool WaitGroup::wait_until(Clock::time_point deadline) {
  return wait_or_drop([this] { return (state_.load(std::memory_order_acquire) & kWordValue) == 0; }, state_,
                      [](std::uint32_t value) { return value == 0; }, deadline, "weft::WaitGroup::wait");
}

void WaitGroup::wait() { (void)wait_until(Clock::time_point::max()); }

bool WaitGroup::wait_for(std::chrono::nanoseconds timeout) { return wait_until(detail::deadline_after(timeout)); }

// --- ConditionVariable -------------------------------------------------------------------------------------------

void ConditionVariable::notify_one() noexcept { notify_all(); }

void ConditionVariable::notify_all() noexcept { word::generation_bump<PrimitiveParking>(generation_); }

bool ConditionVariable::wait_generation(std::uint32_t seen, Clock::time_point deadline) {
  return wait_or_drop([&] { return (generation_.load(std::memory_order_acquire) & kWordValue) != seen; }, generation_,
                      [seen](std::uint32_t value) { return value != seen; }, deadline, "weft::ConditionVariable::wait");
}

void ConditionVariable::wait(std::unique_lock<std::mutex>& lock) { (void)wait_until(lock, Clock::time_point::max()); }

std::cv_status ConditionVariable::wait_until(std::unique_lock<std::mutex>& lock, Clock::time_point deadline) {
  if (!lock.owns_lock()) {
    throw std::logic_error("weft::ConditionVariable::wait: the lock does not hold its mutex (lock it before waiting)");
  }
  // Read with the mutex held: a notify after the caller checked its condition (under the mutex) bumps it past
  // this value, so the wait below cannot miss it.
  const std::uint32_t seen = generation_.load(std::memory_order_acquire) & kWordValue;
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
