// How weft-demo times the shared pool workloads (bench/common/): both libraries alive side by side, each
// workload measured on one library and then the other, medians of repeated runs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench/common/baseline_sides.hpp"
#include "bench/common/peak_rss.hpp"
#include "bench/common/pool_workloads.hpp"
#include "bench/common/weft_side.hpp"
#include "bench/demo/demo_table.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/tbb_side.hpp"
#endif

namespace weft::demo {

using namespace weft::bench;

inline constexpr int kRoundTripBatchesPerRep = 5;  // one batch takes well under a millisecond: take more samples
inline constexpr int kWakeSamplesPerRep = 10;
inline constexpr int kMemoryRuns = 3;

struct Settings {
  int reps = 7;          // timed runs per workload and library (after one warm-up run)
  unsigned threads = 1;  // workers per library
  bool verbose = false;  // print every sample, not only the medians
  bool full = false;     // --full: every row with the full run counts; else the short mode's
};

// Every library's median for one workload (the baselines' on the pool rows only).
struct Pair {
  Value weft;
  Value tbb;
  Value queue_pool;
  Value async;
};

// The libraries under test, each created once before any timing. Both stay alive, so that the two figures of a
// workload are taken seconds apart, under much the same load from other processes.
struct Sides {
  std::optional<WeftSide> weft;
#if WEFT_BENCH_HAVE_TBB
  std::optional<TbbSide> tbb;
#endif
  std::optional<QueuePoolSide> queue_pool;
  std::optional<AsyncSide> async;

  // measure(side) for each library present. Before each, the other library's workers get time to fall asleep,
  // so that they do not compete for the CPUs.
  template <class Measure>
  Pair measure(Measure&& measure) {
    Pair pair;
    if (weft) {
      std::this_thread::sleep_for(kIdleBeforeWake);
      pair.weft = measure(*weft);
    }
#if WEFT_BENCH_HAVE_TBB
    if (tbb) {
      std::this_thread::sleep_for(kIdleBeforeWake);
      pair.tbb = measure(*tbb);
    }
#endif
    return pair;
  }

  // As measure, then the baselines too.
  template <class Measure>
  Pair measure_with_baselines(Measure&& measure) {
    Pair pair = this->measure(measure);
    if (queue_pool) {
      std::this_thread::sleep_for(kIdleBeforeWake);
      pair.queue_pool = measure(*queue_pool);
    }
    if (async) pair.async = measure(*async);
    return pair;
  }
};

// The median of `samples`; prints them all first if asked to.
inline Value summarise(const Settings& s, const std::string& what, std::vector<double> samples) {
  if (s.verbose) {
    std::printf("  %s:", what.c_str());
    for (const double sample : samples) std::printf(" %.4g", sample);
    std::printf("\n");
  }
  return median(std::move(samples));
}

// `reps` timed runs of `run` after one untimed warm-up, in `units_per_second`; the median.
template <class F>
Value median_of(const Settings& s, const std::string& what, int reps, double units_per_second, F&& run) {
  run();
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() *
                      units_per_second);
  }
  return summarise(s, what, std::move(samples));
}

template <PoolSide S>
std::string label(const S&, const char* what) {
  return std::string(S::kName) + " " + what;
}

// A workload that computed a wrong result stops the demo: a fast but wrong scheduler must not pass.
template <PoolSide S>
[[noreturn]] void wrong(const S& side, const char* what) {
  throw std::runtime_error(label(side, what));
}

// The baselines' thread-per-task side runs a fraction of the burst and of fib (baseline_sides.hpp): its time
// is scaled up by the task count.
inline Pair measure_noop(const Settings& s, Sides& sides) {
  return sides.measure_with_baselines([&](PoolSide auto& side) {
    using S = std::remove_cvref_t<decltype(side)>;
    constexpr std::size_t divisor = noop_divisor<S>();
    return scaled(median_of(s, label(side, "noop ms"), s.reps, 1e3, [&] { side.noop_burst(kNoopTasks / divisor); }),
                  static_cast<double>(divisor));
  });
}

inline Pair measure_fib(const Settings& s, Sides& sides) {
  return sides.measure_with_baselines([&](PoolSide auto& side) {
    using S = std::remove_cvref_t<decltype(side)>;
    constexpr int n = fib_n_of<S>();
    return scaled(median_of(s, label(side, "fib ms"), s.reps, 1e3,
                            [&] {
                              if (side.fib(n) != fib_value(n)) wrong(side, "computed a wrong fib");
                            }),
                  fib_calls(kFibN) / fib_calls(n));
  });
}

inline Pair measure_submit(const Settings& s, Sides& sides) {
  return sides.measure_with_baselines([&](PoolSide auto& side) {
    return median_of(s, label(side, "submit us"), s.reps * kRoundTripBatchesPerRep, 1e6, [&] {
      if (side.round_trips(kRoundTrips) != round_trip_sum(kRoundTrips)) wrong(side, "lost a submit-and-wait");
    });
  });
}

// The median (p50) and the 99th percentile of the wake-up samples.
struct WakePairs {
  Pair p50;
  Pair p99;
};

inline WakePairs measure_wake(const Settings& s, Sides& sides) {
  WakePairs out;
  out.p50 = sides.measure_with_baselines([&](PoolSide auto& side) {
    using S = std::remove_cvref_t<decltype(side)>;
    std::vector<double> samples;
    for (int i = 0; i < s.reps * kWakeSamplesPerRep; ++i)
      samples.push_back(std::chrono::duration<double, std::micro>(wake_after_idle(side)).count());
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    const Value p99 = Figure{quantile(sorted, 0.99), 0, 1};
    if constexpr (std::is_same_v<S, WeftSide>) out.p99.weft = p99;
    if constexpr (std::is_same_v<S, QueuePoolSide>) out.p99.queue_pool = p99;
    if constexpr (std::is_same_v<S, AsyncSide>) out.p99.async = p99;
#if WEFT_BENCH_HAVE_TBB
    if constexpr (std::is_same_v<S, TbbSide>) out.p99.tbb = p99;
#endif
    return summarise(s, label(side, "wake us"), std::move(samples));
  });
  return out;
}

// In fresh child processes (peak_rss.hpp): the median MiB over the baseline; prints one child's absolute figures.
inline Pair measure_memory(const Settings& s, Sides& sides) {
  return sides.measure([&](PoolSide auto& side) {
    using S = std::remove_cvref_t<decltype(side)>;
    std::vector<double> samples;
    std::optional<PeakRss> last;
    for (int i = 0; i < kMemoryRuns; ++i) {
      last = measure_peak_rss(S::kName, s.threads);
      if (!last) wrong(side, "peak-memory child process failed");
      samples.push_back(static_cast<double>(last->workload_kib()) / 1024.0);
    }
    std::printf("  %s, 1M no-op in a fresh process: RSS %.1f MiB before the pool, high-water mark %.1f MiB\n",
                std::string(S::kName).c_str(), static_cast<double>(last->baseline_kib) / 1024.0,
                static_cast<double>(last->peak_kib) / 1024.0);
    return summarise(s, label(side, "memory MiB"), std::move(samples));
  });
}

}  // namespace weft::demo
