// Internal entry points into weft::Pool for weft's own front-ends (graph/): posting a task its owner's waiter
// may run, and reaching the engine to help from the waiting thread. Users never include this.
#pragma once

#include <chrono>
#include <exception>
#include <utility>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/spawn_path.hpp"
#include "weft/detail/inline_tag.hpp"
#include "weft/pool.hpp"

namespace weft::detail {

struct PoolAccess {
  // As Pool::post (blocks for room under max_queued; throws pool_closed when refused, after destroying the
  // closure unrun), but tagged: an outside thread waiting for `owner` may run the task from its own slot. Straight
  // to the engine's inline spawn path (spawn_path.hpp), not through Pool::enqueue: without LTO that was one more
  // call between object files for every Subflow child and graph task.
  static void post(Pool& pool, small_function<void()>&& task, const TaskOptions& options, InlineTag owner) {
    Pool::admit_or_throw(pool.engine_->enqueue(std::move(task), options, Admission::block, {}, owner), "post");
  }

  // As post, for a task that is its own block (a SelfTask): Accepted, or the status that refused it (Closed),
  // in which case the caller still holds the task and must drop it. An exception (allocation) leaves it the
  // caller's too.
  [[nodiscard]] static SubmitStatus post_task(Pool& pool, TaskHeader* task, const TaskOptions& options,
                                              InlineTag owner) {
    return pool.engine_->enqueue(task, options, Admission::block, {}, owner);
  }

  // Pool::admit_or_throw: pool_closed, naming `what`, for a Closed status.
  static void admit_or_throw(SubmitStatus status, const char* what) { Pool::admit_or_throw(status, what); }

  [[nodiscard]] static engine::Engine& engine(Pool& pool) noexcept { return *pool.engine_; }

  // The pool's shutdown has stopped it: no task of it starts any more (engine::Engine::stopped).
  [[nodiscard]] static bool stopped(const Pool& pool) noexcept { return pool.engine_->stopped(); }

  // The pool of the innermost task the calling thread runs, or null (engine::Engine::current_pool).
  [[nodiscard]] static Pool* current() noexcept { return engine::Engine::current_pool(); }

  // An exception nobody will rethrow: to the pool's PoolOptions::on_error, else kept for take_errors.
  static void report_error(Pool& pool, std::exception_ptr error) noexcept {
    pool.engine_->report_error(std::move(error));
  }

  // Queues a future's state as itself (Pool::enqueue_state): an accepted state becomes the pool's.
  static SubmitStatus enqueue_state(Pool& pool, TaskHeader* state, const TaskOptions& options, InlineTag inline_tag) {
    return pool.enqueue_state(state, options, Admission::block, {}, inline_tag);
  }
};

}  // namespace weft::detail
