// The pipeline members of weft::TaskScope that are its own (the source's job; the building calls they share with
// weft::StreamGraph are weft/detail/pipeline_builder.hpp's), included at the end of weft/task_scope.hpp.
#pragma once

#include <exception>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "weft/detail/pipeline.hpp"
#include "weft/detail/pipeline_builder.hpp"
#include "weft/task_scope.hpp"

namespace weft {

template <class F>
auto TaskScope::add_source(std::span<const AnyJob> deps, F&& f, StageOptions options) {
  return begin_pipeline(std::forward<F>(f), std::move(options),
                        [this, deps](const std::shared_ptr<detail::Pipeline>& pipeline, Priority priority) {
                          NodeOptions node;
                          node.name = pipeline->name();
                          node.priority = priority;
                          pipeline->job = add_job<void>("weft::TaskScope::source", deps, std::move(node),
                                                        [pipeline](detail::JobState<void>& state, Subflow& subflow) {
                                                          bool completed = false;
                                                          const std::exception_ptr error = pipeline->run(subflow,
                                                                                                         completed);
                                                          if (error) {  // a stage's, or job_cancelled
                                                            state.set_error(error);
                                                          } else {
                                                            state.set_done();
                                                          }
                                                        });
                          pipelines_.push_back(pipeline);
                        });
}

inline std::shared_ptr<detail::Pipeline> TaskScope::new_pipeline(const char* who, const StageOptions& options) {
  static_cast<void>(who);
  std::string name = options.name;
  if (name.empty()) name = "pipeline " + std::to_string(graph_.size());
  return std::make_shared<detail::Pipeline>(shared_.get(), std::move(name));
}

}  // namespace weft
