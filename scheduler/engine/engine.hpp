// The engine behind weft::Pool: workers, the shared injection queues, parking, admission and shutdown. The parts
// with state of their own are types it holds: the queue bound (queue_bound.hpp), the pool's life and the gate
// (lifecycle.hpp), the idle count (idle.hpp), the task errors (task_errors.hpp), the outside threads' slots
// (slot_table.hpp) and the task hooks (task_hooks.hpp). The waits' and in-place runs' templates are defined in
// engine_waits.hpp, included at the end. Knows tasks, never graphs.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/atomics/cpu_relax.hpp"
#include "scheduler/engine/event_count.hpp"
#include "scheduler/engine/idle.hpp"
#include "scheduler/engine/lifecycle.hpp"
#include "scheduler/engine/outside_slot.hpp"
#include "scheduler/engine/parking.hpp"
#include "scheduler/engine/queue_bound.hpp"
#include "scheduler/engine/resumed_queue.hpp"
#include "scheduler/engine/slot_lease.hpp"
#include "scheduler/engine/slot_table.hpp"
#include "scheduler/engine/spin_quota.hpp"
#include "scheduler/engine/task_errors.hpp"
#include "scheduler/engine/task_hooks.hpp"
#include "scheduler/engine/timer_queue.hpp"
#include "scheduler/engine/worker.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "scheduler/topology/steal_order.hpp"
#include "weft/pool.hpp"
#include "weft/topology.hpp"
#if WEFT_FIBERS
#include "scheduler/engine/fiber_worker.hpp"
#endif

namespace weft::engine {

class Engine;

// Marks the calling thread as running a task of `engine` while it lives; nested frames form a list. A worker is
// inside its own engine's tasks by being its worker; frames mark the other threads that run a task themselves
// (a waiter running the task it waits for, an outside thread running its own slot's tasks or a graph's roots),
// so that wait_idle, shutdown and the pool's destructor refuse to wait for themselves whichever thread runs
// the task. A frame also carries the thread's index in the engine (Engine::current_thread_index): its worker
// index, or size() + the index of the slot the thread owns.
class RunningFrame {
 public:
  RunningFrame(const Engine& engine, unsigned thread_index) noexcept;
  ~RunningFrame();
  RunningFrame(const RunningFrame&) = delete;
  RunningFrame& operator=(const RunningFrame&) = delete;
  // True if some frame on the calling thread's stack is `engine`'s.
  [[nodiscard]] static bool inside(const Engine& engine) noexcept;
  // The thread index of the innermost frame of `engine` on the calling thread's stack, if there is one.
  [[nodiscard]] static std::optional<unsigned> thread_index_in(const Engine& engine) noexcept;

 private:
  friend class Engine;  // current_pool reads the innermost frame's engine

  const Engine& engine_;
  RunningFrame* const outer_;
  const unsigned thread_index_;
};

// What another part does with a pool once its engine has stopped: weft::sync's coroutine lot resumes, with
// weft::task_dropped, the coroutines parked there for that pool (they could resume nowhere else, and the pool's
// memory is about to go). Called once per pool after finish_shutdown (every worker joined), with the shutdown
// mutex released; set once, before any pool stops (a static initializer of the part that sets it). Not on any hot
// path.
using StoppedHook = void (*)(Pool& pool) noexcept;
void set_stopped_hook(StoppedHook hook) noexcept;

class Engine {
 public:
  // Validates the options (weft::invalid_option naming the field), starts the workers and waits until each
  // has applied its name, pinning and nice value; a failure there stops them and throws invalid_option.
  explicit Engine(PoolOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // `inline_tag`: who besides the workers may run the task (weft::detail::InlineTag in weft/pool.hpp).
  SubmitStatus enqueue(small_function<void()>&& closure, const TaskOptions& options, weft::detail::Admission admission,
                       std::chrono::steady_clock::time_point deadline,
                       weft::detail::InlineTag inline_tag = weft::detail::kWorkersOnly);
  // A task that is its own block (a future's state or a SelfTask, weft::detail::TaskKind), queued as itself; its
  // routing fields are written here. Only an accepted task becomes the pool's: on any other status, or an
  // exception, the caller still holds it and must drop it (FutureStateBase::finish_queued, SelfTask::finish).
  SubmitStatus enqueue(Task* task, const TaskOptions& options, weft::detail::Admission admission,
                       std::chrono::steady_clock::time_point deadline, weft::detail::InlineTag inline_tag);
  void wait_idle();
  std::uint64_t shutdown(Shutdown policy);
  ShutdownResult shutdown_for(std::chrono::nanoseconds timeout);

  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()); }
  // Where each worker sits (Pool::placement, Pool::describe).
  [[nodiscard]] const std::vector<std::vector<unsigned>>& placement() const noexcept { return placement_; }
  // How many idle workers of each NUMA node spin at once, and the most seen (scheduler/engine/spin_quota.hpp).
  [[nodiscard]] const SpinQuota& spin_quota() const noexcept { return spin_quota_; }
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::optional<unsigned> current_worker() const noexcept;
  // Pool::current_thread_index: the worker index on a worker of this engine; size() + its slot's index on
  // another thread inside a RunningFrame of this engine; else nullopt.
  [[nodiscard]] std::optional<unsigned> current_thread_index() const noexcept;
  // Every thread index is below this: the workers, then one index per slot an outside thread may own.
  [[nodiscard]] unsigned max_thread_index() const noexcept { return size() + kMaxSlots; }
  // True if the calling thread is running one of this engine's tasks: as its worker, or itself (RunningFrame).
  [[nodiscard]] bool inside_own_task() const noexcept;
  [[nodiscard]] PoolStats stats() const;
  [[nodiscard]] std::vector<std::exception_ptr> take_errors() { return errors_.take(); }
  // The task domain's counters (task blocks and queue nodes: how many came from the system, what is retired),
  // for tests that check the memory stays bounded. Exact only while no thread submits or runs tasks.
  [[nodiscard]] TaskDomain::Stats domain_stats() const { return domain_.stats(); }
  [[nodiscard]] weft::detail::InlineRunCounter& inline_runs() noexcept { return idle_.inline_runs(); }
  // An inline run finished: whoever waits for idle should look again.
  void inline_run_finished() noexcept { idle_.notify(); }

  // The worker the calling thread is, in whatever engine, or null. Read anew on every call, never inlined
  // (scheduler/fiber/safe_tls.hpp): the way to learn the worker again after a point where a task may have moved.
  [[nodiscard, gnu::noinline]] static Worker* this_thread_worker() noexcept;
  // The Pool this engine serves (set once by Pool's constructor, before any task can run).
  void set_pool(Pool& pool) noexcept { pool_ = &pool; }
  // The pool of the innermost task the calling thread runs: the engine of its innermost RunningFrame (a task it
  // runs itself while it waits, or as an outside thread), else the engine it is a worker of; null if neither.
  // (A worker of one pool that runs a task of another inside a frame, and in it waits on its own pool, nests
  // both; the frame's pool is the answer there.)
  [[nodiscard]] static Pool* current_pool() noexcept;
  // An exception no task or waiter can take: to PoolOptions::on_error, else kept for Pool::take_errors (at most
  // 64, all counted in PoolStats::errors).
  void report_error(std::exception_ptr error) noexcept { errors_.report(std::move(error)); }
  // PoolOptions::trace's recorder, or null if the pool does not trace.
  [[nodiscard]] weft::tracing::TraceImpl* tracer() const noexcept { return hooks_.tracer(); }
  [[nodiscard]] const std::shared_ptr<Trace>& trace() const noexcept { return options_.trace; }

  // Runs `work` on the calling thread as one task of this engine: inside the task hooks (TaskEvent::worker is
  // the thread's worker index here, or TaskEvent::not_a_worker) and inside a RunningFrame. For work a thread
  // outside the worker loop runs itself (a graph's roots taken over by the thread waiting for the run).
  // A thread that is not a worker of this engine needs a slot for its thread index (one is adopted or made
  // if it has none): when it cannot have one (kMaxSlots other threads hold them), `work` is not run and the
  // call returns false; the caller leaves the work to the workers.
  template <class Work>
  bool run_here(Priority priority, Work&& work) noexcept;
  // A waiter (any thread, a worker of any engine included) runs a future's task of this engine itself if
  // nobody has started it; counted in inline_runs() so that wait_idle and Drain wait for it. Returns whether
  // this call ran it. A thread that can have no thread index in this engine (see run_here) never claims it.
  bool run_inline(weft::detail::FutureStateBase& state) noexcept;

  // For an outside thread (never a worker of this engine) waiting without a deadline: runs tasks from the
  // calling thread's own slot, newest first, while they are futures' tasks or tagged `owner` (Task::inline_tag),
  // until ready() holds, the newest is another's (posted tasks run on workers only), the slot is empty, or a
  // shutdown that drops has begun. Each runs inside the task hooks (TaskEvent::not_a_worker). Returns ready().
  // `exclusive`: the state of the future whose get() waits here; popped from the slot, it runs with no
  // read-modify-write (FutureStateBase::run_exclusive) unless task hooks are set.
  template <class Ready>
  bool help_from_own_slot(Ready ready, weft::detail::InlineTag owner = weft::detail::kInlineFuture,
                          weft::detail::FutureStateBase* exclusive = nullptr) noexcept;

  // A hint: some worker is parked, so a thread outside the pool that runs tasks uses a core a worker leaves
  // idle rather than compete with every worker for the cores. (Counting searching workers too made the caller
  // of a compute-bound parallel_for help for a quarter of the loop, one thread more than there are cores.)
  [[nodiscard]] bool has_idle_worker() const noexcept { return parking_.sleepers() > 0; }

  // The calling thread is one of this engine's workers and a High task waits in the shared High queue (a
  // hint: two loads, then the thread-local only if the queue is not empty). A front-end that runs Normal work
  // in place, past the worker loop's priority order (a graph's in-place successor), posts it instead, so that
  // the worker takes the High task first. A thread outside the pool delays no High task by running in place.
  [[nodiscard]] bool worker_should_yield_to_high() const noexcept {
    if (injected_[static_cast<std::size_t>(Priority::High)]->empty_hint()) return false;
    const Worker* self = this_thread_worker();
    return self != nullptr && &self->engine == this;
  }
  // The pool's timers (scheduler/engine/timer_queue.hpp).
  [[nodiscard]] TimerQueue& timers() noexcept { return timers_; }
  // No shutdown has begun: post/submit are accepted (a snapshot: a shutdown may begin right after).
  [[nodiscard]] bool accepting() const noexcept { return lifecycle_.accepting(); }
  // The shutdown has stopped the engine: no task of it starts any more (its workers are joined, or are being).
  // Read with acquire; it stays true.
  [[nodiscard]] bool stopped() const noexcept { return lifecycle_.state() == State::stopped; }
  // A DropPending shutdown (or shutdown_for's deadline) has begun: no pending task starts any more, and
  // front-ends stop work they run in place at its next boundary (a graph's next node). False after a Drain,
  // even once the pool has stopped: a Drain stops no accepted work.
  [[nodiscard]] bool dropping() const noexcept { return lifecycle_.dropping(); }
  // While dropping(): what made the pool drop, for the errors of the work it stops: "Shutdown::DropPending" or
  // "shutdown_for's deadline".
  [[nodiscard]] const char* drop_policy() const noexcept { return lifecycle_.drop_policy(); }
  // Called by a closure's destructor when the pool drops it unrun and it had nothing left to do (a front-end's
  // helper task whose work others already took): the drop is then not counted as a dropped task.
  static void note_drop_was_empty() noexcept;

  // At most this many outside threads at a time get a slot in one engine; more use the shared queues.
  static constexpr unsigned kMaxSlots = SlotTable::kMaxSlots;

  // THE place a worker waits (Future::get, a full queue): until ready() holds, it runs other tasks; when
  // there are none it sleeps in short slices. Nested waits deeper than kMaxWaitDepth, or short of stack
  // (stack_guard.hpp), run only the worker's own deque and mailbox (descendants of the waiting task), so that
  // unrelated stolen work cannot grow the stack without bound; what such a worker spawns goes to its own deque
  // whatever its priority (route), so the wait can reach it.
  // `sleep(slice)` blocks for at most `slice` on whatever signals ready() (a future's word, an EventCount), through
  // park_word (scheduler/engine/wait_word.hpp). With fibers, sleep(nanoseconds::max()) parks the waiting task's fiber:
  // it must then only park (run no task) and return once woken.
  // With fibers (PoolOptions::fibers) and no deadline, the waiting task suspends instead of running unrelated
  // work (wait_on_fiber); where it may not, it waits as described here.
  // `refuse_as`, when set, names the call for weft::nesting_too_deep: the wait throws it instead of starting
  // short of stack (a wait that must not throw, an implicit join, leaves it null).
  // `exclusive`: the state of the future whose get() waits here; found in a queue, it runs with no
  // read-modify-write (execute_awaited).
  // Returns ready() (false only if the deadline passed first).
  template <class Ready, class Sleep>
  bool wait_on_worker(Worker& self, Ready ready, std::chrono::steady_clock::time_point deadline, Sleep sleep,
                      const char* refuse_as = nullptr, weft::detail::FutureStateBase* exclusive = nullptr);

  static constexpr unsigned kMaxWaitDepth = 64;
  // How much more than the stack reserve admit() wants left before it waits for room (see admit()): more than
  // the frames between it and the wait's own look at the stack.
  static constexpr std::size_t kAdmitStackMargin = 16 * 1024;
  static constexpr std::chrono::microseconds kWaitSlice{100};

  // A suspended task was woken (fiber_lot::wake): queued for the first worker whose loop gets to it, before
  // any new task. `resumed` is a Resumable's entry (scheduler/engine/fiber_worker.hpp), its task the Resumable's
  // header. Never fails: the entry is the queue's node.
  void resume_later(ResumedEntry& resumed) noexcept;
  // Tasks suspended on fibers now (a snapshot).
  [[nodiscard]] std::int64_t suspended_tasks() const noexcept {
    return suspended_tasks_.load(std::memory_order_relaxed);
  }
  // Timed waits parked in the fiber lot, kept by the lot: while it is not zero the workers' loops look for expired
  // ones (at most every kTimerLook per worker) and sleep at most kTimerSleep. A hint: relaxed; the lot's bucket
  // locks order the rest.
  void add_timed_parked(std::int64_t delta) noexcept { timed_parked_.fetch_add(delta, std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t timed_parked() const noexcept { return timed_parked_.load(std::memory_order_relaxed); }
  static constexpr std::chrono::microseconds kTimerLook{50};
  static constexpr std::chrono::milliseconds kTimerSleep{1};
#if WEFT_FIBERS
  // The pool's fiber stacks (null if it does not use fibers), for statistics and tests.
  [[nodiscard]] const fiber::FiberStackPool* fiber_stacks() const noexcept { return fiber_stacks_.get(); }
#endif
  // A wait that would have suspended found no stack even past max_fibers (FiberWorker::ready_to_suspend): counted
  // (PoolStats::fiber_waits_unsuspended), and the first one of the pool says on stderr what it means and what to
  // change, since such a wait runs other tasks on its stack and may never end.
  void note_unsuspended_wait() noexcept;

 private:
  friend class FiberWorker;

  using State = Lifecycle::State;
  using DropCause = Lifecycle::DropCause;
  // The state stops tasks (Lifecycle::stops_tasks): a DropPending shutdown (or shutdown_for's deadline) has begun,
  // or the pool has stopped. acquire: see Lifecycle::state.
  [[nodiscard]] bool stops_tasks() const noexcept { return Lifecycle::stops_tasks(lifecycle_.state()); }

  // The constructor's steps after the options' checks: the queues, workers and their fibers; then the threads,
  // started and waited for until each applied its thread options (a failure stops them and throws).
  void make_workers(unsigned count);
  void start_workers();
  // A worker's thread: applies its options, counts itself started, runs the loop (on a fiber if it has them).
  void worker_thread(Worker& self);
  void worker_main(Worker& self);
  // The worker loop's entry on a fiber (FiberWorker): for the worker of the thread that first resumes it.
  void run_loop_on_fiber();
  // The worker loop on the thread's own stack (a pool without fibers, or no stack for the first fiber).
  void run_loop_on_thread(Worker& self) { worker_main(self); }
  // A resumed task for a worker to continue (a Resumable's header), or null.
  [[nodiscard]] Task* take_resumed() noexcept { return resumed_.try_take(); }
  // Resumes the timed waits that expired, if `self` has not looked for kTimerLook.
  void expire_timed_waits(Worker& self) noexcept;
  // wait_on_worker's way with fibers: runs the newest tasks of the worker's own deque (the awaited one is most
  // often there) while the stack allows, else suspends the waiting task until woken or the deadline. Returns the
  // wait's result (ready()), or nullopt, with nothing waited for yet, if it may not suspend here (see
  // fiber_worker.hpp); `me` follows the task to the worker it is on.
  template <class Ready, class Sleep>
  std::optional<bool> wait_on_fiber(Worker*& me, Ready& ready, Sleep& sleep,
                                    std::chrono::steady_clock::time_point deadline,
                                    weft::detail::FutureStateBase* exclusive);
  // execute(), except for `exclusive`, the state whose Future::get waits on this worker: taken out of a queue,
  // both its references are the waiter's, and it runs with FutureStateBase::run_exclusive (unless task hooks are
  // set). Returns the worker the calling code is on afterwards, as execute() does.
  Worker& execute_awaited(Worker& self, Task* task, weft::detail::FutureStateBase* exclusive) noexcept;
  // True if a task on `self`'s current fiber may suspend: not in a catch block or an unwinding, not inside a
  // RunningFrame, not inside a wait that could not suspend (Worker::no_suspend).
  [[nodiscard]] static bool may_suspend(const Worker& self) noexcept;
  // After a DropPending shutdown began, on a worker's way out (worker_main) or in a wait (wait_on_worker): drops
  // what is left in its own deque, outside batch and mailbox (counted in dropped_by_waiters_). Returns true if it
  // took any task. Out of line: the wait loop's other paths are hot, and each inlined pop adds its locals to the
  // frame g++ estimates for the loop, which decides whether the loop is inlined into Future::get.
  bool drop_own_pending(Worker& self) noexcept;
  [[nodiscard]] std::string apply_thread_options(Worker& self);
  [[nodiscard]] Task* find_task(Worker& self);
  [[nodiscard]] Task* take_injected(Worker& self, Priority priority);
  [[nodiscard]] Task* steal(Worker& self);
  // One steal from `victim`'s deque, counted and traced, for the steal order by distance (steal.cpp).
  [[nodiscard]] Task* try_steal_from(Worker& self, Worker& victim);
  // steal()'s sweep by distance, out of line: the flat sweep, the usual path, keeps a frame of its own size.
  [[nodiscard]] Task* steal_by_distance(Worker& self);
  [[nodiscard]] Task* steal_from_mailboxes(Worker& self);
  [[nodiscard]] Task* steal_from_slots(Worker& self);
  void run_outside(OutsideSlot& slot, Task* task) noexcept;
  // run_outside of the state whose Future::get is the caller, taken from the caller's own slot: see
  // FutureStateBase::run_exclusive. Only without task hooks.
  void run_outside_exclusive(OutsideSlot& slot, weft::detail::FutureStateBase& state) noexcept;
  // The calling thread's index for running a task of this engine itself: its worker index, or size() + the
  // index of its slot (adopted or made here if it has none); nullopt if it can have no slot.
  [[nodiscard]] std::optional<unsigned> thread_index_for_running() noexcept;
  // run_here's body, for a thread whose index is known.
  template <class Work>
  void run_as(unsigned thread_index, Priority priority, Work&& work) noexcept;
  void finished_outside_runs() noexcept { idle_.notify(); }
  // Runs a task `self` found; returns the worker the calling code is on afterwards: `self`, or another one if
  // the task suspended on a fiber and resumed there.
  Worker& execute(Worker& self, Task* task) noexcept;
  // Which worker the calling code is on now, given `self` and the mark (switch_mark) read on it before running
  // something that may have suspended.
  [[nodiscard]] static std::uint64_t switch_mark(const Worker& self) noexcept;
  [[nodiscard]] static Worker& worker_after(Worker& self, std::uint64_t mark) noexcept;
  // Runs and releases a queued task inside the task hooks (only when some are set). A future's task that a
  // waiter already ran inline runs no hooks here (it ran inside them there).
  Worker* run_hooked(Worker* self, TaskDomain::ThreadRef ref, Task* task, unsigned worker) noexcept;
  // Hooks or a trace: run_hooked/run_as's slow path.
  [[nodiscard]] bool has_hooks() const noexcept { return hooks_.any(); }
  void call_hook(const shared_function<void(const TaskEvent&)>& hook, const TaskEvent& event) noexcept;
  // The calling thread's index among this engine's workers, or TaskEvent::not_a_worker.
  [[nodiscard]] unsigned worker_index_here() const noexcept;
  // Destroys a task unrun (its future reports task_dropped); returns 1 if it counts as a dropped task, 0 if it
  // had nothing left to do (note_drop_was_empty).
  [[nodiscard]] std::uint64_t drop(Task* task, TaskDomain::ThreadRef ref) noexcept;
  void park(Worker& self);
  [[nodiscard]] bool has_visible_work(const Worker& self) const noexcept;
  [[nodiscard]] bool mailbox_waiting_elsewhere(const Worker& self) const noexcept;

  // Takes a place under max_queued (QueueBound), waiting for room as `admission` says. `self` (the calling
  // worker, or null) follows a task that moved to another worker while it waited (fibers).
  [[nodiscard]] SubmitStatus admit(Worker*& self, weft::detail::Admission admission,
                                   std::chrono::steady_clock::time_point deadline);
  // A task admitted under max_queued started (or was abandoned): its place is free again. Only when bounded.
  void release_queued_slot() noexcept { bound_.release(); }
  void route(Worker* self, TaskDomain::ThreadRef ref, Task* task);
  // A task counted as submitted could not be queued (allocation failed): account for it, and destroy it if it
  // is a closure task (a task that is its own block stays its submitter's).
  void abandon_unqueued(TaskDomain::ThreadRef ref, Task* task) noexcept;
  // abandon_unqueued's counting, for a task that is its own block (its submitter drops it).
  void abandon_counted() noexcept;
  // enqueue_general's steps (submit.cpp): the options' checks (invalid_option, an empty task); a task counted as
  // submitted, then routed. (The shutdown gate between them is Lifecycle::enter.)
  void check_task_options(const TaskOptions& options, bool empty) const;
  SubmitStatus queue_counted(Worker* self, TaskDomain::ThreadRef ref, Task* task);
  // enqueue's other cases: outside threads, priorities, affinity, max_queued, and every refusal. `source` is a
  // closure (wrapped in a ClosureTask here) or a task that is its own block; defined in submit.cpp.
  template <class Source>
  [[gnu::noinline]] SubmitStatus enqueue_general(Source&& source, const TaskOptions& options,
                                                 weft::detail::Admission admission,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 weft::detail::InlineTag inline_tag);
  // enqueue's common case: a worker's own Normal task with no affinity in a pool without max_queued.
  // spawning_worker() is the calling worker when `options` take that path, else null. Defined, with enqueue,
  // in spawn_path.hpp.
  [[nodiscard]] Worker* spawning_worker(const TaskOptions& options) const noexcept;
  template <class Source>
  SubmitStatus spawn_on_worker(Worker& self, Source&& source, weft::detail::InlineTag inline_tag);
  // Runs a queued task and gives it up (a closure task's block is freed); the task is gone afterwards. `self`
  // ran it (null: an outside thread, which uses `ref`); returns the worker it is on afterwards (null if none).
  Worker* run_and_release(Worker* self, TaskDomain::ThreadRef ref, Task* task) noexcept;
  // Work was published: wakes a parked worker if none is searching (scheduler/engine/parking.hpp).
  void signal_work() noexcept { parking_.notify(); }
  // Every accepted task has finished (IdleCount::idle over this engine's workers and slots).
  [[nodiscard]] bool idle() const noexcept { return idle_.idle(workers_, slots_); }
  // Closes the gate, then raises the state to `target` (raise_state). `cause`: why, if `target` drops.
  void begin_shutdown(State target, DropCause cause = DropCause::drop_pending);
  // Raises the state to `target` (never lowers it) and tells whoever sleeps; a state that drops wakes every
  // suspended task of the pool first noting `cause` (dropping()).
  void raise_state(State target, DropCause cause) noexcept;
  std::uint64_t finish_shutdown();
  // The stopped hook (set_stopped_hook) for this pool: after finish_shutdown, by the thread that ran it, with
  // shutdown_mutex_ released.
  void resume_parked_coroutines() noexcept;
  std::uint64_t drop_pending_while_running(TaskDomain::ThreadRef ref) noexcept;
  std::uint64_t drop_slots(TaskDomain::ThreadRef ref) noexcept;
  void refuse_on_own_worker(const char* what) const;

  // Running, draining, dropping or stopped, and the gate outside submitters pass (scheduler/engine/lifecycle.hpp).
  // First: at the engine's own address, the submit path reaches the gate's words with the registers it already
  // has (placed after the slots, it spent a register and a spill on the Lifecycle's address: 4 instructions a
  // post, callgrind). It only refers to slots_, which it uses after construction.
  Lifecycle lifecycle_{*this, slots_};
  PoolOptions options_;
  Pool* pool_ = nullptr;  // set_pool
  // The task hooks and the trace's recorder, fixed at construction (scheduler/engine/task_hooks.hpp).
  const TaskHooks hooks_;
  TaskDomain domain_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Shared FIFO queues, one per priority, for tasks from outside the workers (and High/Low tasks from
  // workers). Workers skip an empty one with MSQueue::empty_hint(), two loads and no hazard.
  std::array<std::unique_ptr<TaskQueue>, 3> injected_;
  // Pushes per queue, for stats: written by submitters only, each on its own line.
  struct alignas(atomics::kCacheLine) PaddedCount {
    std::atomic<std::uint64_t> value{0};
  };
  std::array<PaddedCount, 3> injected_total_{};
  std::atomic<std::uint64_t> injected_dropped_{0};

  Parking parking_;  // idle workers sleep here (scheduler/engine/parking.hpp)
  // Submitted and finished counts, and where wait_idle and shutdown sleep (scheduler/engine/idle.hpp).
  IdleCount idle_{*this};
  // PoolOptions::max_queued: the places taken by queued tasks, and where submitters wait for room.
  QueueBound bound_{options_.max_queued};

  std::atomic<std::uint64_t> dropped_{0};             // PoolStats::dropped
  std::atomic<std::uint64_t> dropped_by_waiters_{0};  // dropped by workers waiting during a DropPending shutdown

  // Fibers: tasks woken while suspended, waiting for a worker (taken before any new task), and how many tasks
  // are suspended (a worker stays until none is, so that each can finish; see FiberWorker::run).
  ResumedQueue resumed_;
  std::atomic<std::int64_t> suspended_tasks_{0};
  std::atomic<std::int64_t> timed_parked_{0};
  std::atomic<std::uint64_t> waits_unsuspended_{0};  // PoolStats::fiber_waits_unsuspended; relaxed: a count
  std::atomic<bool> unsuspended_told_{false};        // the message of note_unsuspended_wait was written
#if WEFT_FIBERS
  std::unique_ptr<fiber::FiberStackPool> fiber_stacks_;
  std::vector<std::unique_ptr<FiberWorker>> fiber_workers_;
#endif

  TaskErrors errors_{options_};  // what tasks and hooks threw (scheduler/engine/task_errors.hpp)

  // Start-up: workers count down once they applied name, pinning and nice; the first failure is kept.
  std::atomic<unsigned> starting_{0};
  EventCount started_changed_;
  std::mutex startup_mutex_;
  std::string startup_failure_;

  std::mutex shutdown_mutex_;
  bool joined_ = false;  // under shutdown_mutex_: finish_shutdown ran

  // Outside threads' slots (scheduler/engine/slot_table.hpp): each an owner-only deque workers steal from.
  SlotTable slots_;

  // The machine and each worker's CPUs (weft::placement), when the options pin or choose a node; else both empty.
  // Each worker's steal victims by distance, empty where distance tells nothing (scheduler/topology/steal_order.hpp).
  // All three fixed before the workers start; cold, so here, where they move no hot member's offset.
  Topology topology_;
  std::vector<std::vector<unsigned>> placement_;
  std::vector<topology::StealOrder> steal_orders_;
  // How many idle workers of each NUMA node may spin at once (scheduler/engine/spin_quota.hpp); no bound unless
  // the workers' places are known. Built with the steal orders, before the workers start.
  SpinQuota spin_quota_;

  // The pool's timers and their thread (scheduler/engine/timer_queue.hpp). Last: destroyed first, its thread
  // joined (if a shutdown did not) while everything it hands tasks to still exists.
  TimerQueue timers_{*this};
};

}  // namespace weft::engine

// The definitions of the templates and inline members above that run tasks in place and wait.
#include "scheduler/engine/engine_waits.hpp"
