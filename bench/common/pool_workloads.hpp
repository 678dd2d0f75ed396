// The pool workloads of issue 3, shared by bench/pool/pool_bench (Google Benchmark) and bench/demo/weft-demo:
// their sizes, the interface each library's side implements (weft_side.hpp, tbb_side.hpp), and the wake-up
// probe. Written once here so that both programs time exactly the same code.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>

#include "src/os_thread.hpp"

namespace weft::bench {

inline constexpr std::size_t kNoopTasks = 1'000'000;
inline constexpr int kFibN = 28;
inline constexpr std::uint64_t kFibExpected = 317'811;  // fib(28): a wrong scheduler cannot pass as a fast one
inline constexpr int kRoundTrips = 1'000;
// Long enough for every worker of either library to have stopped spinning and gone to sleep (weft spins
// 50 us by default, oneTBB a few ms at most), so that the wake-up probe measures a real wake-up.
inline constexpr std::chrono::milliseconds kIdleBeforeWake{20};

// The sum round_trips(count) must return: task i yields i.
[[nodiscard]] constexpr std::uint64_t round_trip_sum(int count) noexcept {
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(count - 1) / 2;
}

// One library's pool and the workloads run on it. Constructed once with `threads` workers, outside any timed
// region; every member below runs one complete workload and returns only when all its tasks have finished.
template <class S>
concept PoolSide = std::constructible_from<S, unsigned> && requires(S& side, std::size_t n, int k) {
  { S::kName } -> std::convertible_to<std::string_view>;
  side.noop_burst(n);  // n empty tasks posted from the calling (non-worker) thread, then a wait for all of them
  { side.fib(k) } -> std::same_as<std::uint64_t>;  // fib(k), each call spawning fib(k-1) and waiting on a worker
  { side.round_trips(k) } -> std::same_as<std::uint64_t>;  // k x (submit one task, wait for it); the sum of 0..k-1
  // Time from posting one task to its start. Call only when the pool has been idle for kIdleBeforeWake.
  { side.wake_latency() } -> std::same_as<std::chrono::nanoseconds>;
};

// The worker count both libraries get: WEFT_BENCH_THREADS if set to a positive number, else every CPU this
// process may use.
[[nodiscard]] inline unsigned default_threads() {
  if (const char* text = std::getenv("WEFT_BENCH_THREADS")) {
    const unsigned long value = std::strtoul(text, nullptr, 10);
    if (value > 0 && value <= 4096) return static_cast<unsigned>(value);
  }
  return os::usable_cpu_count();
}

// Measures how long a posted task takes to start running. Owned by a side, so that it outlives the tasks that
// stamp it.
class WakeProbe {
 public:
  // `post(task)` must hand `task` (a copyable callable) to the library to run on one of its workers.
  template <class Post>
  [[nodiscard]] std::chrono::nanoseconds measure(Post&& post) {
    // relaxed: the post below publishes the reset to the task along with the task itself.
    started_ns_.store(0, std::memory_order_relaxed);
    const std::int64_t posted = now_ns();
    post([this] {
      // release: the measuring thread acquires it; nothing else is handed over.
      started_ns_.store(now_ns(), std::memory_order_release);
    });
    std::int64_t started = 0;
    // acquire: pairs with the task's store. Yield rather than spin hard: on two CPUs a hard spin would take
    // the CPU the woken worker needs.
    while ((started = started_ns_.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
    return std::chrono::nanoseconds(started - posted);
  }

 private:
  static std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::atomic<std::int64_t> started_ns_{0};
};

// Lets the pool go idle (its workers park), then measures one wake-up.
template <PoolSide S>
[[nodiscard]] std::chrono::nanoseconds wake_after_idle(S& side) {
  std::this_thread::sleep_for(kIdleBeforeWake);
  return side.wake_latency();
}

}  // namespace weft::bench
