// How weft-demo times the pipeline workloads (bench/common/pipeline_workloads*.hpp): for each case, weft then
// oneTBB, seconds apart, so that both figures see much the same load from other processes; then the memory of
// one case, each library in fresh child processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/common/pipeline_workloads.hpp"
#include "bench/common/pipeline_workloads_memory.hpp"
#include "bench/common/pipeline_workloads_weft.hpp"
#include "bench/demo/demo_floor.hpp"
#include "bench/demo/demo_graph.hpp"
#include "bench/demo/demo_measure.hpp"
#include "bench/demo/demo_table.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/pipeline_workloads_tbb.hpp"
#endif

namespace weft::demo {

// The --workload names of the pipeline cases, in table order; "pipeline" selects them all.
inline constexpr std::string_view kPipelineFamilies[] = {"pipeline-tiny", "pipeline-spin", "pipeline-linear",
                                                         "pipeline-memory"};
static_assert(
    [] {
      for (const PipelineCase& c : kPipelineCases) {
        bool listed = false;
        for (const std::string_view family : kPipelineFamilies) listed = listed || family == c.family;
        if (!listed) return false;
      }
      return true;
    }(),
    "every pipeline case's family must be a --workload name");

// The case whose memory the demo shows ("pipeline-memory"): the tightest token limit with the most items.
inline constexpr std::string_view kPipelineMemoryCase = "pipe4_tiny_8tok";

// Timed runs per case: every case takes a few hundred milliseconds a run (the spin ones near a second), so
// they get the big graphs' count.
[[nodiscard]] inline int pipeline_reps(const Settings& s) { return big_graph_reps(s); }

// `spin_steps`: the process's one measurement of spin_steps_for(kPipelineSpin), for this and add_pipeline_rows.
inline void print_pipeline_header(const Settings& s, std::uint64_t spin_steps) {
  std::printf(
      "  pipelines: a serial source, the stages, an in-order serial sink that checks every item; weft: a\n"
      "  TaskScope (source, stage, sink) built and run per sample; oneTBB: one parallel_pipeline with the\n"
      "  row's token limit, weft's options giving the nearest bound on items alive it allows (8 tokens:\n"
      "  9 for 4 stages, 15 for 8 serial stages). Tiny: one LCG step per stage in between; spin: 10 us\n"
      "  (%llu LCG steps here) in each of the 2 parallel stages, 100k items. Each row: the median of %d\n"
      "  runs; memory: %d fresh child processes a side.\n",
      static_cast<unsigned long long>(spin_steps), pipeline_reps(s), kMemoryRuns);
}

// One warm-up (not for the spin cases), then the median of pipeline_reps runs, in ms.
template <class Pipeline, class Side>
Value time_pipeline(const Settings& s, Side& side, const PipelineCase& c, std::uint64_t steps) {
  std::this_thread::sleep_for(kIdleBeforeWake);  // the other library's workers go to sleep first
  Pipeline pipeline(side, c, steps);
  const auto fail = [&] {
    std::string what(Side::kName);
    what += " computed a wrong result in ";
    what += c.id;
    throw std::runtime_error(what);
  };
  if (!c.spin) {  // a spin run takes a second: its start-up is lost in it, so it needs no warm-up
    pipeline.run();
    if (!pipeline.check()) fail();
  }
  std::vector<double> samples;
  for (int i = 0; i < pipeline_reps(s); ++i) {
    const auto start = std::chrono::steady_clock::now();
    pipeline.run();
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (!pipeline.check()) fail();
  }
  std::string what(Side::kName);
  what += " ";
  what += c.id;
  what += " ms";
  return summarise(s, what, std::move(samples));
}

// One library's medians over kMemoryRuns fresh children, into rss and alive: MiB over the baseline and the most
// items alive at once. Prints one child's absolute figures.
inline void pipeline_memory_median(const Settings& s, std::string_view side, const PipelineCase& c, Pair& rss,
                                   Pair& alive, bool weft) {
  std::vector<double> mib;
  std::vector<double> items;
  std::optional<PipelineMemory> last;
  for (int i = 0; i < kMemoryRuns; ++i) {
    last = measure_pipeline_memory(side, s.threads, c);
    if (!last) throw std::runtime_error(std::string(side) + " pipeline memory child process failed");
    mib.push_back(static_cast<double>(last->rss.workload_kib()) / 1024.0);
    items.push_back(static_cast<double>(last->max_alive));
  }
  (weft ? rss.weft : rss.tbb) = summarise(s, std::string(side) + " pipeline memory MiB", std::move(mib));
  (weft ? alive.weft : alive.tbb) = summarise(s, std::string(side) + " pipeline max alive", std::move(items));
  std::printf(
      "  %s, %.*s in a fresh process: RSS %.1f MiB before the pool, high-water mark %.1f MiB, at most %ld\n"
      "  items alive (bound %ld)\n",
      std::string(side).c_str(), static_cast<int>(c.id.size()), c.id.data(),
      static_cast<double>(last->rss.baseline_kib) / 1024.0, static_cast<double>(last->rss.peak_kib) / 1024.0,
      last->max_alive, last->bound);
}

// Times every case whose family `wants` accepts and appends its rows; with "pipeline-memory", the memory rows.
template <class Wants>
void add_pipeline_rows(const Settings& s, GraphSides& sides, std::uint64_t spin_steps, const Wants& wants,
                       std::vector<Row>& rows) {
  for (const PipelineCase& c : kPipelineCases) {
    if (!wants(c.family)) continue;
    std::printf("running %.*s ...\n", static_cast<int>(c.id.size()), c.id.data());
    std::fflush(stdout);
    Pair pair;
    const std::uint64_t steps = pipeline_steps(c, spin_steps);
    if (sides.weft) pair.weft = time_pipeline<WeftPipeline>(s, *sides.weft, c, steps);
#if WEFT_BENCH_HAVE_TBB
    if (sides.tbb) pair.tbb = time_pipeline<TbbPipeline>(s, *sides.tbb, c, steps);
#endif
    const Goal goal = c.goal <= 0.5 ? Goal{0.5, false, "<= 0.5x"} : Goal{1.0, false, "<= 1.0x"};
    rows.push_back(Row{std::string(c.title), "ms", pair.weft, pair.tbb, goal});
    if (c.spin) rows.back().floor = pipeline_floor_ms(s, c.items, steps);
    rows.back().items = static_cast<double>(c.items);
  }
  if (!wants("pipeline-memory")) return;
  const PipelineCase* c = find_pipeline_case(kPipelineMemoryCase);
  std::printf("running %.*s memory ...\n", static_cast<int>(c->id.size()), c->id.data());
  std::fflush(stdout);
  Pair rss;
  Pair alive;
  if (sides.weft) pipeline_memory_median(s, WeftGraphSide::kName, *c, rss, alive, true);
#if WEFT_BENCH_HAVE_TBB
  if (sides.tbb) pipeline_memory_median(s, TbbGraphSide::kName, *c, rss, alive, false);
#endif
  rows.push_back(Row{"pipeline 8 tok: peak RSS over base", "MiB", rss.weft, rss.tbb, Goal{1.0, true, "< 1.0x"}});
  rows.push_back(Row{"pipeline 8 tok: max items alive", "items", alive.weft, alive.tbb, Goal{.report_only = true}});
}

}  // namespace weft::demo
