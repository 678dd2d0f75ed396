// The per-run cost of a small pipeline run again and again, on fresh input each run: a 4-stage pipeline (a
// serial source, two parallel stages, a serial in-order sink) of 16 items, 10,000 runs per iteration. Rows:
//   reuse_16x4/stream_graph   weft::StreamGraph built once, run(pool).wait() per run (the layout and slots reused)
//   reuse_16x4/task_scope     a weft::TaskScope built, run and waited for per run (the one-shot way)
//   reuse_16x4/oneTBB         one tbb::parallel_pipeline call per run (16 tokens), in the shared arena
// Taskflow's tf::Pipeline (made a task by composed_of and run again) is the peer the goal names; no Taskflow
// package is available to the build, so it has no row.
// Each row reports us_per_run (manual time / 10,000). Ratios: run with --benchmark_repetitions=5
// --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true and divide medians.
// A wrong result (an item lost, repeated, or out of order at the sink) marks the row as an error and makes the
// program exit 1.
#include <benchmark/benchmark.h>
#include <oneapi/tbb/parallel_pipeline.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/common/graph_workloads_cases.hpp"
#include "bench/common/graph_workloads_tbb.hpp"
#include "bench/common/manual_timing.hpp"
#include "weft/pool.hpp"
#include "weft/stream_graph.hpp"
#include "weft/task_scope.hpp"

namespace {

using namespace weft::bench;

constexpr std::size_t kItems = 16;
constexpr int kRuns = 10'000;

bool failed = false;

// The input and output of one run: the source reads batch[i], the sink appends. The stages' work is a few
// instructions, so what is timed is the pipeline's own cost.
struct Batch {
  std::vector<std::uint64_t> in;
  std::vector<std::uint64_t> out;
  std::uint64_t round = 0;
  Batch() {
    in.resize(kItems);
    out.reserve(kItems);
  }
  void refill() {
    ++round;
    for (std::size_t i = 0; i < kItems; ++i) in[i] = round * 1000 + i;
    out.clear();
  }
  [[nodiscard]] bool check() const {
    if (out.size() != kItems) return false;
    for (std::size_t i = 0; i < kItems; ++i) {
      if (out[i] != ((round * 1000 + i) * 3 + 1) * 2) return false;
    }
    return true;
  }
};

constexpr auto first = [](std::uint64_t x) noexcept { return x * 3 + 1; };
constexpr auto second = [](std::uint64_t x) noexcept { return x * 2; };

template <class RunOnce>
void time_runs(benchmark::State& state, Batch& batch, RunOnce&& run_once) {
  const double seconds = time_iterations(state, kRuns * static_cast<std::int64_t>(kItems), failed,
                                         "the pipeline computed a wrong result", [&](Stopwatch& watch) {
                                           bool ok = true;
                                           for (int r = 0; r < kRuns; ++r) {
                                             batch.refill();
                                             watch.time(run_once);
                                             ok = batch.check() && ok;
                                           }
                                           return ok;
                                         });
  state.counters["us_per_run"] = seconds * 1e6 / kRuns;
}

const weft::StageOptions kParallel{.concurrency = weft::kUnlimited};
const weft::StageOptions kInOrder{.order = weft::Order::Input};

void stream_graph(benchmark::State& state, weft::Pool& pool) {
  Batch batch;
  weft::StreamGraph pipe;
  auto items = pipe.source([&batch](std::size_t i) -> std::optional<std::uint64_t> {
    if (i == kItems) return std::nullopt;
    return batch.in[i];
  });
  auto a = pipe.stage(items, first, kParallel);
  auto b = pipe.stage(a, second, kParallel);
  pipe.sink(
      b, [&batch](std::uint64_t x) { batch.out.push_back(x); }, kInOrder);
  time_runs(state, batch, [&] { pipe.run(pool).wait(); });
}

void task_scope(benchmark::State& state, weft::Pool& pool) {
  Batch batch;
  time_runs(state, batch, [&] {
    weft::TaskScope scope(pool);
    auto items = scope.source([&batch, i = std::size_t{0}]() mutable -> std::optional<std::uint64_t> {
      if (i == kItems) return std::nullopt;
      return batch.in[i++];
    });
    auto a = scope.stage(items, first, kParallel);
    auto b = scope.stage(a, second, kParallel);
    scope.sink(
        b, [&batch](std::uint64_t x) { batch.out.push_back(x); }, kInOrder);
    scope.run_and_wait();
  });
}

void one_tbb(benchmark::State& state, TbbGraphSide& side) {
  Batch batch;
  time_runs(state, batch, [&] {
    side.execute([&] {
      std::size_t i = 0;
      tbb::parallel_pipeline(kItems,
                             tbb::make_filter<void, std::uint64_t>(tbb::filter_mode::serial_in_order,
                                                                   [&](tbb::flow_control& fc) -> std::uint64_t {
                                                                     if (i == kItems) {
                                                                       fc.stop();
                                                                       return 0;
                                                                     }
                                                                     return batch.in[i++];
                                                                   }) &
                                 tbb::make_filter<std::uint64_t, std::uint64_t>(tbb::filter_mode::parallel, first) &
                                 tbb::make_filter<std::uint64_t, std::uint64_t>(tbb::filter_mode::parallel, second) &
                                 tbb::make_filter<std::uint64_t, void>(tbb::filter_mode::serial_in_order,
                                                                       [&](std::uint64_t x) {
                                                                         batch.out.push_back(x);
                                                                       }));
    });
  });
}

}  // namespace

int main(int argc, char** argv) {
  keep_heap_warm();
  const unsigned threads = graph_threads();
  weft::Pool pool(pool_options(threads));
  TbbGraphSide tbb_side(threads);
  benchmark::RegisterBenchmark("reuse_16x4/stream_graph", [&pool](benchmark::State& s) { stream_graph(s, pool); })
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  benchmark::RegisterBenchmark("reuse_16x4/task_scope", [&pool](benchmark::State& s) { task_scope(s, pool); })
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  benchmark::RegisterBenchmark("reuse_16x4/oneTBB", [&tbb_side](benchmark::State& s) { one_tbb(s, tbb_side); })
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("oneTBB", TBB_runtime_version());
  benchmark::AddCustomContext("Taskflow", "not available (no package): no tf::Pipeline row");
  return run_benchmarks(argc, argv, failed);
}
