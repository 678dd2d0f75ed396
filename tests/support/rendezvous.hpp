// A latch and a reusable barrier for tests, on a mutex and a condition variable rather than std::latch and
// std::barrier: those sleep in std::atomic::wait, whose libstdc++ fallback where there is no futex (GCC 12 for
// Windows, MinGW-w64) checks the value, then sleeps on a shared condition variable without checking it again under
// the lock, so a notify between the two is lost and the waiter never wakes (docs/platforms.md). On Linux both
// would sleep on a futex; these behave the same everywhere.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace weft::test {

// Releases every waiter once `count` threads have arrived (std::latch's arrive_and_wait, once).
class Latch {
 public:
  explicit Latch(std::size_t count) : left_(count) {}
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    if (left_ > 0 && --left_ == 0) {
      released_.notify_all();
      return;
    }
    released_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  std::size_t left_;  // under mutex_
};

// Releases each round's `count` threads together, round after round (std::barrier's arrive_and_wait).
class Barrier {
 public:
  explicit Barrier(std::size_t count) : count_(count), left_(count) {}
  void arrive_and_wait() {
    std::unique_lock lock(mutex_);
    const std::size_t round = round_;
    if (--left_ == 0) {
      left_ = count_;
      ++round_;
      next_round_.notify_all();
      return;
    }
    next_round_.wait(lock, [this, round] { return round_ != round; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable next_round_;
  const std::size_t count_;
  std::size_t left_;       // under mutex_: threads still to arrive in this round
  std::size_t round_ = 0;  // under mutex_
};

}  // namespace weft::test
