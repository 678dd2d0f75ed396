// weft's side of the pipeline workloads (pipeline_workloads.hpp), written as a user of the public API would: a
// weft::TaskScope with source, stage and sink, run on the pool every weft workload of bench/ shares
// (WeftGraphSide borrows it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "bench/common/graph_workloads_weft.hpp"
#include "bench/common/pipeline_workloads.hpp"
#include "weft/stream.hpp"
#include "weft/task_scope.hpp"

namespace weft::bench {

// The StageOptions of weft's stages for one case, and the bound on items alive that they give.
//
// They are chosen so that the pipeline's bound (include/weft/stream.hpp: 1 for the source, plus, for every other
// stage, capacity + concurrency, a concurrency above the pool's workers counting as workers + 1) equals oneTBB's
// token limit, or comes as close above it as the bound allows:
// - The parallel stages get concurrency = the pool's workers, not kUnlimited: past the first items at most
//   W bodies run at once on a pool of W workers (the thread waiting in run_and_wait() may start the
//   pipeline's job as an outside helper, but its carrier usually ends after the first items; the workers
//   carry the rest), so both run alike, but kUnlimited would count W + 1 in the bound.
// - The serial stages (the sink; every stage of linear8) get concurrency 1 and Order::Input, as oneTBB's
//   serial_in_order filters.
// - Every capacity is at least 1 (the least StageOptions accepts); what is left of the token limit after that
//   is spread evenly over the stages (the remainder to the last ones). Where it goes does not matter: with
//   Overflow::Block (the default) a stage's capacity is no limit of its own (an item that finds the inbox full
//   waits in it), and only the pipeline's bound, the sum, stops the source.
// So the least bound is 1 + the sum over the stages of (1 + concurrency): with 2 workers, 9 for parallel4 and
// 15 for linear8, where oneTBB's limit is 8; at 64 tokens both shapes match exactly.
struct WeftPipelinePlan {
  std::vector<StageOptions> stages;  // the stages after the source, in order; the sink last
  std::size_t bound = 0;             // the pipeline's bound on items alive
  std::size_t tokens = kUnbounded;   // the source's StageOptions::live_tokens
};

[[nodiscard]] inline WeftPipelinePlan weft_pipeline_plan(const PipelineCase& c, unsigned workers) {
  WeftPipelinePlan plan;
  const std::size_t stages = work_stages(c.shape) + 1;
  std::size_t fixed = 1;  // the source
  for (std::size_t k = 0; k < stages; ++k) {
    StageOptions options;
    const bool serial = c.shape == PipelineShape::linear8 || k + 1 == stages;
    options.concurrency = serial ? 1U : std::max(1U, workers);
    options.order = serial ? Order::Input : Order::Any;
    options.capacity = 1;
    fixed += options.capacity + options.concurrency;
    plan.stages.push_back(std::move(options));
  }
  const std::size_t spare = c.tokens > fixed ? c.tokens - fixed : 0;
  for (std::size_t k = 0; k < stages; ++k) {
    // Stage k's share of `spare`: the later stages take the remainder.
    plan.stages[k].capacity += spare / stages + (k >= stages - spare % stages ? 1 : 0);
  }
  plan.bound = 1;
  for (const StageOptions& options : plan.stages) plan.bound += options.capacity + options.concurrency;
  return plan;
}

// The same case written as a oneTBB user ports parallel_pipeline(ntokens, ...): the token limit given as it is,
// StageOptions::live_tokens = c.tokens on the source, the parallel stages kUnlimited (filter_mode::parallel), the
// serial ones concurrency 1 and Order::Input (serial_in_order). Each capacity is c.tokens, so the stages' own
// bound is above the token limit and the limit alone holds the pipeline: its bound is exactly c.tokens.
[[nodiscard]] inline WeftPipelinePlan weft_token_plan(const PipelineCase& c) {
  WeftPipelinePlan plan;
  const std::size_t stages = work_stages(c.shape) + 1;
  for (std::size_t k = 0; k < stages; ++k) {
    StageOptions options;
    const bool serial = c.shape == PipelineShape::linear8 || k + 1 == stages;
    options.concurrency = serial ? 1U : kUnlimited;
    options.order = serial ? Order::Input : Order::Any;
    options.capacity = std::max<std::size_t>(1, c.tokens);
    plan.stages.push_back(std::move(options));
  }
  plan.tokens = c.tokens;
  plan.bound = c.tokens;
  return plan;
}

// One case on weft: a fresh TaskScope per run (a scope is one-shot), built and run inside the timed region,
// as a user would (oneTBB's parallel_pipeline likewise builds its filter chain per call).
class WeftPipeline {
 public:
  WeftPipeline(WeftGraphSide& side, const PipelineCase& c, std::uint64_t steps)
      : pool_(side.pool()), plan_(weft_pipeline_plan(c, side.pool().size())), data_(c, steps) {}
  // With a plan of its own (weft_token_plan).
  WeftPipeline(WeftGraphSide& side, const PipelineCase& c, std::uint64_t steps, WeftPipelinePlan plan)
      : pool_(side.pool()), plan_(std::move(plan)), data_(c, steps) {}

  void run() {
    TaskScope scope(pool_);
    PipelineData& data = data_;
    StageOptions source;
    source.live_tokens = plan_.tokens;
    Stream<PipelineItem> stream = scope.source([&data] { return data.next_input(); }, std::move(source));
    const std::size_t last = plan_.stages.size() - 1;
    for (std::size_t k = 0; k < last; ++k)
      stream = scope.stage(
          stream, [&data](PipelineItem item) { return data.work(item); }, plan_.stages[k]);
    const Job<void> done = scope.sink(
        stream, [&data](PipelineItem item) { data.consume(item); }, plan_.stages[last]);
    static_cast<void>(done);
    scope.run_and_wait();
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }
  [[nodiscard]] PipelineData& data() noexcept { return data_; }
  [[nodiscard]] std::size_t bound() const noexcept { return plan_.bound; }

 private:
  Pool& pool_;
  WeftPipelinePlan plan_;
  PipelineData data_;
};

}  // namespace weft::bench
