// weft::Pool's out-of-line members: each forwards to the engine.
#include "weft/pool.hpp"

#include <cstdio>
#include <exception>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/spawn_path.hpp"

namespace weft {

bool fibers_available() noexcept { return WEFT_FIBERS != 0; }

Pool::Pool() : Pool(PoolOptions{}) {}

Pool::Pool(PoolOptions options)
    : engine_(std::make_unique<engine::Engine>(std::move(options))), inline_runs_(&engine_->inline_runs()) {
  engine_->set_pool(*this);  // before any task runs: the workers are idle, nothing was submitted yet
}

Pool::~Pool() {
  if (engine_->inside_own_task()) {
    // A destructor cannot throw, and draining from inside would wait for this very task forever.
    if (const auto worker = engine_->current_worker()) {
      std::fprintf(stderr, "weft::Pool destroyed from a task on its own worker %u: it would wait for itself\n",
                   *worker);
    } else {
      std::fprintf(stderr,
                   "weft::Pool destroyed from one of its own tasks, run by a thread waiting for it: it would wait "
                   "for itself\n");
    }
    std::terminate();
  }
}

SubmitStatus Pool::enqueue(small_function<void()>&& task, const TaskOptions& options, Admission admission,
                           std::chrono::steady_clock::time_point deadline, detail::InlineTag inline_tag) {
  return engine_->enqueue(std::move(task), options, admission, deadline, inline_tag);
}

SubmitStatus Pool::enqueue_state(detail::TaskHeader* state, const TaskOptions& options, Admission admission,
                                 std::chrono::steady_clock::time_point deadline, detail::InlineTag inline_tag) {
  return engine_->enqueue(state, options, admission, deadline, inline_tag);
}

void Pool::throw_closed(const char* what) {
  throw pool_closed(std::string("weft::Pool::") + what +
                    ": the pool is shut down (or shutting down); the task was not accepted");
}

namespace detail {
void throw_stopped_before_start() {
  throw task_cancelled(
      "weft::Future::get: the task was not run: its std::stop_token was stopped before it started (Pool::submit "
      "with a stop token)");
}
}  // namespace detail

void Pool::wait_idle() { engine_->wait_idle(); }
std::uint64_t Pool::shutdown(Shutdown policy) { return engine_->shutdown(policy); }
ShutdownResult Pool::shutdown_for(std::chrono::nanoseconds timeout) { return engine_->shutdown_for(timeout); }
unsigned Pool::size() const noexcept { return engine_->size(); }
bool Pool::closed() const noexcept { return !engine_->accepting(); }
bool Pool::run_here(void (*fn)(void*) noexcept, void* context) noexcept {
  return engine_->run_here(Priority::Normal, [fn, context] { fn(context); });
}
std::optional<unsigned> Pool::current_worker() const noexcept { return engine_->current_worker(); }
std::optional<unsigned> Pool::current_thread_index() const noexcept { return engine_->current_thread_index(); }
unsigned Pool::max_thread_index() const noexcept { return engine_->max_thread_index(); }
PoolStats Pool::stats() const { return engine_->stats(); }
std::vector<std::vector<unsigned>> Pool::placement() const {
  const auto& placement = engine_->placement();
  return placement.empty() ? std::vector<std::vector<unsigned>>(size()) : placement;
}
std::string Pool::describe() const { return engine_->describe(); }
std::vector<std::exception_ptr> Pool::take_errors() { return engine_->take_errors(); }

}  // namespace weft
