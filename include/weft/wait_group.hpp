// weft::WaitGroup: a count of outstanding work that tasks and threads wait to reach zero. On a worker of a pool
// with fibers the waiting task suspends and the worker runs other tasks; on any other thread the thread blocks.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

#include "weft/detail/deadline.hpp"
#include "weft/detail/primitive_word.hpp"

namespace weft {
namespace detail {
struct CoroWordAccess;
}  // namespace detail

// A count of outstanding work that waiters wait to reach zero (Go's sync.WaitGroup, marl::WaitGroup).
//
// Contract:
// - add(n) raises the count by n; done() lowers it by one; wait() returns once it is zero (at once if it is).
// - done() on a count of zero throws std::logic_error ("weft::WaitGroup::done: ..."): more done() than add().
//   add() past 2^31 - 1 outstanding throws std::overflow_error naming the count.
// - wait() suspends the calling task on a worker of a pool with fibers, runs other tasks on a worker without
//   them, and blocks elsewhere, as Event::wait(). What each done() caller did before done() is visible after
//   wait() returns.
// - Any member from any thread. Not copyable or movable. Destroy it only once no thread waits on it; a waiter
//   may destroy it as soon as wait() returns, even while the done() that released it is still returning.
//
// Example (docs/examples/wait_primitives.cpp has more):
//   weft::WaitGroup pending;
//   for (auto& item : items) {
//     pending.add();
//     pool.post([&] { process(item); pending.done(); });
//   }
//   pending.wait();  // every item processed
class WaitGroup {
 public:
  // A group with `initial` outstanding.
  // Throws std::overflow_error past 2^31 - 1.
  explicit WaitGroup(std::uint32_t initial = 0);
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  // Raises the count by `n`. Throws std::overflow_error past 2^31 - 1 outstanding (the count is unchanged).
  void add(std::uint32_t n = 1);
  // Lowers the count by one, waking the waiters when it reaches zero. Throws std::logic_error if it was zero.
  void done();
  // Blocks (or suspends the calling task) until the count is zero.
  void wait();
  // As wait(), for at most `timeout`; true if the count reached zero, false on time-out.
  [[nodiscard]] bool wait_for(std::chrono::nanoseconds timeout);
  template <class Rep, class Period>
  [[nodiscard]] bool wait_for(std::chrono::duration<Rep, Period> timeout) {
    return wait_for(detail::clamp_to_nanoseconds(timeout));
  }
  // The outstanding count now (a snapshot).
  [[nodiscard]] std::uint32_t count() const noexcept {
    return state_.load(std::memory_order_acquire) & detail::kWordValue;
  }

 private:
  friend struct detail::CoroWordAccess;  // co_await group (weft/task.hpp) waits on the word
  bool wait_until(std::chrono::steady_clock::time_point deadline);

  // The count, and whether a waiter sleeps on it (weft/detail/primitive_word.hpp).
  std::atomic<std::uint32_t> state_;
};

}  // namespace weft
