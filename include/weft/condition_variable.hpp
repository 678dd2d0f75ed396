// weft::ConditionVariable: std::condition_variable's contract with std::mutex, whose waits suspend the calling
// task on a worker of a pool with fibers (marl::ConditionVariable) instead of blocking the worker.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

#include "weft/detail/deadline.hpp"
#include "weft/detail/primitive_word.hpp"

namespace weft {

namespace detail {
struct CoroWordAccess;
}  // namespace detail

// Contract:
// - As std::condition_variable with std::unique_lock<std::mutex>: wait(lock) releases the mutex, waits for a
//   notify, and holds the mutex again when it returns; spurious wake-ups happen (notify_one may release more
//   than one waiter), so wait with a predicate or re-check in a loop.
// - wait() suspends the calling task on a worker of a pool with fibers (the task may resume on another worker:
//   `lock` is locked again there), runs other tasks on a worker without fibers, and blocks elsewhere; so do the
//   timed waits, until notified or the deadline.
// - A lock that does not hold its mutex throws std::logic_error ("weft::ConditionVariable::wait: ...").
// - In a weft::Task coroutine, `co_await weft::notified(cv, lock)` (weft/task.hpp) waits without holding a thread
//   or a fiber stack.
// - A task must not hold a std::mutex across a wait that may suspend, other than through this class: a
//   std::mutex must be unlocked by the thread that locked it.
// - Any member from any thread. Not copyable or movable. Destroy it only once no thread waits on it; a woken
//   waiter may destroy it even while the notify that woke it is still returning.
//
// Example (docs/examples/wait_primitives.cpp has more):
//   std::mutex m;
//   weft::ConditionVariable cv;
//   std::deque<int> queue;
//   pool.post([&] {            // consumer
//     std::unique_lock lock(m);
//     cv.wait(lock, [&] { return !queue.empty(); });
//     use(queue.front());
//   });
//   { std::lock_guard lock(m); queue.push_back(42); }
//   cv.notify_one();
class ConditionVariable {
 public:
  ConditionVariable() noexcept = default;
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  // Wakes at least one waiter, if any.
  void notify_one() noexcept;
  // Wakes every waiter.
  void notify_all() noexcept;

  // Releases `lock`, waits for a notify (or a spurious wake-up), locks it again.
  void wait(std::unique_lock<std::mutex>& lock);
  // Waits until `pred()` holds, checking it with the lock held.
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lock, Pred pred) {
    while (!pred()) wait(lock);
  }
  // As wait(lock), for at most until `deadline`: std::cv_status::timeout if it passed first.
  std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline);
  template <class Pred>
  bool wait_until(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline, Pred pred) {
    while (!pred()) {
      if (wait_until(lock, deadline) == std::cv_status::timeout) return pred();
    }
    return true;
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::unique_lock<std::mutex>& lock, std::chrono::duration<Rep, Period> timeout) {
    return wait_until(lock, detail::deadline_after(detail::clamp_to_nanoseconds(timeout)));
  }
  template <class Rep, class Period, class Pred>
  bool wait_for(std::unique_lock<std::mutex>& lock, std::chrono::duration<Rep, Period> timeout, Pred pred) {
    return wait_until(lock, detail::deadline_after(detail::clamp_to_nanoseconds(timeout)), std::move(pred));
  }

 private:
  // Waits while the generation is still `seen`.
  bool wait_generation(std::uint32_t seen, std::chrono::steady_clock::time_point deadline);

  // The generation (notifies counted modulo 2^31), and whether a waiter sleeps on it
  // (weft/detail/primitive_word.hpp).
  std::atomic<std::uint32_t> generation_{0};

  friend struct detail::CoroWordAccess;  // co_await weft::notified (weft/task.hpp) waits on the generation
};

}  // namespace weft
