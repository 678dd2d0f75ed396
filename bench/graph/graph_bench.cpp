// weft::TaskGraph / TaskScope / parallel_for against oneTBB (flow graph, parallel_for, task_group) on the
// workloads of issue 4 (bench/common/graph_workloads*.hpp), side by side in one binary. Each dependency graph
// is timed in three phases (build, run of a prebuilt graph, total = build + run + teardown; see
// graph_workloads_cases.hpp); parallel_for and the sin*cos tasks only as a whole ("total").
//
// Both libraries get the same number of threads: 2 (issue 4's setting), or WEFT_BENCH_THREADS. Each sample is
// one whole workload timed with steady_clock (manual time: the result check and untimed teardown stay out).
// Freed memory stays in the process (keep_heap_warm), so build times do not depend on the benchmark before.
// Ratios: run with --benchmark_repetitions=5 --benchmark_report_aggregates_only=true and divide the weft
// median by the oneTBB median of the same case and phase.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/background_load.hpp"
#include "bench/common/graph_workloads_cases.hpp"
#include "bench/common/graph_workloads_tbb.hpp"
#include "bench/common/graph_workloads_weft.hpp"
#include "weft/pool.hpp"

namespace {

using namespace weft::bench;

// The one prebuilt workload kept between calls of the same "run" benchmark: Google Benchmark calls a
// benchmark function several times (to size the iteration count, then once per repetition), and rebuilding a
// 2^20-node graph each time would only cost wall-clock time. Starting another benchmark frees it.
struct PrebuiltSlot {
  std::string owner;
  std::shared_ptr<void> timer;
};
PrebuiltSlot prebuilt;

template <class Workload, class Make>
void time_phase(benchmark::State& state, const std::string& name, Phase phase, bool one_shot, const Make& make) {
  using Timer = PhaseTimer<Workload, Make>;
  std::shared_ptr<Timer> timer;
  if (phase == Phase::run || one_shot) {
    if (prebuilt.owner != name) {
      prebuilt.timer.reset();  // first: never two big graphs alive at once
      prebuilt.timer = std::make_shared<Timer>(phase, one_shot, make);
      prebuilt.owner = name;
    }
    timer = std::static_pointer_cast<Timer>(prebuilt.timer);
  } else {
    prebuilt.timer.reset();
    prebuilt.owner.clear();
    timer = std::make_shared<Timer>(phase, one_shot, make);
  }
  for (auto _ : state) state.SetIterationTime(timer->once());
  if (!timer->ok()) state.SkipWithError("the workload computed a wrong result");
}

struct Entry {
  int order = 0;  // case, then phase, then library: each weft line next to its oneTBB line
  std::string name;
  bool milliseconds = true;
  std::function<void(benchmark::State&)> run;
};

template <class W>
void collect(typename W::Side& side, int library, std::vector<Entry>& entries) {
  int index = 0;
  for_each_graph_case<W>(side, [&](const GraphCase& c, auto type, auto make) {
    using Workload = typename decltype(type)::type;
    for (const Phase phase : {Phase::build, Phase::run, Phase::total}) {
      if (c.one_shot && phase != Phase::total) continue;
      std::string name = std::string(c.id);
      name += "/";
      name += phase_name(phase);
      name += "/";
      name += W::Side::kName;
      const bool one_shot = c.one_shot;
      entries.push_back(Entry{index * 8 + static_cast<int>(phase) * 2 + library, name, c.milliseconds,
                              [name, phase, one_shot, make](benchmark::State& state) {
                                time_phase<Workload>(state, name, phase, one_shot, make);
                              }});
    }
    ++index;
  });
}

}  // namespace

int main(int argc, char** argv) {
  const weft::bench::BackgroundLoad load;  // WEFT_BENCH_LOAD=n: n busy processes beside the benchmark
  keep_heap_warm();
  const unsigned threads = graph_threads();
  weft::PoolOptions options;  // not designated: -Wextra flags the members left out
  options.threads = threads;
  if (graph_pinned()) options.pinning = weft::Pinning::OnePerCpu;
  weft::Pool pool(std::move(options));
  WeftGraphSide weft_side(pool);
  TbbGraphSide tbb_side(threads);

  std::vector<Entry> entries;
  collect<WeftGraphWorkloads>(weft_side, 0, entries);
  collect<TbbGraphWorkloads>(tbb_side, 1, entries);
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.order < b.order; });
  for (Entry& entry : entries) {
    benchmark::RegisterBenchmark(entry.name.c_str(), std::move(entry.run))
        ->Unit(entry.milliseconds ? benchmark::kMillisecond : benchmark::kMicrosecond)
        ->UseManualTime();
  }
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("background load", load.describe());
  benchmark::AddCustomContext("weft pinning", graph_pinned() ? "one per CPU" : "none");
  benchmark::AddCustomContext("oneTBB", TBB_runtime_version());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  prebuilt.timer.reset();  // before the pool and the arena go
  return 0;
}
