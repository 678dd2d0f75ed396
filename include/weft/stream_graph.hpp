// weft::StreamGraph: a pipeline (a stream graph: source, stages, forks, joins, sinks) built once and run many
// times, each run on fresh input, reusing the layout and the item slots of the runs before it.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/pipeline.hpp"
#include "weft/detail/pipeline_builder.hpp"
#include "weft/detail/pipeline_join.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/stream.hpp"
#include "weft/task_graph.hpp"

namespace weft {

class Pool;

// One pipeline, built once and run again and again (Taskflow's tf::Pipeline run through `composed_of`, oneTBB's
// flow::graph reused with wait_for_all): the same calls as a TaskScope's pipeline (source, stage, fan_out, sink,
// broadcast, split, join, join_by_key, merge; see docs/pipelines.md), then run(pool) as often as needed. The
// first run lays the pipeline out (its stages' states, budgets, rings) and allocates item slots as it needs
// them; every later run resets that state instead of rebuilding it, so a warm run allocates nothing but its
// weft::Run handle's state.
//
// Contract:
// - Fresh input each run: the source's f is called anew by every run, serially, until it returns std::nullopt.
//   It may take the item's index in the run (std::size_t: 0, 1, ... from each run's start), so a source over a
//   per-run batch is  [&](std::size_t i) -> std::optional<T> { if (i == batch.size()) return {}; return batch[i]; }
//   and the program swaps `batch` between runs (not while one is in flight).
// - Each run has the guarantees of a TaskScope pipeline: every item produced is taken through the stages exactly
//   once (or filtered or dropped), Order::Input stages see the order promised, the items alive never exceed the
//   documented bound, and every item left by a stopped run is destroyed once, before the run is over.
// - One run at a time: run() while a run is in flight queues the new run behind it, as TaskGraph::run does; the
//   queued run starts (and calls the source) once the one before it has ended. run() from inside a stage of the
//   graph's own run throws weft::graph_busy.
// - A stage's exception, an Overflow::Fail stage or Run::cancel() stop that run as they stop a TaskScope
//   pipeline: Run::wait() rethrows the exception (or returns RunStatus::Cancelled), every item alive is
//   destroyed, and the next run starts afresh (a join's waiting items, a split's turn and every count reset).
// - RunStats::dropped and dropped_by_stage count the items the run's Overflow::Drop stages dropped.
// - Bad input is refused with a clear error: run() or compose_into() on a graph with no source or with a stream
//   that feeds nothing (weft::invalid_graph, naming the stage); a second source, a stream of another graph or
//   scope, an empty stream, a stream consumed twice (invalid_graph); bad options (weft::invalid_option); any
//   change while a run is in flight or queued (weft::graph_busy). A callable of the wrong shape does not compile.
// - The destructor waits for the run in flight and the queued runs. Not copyable, not movable (streams refer to
//   it).
//
// Example:
//   weft::StreamGraph pipe;
//   std::vector<int> batch;
//   auto items = pipe.source([&](std::size_t i) -> std::optional<int> {
//     if (i == batch.size()) return std::nullopt;
//     return batch[i];
//   });
//   auto squares = pipe.stage(items, [](int x) { return x * x; }, {.concurrency = weft::kUnlimited});
//   long long sum = 0;
//   pipe.sink(squares, [&](int s) { sum += s; });
//   for (int round = 0; round < 3; ++round) {
//     batch = {1, 2, 3};
//     sum = 0;
//     pipe.run(pool).wait();  // sum == 14, every round
//   }
class StreamGraph : private detail::PipelineBuilder<StreamGraph, void> {
  using Builder = detail::PipelineBuilder<StreamGraph, void>;
  friend Builder;

 public:
  // An empty graph: begin it with source().
  StreamGraph();
  // Waits for the run in flight and every queued run (they still run), then frees the graph.
  ~StreamGraph();
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;
  StreamGraph(StreamGraph&&) = delete;
  StreamGraph& operator=(StreamGraph&&) = delete;

  // The start of the pipeline, once per graph: f() -> std::optional<T>, or f(std::size_t index) with the item's
  // index in the run; called serially by each run until it returns std::nullopt. options as TaskScope::source's
  // (name, priority, live_tokens); the source's name is also the pipeline's (default "pipeline"). Throws
  // invalid_graph if the graph has a source already.
  template <class F>
  auto source(F&& f, StageOptions options = {});
  // The calls that add stages mean what TaskScope's do (see weft::TaskScope and docs/pipelines.md):
  // - stage(stream, f): f(item) -> U, or -> std::optional<U> to filter;
  // - fan_out(stream, f): f returns a range; each element goes on as an item;
  // - sink(stream, f): the end of the pipeline (or of one branch of it), f(item) returning nothing; a run is over
  //   when the last item has left every sink;
  // - sequence(stream, key): each item goes on in the order of key(item), its number 0, 1, 2, ... in each run;
  // - priority_buffer(stream, less): the items waiting go on highest first, by less(a, b);
  // - broadcast<N>(stream): every item to each of N branches, each its own copy;
  // - split<N>(stream): each item to one of N branches, in turn from each run's start; split<N>(stream, route):
  //   each item to branch route(item);
  // - join(std::tuple{streams...}): the n-th item of each stream make the n-th tuple; join_by_key(streams, key):
  //   items of equal key(item) make a tuple;
  // - merge(streams) (a span or a braced list:  pipe.merge({a, b})): every item of every stream, as they arrive.
  using Builder::broadcast, Builder::split, Builder::join, Builder::join_by_key, Builder::merge;
  using Builder::stage, Builder::fan_out, Builder::sink, Builder::sequence, Builder::priority_buffer;

  // Starts a run on `pool` (or queues it behind the run in flight): the source is called anew. Throws
  // invalid_graph for a graph with no source or a stream that feeds nothing, pool_closed for a shut-down pool,
  // graph_busy when called from inside the graph's own run.
  Run run(Pool& pool);
  // The same with an error policy, a trace, an on_done callback (see RunOptions; outcomes have one node, the
  // pipeline).
  Run run(Pool& pool, RunOptions options);
  // Adds the pipeline to `outer` as one module node (Taskflow's `taskflow.composed_of(pipeline)`): each run of
  // `outer` runs the pipeline once, when the node's predecessors are done, on the same pool. The graph must
  // outlive every run of `outer`. A run of the pipeline in flight when the node starts fails the node with
  // graph_busy (as TaskGraph::add_graph). Throws invalid_graph as run() does.
  // Example: weft::Node stream = pipe.compose_into(outer, {.name = "pipeline"}); outer.add_edge(load, stream);
  Node compose_into(TaskGraph& outer, NodeOptions options = {});
  // True while a run is in flight or queued.
  [[nodiscard]] bool running() const noexcept { return graph_.running(); }
  // The pipeline's name (its source's StageOptions::name, else "pipeline"); empty before source().
  [[nodiscard]] std::string name() const;

 private:
  // What detail::PipelineBuilder asks of its owner (see weft/detail/pipeline_builder.hpp).
  static constexpr char kPipelineOwner[] = "weft::StreamGraph";
  static constexpr const char* kForeignStream =
      "another StreamGraph or TaskScope: a stage may only consume streams of its own graph";
  // Throws graph_busy, naming `who`, while a run is in flight or queued.
  void require_building(const char* who) const;
  [[nodiscard]] bool owns(const detail::Pipeline& pipeline) const noexcept { return &pipeline == pipeline_.get(); }
  // The pipeline for the source: throws invalid_graph if the graph has one already.
  std::shared_ptr<detail::Pipeline> new_pipeline(const char* who, const StageOptions& options);
  static void sunk(const std::shared_ptr<detail::Pipeline>& pipeline) noexcept { static_cast<void>(pipeline); }
  // Throws invalid_graph unless the pipeline has a source and every stream feeds a stage.
  void require_complete(const char* who) const;
  // Adds the TaskGraph node that runs the pipeline.
  void add_node(Priority priority);

  TaskGraph graph_;                             // one node: the pipeline
  std::shared_ptr<detail::Pipeline> pipeline_;  // null before source()
};

template <class F>
auto StreamGraph::source(F&& f, StageOptions options) {
  return begin_pipeline(std::forward<F>(f), std::move(options),
                        [this](const std::shared_ptr<detail::Pipeline>& pipeline, Priority priority) {
                          pipeline_ = pipeline;
                          try {
                            add_node(priority);
                          } catch (...) {
                            pipeline_.reset();
                            throw;
                          }
                        });
}

}  // namespace weft
