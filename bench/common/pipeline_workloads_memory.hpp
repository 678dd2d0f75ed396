// The memory of one pipeline case on one library, measured in a fresh child process (peak_rss.hpp's way): this
// very executable re-run as `--pipeline-memory-child=<side> <threads> <case id>` runs the case once on that
// library only and reports two figures:
// - items alive: the most items produced by the source and not yet consumed by the sink at once, counted by the
//   workload itself (PipelineData::count_alive). This is what a token limit (oneTBB) or a pipeline's bound
//   (weft) is about, and it separates the libraries where RSS cannot: 64 items of 16 bytes are lost in the
//   noise of thread stacks and allocator arenas.
// - peak RSS: VmRSS before the pool or arena exists (the baseline: code and libraries) and VmHWM after the
//   run, so the figure over the baseline is all that using the library for this pipeline cost the process
//   (threads, scheduler, pipeline structures, item buffers).
// Both programs that use this call run_pipeline_memory_child_if_asked() first thing in main().
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "bench/common/graph_workloads_weft.hpp"
#include "bench/common/peak_rss.hpp"
#include "bench/common/pipeline_workloads.hpp"
#include "bench/common/pipeline_workloads_weft.hpp"
#include "weft/pool.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/graph_workloads_tbb.hpp"
#include "bench/common/pipeline_workloads_tbb.hpp"
#endif

namespace weft::bench {

struct PipelineMemory {
  PeakRss rss;
  long max_alive = 0;  // the most items alive at once
  long bound = 0;      // oneTBB's token limit, or weft's bound on items alive for the options used
};

namespace detail {

// The child's body once its side exists: one run with the items alive counted, checked.
template <class Pipeline, class Side>
int pipeline_memory_run(Side& side, const PipelineCase& c, long baseline) {
  Pipeline pipeline(side, c, c.spin ? spin_steps_for(kPipelineSpin) : 1);
  pipeline.data().count_alive(true);
  pipeline.run();
  const long max_alive = static_cast<long>(pipeline.data().max_alive());
  if (!pipeline.check()) {
    std::fprintf(stderr, "pipeline memory child: %.*s computed a wrong result\n", static_cast<int>(c.id.size()),
                 c.id.data());
    return 1;
  }
  std::printf("%ld %ld %ld %ld\n", baseline, status_kib("VmHWM"), max_alive, static_cast<long>(pipeline.bound()));
  return baseline > 0 ? 0 : 1;
}

}  // namespace detail

// If argv asks for the child mode, runs it and returns its exit code; else returns nothing.
[[nodiscard]] inline std::optional<int> run_pipeline_memory_child_if_asked(int argc, char** argv) {
  constexpr std::string_view flag = "--pipeline-memory-child=";
  if (argc < 4 || std::string_view(argv[1]).substr(0, flag.size()) != flag) return std::nullopt;
  const std::string_view side = std::string_view(argv[1]).substr(flag.size());
  const auto threads = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  const PipelineCase* c = find_pipeline_case(argv[3]);
  if (c == nullptr || threads == 0) {
    std::fprintf(stderr, "--pipeline-memory-child: unknown case '%s' or no threads\n", argv[3]);
    return 2;
  }
  const long baseline = status_kib("VmRSS");
  if (side == WeftGraphSide::kName) {
    PoolOptions options;  // not designated: -Wextra flags the members left out
    options.threads = threads;
    Pool pool(std::move(options));
    WeftGraphSide weft_side(pool);
    return detail::pipeline_memory_run<WeftPipeline>(weft_side, *c, baseline);
  }
#if WEFT_BENCH_HAVE_TBB
  if (side == TbbGraphSide::kName) {
    TbbGraphSide tbb_side(threads);
    return detail::pipeline_memory_run<TbbPipeline>(tbb_side, *c, baseline);
  }
#endif
  std::fprintf(stderr, "--pipeline-memory-child: unknown side '%.*s'\n", static_cast<int>(side.size()), side.data());
  return 2;
}

// Runs one child for `side` (a side's kName) with `threads` threads on case `c`; nothing if the child failed.
[[nodiscard]] inline std::optional<PipelineMemory> measure_pipeline_memory(std::string_view side, unsigned threads,
                                                                           const PipelineCase& c) {
  const auto output = run_self("--pipeline-memory-child=" + std::string(side) + " " + std::to_string(threads) + " " +
                               std::string(c.id));
  if (!output) return std::nullopt;
  PipelineMemory result;
  if (std::sscanf(output->c_str(), "%ld %ld %ld %ld", &result.rss.baseline_kib, &result.rss.peak_kib, &result.max_alive,
                  &result.bound) != 4)
    return std::nullopt;
  return result;
}

}  // namespace weft::bench
