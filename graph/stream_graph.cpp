// weft::StreamGraph's members that are not templates: the TaskGraph node that runs the pipeline, and the checks
// before a run (the run itself is graph/pipeline/, reused run after run).
#include "weft/stream_graph.hpp"

#include <memory>
#include <string>
#include <utility>

#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft {

StreamGraph::StreamGraph() = default;

StreamGraph::~StreamGraph() = default;  // graph_'s destructor waits for the runs; the node keeps the pipeline alive

std::string StreamGraph::name() const { return pipeline_ == nullptr ? std::string() : pipeline_->name(); }

void StreamGraph::require_building(const char* who) const {
  if (!graph_.running()) return;
  throw graph_busy(std::string(who) +
                   ": a run of this StreamGraph is in flight or queued: change it only between "
                   "runs (wait for the last Run first)");
}

std::shared_ptr<detail::Pipeline> StreamGraph::new_pipeline(const char* who, const StageOptions& options) {
  if (pipeline_ != nullptr) {
    throw invalid_graph(std::string(who) + ": the graph has a source already (pipeline '" + pipeline_->name() +
                        "'): a StreamGraph is one pipeline, with one source (fork its stream with broadcast or "
                        "split to feed several branches)");
  }
  std::string name = options.name.empty() ? std::string("pipeline") : options.name;
  return std::make_shared<detail::Pipeline>(this, std::move(name), "weft::StreamGraph", true);
}

void StreamGraph::require_complete(const char* who) const {
  if (pipeline_ == nullptr) {
    throw invalid_graph(std::string(who) +
                        ": the StreamGraph is empty: begin it with source(), end every stream "
                        "with sink()");
  }
  if (!pipeline_->complete()) {
    throw invalid_graph(std::string(who) + ": pipeline '" + pipeline_->name() +
                        "' has no sink: the stream of its stage '" + pipeline_->open_stage_name() +
                        "' feeds nothing (end it with sink())");
  }
}

void StreamGraph::add_node(Priority priority) {
  NodeOptions options;
  options.name = pipeline_->name();
  options.priority = priority;
  // The node owns the pipeline too: a run in flight keeps it alive while the graph's destructor waits for it.
  (void)detail::GraphAccess::add_node(
      graph_, detail::Caller{"weft::StreamGraph::source", "pipeline"},
      [pipeline = pipeline_](Subflow& subflow) {
        // Checked by run() and compose_into(); again here for a pipeline changed after it was composed.
        if (!pipeline->complete()) {
          throw invalid_graph("weft::StreamGraph: pipeline '" + pipeline->name() +
                              "' has no sink: the stream of its "
                              "stage '" +
                              pipeline->open_stage_name() + "' feeds nothing (end it with sink())");
        }
        bool completed = false;
        // A stage's exception, inbox_full or task_dropped is the run's already (wait() rethrows it); a cancelled
        // run's job_cancelled tells nobody here: the Run says Cancelled.
        (void)pipeline->run(subflow, completed);
      },
      std::move(options));
}

Run StreamGraph::run(Pool& pool) { return run(pool, RunOptions{}); }

Run StreamGraph::run(Pool& pool, RunOptions options) {
  require_complete("weft::StreamGraph::run");
  return graph_.run(pool, std::move(options));
}

Node StreamGraph::compose_into(TaskGraph& outer, NodeOptions options) {
  require_complete("weft::StreamGraph::compose_into");
  if (options.name.empty()) options.name = pipeline_->name();
  return outer.add_graph(graph_, std::move(options));
}

}  // namespace weft
