// weft::Pool against oneTBB on the workloads of issue 3 (bench/common/pool_workloads.hpp), side by side in one
// binary. Each library's pool (weft::Pool, tbb::task_arena) is created once in main(), before any timing, with
// the same number of threads (WEFT_BENCH_THREADS, default: every usable CPU), and the two baselines of
// baseline_sides.hpp beside them. One benchmark iteration is one
// whole workload. Ratios: run with --benchmark_repetitions=N --benchmark_report_aggregates_only=true and divide
// the weft median by the oneTBB median.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/common/background_load.hpp"
#include "bench/common/baseline_sides.hpp"
#include "bench/common/dependent_workloads.hpp"
#include "bench/common/peak_rss.hpp"
#include "bench/common/pool_workloads.hpp"
#include "bench/common/tbb_side.hpp"
#include "bench/common/weft_side.hpp"

namespace {

using namespace weft::bench;

template <PoolSide S>
void noop_burst(benchmark::State& state, S& side) {
  for (auto _ : state) side.noop_burst(kNoopTasks);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kNoopTasks));
}

template <PoolSide S>
void fib(benchmark::State& state, S& side) {
  for (auto _ : state) {
    if (side.fib(kFibN) != kFibExpected) state.SkipWithError("fib returned a wrong value");
  }
}

// weft only (oneTBB has no Subflow): compare with fib28/oneTBB (task_group) and fib28/weft (submit + get).
void fib_subflow(benchmark::State& state, WeftSide& side) {
  for (auto _ : state) {
    if (side.fib_subflow(kFibN) != kFibExpected) state.SkipWithError("fib_subflow returned a wrong value");
  }
}

// The same, one spawn per splitting call, as fib28/weft and fib28/oneTBB spawn.
void fib_subflow_inline(benchmark::State& state, WeftSide& side) {
  for (auto _ : state) {
    if (side.fib_subflow_inline(kFibN) != kFibExpected) state.SkipWithError("fib_subflow_inline: a wrong value");
  }
}

template <PoolSide S>
void round_trips(benchmark::State& state, S& side) {
  for (auto _ : state) {
    if (side.round_trips(kRoundTrips) != round_trip_sum(kRoundTrips)) state.SkipWithError("lost a round trip");
  }
  state.SetItemsProcessed(state.iterations() * kRoundTrips);
}

// Manual time: only post -> start counts, not the idle period before it. The time column is the mean of the
// samples, which one descheduled sample can dominate on a busy machine: the p50_us counter is their median.
template <PoolSide S>
void wake_latency(benchmark::State& state, S& side) {
  std::vector<double> samples;
  for (auto _ : state) {
    const double seconds = std::chrono::duration<double>(wake_after_idle(side)).count();
    state.SetIterationTime(seconds);
    samples.push_back(seconds * 1e6);
  }
  if (samples.empty()) return;
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  state.counters["p50_us"] = samples[samples.size() / 2];
}

// One fresh child process per iteration; the counters are that child's figures (averaged over iterations).
template <PoolSide S>
void peak_rss(benchmark::State& state, S&, unsigned threads) {
  double peak = 0;
  double workload = 0;
  for (auto _ : state) {
    const auto rss = measure_peak_rss(S::kName, threads);
    if (!rss) {
      state.SkipWithError("the peak-RSS child process failed");
      return;
    }
    peak += static_cast<double>(rss->peak_kib) / 1024.0;
    workload += static_cast<double>(rss->workload_kib()) / 1024.0;
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["peak_MiB"] = peak / runs;
  state.counters["over_baseline_MiB"] = workload / runs;
}

// What tracing costs (weft::Trace, PoolOptions::trace): the no-op burst and fib on a pool made for the iteration,
// with and without a trace, so that the trace holds every event of the iteration (a fresh one each time) and the
// two rows differ only by the trace. Making and destroying the pool is not timed. (That tracing off costs nothing
// is what the noop_1M/weft and fib28/weft rows show against a build before tracing existed: docs/perf-log.md.)
enum class Work : std::uint8_t { noop, fib };

template <Work kWork, bool kTraced>
void fresh_pool(benchmark::State& state, unsigned threads) {
  std::size_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto trace = kTraced ? std::make_shared<weft::Trace>(weft::TraceOptions{.max_events = std::size_t{4} << 20})
                         : nullptr;
    {
      WeftSide side(threads, trace);
      state.ResumeTiming();
      if constexpr (kWork == Work::noop) {
        side.noop_burst(kNoopTasks);
      } else if (side.fib(kFibN) != kFibExpected) {
        state.SkipWithError("fib returned a wrong value");
      }
      state.PauseTiming();
    }
    if (trace) {
      if (trace->dropped() != 0) state.SkipWithError("the trace dropped events: raise max_events");
      events += trace->size();
    }
    state.ResumeTiming();
  }
  if (kTraced) state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
}

// Tasks with dependencies on the fly (dependent_workloads.hpp): weft's submit_after against a oneTBB flow graph
// built on the fly. The result check is not timed.
template <class Run>
void dependent(benchmark::State& state, Run run) {
  DependentPlan plan;
  for (auto _ : state) {
    run(plan);
    state.PauseTiming();
    if (!plan.check()) state.SkipWithError("a task ran before one of its predecessors");
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kDependentTasks));
}

// The rows every side runs as is: the submit-and-wait round trips and the wake-up latency.
template <PoolSide S>
void register_round_trips_and_wake(S& side, const std::string& name) {
  benchmark::RegisterBenchmark(("submit_wait_x1000/" + name).c_str(), round_trips<S>, std::ref(side))
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
  // A fixed count: each iteration sleeps kIdleBeforeWake first, which manual time does not see.
  benchmark::RegisterBenchmark(("wake_latency/" + name).c_str(), wake_latency<S>, std::ref(side))
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime()
      ->Iterations(40);
}

// Timers (Pool::post_at): 100,000 timers, their deadlines spread at random over `spread` (starting 0.3 s after the
// first insert), each task recording how late it started. Counters: the cost of scheduling one timer on the calling
// thread (insert_ns), and the lateness p50/p99 (us). With `spread` zero every timer is due at once: the iteration's
// time per timer is insert + fire + run (compare noop_1M/weft, a plain post + run).
void timers(benchmark::State& state, WeftSide& side, std::chrono::microseconds spread) {
  using Clock = std::chrono::steady_clock;
  constexpr std::size_t kTimers = 100'000;
  weft::Pool& pool = side.pool();
  std::vector<std::int64_t> late(kTimers);
  std::vector<weft::Timer> handles;
  handles.reserve(kTimers);
  std::mt19937_64 random(42);
  std::uniform_int_distribution<std::int64_t> offset(0, spread.count());
  std::vector<std::chrono::microseconds> offsets(kTimers);
  double insert_ns = 0;
  std::vector<std::int64_t> all_late;
  for (auto _ : state) {
    for (auto& o : offsets) o = std::chrono::microseconds(offset(random));
    handles.clear();
    const std::uint64_t fired_before = pool.stats().timers_fired;
    const auto start = Clock::now();
    // The first deadline past the inserts (about 0.1 s on a loaded 2-core machine): lateness is the timer thread's
    // and the workers', not the time the inserts took. Due now: every timer is due at once, a throughput figure.
    const auto base = spread.count() == 0 ? start : start + std::chrono::milliseconds(300);
    for (std::size_t i = 0; i < kTimers; ++i) {
      const auto due = base + offsets[i];
      handles.push_back(pool.post_at(due, [&late, due, i] { late[i] = (Clock::now() - due).count(); }));
    }
    insert_ns += static_cast<double>(std::chrono::nanoseconds(Clock::now() - start).count()) / kTimers;
    while (pool.stats().timers_fired - fired_before < kTimers)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    pool.wait_idle();
    all_late.insert(all_late.end(), late.begin(), late.end());
  }
  std::sort(all_late.begin(), all_late.end());
  state.counters["insert_ns"] = insert_ns / static_cast<double>(state.iterations());
  state.counters["late_p50_us"] = static_cast<double>(all_late[all_late.size() / 2]) / 1000.0;
  state.counters["late_p99_us"] = static_cast<double>(all_late[all_late.size() * 99 / 100]) / 1000.0;
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kTimers));
}

// Lateness of sparse timers, the design question of the pool's timers: one timer thread (weft's), or a worker that
// services the timers before it parks, sleeping with the park's timeout set to the next deadline. 1,000 timers due
// at random over 1 s (each its own wake, not a burst), measured three ways per iteration:
//  - weft_timer_thread: Pool::post_at; lateness = when the task starts - its deadline (the timer thread's timed wake,
//    its hand-over, and a worker's wake to run it).
//  - timed_wait: one thread sleeping in a steady_clock condition-variable wait until each deadline (a futex wait with
//    a timeout, the park a worker-serviced design would use) and running the task itself: the lateness a worker
//    that serviced the timers would have when the pool is idle (one timed wake, no hand-over).
//  - with `busy`, the pool's workers are kept busy meanwhile by CPU-bound tasks of 1 ms posted from an outside thread
//    (about two per worker always queued) until every timer fired. A worker-serviced design looks at the timers only
//    when a worker runs dry, which no worker does until that load ends: its lateness is (the load's end - deadline),
//    reported as ws_p50_us / ws_p99_us (emulated: derived from the load's end, not an engine variant).
// Counters in microseconds. WEFT_BENCH_LOAD=2 puts two CPU-bound processes beside it.
void timer_lateness(benchmark::State& state, WeftSide& side, bool busy) {
  using Clock = std::chrono::steady_clock;
  constexpr std::size_t kTimers = 1'000;
  weft::Pool& pool = side.pool();
  std::mt19937_64 random(7);
  std::uniform_int_distribution<std::int64_t> offset_us(0, 1'000'000);
  std::vector<std::int64_t> pool_late;
  std::vector<std::int64_t> wait_late;
  std::vector<std::int64_t> ws_late;
  for (auto _ : state) {
    std::vector<Clock::time_point> due(kTimers);
    const auto base = Clock::now() + std::chrono::milliseconds(50);
    for (auto& d : due) d = base + std::chrono::microseconds(offset_us(random));
    std::vector<std::int64_t> late(kTimers, 0);
    std::atomic<std::size_t> ran{0};
    std::atomic<bool> load_on{busy};
    std::thread loader;
    std::atomic<std::int64_t> in_flight{0};
    if (busy) {
      loader = std::thread([&] {
        const auto spin = [&in_flight] {
          const auto end = Clock::now() + std::chrono::milliseconds(1);
          while (Clock::now() < end) {
          }
          in_flight.fetch_sub(1, std::memory_order_relaxed);
        };
        const std::int64_t target = 2 * static_cast<std::int64_t>(pool.size());
        while (load_on.load(std::memory_order_relaxed)) {
          if (in_flight.load(std::memory_order_relaxed) < target) {
            in_flight.fetch_add(1, std::memory_order_relaxed);
            pool.post(spin);
          } else {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        }
      });
    }
    std::vector<weft::Timer> handles;
    handles.reserve(kTimers);
    for (std::size_t i = 0; i < kTimers; ++i) {
      handles.push_back(pool.post_at(due[i], [&late, &ran, &due, i] {
        late[i] = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - due[i]).count();
        ran.fetch_add(1, std::memory_order_release);
      }));
    }
    // The timed-wait thread, over the same deadlines at the same time (in deadline order).
    std::vector<std::size_t> order(kTimers);
    for (std::size_t i = 0; i < kTimers; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&due](std::size_t a, std::size_t b) { return due[a] < due[b]; });
    std::vector<std::int64_t> waited(kTimers, 0);
    std::thread waiter([&] {
      std::mutex mutex;
      std::condition_variable never;
      std::unique_lock lock(mutex);
      for (const std::size_t i : order) {
        while (Clock::now() < due[i]) never.wait_until(lock, due[i]);
        waited[i] = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - due[i]).count();
      }
    });
    waiter.join();
    while (ran.load(std::memory_order_acquire) < kTimers) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const auto load_end = Clock::now();  // a worker-serviced design's first look at the timers under the load
    load_on.store(false, std::memory_order_relaxed);
    if (loader.joinable()) loader.join();
    pool.wait_idle();
    pool_late.insert(pool_late.end(), late.begin(), late.end());
    wait_late.insert(wait_late.end(), waited.begin(), waited.end());
    if (busy) {
      for (std::size_t i = 0; i < kTimers; ++i)
        ws_late.push_back(std::chrono::duration_cast<std::chrono::microseconds>(load_end - due[i]).count());
    }
  }
  const auto percentile = [](std::vector<std::int64_t>& v, std::size_t per_100) {
    std::sort(v.begin(), v.end());
    return static_cast<double>(v[std::min(v.size() - 1, v.size() * per_100 / 100)]);
  };
  state.counters["pool_p50_us"] = percentile(pool_late, 50);
  state.counters["pool_p99_us"] = percentile(pool_late, 99);
  state.counters["wait_p50_us"] = percentile(wait_late, 50);
  state.counters["wait_p99_us"] = percentile(wait_late, 99);
  if (busy) {
    state.counters["ws_p50_us"] = percentile(ws_late, 50);
    state.counters["ws_p99_us"] = percentile(ws_late, 99);
  }
}

template <PoolSide S>
void register_side(S& side, unsigned threads) {
  const std::string name(S::kName);
  benchmark::RegisterBenchmark(("noop_1M/" + name).c_str(), noop_burst<S>, std::ref(side))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("fib28/" + name).c_str(), fib<S>, std::ref(side))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  register_round_trips_and_wake(side, name);
  benchmark::RegisterBenchmark(("peak_rss_1M/" + name).c_str(), peak_rss<S>, std::ref(side), threads)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(1);
}

// The baselines (baseline_sides.hpp) on the pool rows: thread-per-task runs 1/kNoopDivisor of the burst and a
// smaller fib, named by what it runs (its items per second compare with the other rows').
template <PoolSide S>
void register_baseline(S& side) {
  const std::string name(S::kName);
  constexpr std::size_t noop_tasks = kNoopTasks / noop_divisor<S>();
  constexpr int n = fib_n_of<S>();
  benchmark::RegisterBenchmark(("noop_" + std::to_string(noop_tasks) + "/" + name).c_str(),
                               [&side](benchmark::State& state) {
                                 for (auto _ : state) side.noop_burst(noop_tasks);
                                 state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(noop_tasks));
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("fib" + std::to_string(n) + "/" + name).c_str(),
                               [&side](benchmark::State& state) {
                                 for (auto _ : state) {
                                   if (side.fib(n) != fib_value(n)) state.SkipWithError("fib returned a wrong value");
                                 }
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  register_round_trips_and_wake(side, name);
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto code = run_peak_rss_child_if_asked(argc, argv)) return *code;
  const BackgroundLoad load;  // WEFT_BENCH_LOAD=n: n busy processes beside the benchmark
  const unsigned threads = default_threads();
  WeftSide weft_side(threads);
  TbbSide tbb_side(threads);
  register_side(weft_side, threads);
  register_side(tbb_side, threads);
  QueuePoolSide queue_side(threads);
  AsyncSide async_side(threads);
  register_baseline(queue_side);
  register_baseline(async_side);
  for (const auto& [name, run] : {
           std::pair{"noop_1M/weft_fresh_pool", &fresh_pool<Work::noop, false>},
           std::pair{"noop_1M/weft_fresh_pool_traced", &fresh_pool<Work::noop, true>},
           std::pair{"fib28/weft_fresh_pool", &fresh_pool<Work::fib, false>},
           std::pair{"fib28/weft_fresh_pool_traced", &fresh_pool<Work::fib, true>},
       }) {
    benchmark::RegisterBenchmark(name, run, threads)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  // Interleaved: the weft row, then its oneTBB twin.
  benchmark::RegisterBenchmark("dependent_1e5_x2_from_2/weft_submit_after",
                               [&weft_side](benchmark::State& state) {
                                 dependent(state, [&weft_side](DependentPlan& plan) {
                                   dependent_weft(weft_side.pool(), plan);
                                 });
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("dependent_1e5_x2_from_2/oneTBB_flow_graph",
                               [&tbb_side](benchmark::State& state) {
                                 dependent(state, [&tbb_side](DependentPlan& plan) { dependent_tbb(tbb_side, plan); });
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("fib28_subflow/weft", fib_subflow, std::ref(weft_side))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("fib28_subflow_inline/weft", fib_subflow_inline, std::ref(weft_side))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("timers_1e5_random_1s/weft", timers, std::ref(weft_side), std::chrono::seconds(1))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("timers_1e5_due_now/weft", timers, std::ref(weft_side), std::chrono::microseconds(0))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("timer_lateness_1e3_over_1s/weft_quiet", timer_lateness, std::ref(weft_side), false)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  benchmark::RegisterBenchmark("timer_lateness_1e3_over_1s/weft_busy_workers", timer_lateness, std::ref(weft_side),
                               true)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->Iterations(3);
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("background load", load.describe());
  benchmark::AddCustomContext("oneTBB", std::string(tbb_runtime_version()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
