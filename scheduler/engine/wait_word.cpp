#include "scheduler/engine/wait_word.hpp"

#include "scheduler/atomics/memory_model.hpp"
#include "src/futex.hpp"
#if WEFT_FIBERS
#include "scheduler/engine/fiber_worker.hpp"
#endif

namespace weft::engine {
namespace {

// Threads between the announcement below and the end of their futex wait, in any pool: lets a wake skip the
// futex syscall when only suspended fibers (or nobody) wait, which is the common case on a pool with fibers (a
// ping-pong between tasks paid a syscall per hand-over). Touched only on the paths that sleep or wake.
std::atomic<std::uint32_t> thread_sleepers{0};

// The futex wake, unless no thread can be asleep on any word. Dekker with park_word: a sleeper raises the count
// (seq_cst RMW) before the kernel compares the word; the waker changed the word before its fence. Either the
// waker sees the count, or the sleeper's futex call sees the changed word and does not sleep.
template <class Wake>
void wake_threads(Wake wake) noexcept {
  atomics::StdMemoryModel::thread_fence(std::memory_order_seq_cst);
  if (thread_sleepers.load(std::memory_order_relaxed) != 0) wake();
}

}  // namespace

void park_word(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::chrono::nanoseconds timeout) noexcept {
#if WEFT_FIBERS
  if (FiberWorker* fibers = SuspendingWait::take_here()) {
    fibers->park(word, expected, timeout);
    return;
  }
#endif
  thread_sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (timeout == std::chrono::nanoseconds::max()) {
    os::futex_wait(word, expected);
  } else {
    os::futex_wait_for(word, expected, timeout);
  }
  thread_sleepers.fetch_sub(1, std::memory_order_relaxed);
}

void wake_word_all(std::atomic<std::uint32_t>& word) noexcept {
  wake_threads([&] { os::futex_wake_all(word); });
#if WEFT_FIBERS
  fiber_lot::wake(&word, true);
#endif
}

void wake_word_one(std::atomic<std::uint32_t>& word) noexcept {
  wake_threads([&] { os::futex_wake_one(word); });
#if WEFT_FIBERS
  fiber_lot::wake(&word, false);
#endif
}

}  // namespace weft::engine
