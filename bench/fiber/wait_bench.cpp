// What a wait costs once tasks suspend on fibers (issue 25's waits rows; weft-demo times the same workloads,
// bench/common/wait_workloads*.hpp):
// - ping_pong_20k: two tasks handing a turn back and forth through two auto-reset weft::Events (each round: two
//   signals, two suspensions, two resumptions), on one worker and on two; against the same ping-pong between two
//   threads through std::binary_semaphore (a futex each way: the OS's floor for a blocking hand-over; oneTBB
//   has no task-level blocking primitive). Without fibers there is no row: a waiting task that picks up its
//   partner on its own stack waits for a signal only the task beneath it can send (tests/fiber/fiber_wait_test.cpp).
// - fan_out_1000: one task posts 1,000 small tasks and waits on a weft::WaitGroup; against oneTBB task_group
//   run + wait of the same tasks in an arena (when oneTBB was found). Two workers (arena slots) a side.
// - wait_behind_20ms_task: the time from signalling an Event to its waiting task running again while the
//   worker it waited on runs a 20 ms task, on 2 workers; fibers on against PoolOptions::fibers off (manual time:
//   the latency alone, not the 20 ms).
//
// Run: wait_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <optional>

#include "bench/common/wait_workloads.hpp"
#include "weft/pool.hpp"
#if WEFT_BENCH_HAVE_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include "bench/common/wait_workloads_tbb.hpp"
#endif

namespace {

using namespace weft::bench;

constexpr unsigned kWorkers = 2;

void weft_ping_pong(benchmark::State& state, unsigned workers) {
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  for (auto _ : state) weft::bench::weft_ping_pong(pool, kPingPongRounds);
  state.SetItemsProcessed(state.iterations() * kPingPongRounds);
}

void threads_ping_pong(benchmark::State& state) {
  for (auto _ : state) weft::bench::threads_ping_pong(kPingPongRounds);
  state.SetItemsProcessed(state.iterations() * kPingPongRounds);
}

void weft_fan_out(benchmark::State& state) {
  weft::Pool pool{weft::PoolOptions{.threads = kWorkers}};
  for (auto _ : state) {
    if (weft::bench::weft_fan_out(pool, kFanOutTasks) != fan_out_sum(kFanOutTasks)) {
      state.SkipWithError("weft fan-out lost a task");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kFanOutTasks));
}

#if WEFT_BENCH_HAVE_TBB
void tbb_fan_out(benchmark::State& state) {
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, kWorkers);
  tbb::task_arena arena(static_cast<int>(kWorkers));
  arena.initialize();
  for (auto _ : state) {
    if (weft::bench::tbb_fan_out(arena, kFanOutTasks) != fan_out_sum(kFanOutTasks)) {
      state.SkipWithError("oneTBB fan-out lost a task");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kFanOutTasks));
}
#endif

// Manual time: each iteration reports the latency only. A sample in which the long task ran on the other worker
// (not the situation measured) is taken again, at most a few times.
void wait_behind_long_task(benchmark::State& state, bool fibers) {
  weft::Pool pool{weft::PoolOptions{.threads = kWorkers, .fibers = fibers}};
  for (auto _ : state) {
    std::optional<std::chrono::nanoseconds> latency;
    for (int attempt = 0; attempt < 5 && !latency; ++attempt)
      latency = weft::bench::wait_behind_long_task(pool, fibers, kLongTask);
    if (!latency) {
      state.SkipWithError("the long task never ran on the waiting task's worker");
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(*latency).count());
  }
}

}  // namespace

BENCHMARK_CAPTURE(weft_ping_pong, fibers_1_worker, 1u)
    ->Name("ping_pong_20k/weft_fibers_1_worker")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(weft_ping_pong, fibers_2_workers, 2u)
    ->Name("ping_pong_20k/weft_fibers_2_workers")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(threads_ping_pong)
    ->Name("ping_pong_20k/two_threads_binary_semaphore")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(weft_fan_out)->Name("fan_out_1000/weft_wait_group")->Unit(benchmark::kMicrosecond)->UseRealTime();
#if WEFT_BENCH_HAVE_TBB
BENCHMARK(tbb_fan_out)->Name("fan_out_1000/onetbb_task_group")->Unit(benchmark::kMicrosecond)->UseRealTime();
#endif
BENCHMARK_CAPTURE(wait_behind_long_task, fibers, true)
    ->Name("wait_behind_20ms_task/weft_fibers")
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime()
    ->Iterations(20);
BENCHMARK_CAPTURE(wait_behind_long_task, no_fibers, false)
    ->Name("wait_behind_20ms_task/weft_fibers_off")
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime()
    ->Iterations(20);

BENCHMARK_MAIN();
