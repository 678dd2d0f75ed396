// A pool's task hooks and trace (PoolOptions::on_task_start, on_task_end and trace), fixed when the pool starts.
//
// Contract:
// - any() is false when no hook and no trace is set, and never changes: the paths that run tasks test it once
//   and take their plain way; everything else here is their slow path.
// - on_start()/on_end() are the hooks as given (either may be empty); the engine calls them around a task and
//   keeps what they throw as the pool's errors (Engine::call_hook).
// - The trace's records are made only while its recorder is recording (Trace::start/stop): recording() says
//   whether a task starting now is traced, and task() records it once it ended.
#pragma once

#include <cstdint>

#include "scheduler/tracing/trace_impl.hpp"
#include "weft/pool_options.hpp"

namespace weft::engine {

class TaskHooks {
 public:
  using Hook = shared_function<void(const TaskEvent&)>;

  explicit TaskHooks(const PoolOptions& options)
      : on_start_(options.on_task_start),
        on_end_(options.on_task_end),
        tracer_(weft::tracing::TraceAccess::impl(options.trace)),
        any_(on_start_ || on_end_ || tracer_ != nullptr) {}

  // Some hook or a trace is set.
  [[nodiscard]] bool any() const noexcept { return any_; }
  [[nodiscard]] const Hook& on_start() const noexcept { return on_start_; }
  [[nodiscard]] const Hook& on_end() const noexcept { return on_end_; }

  // PoolOptions::trace's recorder, or null if the pool does not trace.
  [[nodiscard]] weft::tracing::TraceImpl* tracer() const noexcept { return tracer_; }
  // The pool traces and its recorder is recording now.
  [[nodiscard]] bool recording() const noexcept { return tracer_ != nullptr && tracer_->recording(); }
  // The recorder's clock; only while recording().
  [[nodiscard]] std::int64_t now() const noexcept { return tracer_->now(); }

  // A pool task that started at `start` ended now, on `worker` (or TaskEvent::not_a_worker).
  void task(std::int64_t start, Priority priority, unsigned worker) const noexcept {
    tracer_->complete(weft::tracing::TraceCategory::task, weft::tracing::TraceImpl::kTaskName, start,
                      static_cast<std::uint64_t>(priority), worker);
  }
  // A worker stole from `victim`; only with a tracer, recorded if recording.
  void steal(unsigned victim) const noexcept {
    if (!tracer_->recording()) return;
    tracer_->record(
        {tracer_->now(), 0, victim, weft::tracing::TraceImpl::kStealName, 0, weft::tracing::TraceCategory::steal});
  }
  // Worker `worker` slept from `slept_from` until now; only while recording().
  void park(std::int64_t slept_from, unsigned worker) const noexcept {
    tracer_->record({slept_from, tracer_->now() - slept_from, 0, weft::tracing::TraceImpl::kParkName, worker,
                     weft::tracing::TraceCategory::park});
  }

 private:
  const Hook on_start_;
  const Hook on_end_;
  weft::tracing::TraceImpl* const tracer_;
  const bool any_;
};

}  // namespace weft::engine
