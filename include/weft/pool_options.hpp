// How a weft::Pool is configured, and the per-task options of post/submit.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "weft/shared_function.hpp"
#include "weft/trace.hpp"

namespace weft {

// Run-time priority of a task: a free worker takes a ready High task before any Normal one, and a Normal one
// before any Low one. Within a priority, a worker prefers its own recent work (LIFO), then the oldest
// submissions from outside (FIFO), then work stolen from other workers.
enum class Priority : std::uint8_t { High, Normal, Low };

// Where the pool's worker threads may run. The exact rules, and a way to see them on any machine, are
// weft::placement's (weft/topology.hpp); Pool::describe() says where each worker went.
enum class Pinning : std::uint8_t {
  None,       // wherever the OS schedules them
  OnePerCpu,  // worker i on the i-th CPU of the process's affinity mask (modulo its size)
  CpuList,    // worker i on PoolOptions::cpus[i % cpus.size()]
  Cores,      // one worker per physical core first (in node order), SMT siblings only when every core has one
  Compact,    // fill one NUMA node (its cores first, then their siblings) before the next
  Spread,     // round-robin over the NUMA nodes: worker i on node i % nodes
};

// What shutdown does with tasks that were accepted but have not started.
enum class Shutdown : std::uint8_t {
  Drain,        // run every one of them, then stop
  DropPending,  // run none of them: their futures report task_dropped, and the count is returned
};

// The answer of a try_/..._for submission.
enum class SubmitStatus : std::uint8_t {
  Accepted,  // the task will run exactly once (or be reported dropped by a DropPending shutdown)
  Full,      // PoolOptions::max_queued tasks are waiting: not accepted (try_) or not within the timeout (_for)
  Closed,    // the pool is shutting down: not accepted
};

// What the task hooks are told.
struct TaskEvent {
  // The thread running the task is not one of the pool's workers: an outside thread (or a worker of another
  // pool) that runs the task itself while it waits for it (Future::get, Run::wait, TaskScope::run_and_wait).
  static constexpr unsigned not_a_worker = ~0u;

  unsigned worker;    // index of the worker running the task, in [0, Pool::size()), or not_a_worker
  Priority priority;  // the priority it was submitted with
};

// Per-task options for post/submit.
struct TaskOptions {
  // The task's priority (see weft::Priority).
  Priority priority = Priority::Normal;
  // Run on this worker (index in [0, Pool::size())) if it gets to the task in time: the task goes to that
  // worker's mailbox. If that worker makes no progress (runs no task) for `PoolOptions::affinity_patience`,
  // e.g. because it is stuck in one long task, an idle worker may take the task instead.
  std::optional<unsigned> affinity{};
};

// Pool configuration. Every field has a working default; out-of-range values throw weft::invalid_option from
// the Pool constructor, naming the field. Every member has a default member initializer, so that designated
// initializers naming only some fields (PoolOptions{.threads = 4}) compile cleanly under -Wextra -Werror.
//
// Copying: PoolOptions is copyable and movable, so that one object can be the base of several pools. The hooks
// (on_error, on_task_start, on_task_end) are weft::shared_function: a copy shares the one callable the hook was
// given, it does not copy it. Chosen over copying the callable because (1) a hook is already called from many
// threads at once and so must be thread-safe, which is all that sharing it between pools asks more; (2) a
// move-only callable (one capturing a unique_ptr) can be a hook, which copying the callable would rule out;
// (3) a copy never allocates nor copies captured state, and the call costs what it did (one load and one indirect
// call). So the hooks of copies may be called concurrently from several pools, and what a hook captures (a
// counter, a log) is shared by every pool configured from copies of it. To give each pool its own state, assign
// a fresh callable to the copy's hook; assigning a hook rebinds that object only.
//
// Example:
//   std::atomic<int> errors{0};
//   const weft::PoolOptions base{.threads = 2, .on_error = [&errors](std::exception_ptr) { ++errors; }};
//   weft::PoolOptions io = base;  // shares on_error with base
//   io.name = "io";
//   weft::Pool compute{base};
//   weft::Pool io_pool{io};  // an exception posted to either pool counts in `errors`
struct PoolOptions {
  // Number of worker threads; 0 means one per CPU this process may use. At most 4096.
  unsigned threads = 0;
  // Where the workers run (see weft::Pinning); CpuList needs `cpus`.
  Pinning pinning = Pinning::None;
  // CPUs for Pinning::CpuList; must be non-empty then, and each CPU must be one the process may use.
  std::vector<unsigned> cpus{};
  // If set, the pool runs on this NUMA node's CPUs only (a node of weft::Topology::current(), in
  // [0, numa_nodes())): with Pinning::None each worker may run on any of them, with OnePerCpu, Cores, Compact or
  // Spread each is pinned to one of them; threads = 0 then means one worker per CPU of the node. One pool per node
  // keeps each pool's tasks and memory on its node. Out of range, on a machine whose nodes weft does not know, or
  // with Pinning::CpuList: weft::invalid_option.
  std::optional<unsigned> numa_node{};
  // Workers are named "<name>-0", "<name>-1", … (Linux keeps 15 characters) for top -H and debuggers.
  std::string name = "weft";
  // If set, the workers' nice value (-20..19; lowering it usually needs privileges, and failing to is an error).
  std::optional<int> nice{};
  // How long an idle worker keeps looking for work before it sleeps. Longer: lower wake-up latency, more CPU
  // burnt while idle. At most one second.
  std::chrono::microseconds spin_before_park{50};
  // How long a worker may be seen making no progress (stuck in one task) while a task sent to it by affinity
  // waits, before an idle worker may take that task. Measured from when an idle worker first notices. At most
  // ten seconds (a task could otherwise wait on a stuck worker for as long as the clock holds).
  std::chrono::microseconds affinity_patience{200};
  // At most this many accepted tasks waiting to start (0: unbounded). When full, post/submit block (a worker
  // that submits runs other work meanwhile), try_post/try_submit return SubmitStatus::Full. One exception,
  // to rule out deadlock: a blocking post/submit from a worker that is already nested in the maximum number
  // of waits, or close to the end of its stack (either way it could no longer run the queued tasks that would
  // make room) is admitted over the limit, and counted in PoolStats::admitted_over_limit.
  std::size_t max_queued = 0;
  // Called with the exception of a task started with post() (submit() hands it to the future instead), or of
  // a hook. Unset: the pool keeps the first ones (Pool::take_errors) and counts all (PoolStats::errors).
  // An exception thrown by on_error itself is counted and kept in the same way, never lost.
  // Called from any worker, possibly from several at once: the handler must be thread-safe.
  shared_function<void(std::exception_ptr)> on_error{};
  // Opt-in hooks around every task, each called exactly once per task that runs, on the thread that runs it,
  // just before and just after the task: a worker (TaskEvent::worker is its index), or a thread that runs the
  // task itself while waiting for it (TaskEvent::not_a_worker). Not called for a task that never runs
  // (dropped). A task that suspended on a fiber (PoolOptions::fibers) may end on another worker than it started
  // on: each hook is called on the thread, and with the worker index, of that moment. Unset they cost one
  // predictable branch per task. Like on_error, each is one object called from many threads at once (and from
  // several pools, if copies of the options configured them): it must be thread-safe.
  shared_function<void(const TaskEvent&)> on_task_start{};
  shared_function<void(const TaskEvent&)> on_task_end{};
  // If set, the pool records into it for as long as the pool lives (see weft::Trace): each task it runs, each
  // steal and each time a worker sleeps, and the nodes and pipeline stages of every run on it. Unset (the
  // default), nothing is recorded and it costs one predictable branch per task. Copies of the options share the
  // Trace, as they share the hooks: pools configured from copies record into one trace.
  std::shared_ptr<Trace> trace{};
  // Fibers (in a weft built with them: weft::fibers_available). A task on a worker that must wait (Future::get,
  // Run::wait, a nested run, Subflow::join, weft::Event, WaitGroup, ConditionVariable) suspends: the worker goes
  // on with other tasks, and the task resumes as soon as what it waits for is done, on whichever worker is free
  // first; a timed wait (wait_for) resumes at its deadline at the latest. Off (or without fibers), such a wait runs
  // other tasks on its own stack until it is done. Waits inside a catch block always wait the second way.
  bool fibers = true;
  // Usable bytes of each fiber stack (rounded up to whole pages), min_fiber_stack_size to 1 GiB. A task runs on a
  // fiber's stack, so this bounds how deep a task's own calls may go. The default is what Linux gives a thread
  // (8 MiB), so code that recursed fine on a thread recurses as deep in a task. It costs address space, not
  // memory: a stack is reserved without committing it, and only the pages a task touches are used (a few KiB for
  // most tasks), so 10,000 suspended tasks take about 80 GiB of the 128 TiB of a 64-bit address space and some
  // 45 MiB of memory. Where address space is limited (ulimit -v, or vm.overcommit_memory = 2, which counts every
  // reserved byte) choose smaller stacks. An overflow touches the guard page below the stack: the process dies of
  // SIGSEGV after a message on stderr naming the pool, the worker and this option.
  std::size_t fiber_stack_size = 8 * 1024 * 1024;
  // The smallest fiber_stack_size accepted: room for weft's own algorithms (parallel_sort's leaves run std::sort,
  // whose frames take some 5 KiB each under AddressSanitizer) in every build, sanitizers included.
  static constexpr std::size_t min_fiber_stack_size = 256 * 1024;
  // Most fiber stacks the pool keeps at once: one per suspended task, plus one per worker. Each worker takes its
  // own before the pool's constructor returns (a bound below `threads` leaves the last workers without fibers).
  // 1 to 30,000 (each stack takes two of the process's memory mappings; Linux allows 65,530 by default).
  // A bound on memory, never on progress: at the bound, a wait that would suspend still suspends, on a stack
  // mapped past the bound for it (counted in PoolStats::fiber_overshoot, and seen in fiber_stacks_peak), which is
  // unmapped as soon as its fiber ends, so the pool comes back under the bound by itself. The reason: a wait that
  // did not suspend would have to run other tasks on its stack, and tasks that wait for work queued behind them
  // (a thousand tasks waiting on events, posted before the tasks that signal them) would nest there until every
  // worker was stuck: a silent hang at a threshold the program cannot see. A marl user expects a blocked task to
  // cost a fiber, never a deadlock; so here, past the bound. Only past 30,000 stacks in the pool, or when the OS
  // refuses the memory, does a wait run other tasks on its stack instead; each such wait is counted in
  // PoolStats::fiber_waits_unsuspended and the first is reported on stderr, naming this option.
  std::size_t max_fibers = 10'000;
};

// Counters of one worker since the pool started. Each is exact for that worker at the time it is read.
struct WorkerStats {
  std::uint64_t executed = 0;        // tasks run (including those run while waiting for a future)
  std::uint64_t stolen = 0;          // tasks taken from another worker's deque or mailbox
  std::uint64_t steal_attempts = 0;  // steal calls made, successful or not
  std::uint64_t parks = 0;           // times the worker went to sleep
  std::uint64_t wakeups = 0;         // times it woke up from sleep
  // Tasks from outside threads this worker took beyond the first of a batch (up to 8 at once), set aside where
  // any worker takes them before other work than its own deque's.
  std::uint64_t outside_batched = 0;
};

// Counters of a whole pool (Pool::stats()).
struct PoolStats {
  std::vector<WorkerStats> workers;  // one per worker, indexed by worker index: [0, Pool::size())
  std::size_t queued = 0;            // accepted tasks not started yet (a snapshot)
  std::size_t in_flight = 0;         // accepted tasks not finished yet, queued ones included (a snapshot)
  std::uint64_t errors = 0;          // exceptions that reached on_error or were kept
  std::uint64_t dropped = 0;         // tasks dropped by shutdown
  // Tasks admitted past PoolOptions::max_queued: blocking submissions from a worker too deep in nested waits,
  // or too short of stack, to run the queued tasks whose start would make room (see max_queued).
  std::uint64_t admitted_over_limit = 0;
  // Fibers (PoolOptions::fibers): tasks suspended in a wait now, fiber stacks mapped now (in use or kept free),
  // and the most ever mapped at once (past PoolOptions::max_fibers if waits needed more: fiber_overshoot). All
  // zero without fibers.
  std::size_t suspended = 0;
  std::size_t fiber_stacks = 0;
  std::size_t fiber_stacks_peak = 0;
  // Fiber stacks mapped past PoolOptions::max_fibers, since the pool started: each for a wait that suspended while
  // max_fibers stacks existed already (see max_fibers). Not zero means the bound was too low for the number of
  // tasks that waited at once; such stacks are unmapped again as soon as their fibers end.
  std::uint64_t fiber_overshoot = 0;
  // Waits that should have suspended but found no fiber stack even past max_fibers (the pool's ceiling of 30,000
  // stacks reached, or the OS refused the memory): each ran other tasks on its own stack instead, which can
  // deadlock. The first one is also reported on stderr. Zero in a healthy program.
  std::uint64_t fiber_waits_unsuspended = 0;
  // Timers (Pool::post_after and the rest, weft/timer.hpp): tasks the timer thread handed to the pool (a periodic
  // timer counts each run), and timers a shutdown dropped before they were due (or whose next run it dropped).
  std::uint64_t timers_fired = 0;
  std::uint64_t timers_dropped = 0;
};

}  // namespace weft
