// A worker on fibers (see fiber_worker.hpp), and the fiber lot where suspended fibers wait for their word.
#include "scheduler/engine/fiber_worker.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <thread>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/engine/engine.hpp"
#include "scheduler/fiber/fiber_lot.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "weft/detail/deadline.hpp"

namespace weft::engine {

// --- The fiber lot -------------------------------------------------------------------------------------------

namespace fiber_lot {
namespace {

using Lot = fiber::BasicFiberLot<>;

// One lot for the process: a word may be woken from any thread, on behalf of any pool.
Lot lot;

// Resumes each waiter of a list the lot handed out, keeping its engine's count of timed waits.
void resume_each(Lot::Waiter* taken) noexcept {
  while (taken != nullptr) {
    // Read before queuing: once queued, the fiber may resume, and the waiter on its stack is gone.
    Lot::Waiter* const next = taken->next;
    auto* const resumable = static_cast<Resumable*>(taken->payload);
    if (taken->timed()) resumable->engine->add_timed_parked(-1);
    resumable->engine->resume_later(resumable->entry);
    taken = next;
  }
}

}  // namespace

void wake(const void* word, bool all) noexcept { resume_each(lot.take(word, all)); }

void wake_all_of(const Engine& engine) noexcept { resume_each(lot.take_owned(&engine)); }

void expire(const Engine& engine, std::chrono::steady_clock::time_point now) noexcept {
  if (engine.timed_parked() == 0) return;
  resume_each(lot.take_owned(&engine, now));
}

// Parks `waiter`'s fiber on `word` unless the word changed or its pool drops; keeps the engine's count of timed
// waits (raised before it enters, since a taker may lower it at once). A pool that drops wakes all its fibers
// once (Engine::raise_state); a fiber that checked its wait's condition before that and parks after would never
// be woken, and the shutdown's join would wait for it forever: so entering looks at the pool under the lock.
bool enter(std::atomic<std::uint32_t>& word, std::uint32_t expected, Lot::Waiter& waiter, Engine& engine) noexcept {
  const bool timed = waiter.timed();
  if (timed) engine.add_timed_parked(1);
  if (lot.enqueue_if(word, expected, waiter, [&engine]() noexcept { return engine.dropping(); })) return true;
  if (timed) engine.add_timed_parked(-1);
  return false;
}

}  // namespace fiber_lot

// --- SuspendingWait ----------------------------------------------------------------------------------------------

namespace {
// The FiberWorker whose running fiber may suspend in the next park_word on this thread (see SuspendingWait).
// Reached only through suspending_slot(), never inlined: a SuspendingWait ends after its fiber suspended and
// resumed, perhaps on another thread, and its destructor must clear that thread's mark. Inlined into the wait (a
// unity build put this file beside wait_primitives.cpp), the address of the mark was computed before the switch,
// so the destructor cleared the old thread's mark and left the new thread's set: that thread's next park_word,
// in code that must not suspend, then suspended the wrong fiber (ARM64: Boost.Context's `nullptr != t.fctx`).
thread_local FiberWorker* tls_suspending = nullptr;
WEFT_FIBER_SAFE_TLS(suspending_slot, FiberWorker*, tls_suspending)

// Sets the stack guard's limit (stack_guard.hpp) for code about to run on `stack`.
void guard_stack(const fiber::FiberStack& stack) noexcept {
  const auto bottom = reinterpret_cast<std::uintptr_t>(stack.bottom());
  fiber::stack_guard_detail::tls_limit = bottom + std::min(fiber::kStackReserve, stack.size() / 4);
  fiber::stack_guard_detail::tls_fiber_low = bottom;
  fiber::stack_guard_detail::tls_fiber_size = stack.size();
}
}  // namespace

SuspendingWait::SuspendingWait(FiberWorker& fibers) noexcept { *suspending_slot() = &fibers; }
SuspendingWait::~SuspendingWait() { *suspending_slot() = nullptr; }
FiberWorker* SuspendingWait::take_here() noexcept { return std::exchange(*suspending_slot(), nullptr); }
SuspendingWait::Hold::~Hold() {
  if (held_ != nullptr) *suspending_slot() = held_;
}

// --- FiberWorker -------------------------------------------------------------------------------------------------

fiber::Fiber FiberWorker::new_loop_fiber(bool past_bound) noexcept {
  fiber::FiberStack stack = past_bound ? stacks_.acquire_past_bound() : stacks_.acquire();
  if (!stack) return {};
  try {
    return fiber::Fiber(std::move(stack), [&engine = engine_](fiber::ThisFiber&) { engine.run_loop_on_fiber(); });
  } catch (...) {
    return {};  // the body always fits; nothing else throws
  }
}

bool FiberWorker::ready_to_suspend() noexcept {
  if (!idle_.empty() || spare_) return true;
  // Past max_fibers if need be: a wait that could not suspend would run other tasks on its stack, and waiters
  // queued before the tasks that release them would nest there until every worker was stuck (a silent hang).
  spare_ = new_loop_fiber(/*past_bound=*/true);
  if (spare_) return true;
  engine_.note_unsuspended_wait();  // at the ceiling, or the OS refused the memory: counted, and said once
  return false;
}

void FiberWorker::adopt(Task* resumed) noexcept {
  auto& resumable = *reinterpret_cast<Resumable*>(resumed);
  next_ = std::move(resumable.fiber);
  next_locals_ = &resumable.locals;
  engine_.suspended_tasks_.fetch_sub(1, std::memory_order_relaxed);
}

void FiberWorker::park(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::chrono::nanoseconds timeout) noexcept {
  Resumable resumable;
  resumable.engine = &engine_;
  fiber::BasicFiberLot<>::Waiter waiter;
  waiter.word = &word;
  waiter.owner = &engine_;
  waiter.payload = &resumable;
  if (timeout != std::chrono::nanoseconds::max()) waiter.deadline = weft::detail::deadline_after(timeout);
  FiberWorker& self = *this;
  // Runs on this worker's own stack once the fiber is saved. This closure lives on the parked fiber's stack: once
  // the fiber is in the lot, another thread may resume it and reuse that memory, so everything needed after
  // enqueue_if is copied out first (`worker`), and nothing of the closure, `resumable` or `waiter` is touched
  // after it succeeds.
  auto hook = [&](fiber::Fiber& suspended) noexcept {
    FiberWorker& worker = self;
    resumable.fiber = std::move(suspended);
    resumable.locals = take_task_locals();
    worker.suspensions_.store(worker.suspensions_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    worker.engine_.suspended_tasks_.fetch_add(1, std::memory_order_relaxed);
    if (!fiber_lot::enter(word, expected, waiter, worker.engine_)) {
      worker.adopt(&resumable.header);  // already woken: go on at once (it never entered the lot)
      return;
    }
    worker.continue_loop();
  };
  current_->suspend_then(hook);
  // Resumed, perhaps on another worker: `this` is the old worker's; touch nothing.
}

void FiberWorker::continue_loop() noexcept {
  if (!idle_.empty()) {
    next_ = std::move(idle_.back());
    idle_.pop_back();
  } else {
    next_ = std::move(spare_);  // ready_to_suspend made sure of one
  }
  next_locals_ = nullptr;
}

bool FiberWorker::switch_to(Task* resumed) {
  if (idle_.size() >= kMaxIdle || stacks_.past_bound()) {
    // Enough idle fibers here already, or the pool has more stacks than max_fibers: this one ends (its loop
    // returns), and the resumed one runs next. So the stacks a burst of suspensions took go back to the pool
    // once their tasks are done, and those past the bound are unmapped.
    adopt(resumed);
    return false;
  }
  try {
    if (idle_.size() == idle_.capacity()) idle_.reserve(kMaxIdle);
  } catch (...) {
    adopt(resumed);  // no room to keep this fiber: end it instead
    return false;
  }
  FiberWorker& self = *this;
  auto hook = [&](fiber::Fiber& suspended) noexcept {
    self.idle_.push_back(std::move(suspended));  // cannot throw: reserved above. Only this thread resumes it.
    self.adopt(resumed);
  };
  current_->suspend_then(hook);
  return true;
}

void FiberWorker::run(Worker& self) {
  if (!next_) {
    self.fibers = nullptr;  // no stack even for the loop: nothing on this worker suspends
    engine_.run_loop_on_thread(self);
    return;
  }
  for (;;) {
    if (!next_) {
      // The loop ended on the fiber that ran here (a shutdown). Tasks of the engine still suspended need
      // threads to finish on: take any that is resumed, until none is left.
      if (Task* resumed = engine_.take_resumed()) {
        adopt(resumed);
        continue;
      }
      if (engine_.suspended_tasks_.load(std::memory_order_relaxed) == 0) break;
      fiber_lot::expire(engine_, std::chrono::steady_clock::now());  // timed waits end on their own
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      continue;
    }
    fiber::Fiber fiber = std::move(next_);
    put_task_locals(next_locals_ != nullptr ? *next_locals_ : TaskLocals{});
    next_locals_ = nullptr;
    guard_stack(fiber.stack());
    current_ = fiber.this_fiber();
    try {
      (void)fiber.resume();  // returns once the fiber suspended (its hook chose next_) or its loop ended
    } catch (...) {
      std::terminate();  // the loop's body throws nothing
    }
    current_ = nullptr;
  }
  // The idle fibers wait in switch_to: each goes back to the loop, sees the shutdown and ends.
  while (!idle_.empty()) {
    fiber::Fiber fiber = std::move(idle_.back());
    idle_.pop_back();
    put_task_locals(TaskLocals{});
    guard_stack(fiber.stack());
    current_ = fiber.this_fiber();
    try {
      (void)fiber.resume();
    } catch (...) {
      std::terminate();
    }
    current_ = nullptr;
    if (next_) idle_.push_back(std::move(next_));  // it suspended again after all: end it in turn
  }
  spare_ = fiber::Fiber{};                   // never started: ends without running
  fiber::stack_guard_detail::tls_limit = 0;  // looked up again for the thread's own stack, if anything asks
  fiber::stack_guard_detail::tls_fiber_low = 0;
  fiber::stack_guard_detail::tls_fiber_size = 0;
}

}  // namespace weft::engine
