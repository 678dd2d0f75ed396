// How a weft::Future waits: run the task inline if nobody started it, help on a worker, sleep elsewhere.
#include <chrono>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/wait_word.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/future_state.hpp"

namespace weft::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Sleeps on the state's status word until it is final, the slice ends, or a spurious wake-up.
void sleep_on(FutureStateBase& state, std::chrono::nanoseconds slice) noexcept {
  state.add_waiter();
  // seq_cst: pairs with publish(): either we see the final status here, or the publisher sees our
  // announcement and wakes the futex.
  const auto status = state.status_word().load(std::memory_order_seq_cst);
  if (status < FutureStateBase::has_value) {
    engine::park_word(state.status_word(), status, slice);
  }
  state.remove_waiter();
}

// Runs the task here if nobody has started it, counted with its pool so that wait_idle waits for it.
bool run_inline(FutureStateBase& state) noexcept {
  detail::InlineRunCounter* runs = state.inline_runs();
  if (runs == nullptr) return false;  // a task with an affinity runs only on its worker
  return runs->engine->run_inline(state);
}

// `kForGet`: the caller is Future::get, the Future's only user (see FutureStateBase::run_exclusive).
// A template, so that get has a copy of its own, and with it of the engine's wait loop (the lambdas below differ in
// type): called once, the loop is inlined into get's entry even without LTO, where a single copy shared by get,
// wait and wait_for was too large to inline (callgrind, fib(28) in a consumer's build; docs/perf-log.md), and
// get's deadline and exclusive claim are constants there. What else decides that inlining:
// docs/scheduler.md, "The spawn + wait path, and what it costs".
template <bool kForGet>
bool wait(FutureStateBase& state, Clock::time_point deadline) {
  if (state.ready()) return true;
  FutureStateBase* const exclusive = kForGet ? &state : nullptr;
  // A timed wait never runs the task inline: that could take longer than the timeout.
  const bool may_claim = deadline == Clock::time_point::max();
  if (engine::Worker* self = engine::Engine::this_thread_worker()) {
    // On a worker, the awaited task is normally the newest entry of this worker's own deque, which
    // wait_on_worker pops first: running it from there leaves no dead entry behind (claiming it here would
    // leave one per spawn in the deque, which in recursive code grows it to one entry per task ever spawned).
    // Only when there is nothing else to run does the waiter claim the task wherever it sits.
    return self->engine.wait_on_worker(
        *self, [&] { return state.ready(); }, deadline,
        [&](std::chrono::nanoseconds slice) {
          if (may_claim && run_inline(state)) return;
          sleep_on(state, slice);
        },
        "weft::Future::get/wait", exclusive);
  }
  fiber::require_stack("weft::Future::get/wait");
  if (may_claim && state.inline_runs() != nullptr) {
    // A task this thread submitted sits in its own slot, normally at the bottom: popping it from there runs it
    // with no queued copy left behind (and no inline-run counting), as oneTBB's task_group::wait does.
    if (state.inline_runs()->engine->help_from_own_slot([&] { return state.ready(); }, weft::detail::kInlineFuture,
                                                        exclusive))
      return true;
  }
  // Nobody started it: run it here rather than wait for a worker (oneTBB's task_group::wait does the same).
  if (may_claim && run_inline(state)) return true;
  while (!state.ready()) {
    if (deadline == Clock::time_point::max()) {
      sleep_on(state, std::chrono::nanoseconds::max());
      continue;
    }
    const auto left = deadline - Clock::now();
    if (left <= std::chrono::nanoseconds::zero()) return state.ready();
    sleep_on(state, left);
  }
  return true;
}

}  // namespace

void FutureStateBase::wake_waiters() noexcept {
  // seq_cst: the second half of the handshake in sleep_on().
  if (waiters_.load(std::memory_order_seq_cst) != 0) engine::wake_word_all(status_);
}

void wait_until_ready(FutureStateBase& state) { (void)wait<false>(state, Clock::time_point::max()); }

void wait_until_ready_for_get(FutureStateBase& state) { (void)wait<true>(state, Clock::time_point::max()); }

bool wait_until_ready_for(FutureStateBase& state, std::chrono::nanoseconds timeout) {
  return wait<false>(state, deadline_after(timeout));  // saturates one short of max(), which means "no deadline" here
}

}  // namespace weft::detail
