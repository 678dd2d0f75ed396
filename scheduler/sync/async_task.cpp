// weft::AsyncTask and Pool::submit_after's untyped half: linking a task after its predecessors
// (weft/detail/successor_list.hpp), releasing successors as a task finishes (queued on the pool, or settled at once
// with a predecessor's failure, in a loop: a chain of skipped tasks never nests on a stack), and the handle's wait
// (the scheduler's one wait point, signal.hpp, sleeping on the state's word as weft::Event does).
#include "weft/async_task.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "scheduler/engine/pool_access.hpp"
#include "scheduler/engine/wait_word.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "scheduler/sync/signal.hpp"
#include "scheduler/sync/word_protocol.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft {
namespace detail {

struct AsyncAccess {
  [[nodiscard]] static AsyncState* state(const AsyncTask& task) noexcept { return task.state_; }
  [[nodiscard]] static Pool* pool(const AsyncTask& task) noexcept { return task.state_->pool_; }
  [[nodiscard]] static AsyncTask adopt(AsyncState* state) noexcept { return AsyncTask(state); }
  // Empties `task` without giving up its reference, which the caller takes over.
  [[nodiscard]] static AsyncState* forget(AsyncTask& task) noexcept { return std::exchange(task.state_, nullptr); }

  // A task with no predecessor left: queued on its pool. False if the pool refused it (shut down) or queueing
  // threw; `error` then says why, and the task is still the caller's.
  [[nodiscard]] static bool queue(AsyncState* state, std::exception_ptr& error) noexcept {
    TaskOptions options;
    options.priority = state->priority;
    if (state->affinity != TaskHeader::kNoAffinity) options.affinity = state->affinity;
    try {
      if (PoolAccess::post_task(*state->pool_, state, options, kWorkersOnly) == SubmitStatus::Accepted) return true;
      error = std::make_exception_ptr(
          task_dropped("weft::AsyncTask: the task was not run: the pool was shut down before its predecessors "
                       "finished"));
    } catch (...) {
      error = std::current_exception();  // queueing failed (out of memory): the task never ran
    }
    return false;
  }

  // `ready` has no predecessor left: queues it, or (a predecessor failed, or the pool refused it) destroys its
  // callable and pushes it on `settled`, the caller's list of tasks final without running.
  static void release(AsyncState* ready, AsyncState*& settled) noexcept {
    if (ready->should_run()) {
      std::exception_ptr error;
      if (queue(ready, error)) return;
      ready->record_failure(std::move(error));
    }
    ready->manage_(ready, AsyncState::Op::discard_callable);
    ready->next_settled_ = settled;
    settled = ready;
  }

  // Makes `state` final (its outcome is written), then every task it settles in turn, in a loop.
  static void finish(AsyncState* state) noexcept {
    state->next_settled_ = nullptr;
    AsyncState* settled = state;
    while (settled != nullptr) {
      AsyncState* const s = settled;
      settled = s->next_settled_;
      // Every predecessor has given up its edge (each read its link before its arrive): the links are free.
      if (s->links_ != s->inline_links_) {
        delete[] s->links_;
        s->links_ = s->inline_links_;
      }
      // relaxed: our own write, or a predecessor's, which the arrive that released us acquired.
      const bool failed = !s->should_run();
      AsyncState::Link* link = s->successors_.close();
      // The waiters: one RMW on the word; the state is alive (the task's reference is still ours).
      sync::word::event_set<engine::WordParking>(s->wake_);
      while (link != nullptr) {
        // Both fields before the arrive: once it lands, the successor may run and free its block, the link in it.
        AsyncState::Link* const next = link->next.load();
        auto* const successor = static_cast<AsyncState*>(link->successor.load());
        if (failed) successor->record_failure(s->error_);
        if (successor->successors_.arrive(1)) release(successor, settled);
        link = next;
      }
      s->release();  // the task's reference
    }
  }

  struct Sleeper {
    AsyncState& state;
    template <class Ready>
    void sleep(Ready& /*ready: judged on the word*/, std::chrono::nanoseconds slice) noexcept {
      sync::word::sleep<engine::WordParking>(
          state.wake_, [](std::uint32_t value) { return (value & sync::word::kEventSet) != 0; }, slice);
    }
  };
  // Pool::as_async_task's state, of `pool`: final only once settled (settle_future_async).
  static void prepare_future(AsyncState* state, Pool& pool) noexcept {
    state->pool_ = &pool;  // compared by submit_after (a task of another pool), never queued on
    state->successors_.expect(0);
  }
  static void fail(AsyncState* state, std::exception_ptr error) noexcept { state->record_failure(std::move(error)); }
  // submit_async's body.
  static AsyncTask submit(Pool& pool, AsyncState* state, std::span<const AsyncTask> after, const TaskOptions& options);

  static void wait(AsyncState& state) {
    if (state.done()) return;
    fiber::require_stack("weft::AsyncTask::wait");
    Sleeper sleeper{state};
    sync::wait_until([&state] { return state.done(); }, sleeper);
  }
};

void AsyncState::finish_state(AsyncState* state, bool run) noexcept {
  if (!run)
    state->record_failure(std::make_exception_ptr(
        task_dropped("weft::AsyncTask: the task was dropped before it started by a shutdown that drops pending work "
                     "(Shutdown::DropPending or shutdown_for's deadline)")));
  AsyncAccess::finish(state);
}

namespace {

[[noreturn]] void throw_bad_handle(std::size_t index, std::size_t count) {
  throw std::invalid_argument("weft::Pool::submit_after: after[" + std::to_string(index) + "] (of " +
                              std::to_string(count) +
                              ") is an empty weft::AsyncTask (default-constructed or moved from)");
}

void validate_options(const Pool& pool, const TaskOptions& options) {
  if (options.affinity && *options.affinity >= pool.size())
    throw invalid_option("weft::Pool::submit_after: TaskOptions::affinity = " + std::to_string(*options.affinity) +
                         ": the pool has " + std::to_string(pool.size()) + " workers (0.." +
                         std::to_string(pool.size() - 1) + ")");
  if (options.priority > Priority::Low)
    throw invalid_option(
        "weft::Pool::submit_after: TaskOptions::priority = " + std::to_string(static_cast<unsigned>(options.priority)) +
        ": not a weft::Priority (High, Normal or Low)");
}

}  // namespace

AsyncTask AsyncAccess::submit(Pool& pool, AsyncState* state, std::span<const AsyncTask> after,
                              const TaskOptions& options) {
  // Until it is linked, the state is ours alone: a throw frees it, callable unrun.
  struct Hold {
    AsyncState* state;
    ~Hold() {
      if (state == nullptr) return;
      state->manage_(state, AsyncState::Op::discard_callable);
      state->manage_(state, AsyncState::Op::destroy);
    }
  } hold{state};
  validate_options(pool, options);
  // The checks, and how many edges to link: a predecessor final now stays final, so this bounds the edges.
  std::size_t unfinished = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    AsyncState* const pred = AsyncAccess::state(after[i]);
    if (pred == nullptr) throw_bad_handle(i, after.size());
    if (pred->done()) continue;
    if (pred->pool_ != &pool)
      throw std::invalid_argument("weft::Pool::submit_after: after[" + std::to_string(i) +
                                  "] is a task of another pool, not finished yet: a task depends only on tasks of "
                                  "its own pool (or on finished ones)");
    ++unfinished;
  }
  state->pool_ = &pool;
  state->priority = options.priority;
  if (options.affinity) state->affinity = *options.affinity;
  if (unfinished > AsyncState::kInlineLinks) state->links_ = new AsyncState::Link[unfinished];
  state->successors_.expect(static_cast<std::uint32_t>(unfinished));
  // Linking throws nothing from here on.
  hold.state = nullptr;
  AsyncTask handle = AsyncAccess::adopt(state);
  std::uint32_t linked = 0;
  for (const AsyncTask& task : after) {
    AsyncState* const pred = AsyncAccess::state(task);
    // A final predecessor: one load (acquire, so its outcome is read below), no edge.
    if (!pred->done() && pred->successors_.link(state->links_[linked], state)) {
      ++linked;
      continue;
    }
    if (pred->error()) state->record_failure(pred->error());
  }
  // The edges not linked (their predecessors were final) and the submitter's own unit.
  if (!state->successors_.arrive(static_cast<std::uint32_t>(unfinished) - linked + 1)) return handle;
  // Ours to release: no predecessor holds an edge any more, and nobody else has the handle yet.
  if (state->should_run()) {
    // Refused or thrown: the task is freed unrun (both references are ours), and the caller told, as by
    // Pool::submit.
    hold.state = AsyncAccess::forget(handle);
    const SubmitStatus status = PoolAccess::post_task(pool, state, options, kWorkersOnly);
    if (status == SubmitStatus::Accepted) {
      hold.state = nullptr;
      return AsyncAccess::adopt(state);
    }
    PoolAccess::admit_or_throw(status, "submit_after");
    throw pool_closed("weft::Pool::submit_after: the pool refused the task");  // no other status under block
  }
  // A predecessor failed: final at once, with its exception, never queued.
  state->manage_(state, AsyncState::Op::discard_callable);
  AsyncAccess::finish(state);
  return handle;
}

AsyncTask submit_async(Pool& pool, AsyncState* state, std::span<const AsyncTask> after, const TaskOptions& options) {
  return AsyncAccess::submit(pool, state, after, options);
}

namespace {
// Pool::as_async_task's state: nothing to call, it only passes the future's outcome on.
struct NoCallable {
  void operator()() const noexcept {}
};
}  // namespace

AsyncTask make_future_async(Pool& pool) {
  auto* const state = new AsyncTaskState<NoCallable>(NoCallable{});
  AsyncAccess::prepare_future(state, pool);
  return AsyncAccess::adopt(state);
}

AsyncState* async_state(const AsyncTask& task) noexcept { return AsyncAccess::state(task); }

void settle_future_async(AsyncState* state, std::exception_ptr error) noexcept {
  if (error) AsyncAccess::fail(state, std::move(error));
  // As if the pool ran it: the empty callable (not if failed), then finish_state, which publishes the outcome,
  // releases or skips the successors and gives up the task's reference, ours.
  SelfTask::finish(state, true);
}

std::exception_ptr future_async_dropped() noexcept {
  return std::make_exception_ptr(
      task_dropped("weft::Pool::as_async_task: the future's task was dropped by a shutdown that drops pending work "
                   "(Shutdown::DropPending or shutdown_for's deadline), or the pool shut down before the future's end "
                   "could be passed on"));
}
Pool* async_task_pool(const AsyncTask& task) noexcept { return AsyncAccess::pool(task); }

}  // namespace detail

bool AsyncTask::done() const {
  if (state_ == nullptr)
    throw std::logic_error("weft::AsyncTask::done: the handle is empty (default-constructed or moved from)");
  return state_->done();
}

void AsyncTask::wait() const {
  if (state_ == nullptr)
    throw std::logic_error("weft::AsyncTask::wait: the handle is empty (default-constructed or moved from)");
  detail::AsyncAccess::wait(*state_);
}

void AsyncTask::get() const {
  if (state_ == nullptr)
    throw std::logic_error("weft::AsyncTask::get: the handle is empty (default-constructed or moved from)");
  detail::AsyncAccess::wait(*state_);
  if (const std::exception_ptr& error = state_->error()) std::rethrow_exception(error);
}

}  // namespace weft
