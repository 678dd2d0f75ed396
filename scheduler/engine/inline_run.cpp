// Tasks a pool's worker loop does not run: a waiter running the future's task it waits for, an outside thread
// running its own slot's tasks, a front-end running work in place for the pool (Engine::run_here). Each is marked
// with a RunningFrame, so the pool's own waits refuse from inside it (refuse_on_own_worker, here), and runs inside
// the task hooks.
#include <exception>
#include <string>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"

namespace weft::engine {
using namespace engine_internal;

namespace {

// The innermost RunningFrame on the calling thread, or null.
thread_local RunningFrame* tls_running = nullptr;

}  // namespace

RunningFrame::RunningFrame(const Engine& engine, unsigned thread_index) noexcept
    : engine_(engine), outer_(tls_running), thread_index_(thread_index) {
  tls_running = this;
}

RunningFrame::~RunningFrame() { tls_running = outer_; }

bool RunningFrame::inside(const Engine& engine) noexcept {
  for (const RunningFrame* frame = tls_running; frame != nullptr; frame = frame->outer_) {
    if (&frame->engine_ == &engine) return true;
  }
  return false;
}

std::optional<unsigned> RunningFrame::thread_index_in(const Engine& engine) noexcept {
  for (const RunningFrame* frame = tls_running; frame != nullptr; frame = frame->outer_) {
    if (&frame->engine_ == &engine) return frame->thread_index_;
  }
  return std::nullopt;
}

bool Engine::may_suspend(const Worker& self) noexcept {
  // Inside a catch block (current_exception) or an unwinding, the C++ runtime's per-thread exception state
  // would be left behind on this thread; a RunningFrame's thread index belongs to this thread.
  return self.no_suspend == 0 && tls_running == nullptr && std::uncaught_exceptions() == 0 && !std::current_exception();
}

void Engine::refuse_on_own_worker(const char* what) const {
  if (const auto worker = current_worker()) {
    throw would_deadlock(std::string("weft::Pool::") + what + ": called from a task on worker " +
                         std::to_string(*worker) + " of the same pool, it would wait for itself");
  }
  if (RunningFrame::inside(*this)) {
    throw would_deadlock(std::string("weft::Pool::") + what +
                         ": called from a task of the same pool that this thread runs itself (while waiting for "
                         "it, or for a graph run), it would wait for itself");
  }
}

bool Engine::inside_own_task() const noexcept { return current_worker() || RunningFrame::inside(*this); }

Pool* Engine::current_pool() noexcept {
  if (tls_running != nullptr) return tls_running->engine_.pool_;
  return tls_worker != nullptr ? tls_worker->engine.pool_ : nullptr;
}

std::optional<unsigned> Engine::current_thread_index() const noexcept {
  if (tls_worker != nullptr && &tls_worker->engine == this) return tls_worker->index;
  return RunningFrame::thread_index_in(*this);
}

std::optional<unsigned> Engine::thread_index_for_running() noexcept {
  if (tls_worker != nullptr && &tls_worker->engine == this) return tls_worker->index;
  try {
    // A slot is owned by one thread at a time and kept until that thread exits: size() + its index is unique
    // among the threads running this engine's tasks, and stays the thread's for as long as it lives.
    if (const OutsideSlot* slot = slots_.claim()) return size() + slot->index;
  } catch (...) {
    // slots_.claim() fails only if its mutex does: no slot, so no index.
  }
  return std::nullopt;
}

unsigned Engine::worker_index_here() const noexcept {
  return tls_worker != nullptr && &tls_worker->engine == this ? tls_worker->index : TaskEvent::not_a_worker;
}

bool Engine::run_inline(weft::detail::FutureStateBase& state) noexcept {
  // seq_cst: counted before the claim; a worker that loses the claim to us happens-after it (see try_claim),
  // so idle() cannot see the queued copy finished without seeing this run started.
  // The index first: a thread that can have none leaves the task to the workers rather than claim it.
#if WEFT_FIBERS
  // Called from a suspending wait's sleep: the task runs without that wait's mark, so that its own waits never
  // take it (they cannot suspend inside the RunningFrame anyway); the mark is back for the sleep after. A task of
  // the waiter's own pool is not claimed there at all: the waiter suspends, and the pool's workers (this one
  // included) run the task, on a fresh stack rather than nested on this one. Another pool's task is claimed, as
  // its workers may all be busy (the classic rescue of a cross-pool wait).
  const SuspendingWait::Hold hold;
  if (hold.held() != nullptr && &hold.held()->engine() == this) return false;
#endif
  const std::optional<unsigned> thread_index = thread_index_for_running();
  if (!thread_index) return false;
  inline_runs().started.fetch_add(1, std::memory_order_seq_cst);
  const bool won = state.try_claim();
  if (won) run_as(*thread_index, state.priority, [&] { state.run_claimed(); });
  // release: idle() acquires it; everything the task did happens-before an idle() that sees it finished.
  inline_runs().finished.fetch_add(1, std::memory_order_release);
  inline_run_finished();
  return won;
}

void Engine::run_outside(OutsideSlot& slot, Task* task) noexcept {
  if (bound_.bounded()) release_queued_slot();
  {
    const RunningFrame frame(*this, size() + slot.index);
    if (has_hooks()) [[unlikely]] {
      (void)run_hooked(nullptr, domain_.current(), task, TaskEvent::not_a_worker);
    } else if (task->kind != weft::detail::TaskKind::closure) {
      // Its own block: no task block to free, so no look-up of this thread's hazard record.
      finish_own_block(task, true);
    } else {
      (void)run_and_release(nullptr, domain_.current(), task);
    }
  }
  // Last, as in execute(): everything the task did is counted before it counts as finished.
  slot.finished.bump();
}

void Engine::run_outside_exclusive(OutsideSlot& slot, weft::detail::FutureStateBase& state) noexcept {
  if (bound_.bounded()) release_queued_slot();
  {
    const RunningFrame frame(*this, size() + slot.index);
    state.run_exclusive();
  }
  slot.finished.bump();  // last, as in run_outside
}

}  // namespace weft::engine
