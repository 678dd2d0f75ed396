// A spin lock for sections of a few list operations that never block nor switch fibers inside (the fiber lot's
// buckets, the resumed queue). It spins with pause a little, then yields: its holder may have been preempted.
#pragma once

#include <atomic>
#include <thread>

#include "scheduler/atomics/cpu_relax.hpp"

namespace weft::atomics {

class SpinLock {
 public:
  void lock() noexcept {
    unsigned spins = 0;
    // acquire: pairs with unlock's release, so the holder's changes are visible.
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
          cpu_relax();
        } else {
          std::this_thread::yield();  // the holder may have been preempted
        }
      }
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace weft::atomics
