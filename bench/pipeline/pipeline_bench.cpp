// weft::TaskScope pipelines against oneTBB's parallel_pipeline on the pipeline workloads
// (bench/common/pipeline_workloads*.hpp), side by side in one binary. For each case, in this order:
//   <case>/time/weft, <case>/time/weft_tokens, <case>/time/oneTBB
//                                            one whole pipeline run per iteration (weft: build the TaskScope,
//                                            run, wait; oneTBB: one parallel_pipeline call), manual time, the
//                                            check outside it; items_per_second is Google Benchmark's
//                                            items_processed counter; "bound": the most items the run may
//                                            hold (oneTBB's tokens; weft's bound, see
//                                            pipeline_workloads_weft.hpp for how its options are chosen;
//                                            weft_tokens: the oneTBB port as written, the token count given as
//                                            StageOptions::live_tokens, parallel stages kUnlimited)
//   <case>/memory/weft, <case>/memory/oneTBB  one fresh child process per iteration (see
//                                            pipeline_workloads_memory.hpp): max_alive, the most items alive at
//                                            once, and peak_MiB / over_baseline_MiB, its RSS high-water mark
//
// Both libraries get the same number of threads: 2, or WEFT_BENCH_THREADS (weft: that many workers, the calling
// thread waits; oneTBB: an arena of that many slots, one taken by the calling thread). Ratios: run with
// --benchmark_repetitions=5 --benchmark_report_aggregates_only=true and divide the weft median by the oneTBB
// median of the same case. A wrong result (an item lost, repeated, reordered at the in-order sink, or with a
// wrong value) marks that row as an error and makes the program exit 1.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <utility>

#include "bench/common/graph_workloads_cases.hpp"
#include "bench/common/graph_workloads_tbb.hpp"
#include "bench/common/graph_workloads_weft.hpp"
#include "bench/common/manual_timing.hpp"
#include "bench/common/pipeline_workloads.hpp"
#include "bench/common/pipeline_workloads_memory.hpp"
#include "bench/common/pipeline_workloads_tbb.hpp"
#include "bench/common/pipeline_workloads_weft.hpp"
#include "weft/pool.hpp"

namespace {

using namespace weft::bench;

bool failed = false;  // some workload computed a wrong result, or a child process failed

template <class Pipeline, class Side, class... Plan>
void time_case(benchmark::State& state, Side& side, const PipelineCase& c, std::uint64_t steps, Plan... plan) {
  Pipeline pipeline(side, c, steps, std::move(plan)...);
  (void)time_iterations(state, static_cast<std::int64_t>(c.items), failed, "the pipeline computed a wrong result",
                        [&pipeline](Stopwatch& watch) {
                          watch.time([&pipeline] { pipeline.run(); });
                          return pipeline.check();
                        });
  state.counters["bound"] = static_cast<double>(pipeline.bound());
}

// The counters are the children's figures, averaged over the iterations.
void memory_case(benchmark::State& state, std::string_view side, unsigned threads, const PipelineCase& c) {
  double peak = 0;
  double over = 0;
  double alive = 0;
  double bound = 0;
  for (auto _ : state) {
    const auto memory = measure_pipeline_memory(side, threads, c);
    if (!memory) {
      failed = true;
      state.SkipWithError("the memory child process failed (or computed a wrong result)");
      return;
    }
    peak += static_cast<double>(memory->rss.peak_kib) / 1024.0;
    over += static_cast<double>(memory->rss.workload_kib()) / 1024.0;
    alive += static_cast<double>(memory->max_alive);
    bound = static_cast<double>(memory->bound);
  }
  const auto runs = static_cast<double>(state.iterations());
  state.counters["peak_MiB"] = peak / runs;
  state.counters["over_baseline_MiB"] = over / runs;
  state.counters["max_alive"] = alive / runs;
  state.counters["bound"] = bound;
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto code = run_pipeline_memory_child_if_asked(argc, argv)) return *code;
  keep_heap_warm();
  const unsigned threads = graph_threads();
  weft::Pool pool(pool_options(threads));
  WeftGraphSide weft_side(pool);
  TbbGraphSide tbb_side(threads);
  const std::uint64_t spin_steps = spin_steps_for(kPipelineSpin);

  for (const PipelineCase& c : kPipelineCases) {
    const std::string id(c.id);
    const std::uint64_t steps = pipeline_steps(c, spin_steps);
    benchmark::RegisterBenchmark((id + "/time/weft").c_str(),
                                 [&weft_side, &c, steps](benchmark::State& state) {
                                   time_case<WeftPipeline>(state, weft_side, c, steps);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    benchmark::RegisterBenchmark((id + "/time/weft_tokens").c_str(),
                                 [&weft_side, &c, steps](benchmark::State& state) {
                                   time_case<WeftPipeline>(state, weft_side, c, steps, weft_token_plan(c));
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    benchmark::RegisterBenchmark((id + "/time/oneTBB").c_str(),
                                 [&tbb_side, &c, steps](benchmark::State& state) {
                                   time_case<TbbPipeline>(state, tbb_side, c, steps);
                                 })
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
  }
  for (const PipelineCase& c : kPipelineCases) {
    const std::string id(c.id);
    for (const std::string_view side : {WeftGraphSide::kName, TbbGraphSide::kName}) {
      benchmark::RegisterBenchmark((id + "/memory/" + std::string(side)).c_str(),
                                   [side, threads, &c](benchmark::State& state) {
                                     memory_case(state, side, threads, c);
                                   })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(1);
    }
  }
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("oneTBB", TBB_runtime_version());
  benchmark::AddCustomContext("LCG steps per 10 us (spin cases)", std::to_string(spin_steps));
  return run_benchmarks(argc, argv, failed);
}
