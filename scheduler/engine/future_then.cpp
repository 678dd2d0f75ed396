// Future::then's scheduling half: queueing a continuation once its antecedent is final, and settling it
// without running when the pool will not take it.
#include <exception>
#include <stdexcept>
#include <string>

#include "scheduler/engine/pool_access.hpp"
#include "weft/detail/future_state.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft::detail {

void FutureStateBase::schedule_continuation(FutureStateBase* next) noexcept {
  // A loop, not a recursion: a refused continuation settles, and its own continuation (if any) is refused in
  // turn, down a chain of any length.
  while (next != nullptr) {
    FutureStateBase* const state = next;
    std::exception_ptr error;
    try {
      // Queued from whichever thread finished the antecedent (usually a worker: then onto its own deque). The
      // continuation may never run inline in a waiter: kWorkersOnly, like a task with an affinity.
      if (PoolAccess::enqueue_state(*state->pool_, state, state->continuation_options(), kWorkersOnly) ==
          SubmitStatus::Accepted)
        return;  // the queue holds its reference now; it runs (or is dropped) like any submitted task
      error = std::make_exception_ptr(task_dropped(
          "weft::Future::then: the continuation was not run: the pool was shut down before it could be queued"));
    } catch (...) {
      error = std::current_exception();  // queueing failed (out of memory): the continuation never ran
    }
    // Refused: nobody else can claim it (no waiter runs a continuation inline, and it was never queued).
    (void)state->try_claim();
    state->forget_antecedent();
    state->error_ = std::move(error);
    next = state->settle(has_exception);
    state->release();  // the queue's reference, which the refused enqueue left with us
  }
}

std::exception_ptr antecedent_dropped_error() noexcept {
  return std::make_exception_ptr(
      task_dropped("weft::Future::then: the continuation was not run: its antecedent task was dropped by a "
                   "DropPending shutdown (or a shutdown_for deadline) before it started"));
}

void validate_continuation_options(Pool* pool, const TaskOptions& options) {
  if (pool == nullptr)
    throw std::invalid_argument(
        "weft::Future::then: the future belongs to no pool (weft::when_all or when_all_settled over no futures): "
        "there is nothing to run the continuation on");
  if (options.affinity && *options.affinity >= pool->size())
    throw invalid_option("weft::Future::then: TaskOptions::affinity = " + std::to_string(*options.affinity) +
                         ": the pool has " + std::to_string(pool->size()) + " workers (0.." +
                         std::to_string(pool->size() - 1) + ")");
  if (options.priority > Priority::Low)
    throw invalid_option(
        "weft::Future::then: TaskOptions::priority = " + std::to_string(static_cast<unsigned>(options.priority)) +
        ": not a weft::Priority (High, Normal or Low)");
}

}  // namespace weft::detail
