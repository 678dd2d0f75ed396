// The out-of-class definitions of weft::TaskScope (included at the end of weft/task_scope.hpp).
#pragma once

#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/task_scope.hpp"

namespace weft {

template <class R, class Make>
Job<R> TaskScope::add_job(const char* who, std::span<const AnyJob> deps, NodeOptions options, Make make) {
  require_building(who);
  for (std::size_t i = 0; i < deps.size(); ++i) check_dependency(deps[i], i, who);
  std::string name = job_name(options);
  if (options.tokens != 1) {
    std::string message = who;
    message += ": job '" + name + "': NodeOptions::tokens = " + std::to_string(options.tokens);
    message += " is not allowed: a job runs exactly once (tokens must be 1; use parallel_for for repeated work)";
    throw invalid_option(message);
  }
  if (options.name.empty()) options.name = name;  // so that the graph's own errors name the job the same way
  auto state = std::make_shared<detail::JobState<R>>(shared_);
  // Every dependency was checked above, so add_edge cannot fail half-way and leave a node without its edges.
  const Node node = detail::GraphAccess::add_node(
      graph_, detail::Caller{who, "job"}, [state, make = std::move(make)](Subflow& sf) mutable { make(*state, sf); },
      std::move(options));
  for (const AnyJob& dep : deps) graph_.add_edge(dep.state_->node(), node);
  state->bind(node, std::move(name));
  Job<R> job;
  job.state_ = std::move(state);
  return job;
}

template <class T, class Traits, class F>
Job<typename Traits::result> TaskScope::when_all_same(std::span<const Job<T>> jobs, F&& f, NodeOptions options) {
  detail::require_callable(f, "weft::TaskScope::when_all");
  using R = typename Traits::result;
  const std::vector<AnyJob> deps(jobs.begin(), jobs.end());
  std::vector<std::shared_ptr<detail::JobState<T>>> preds;
  if constexpr (Traits::by_value) {
    preds.reserve(jobs.size());
    for (const Job<T>& job : jobs) preds.push_back(job.state_);
  }
  return add_job<R>("weft::TaskScope::when_all", deps, std::move(options),
                    [preds = std::move(preds), f = std::decay_t<F>(std::forward<F>(f))](detail::JobState<R>& state,
                                                                                        Subflow&) mutable {
                      if constexpr (Traits::by_value) {
                        std::vector<T> values;
                        values.reserve(preds.size());
                        for (const auto& pred : preds) {
                          if (!pred->has_value()) return;  // see detail::all_have_values
                          values.push_back(pred->value());
                        }
                        state.execute([&]() -> R { return f(std::move(values)); });
                      } else {
                        state.execute([&]() -> R { return f(); });
                      }
                    });
}

template <class Traits, class... Js, class F>
Job<typename Traits::result> TaskScope::when_all_tuple(const std::tuple<Js...>& jobs, F&& f, NodeOptions options) {
  detail::require_callable(f, "weft::TaskScope::when_all");
  using R = typename Traits::result;
  const auto deps = std::apply([](const auto&... j) { return std::vector<AnyJob>{AnyJob(j)...}; }, jobs);
  auto preds = std::apply([](const auto&... j) { return std::tuple{j.state_...}; }, jobs);
  return add_job<R>("weft::TaskScope::when_all", deps, std::move(options),
                    [preds = std::move(preds), f = std::decay_t<F>(std::forward<F>(f))](detail::JobState<R>& state,
                                                                                        Subflow&) mutable {
                      if constexpr (Traits::by_value) {
                        const auto all_have_values = [](const auto&... s) { return detail::all_have_values(s...); };
                        if (!std::apply(all_have_values, preds)) return;
                        state.execute([&]() -> R {
                          return std::apply(
                              f, std::apply([](const auto&... s) { return std::tuple_cat(detail::value_refs(*s)...); },
                                            preds));
                        });
                      } else {
                        state.execute([&]() -> R { return f(); });
                      }
                    });
}

template <class F>
Job<typename detail::plain_result<std::decay_t<F>>::type> TaskScope::when_all_any(std::span<const AnyJob> jobs, F&& f,
                                                                                  NodeOptions options) {
  detail::require_callable(f, "weft::TaskScope::when_all");
  using R = std::invoke_result_t<std::decay_t<F>&>;
  return add_job<R>("weft::TaskScope::when_all", jobs, std::move(options),
                    [f = std::decay_t<F>(std::forward<F>(f))](detail::JobState<R>& state, Subflow&) mutable {
                      state.execute([&]() -> R { return f(); });
                    });
}

template <class Body>
Job<void> TaskScope::add_for_job(const char* who, std::span<const AnyJob> deps, Body body, std::size_t n,
                                 NodeOptions options, std::size_t grain) {
  const unsigned concurrency = options.concurrency;
  return add_job<void>(who, deps, std::move(options),
                       [body = std::move(body), n, grain, concurrency](detail::JobState<void>& state, Subflow& sf) {
                         try {
                           // Automatic partitioning: this thread starts on the range, and a loop too small to
                           // be worth spawning for ends here (detail::run_while_small).
                           std::size_t first = 0;
                           bool long_rest = false;
                           if (grain == 0 && concurrency == kUnlimited && !sf.cancelled()) {
                             first = detail::run_while_small(body, n, sf.pool().size(), long_rest);
                             if (first == n) {
                               state.set_done();
                               return;
                             }
                           }
                           const auto rest = [&body, first](std::size_t lo, std::size_t hi) {
                             body(first + lo, first + hi);
                           };
                           bool complete = false;
                           const std::exception_ptr error = detail::run_split(rest, sf, n - first, grain, concurrency,
                                                                              complete, long_rest);
                           // A chunk's exception already reached the run (the chunk rethrew it): only the job
                           // keeps it.
                           if (error) {
                             state.set_error(error);
                           } else if (complete) {
                             state.set_done();
                           }  // else a cancellation skipped chunks: the job stays pending and reads as cancelled
                         } catch (...) {
                           state.set_error(std::current_exception());
                           throw;
                         }
                       });
}

inline void TaskScope::require_building(const char* who) const {
  if (shared_->phase.load(std::memory_order_relaxed) == detail::ScopePhase::building) return;
  std::string message = who;
  message += ": the scope has already been run; a TaskScope is one-shot: add every job before run()";
  throw graph_busy(message);
}

inline void TaskScope::check_dependency(const AnyJob& dep, std::size_t position, const char* who) const {
  std::string message = who;
  if (!dep.valid()) {
    message += ": dependency #" + std::to_string(position) + " is an empty Job (default-constructed)";
    throw invalid_graph(message);
  }
  if (dep.state_->scope() != shared_.get()) {
    message += ": job '" + dep.state_->name() + "' (dependency #" + std::to_string(position);
    message += ") belongs to another TaskScope: a job may only depend on jobs of its own scope";
    throw invalid_graph(message);
  }
}

inline std::string TaskScope::job_name(const NodeOptions& options) const {
  if (!options.name.empty()) return options.name;
  std::string name = "job ";
  name += std::to_string(graph_.size());
  return name;
}

inline void TaskScope::run(RunOptions options) {
  if (shared_->phase.load(std::memory_order_relaxed) != detail::ScopePhase::building) {
    throw graph_busy(
        "weft::TaskScope::run: the scope was already run; a TaskScope is one-shot (make a new one, "
        "or use weft::TaskGraph to run one graph many times)");
  }
  for (const auto& pipeline : pipelines_) {
    if (!pipeline->complete()) {
      throw invalid_graph("weft::TaskScope::run: pipeline '" + pipeline->name() +
                          "' has no sink: the stream of "
                          "its stage '" +
                          pipeline->open_stage_name() + "' feeds nothing (end it with sink())");
    }
  }
  if (graph_.size() != 0) {
    try {
      keep_going_ = options.on_error == ErrorPolicy::KeepGoing;
      run_ = detail::GraphAccess::run(graph_, *pool_, detail::Caller{"weft::TaskScope::run", "job"}, shared_->live_run,
                                      options);
      // The run's end wakes the coroutines awaiting a job that never ran (weft/task.hpp); the run's state keeps
      // shared_ alive until then. Over already: wake them now.
      if (!detail::GraphAccess::attach_waiter(run_, shared_->run_over, shared_)) shared_->run_end.close();
    } catch (...) {
      shared_->live_run.store(nullptr, std::memory_order_seq_cst);  // a run that did not start may be gone
      start_error_ = std::current_exception();
      mark(detail::ScopePhase::finished);
      throw;
    }
  }
  mark(detail::ScopePhase::running);
}

inline RunStatus TaskScope::wait() {
  const detail::ScopePhase phase = shared_->phase.load(std::memory_order_relaxed);
  if (phase == detail::ScopePhase::building) {
    throw std::logic_error("weft::TaskScope::wait: the scope has not been run (call run() or run_and_wait())");
  }
  if (start_error_) std::rethrow_exception(start_error_);
  if (!run_.valid()) {
    mark(detail::ScopePhase::finished);
    return RunStatus::Completed;
  }
  // Marks the scope finished even when wait() rethrows a job's exception: the run is over either way. Under
  // KeepGoing it first notes, for each skipped job, the failed job it depends on (Job::get names it). A wait
  // that ended before the run did (refused with would_deadlock from one of the scope's own jobs or pipeline
  // stages) leaves the scope running: its jobs' get() must not report them cancelled while they still run.
  struct Finish {
    TaskScope& scope;
    ~Finish() {
      if (!scope.run_.done()) return;
      if (scope.keep_going_) scope.note_skipped_jobs();
      scope.mark(detail::ScopePhase::finished);
    }
  } finish{*this};
  return detail::GraphAccess::wait(run_, detail::Caller{"weft::TaskScope::wait", "job"});
}

inline void TaskScope::note_skipped_jobs() noexcept {
  try {
    const std::vector<NodeOutcome> outcomes = run_.outcomes();
    std::vector<std::string> because(outcomes.size());
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i].failed_ancestor) because[i] = graph_.name(*outcomes[i].failed_ancestor);
    }
    shared_->skipped_because = std::move(because);  // published by mark(finished)'s release
  } catch (...) {
    // Out of memory: the skipped jobs' get() then says only that they did not run.
  }
}

}  // namespace weft
