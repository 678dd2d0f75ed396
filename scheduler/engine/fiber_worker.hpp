// A worker on fibers: the worker loop runs on a fiber, and a task that must wait suspends that fiber while the
// worker goes on with another one. Only built with fibers (WEFT_FIBERS=1).
//
// How it runs (marl's model, with resumption on any worker):
// - The worker thread's own stack runs FiberWorker::run, which only resumes fibers, one at a time. Every fiber
//   runs the worker loop (Engine::worker_main); a task runs on whichever fiber runs the loop, so a task that
//   never waits costs no switch.
// - A task that waits with nothing of its own left to run (Engine::wait_on_worker) parks its fiber on the word
//   its wait sleeps on (park): the fiber's context is saved first, then it is published in the fiber lot, and
//   the worker continues the loop on an idle fiber of its own, or on a new one.
// - A waker (wake_word_*) takes the fiber from the lot and queues it in its engine's resumed queue. A worker's
//   loop takes resumed fibers before any new task: it puts its current fiber in its idle list and switches to
//   the resumed one, which continues its task there. A resumed fiber may thus move to another worker: that is
//   what lets a short wait end while the worker it began on runs a long task.
// - Thread-locals that belong to the task (scheduler/engine/task_locals.hpp, and the stack guard's limit) are taken
//   off the thread when its fiber suspends and put back wherever it resumes. weft's own thread-locals are read
//   fresh after every point where a task may have moved (initial-exec TLS, out-of-line accessors).
// - A wait may not suspend inside a catch block or while an exception unwinds (the C++ runtime keeps those per
//   thread), inside a RunningFrame (its thread index belongs to the thread), or inside another wait that could
//   not suspend: those waits run other work on their stack, as a build without fibers does.
// - At the stack pool's bound (PoolOptions::max_fibers) a wait still suspends, on a stack mapped past the bound
//   for the loop to go on with (counted: PoolStats::fiber_overshoot; unmapped once the pool is back under it).
//   Only at the pool's ceiling (kMaxFiberStacks), or when the OS refuses the memory, does it run other work
//   instead, as a build without fibers does; that is counted and said on stderr once (never a crash).
#pragma once

#if !defined(WEFT_FIBERS) || !WEFT_FIBERS
#error "scheduler/engine/fiber_worker.hpp needs a weft built with fibers"
#endif

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "scheduler/engine/resumed_queue.hpp"
#include "scheduler/engine/task.hpp"
#include "scheduler/engine/task_locals.hpp"
#include "scheduler/fiber/fiber.hpp"
#include "scheduler/fiber/fiber_stack.hpp"

namespace weft::engine {

class Engine;
class Worker;

// A suspended task's fiber and what it takes along, on the suspended fiber's own stack. Queued in its engine's
// resumed queue as a Task* (the header comes first).
struct Resumable {
  Task header{};
  ResumedEntry entry{nullptr, &header};  // its place in the engine's resumed queue
  fiber::Fiber fiber;
  TaskLocals locals;
  Engine* engine = nullptr;
};

class FiberWorker {
 public:
  FiberWorker(Engine& engine, fiber::FiberStackPool& stacks) noexcept : engine_(engine), stacks_(stacks) {}
  FiberWorker(const FiberWorker&) = delete;
  FiberWorker& operator=(const FiberWorker&) = delete;

  // Takes the stack for the worker loop's first fiber. Called on the worker's thread before the engine's
  // constructor returns, so that every worker holds its loop's stack before any task can take one to suspend:
  // PoolOptions::max_fibers counts one stack per worker's loop first, whichever thread starts first.
  void take_loop_stack() noexcept { next_ = new_loop_fiber(/*past_bound=*/false); }
  // The worker thread's body, on its own stack, after take_loop_stack(): runs the worker loop on fibers until the
  // loop ends (a shutdown) and no task of the engine is left suspended, then ends its idle fibers. Without a stack
  // for the first fiber the loop runs on the thread's stack, and nothing on this worker suspends.
  void run(Worker& self);
  // From the worker loop's top level: continues the resumed task `resumed` (a Resumable's header) on this
  // worker. The calling fiber waits in the idle list until a wait here needs a fiber to go on with the loop (then
  // this returns true, perhaps on another worker), or, with kMaxIdle idle already, must end: false, and the
  // caller's loop returns at once.
  [[nodiscard]] bool switch_to(Task* resumed);
  // Most idle loop fibers a worker keeps; more end, and their stacks go back to the pool.
  static constexpr std::size_t kMaxIdle = 4;
  // True if a wait may suspend now: a fiber is ready to continue the loop (an idle one, or a new one on a stack
  // taken here, past the pool's max_fibers if need be: FiberStackPool::acquire_past_bound). False only at the
  // stack pool's ceiling or when the OS refuses the memory (counted: Engine::note_unsuspended_wait).
  [[nodiscard]] bool ready_to_suspend() noexcept;
  // Suspends the running fiber until wake_word_* on `word`, or `timeout` (nanoseconds::max(): none; the workers'
  // loops resume an expired one, fiber_lot::expire), unless `word` no longer holds `expected` when the lot looks
  // (under its lock). Call only after ready_to_suspend() returned true, on this worker's thread.
  void park(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::chrono::nanoseconds timeout) noexcept;

  // Bumped (by this worker's thread only) each time a fiber suspends here: code that ran a task compares it with
  // what it read before, to learn whether the task may have moved it to another worker.
  [[nodiscard]] std::uint64_t suspensions() const noexcept { return suspensions_.load(std::memory_order_relaxed); }
  // The engine whose worker this is.
  [[nodiscard]] const Engine& engine() const noexcept { return engine_; }

 private:
  // A loop fiber on a new stack (none if there is none to be had); `past_bound`: FiberStackPool::acquire_past_bound.
  [[nodiscard]] fiber::Fiber new_loop_fiber(bool past_bound) noexcept;
  // Makes `resumed` the next fiber to run here (its locals restored just before).
  void adopt(Task* resumed) noexcept;
  // Makes an idle loop fiber (or the spare) the next to run here, after a fiber parked.
  void continue_loop() noexcept;

  Engine& engine_;
  fiber::FiberStackPool& stacks_;
  fiber::Fiber next_;                        // what run() resumes next
  const TaskLocals* next_locals_ = nullptr;  // restored before next_ runs (a resumed task's), else none
  fiber::ThisFiber* current_ = nullptr;      // the fiber running on this thread now
  std::vector<fiber::Fiber> idle_;           // loop fibers waiting in switch_to, newest last
  fiber::Fiber spare_;                       // a new loop fiber made by ready_to_suspend, not started
  // relaxed: read by the thread that wrote it, or by code that then re-reads its worker (see suspensions()).
  std::atomic<std::uint64_t> suspensions_{0};
};

// Marks the calling thread, for the length of one sleep() call of a suspending wait, as ready to suspend its
// fiber: park_word, called inside, takes the mark and parks the fiber instead of the thread.
class SuspendingWait {
 public:
  explicit SuspendingWait(FiberWorker& fibers) noexcept;
  ~SuspendingWait();
  SuspendingWait(const SuspendingWait&) = delete;
  SuspendingWait& operator=(const SuspendingWait&) = delete;
  // Takes the calling thread's mark (null if none): the first park_word of the sleep suspends, no other.
  [[nodiscard]] static FiberWorker* take_here() noexcept;

  // Takes the calling thread's mark away while it lives (code run inside a sleep that must not suspend: a task
  // the waiter runs inline), and puts it back after.
  class Hold {
   public:
    Hold() noexcept : held_(take_here()) {}
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    // The mark taken (null if there was none).
    [[nodiscard]] FiberWorker* held() const noexcept { return held_; }

   private:
    FiberWorker* const held_;
  };
};

// The process's fiber lot (scheduler/fiber/fiber_lot.hpp), where suspended fibers wait by the address of their word.
// Global: a word may be woken from any thread, on behalf of any pool. Touched only on the slow paths of waits.
namespace fiber_lot {
// Wakes the fibers parked on `word` (all, or one), queuing each in its engine's resumed queue.
void wake(const void* word, bool all) noexcept;
// Wakes every fiber of `engine` parked on any word (a shutdown that drops: each waiter looks again, and a wait
// on a primitive gives up; see weft::Event).
void wake_all_of(const Engine& engine) noexcept;
// Resumes the fibers of `engine` whose timed wait's deadline is not after `now` (each then finds it timed out).
void expire(const Engine& engine, std::chrono::steady_clock::time_point now) noexcept;
}  // namespace fiber_lot

}  // namespace weft::engine
