// oneTBB's side of the pool workloads (pool_workloads.hpp): one task_arena of the same size as weft's pool,
// created once, and the workloads written the idiomatic oneTBB way (task_group run + wait).
//
// Thread accounting: an arena of N slots reserves one for the thread that enters it (arena.execute), so oneTBB
// runs a workload on N-1 workers plus the calling thread; weft runs it on N workers while the caller waits.
// Each workload enters the arena once, so the cost of joining it is paid once per workload, not per task.
#pragma once

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "bench/common/pool_workloads.hpp"

namespace weft::bench {

class TbbSide {
 public:
  static constexpr std::string_view kName = "oneTBB";

  // An arena of `threads` slots (at least 1); global_control lets oneTBB start that many threads even where
  // its default would be fewer.
  explicit TbbSide(unsigned threads)
      : parallelism_(tbb::global_control::max_allowed_parallelism, threads == 0 ? 1 : threads),
        arena_(static_cast<int>(threads == 0 ? 1 : threads)) {
    arena_.initialize();
  }

  // task_group::run from this thread, then task_group::wait (which also runs tasks).
  void noop_burst(std::size_t tasks) {
    arena_.execute([tasks] {
      tbb::task_group group;
      for (std::size_t i = 0; i < tasks; ++i) group.run([] {});
      group.wait();
    });
  }

  std::uint64_t fib(int n) {
    std::uint64_t result = 0;
    arena_.execute([n, &result] { result = fib_in_arena(n); });
    return result;
  }

  // One task_group reused for every round trip: run one task, wait for it.
  std::uint64_t round_trips(int count) {
    std::uint64_t sum = 0;
    arena_.execute([count, &sum] {
      tbb::task_group group;
      for (int i = 0; i < count; ++i) {
        group.run([i, &sum] { sum += static_cast<std::uint64_t>(i); });
        group.wait();
      }
    });
    return sum;
  }

  // Runs f() inside the arena (this thread takes one slot) and returns its result.
  template <class F>
  decltype(auto) execute(F&& f) {
    return arena_.execute(std::forward<F>(f));
  }

  // task_arena::enqueue: the task is run by a worker, never by this thread.
  std::chrono::nanoseconds wake_latency() {
    return probe_.measure([this](auto task) { arena_.enqueue(std::move(task)); });
  }

 private:
  // A task_group per call: spawn fib(n-1), compute fib(n-2) here, wait (running tasks meanwhile).
  static std::uint64_t fib_in_arena(int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    std::uint64_t left = 0;
    tbb::task_group group;
    group.run([n, &left] { left = fib_in_arena(n - 1); });
    const std::uint64_t right = fib_in_arena(n - 2);
    group.wait();
    return left + right;
  }

  WakeProbe probe_;
  tbb::global_control parallelism_;
  tbb::task_arena arena_;
};

static_assert(PoolSide<TbbSide>);

// The version oneTBB was compiled against, and the one loaded at run time.
[[nodiscard]] inline std::string_view tbb_header_version() noexcept { return TBB_VERSION_STRING; }
[[nodiscard]] inline std::string_view tbb_runtime_version() noexcept { return TBB_runtime_version(); }

}  // namespace weft::bench
