// The scheduler micro-benchmarks of weft-demo: the cost of one spawn + run on one worker (against libfork's
// published ~16 ns floor, a reference line) and of one steal + run, weft against oneTBB. Each is the time of a
// burst divided by its task count. (small_function against std::function and the MPMC queue against
// boost::lockfree::queue are Google Benchmark binaries: bench/small_function, bench/queue.)
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <thread>

#include "bench/demo/demo_measure.hpp"
#include "weft/pool.hpp"
#if WEFT_BENCH_HAVE_TBB
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

namespace weft::demo {

inline constexpr std::size_t kMicroTasks = 1'000'000;
inline constexpr double kLibforkSpawnFloorNs = 16;  // libfork's published spawn + run floor, for reference

// spawn + run on one worker: a task of a one-worker pool posts kMicroTasks no-ops to its own deque, then the
// worker runs them. oneTBB: an arena of one slot, entered by this thread, task_group run + wait.
inline Pair measure_spawn_one_worker(const Settings& s, Sides& sides) {
  Pair pair;
  const double ns_per_task = 1e9 / static_cast<double>(kMicroTasks);
  if (sides.weft) {
    PoolOptions options;
    options.threads = 1;
    Pool pool(options);
    pair.weft = median_of(s, "weft spawn ns", s.reps, ns_per_task, [&] {
      pool.post([&pool] {
        for (std::size_t i = 0; i < kMicroTasks; ++i) pool.post([] {});
      });
      pool.wait_idle();
    });
  }
#if WEFT_BENCH_HAVE_TBB
  if (sides.tbb) {
    tbb::task_arena arena(1);
    pair.tbb = median_of(s, "oneTBB spawn ns", s.reps, ns_per_task, [&] {
      arena.execute([] {
        tbb::task_group group;
        for (std::size_t i = 0; i < kMicroTasks; ++i) group.run([] {});
        group.wait();
      });
    });
  }
#endif
  return pair;
}

// steal + run: one thread spawns kMicroTasks no-ops to its own deque and then only watches their count, so that
// the other thread of the pool (arena) takes every one of them by stealing. Needs two threads a side.
inline Pair measure_steal(const Settings& s, Sides& sides) {
  Pair pair;
  if (s.threads < 2) return pair;
  const double ns_per_task = 1e9 / static_cast<double>(kMicroTasks);
  std::atomic<std::size_t> done{0};
  const auto watch = [&done] {
    while (done.load(std::memory_order_acquire) != kMicroTasks) std::this_thread::yield();
  };
  const auto count = [&done] { done.fetch_add(1, std::memory_order_release); };
  if (sides.weft) {
    Pool& pool = sides.weft->pool();
    std::this_thread::sleep_for(kIdleBeforeWake);
    pair.weft = median_of(s, "weft steal ns", s.reps, ns_per_task, [&] {
      done.store(0, std::memory_order_relaxed);
      pool.post([&] {
        for (std::size_t i = 0; i < kMicroTasks; ++i) pool.post(count);
        watch();
      });
      pool.wait_idle();
    });
  }
#if WEFT_BENCH_HAVE_TBB
  if (sides.tbb) {
    std::this_thread::sleep_for(kIdleBeforeWake);
    pair.tbb = median_of(s, "oneTBB steal ns", s.reps, ns_per_task, [&] {
      done.store(0, std::memory_order_relaxed);
      sides.tbb->execute([&] {
        tbb::task_group group;
        for (std::size_t i = 0; i < kMicroTasks; ++i) group.run(count);
        watch();
        group.wait();
      });
    });
  }
#endif
  return pair;
}

}  // namespace weft::demo
