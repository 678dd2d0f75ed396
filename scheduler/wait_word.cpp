#include "scheduler/wait_word.hpp"

#include "src/futex.hpp"
#if WEFT_FIBERS
#include "scheduler/fiber_worker.hpp"
#endif

namespace weft::sched {

void park_word(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::chrono::nanoseconds timeout) noexcept {
#if WEFT_FIBERS
  if (timeout == std::chrono::nanoseconds::max()) {
    if (FiberWorker* fibers = SuspendingWait::take_here()) {
      fibers->park(word, expected);
      return;
    }
  }
#endif
  if (timeout == std::chrono::nanoseconds::max()) {
    os::futex_wait(word, expected);
  } else {
    os::futex_wait_for(word, expected, timeout);
  }
}

void wake_word_all(std::atomic<std::uint32_t>& word) noexcept {
  os::futex_wake_all(word);
#if WEFT_FIBERS
  fiber_lot::wake(&word, true);
#endif
}

void wake_word_one(std::atomic<std::uint32_t>& word) noexcept {
  os::futex_wake_one(word);
#if WEFT_FIBERS
  fiber_lot::wake(&word, false);
#endif
}

}  // namespace weft::sched
