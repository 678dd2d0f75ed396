// weft::Pool: the work-stealing scheduler every weft graph runs on.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <chrono>
#include <concepts>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/async_task.hpp"
#include "weft/detail/coro_resumer.hpp"
#include "weft/detail/deadline.hpp"
#include "weft/detail/inline_tag.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/future.hpp"
#include "weft/pool_options.hpp"
#include "weft/small_function.hpp"
#include "weft/timer.hpp"

namespace weft {

class Subflow;          // weft/subflow.hpp
class ScheduleAwaiter;  // below: what schedule() returns
class SleepAwaiter;     // below: what sleep_for() and sleep_until() return
template <class T>
class Task;  // weft/task.hpp

// True if this weft was built with fibers (Boost.Context found and the `fibers` build option allowing it): then
// PoolOptions::fibers lets a waiting task suspend. False: every wait on a worker runs other tasks meanwhile.
[[nodiscard]] bool fibers_available() noexcept;

namespace engine {
class Engine;  // scheduler/engine/engine.hpp: the pool's workers, queues and parking
}
namespace detail {
// How a submission waits for room when PoolOptions::max_queued tasks are queued.
enum class Admission : std::uint8_t { block, try_once, until };
struct PoolAccess;   // scheduler/engine/pool_access.hpp: internal entry points for weft's own front-ends
struct PoolRunHere;  // weft/detail/for_splitter.hpp: parallel_for's inline start
// Pool::submit of a callable taking Subflow&: defined by weft/task_scope.hpp (the graph layer), which gives it
// a run to belong to; the scheduler itself knows no graphs.
template <class F>
struct SubflowSubmit;
template <class F, class = void>
inline constexpr bool subflow_submit_defined = false;
template <class F>
inline constexpr bool subflow_submit_defined<F, std::void_t<decltype(sizeof(SubflowSubmit<F>))>> = true;
}  // namespace detail

// A callable Pool::submit runs with a weft::Subflow& (and no other argument): one that takes nothing is a
// plain task, so it is excluded here.
template <class F>
concept SubflowTask = !std::invocable<std::decay_t<F>&> && std::invocable<std::decay_t<F>&, Subflow&>;

// A batch Pool::post_bulk takes: a forward range of callables taking nothing, each of which can become a
// task, copied from an lvalue range's elements or moved from an rvalue range's.
template <class R>
concept BulkTasks =
    std::ranges::forward_range<R> && std::invocable<std::remove_cvref_t<std::ranges::range_reference_t<R>>&> &&
    std::constructible_from<small_function<void()>,
                            std::conditional_t<std::is_lvalue_reference_v<R>, std::ranges::range_reference_t<R>,
                                               std::ranges::range_rvalue_reference_t<R>>>;

// The outcome of try_submit / submit_for: `future` is valid only when `status == SubmitStatus::Accepted`.
template <class T>
struct [[nodiscard]] Submitted {
  SubmitStatus status;  // Accepted, or why the task was not (Full, Closed)
  Future<T> future;     // the task's future if Accepted; else an invalid (default) Future
};

// What shutdown_for did.
struct ShutdownResult {
  bool drained;           // every accepted task ran before the deadline
  std::uint64_t dropped;  // tasks dropped at the deadline (their futures report task_dropped)
};

// The result type of submit(f, args...): what f returns when called with the (moved) arguments.
template <class F, class... Args>
using submit_result_t = std::invoke_result_t<std::decay_t<F>&, std::decay_t<Args>&&...>;

namespace detail {
// A callable Pool's stop-token overloads hand the token to: f(std::stop_token, args...) rather than f(args...).
template <class F, class... Args>
inline constexpr bool takes_stop_token_v =
    std::is_invocable_v<std::decay_t<F>&, std::stop_token, std::decay_t<Args>&&...>;
template <class F, class... Args>
struct stop_result {
  using type = std::invoke_result_t<std::decay_t<F>&, std::decay_t<Args>&&...>;
};
template <class F, class... Args>
  requires takes_stop_token_v<F, Args...>
struct stop_result<F, Args...> {
  using type = std::invoke_result_t<std::decay_t<F>&, std::stop_token, std::decay_t<Args>&&...>;
};
[[noreturn]] void throw_stopped_before_start();
}  // namespace detail

// A callable Pool::post / submit with a std::stop_token run: f(token, args...) if it takes the token first,
// else f(args...).
template <class F, class... Args>
concept StoppableTask = std::invocable<std::decay_t<F>&, std::stop_token, std::decay_t<Args>&&...> ||
                        std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>;

// The result type of submit(token, f, args...).
template <class F, class... Args>
using stoppable_result_t = typename detail::stop_result<F, Args...>::type;

// A fixed set of worker threads that run tasks: each worker has its own work-stealing deque, tasks from other
// threads enter through lock-free queues, idle workers steal, then sleep without burning CPU.
//
// Contract:
// - Every accepted task runs exactly once, or — only under Shutdown::DropPending or a shutdown_for deadline —
//   is dropped and reported (its future throws task_dropped; shutdown returns the count). A refused submission
//   says so: post/submit throw weft::pool_closed, try_/_for return SubmitStatus::Closed or ::full.
// - A task posted from a worker goes to that worker's deque (LIFO for the owner, stolen FIFO by others). A
//   Normal task from any other thread goes to that thread's slot in this pool, whose oldest tasks workers take
//   (up to 8 at once, before any worker's spawns), or to a shared FIFO queue once 64 threads hold slots.
//   Priority and affinity: see TaskOptions.
// - The destructor shuts down with Shutdown::Drain. The pool may not be shut down or waited idle from one of its
//   own tasks, whichever thread runs it (a worker, or a thread running the task itself while it waits for it):
//   wait_idle, shutdown and shutdown_for throw weft::would_deadlock there, and the destructor terminates with a
//   message (it cannot throw).
// - All member functions are thread-safe.
//
// Example:
//   weft::Pool pool{weft::PoolOptions{.threads = 4}};
//   pool.post([] { /* fire and forget */ });
//   weft::Future<int> f = pool.submit([](int a) { return a * 2; }, 21);
//   int v = f.get();   // 42; rethrows the task's exception
//   pool.wait_idle();  // every accepted task has finished
class Pool {
 public:
  // One worker per usable CPU, default options.
  Pool();
  // Throws weft::invalid_option naming the field if an option is out of range.
  explicit Pool(PoolOptions options);
  // shutdown(Shutdown::Drain): runs every accepted task, then joins the workers (see the contract for a call
  // from one of the pool's own tasks).
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Runs f() once on a worker; its result is discarded and an exception goes to PoolOptions::on_error.
  // Blocks while max_queued tasks wait. Throws pool_closed after shutdown.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  void post(F&& f, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::post");
    admit_or_throw(enqueue(small_function<void()>(std::forward<F>(f)), options, Admission::block, {}), "post");
  }

  // As post, but never blocks: returns SubmitStatus::Full or ::closed instead of waiting or throwing.
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] SubmitStatus try_post(F&& f, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::try_post");
    return enqueue(small_function<void()>(std::forward<F>(f)), options, Admission::try_once, {});
  }

  // Posts a batch: every callable of `tasks` becomes one task, queued in the range's order exactly as post()
  // queues it (same options, same routing, same admission under max_queued; no cheaper per task than post, one
  // call for the lot). The callables of an lvalue range are copied, those of an rvalue range moved from.
  // Every element is checked before any is posted: an empty one (a null function pointer, an empty
  // std::function) throws std::invalid_argument naming its index, and no task of the batch is posted. If the
  // pool shuts down during the batch, throws pool_closed saying how many were accepted (those run, or are
  // dropped, as any accepted task); an exception copying or moving a callable leaves the ones before it posted.
  //
  // Example:
  //   std::vector<int> squares(10);
  //   std::vector<std::function<void()>> batch;
  //   for (int i = 0; i < 10; ++i) batch.emplace_back([&squares, i] { squares[i] = i * i; });
  //   pool.post_bulk(batch);  // ten tasks; batch keeps its callables (copied)
  //   pool.wait_idle();       // squares == {0, 1, 4, ..., 81}
  template <BulkTasks R>
  void post_bulk(R&& tasks, TaskOptions options = {}) {
    std::size_t count = 0;
    for (auto&& task : tasks) {
      if (is_empty_callable(task)) [[unlikely]]
        throw_bulk_empty(count, static_cast<std::size_t>(std::ranges::distance(tasks)));
      ++count;
    }
    std::size_t accepted = 0;
    for (auto&& task : tasks) {
      SubmitStatus status;
      if constexpr (std::is_lvalue_reference_v<R>) {
        status = enqueue(small_function<void()>(task), options, Admission::block, {});
      } else {
        status = enqueue(small_function<void()>(std::move(task)), options, Admission::block, {});
      }
      if (status == SubmitStatus::Closed) throw_bulk_closed(accepted, count);
      ++accepted;
    }
  }

  // Posts `count` tasks, the i-th calling f(i) on its own copy of f (i in [0, count), posted in that order);
  // otherwise as post_bulk of a range. An empty f throws std::invalid_argument and posts nothing.
  //
  // Example:
  //   std::vector<double> out(1000);
  //   pool.post_bulk(out.size(), [&out](std::size_t i) { out[i] = std::sqrt(double(i)); });
  //   pool.wait_idle();  // out[i] == sqrt(i) for every i
  template <class F>
    requires std::invocable<std::decay_t<F>&, std::size_t> && std::copy_constructible<std::decay_t<F>>
  void post_bulk(std::size_t count, F&& f, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::post_bulk");
    for (std::size_t i = 0; i < count; ++i) {
      const SubmitStatus status = enqueue(small_function<void()>([f, i]() mutable { (void)std::invoke(f, i); }),
                                          options, Admission::block, {});
      if (status == SubmitStatus::Closed) throw_bulk_closed(i, count);
    }
  }

  // Runs f(args...) once on a worker; the future carries its value or exception. Blocks while max_queued
  // tasks wait. Throws pool_closed after shutdown.
  template <class F, class... Args>
    requires std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>
  Future<submit_result_t<F, Args...>> submit(F&& f, Args&&... args) {
    return submit_with(TaskOptions{}, std::forward<F>(f), std::forward<Args>(args)...);
  }

  // submit with per-task options (priority, affinity).
  template <class F, class... Args>
    requires std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>
  Future<submit_result_t<F, Args...>> submit_with(TaskOptions options, F&& f, Args&&... args) {
    detail::require_callable(f, "weft::Pool::submit");
    auto result = submit_impl(options, Admission::block, {}, std::forward<F>(f), std::forward<Args>(args)...);
    admit_or_throw(result.status, "submit");
    return std::move(result.future);
  }

  // Runs f() on a worker once every task of `after` is final: a task with dependencies on the fly, which later
  // submit_after calls may depend on in turn through the returned handle (Taskflow's dependent_async, a node added
  // to a running oneTBB flow graph).
  //
  // Contract:
  // - Any thread may call it, concurrently with other submitters and while the tasks of `after` run, have finished
  //   or have not started. A task of `after` that is already final costs one load: it is not linked. A cycle
  //   cannot be written: a task depends only on handles that exist before it.
  // - Released without a thread waiting: the predecessor that finishes last queues f (on its worker's own deque,
  //   as a continuation); with no predecessor left unfinished at the call, f is queued at once.
  // - Failures (as ErrorPolicy::KeepGoing in a graph): if a predecessor failed (its callable threw, it was skipped
  //   in turn, or a shutdown dropped it), f is not called and the task is final at once with that predecessor's
  //   exception (the first failure to reach it, if several did): get() rethrows it, and the task's own successors
  //   are skipped alike. Tasks that do not depend on the failed one run. If f throws, the task fails with it.
  // - f's result is discarded; f is destroyed (what it captured released) as soon as it ran or will not run.
  // - Memory: the returned handle keeps only its own task's state; an unfinished task keeps one edge per
  //   unfinished predecessor in its own block (beyond two, one allocation), and a predecessor lets go of the edge
  //   as it finishes. Finished tasks are freed with their last handle, whatever the program submits later.
  // - `options`: priority and affinity of f's task, as for submit_with.
  // - Throws std::invalid_argument for an empty handle in `after` (naming its index), for a handle of another
  //   pool's task that is not final yet, or for an empty f; weft::invalid_option for options the pool cannot
  //   honour; pool_closed if the pool is shut down and f would be queued at once. In each case nothing was queued
  //   or linked. A task whose predecessors finish after a shutdown is not run: it is final with task_dropped.
  //
  // Example:
  //   weft::AsyncTask a = pool.submit_after({}, [] { std::puts("a"); });
  //   weft::AsyncTask b = pool.submit_after({}, [] { std::puts("b"); });
  //   weft::AsyncTask c = pool.submit_after({a, b}, [] { std::puts("c, after a and b"); });
  //   c.get();
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  AsyncTask submit_after(std::span<const AsyncTask> after, F&& f, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::submit_after");
    using State = detail::AsyncTaskState<std::decay_t<F>>;
    return detail::submit_async(*this, new State(std::forward<F>(f)), after, options);
  }
  // The same with the predecessors written in braces: pool.submit_after({a, b}, f).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  AsyncTask submit_after(std::initializer_list<AsyncTask> after, F&& f, TaskOptions options = {}) {
    return submit_after(std::span<const AsyncTask>(after.begin(), after.size()), std::forward<F>(f), options);
  }

  // An AsyncTask that is final when `future` is, so that submit_after can depend on a Future: the returned task
  // becomes the future's one consumer (as get() or then() would). The future's value is discarded; to use it, chain
  // a then() that takes it and pass that then()'s future here instead.
  //
  // Contract:
  // - The task is final once the future's task is: done if it returned; failed with its exception if it threw
  //   (get() rethrows it, and successors are skipped as after any failed AsyncTask); failed with task_dropped if a
  //   shutdown dropped it, or dropped the hand-over below.
  // - A future that is ready already gives a task that is final at once, with no task queued: a successor linked
  //   after it is released at once. Otherwise the future's end is passed on as then() passes it: one task on the
  //   pool, which releases the successors.
  // - Throws std::invalid_argument for an invalid future (default-constructed, moved from, or consumed already by
  //   get() or then()) and for a future of another pool's task; in each case the future is left unchanged.
  //
  // Example:
  //   weft::Future<int> parsed = pool.submit([] { return 42; });
  //   weft::AsyncTask loaded = pool.submit_after({}, [] { std::puts("loaded"); });
  //   weft::AsyncTask parsed_task = pool.as_async_task(std::move(parsed));  // the value 42 is discarded
  //   weft::AsyncTask report = pool.submit_after({loaded, parsed_task}, [] { std::puts("both done"); });
  //   report.get();  // rethrows the parse's or the load's exception, if either failed
  template <class T>
  [[nodiscard]] AsyncTask as_async_task(Future<T>&& future) {
    detail::FutureResult<T>* const state = detail::FutureAccess::state(future);
    if (state == nullptr)
      throw std::invalid_argument(
          "weft::Pool::as_async_task: the future is invalid (default-constructed, moved from, or consumed already by "
          "get() or then()): it has no task to depend on");
    if (state->pool() != this)
      throw std::invalid_argument(
          "weft::Pool::as_async_task: the future is of another pool's task; an AsyncTask depends only on its own "
          "pool's work (call as_async_task on the pool that made the future)");
    AsyncTask task = detail::make_future_async(*this);  // may throw: the future is still the caller's
    detail::AsyncState* const target = detail::async_state(task);
    if (state->ready()) {
      detail::FutureResult<T>* const taken = detail::FutureAccess::take(future);
      std::exception_ptr error = detail::take_future_error(*taken);
      taken->release();  // the value, if any, goes with it
      detail::settle_future_async(target, std::move(error));
      return task;
    }
    detail::FutureGate<T>* gate = nullptr;
    try {
      gate = new detail::FutureGate<T>(this, target);
    } catch (...) {
      // Out of memory: the future is left as it was, and the task (never handed out) is settled and freed.
      detail::settle_future_async(target, std::current_exception());
      throw;
    }
    gate->set_antecedent(detail::FutureAccess::take(future));  // the future's reference goes to the gate
    // Queues the gate now if the future became final meanwhile; else the future's finisher will.
    state->attach_continuation(gate);
    gate->release();  // the reference a Future of the gate would hold: nobody waits for the gate itself
    return task;
  }

  // Runs f(subflow) as a task whose future is ready only once f returned and every child it spawned (with all
  // of theirs) finished: the implicit join of a TaskGraph node body that takes Subflow&. The first exception
  // of f or of any child (which cancels the children not started yet) is the future's; the value is f's.
  // The task, its children and their joins run on this pool (a join runs other tasks meanwhile, so one
  // worker suffices); f gets `options` (TaskOptions: priority, affinity), the children its priority.
  // Needs the graph layer: include <weft/task_scope.hpp> (or <weft/weft.hpp>). Each such task costs a
  // one-job TaskScope (a small graph, built and run) on top of a plain submit.
  //
  // Example:
  //   std::vector<int> squares(4);
  //   weft::Future<void> f = pool.submit([&squares](weft::Subflow& sf) {
  //     for (int i = 0; i < 4; ++i) sf.spawn([&squares, i] { squares[i] = i * i; });
  //   });
  //   f.get();  // every child finished: squares == {0, 1, 4, 9}
  template <class F>
    requires SubflowTask<F>
  Future<std::invoke_result_t<std::decay_t<F>&, Subflow&>> submit(F&& f) {
    return submit_with(TaskOptions{}, std::forward<F>(f));
  }

  // submit(f(Subflow&)) with per-task options.
  template <class F>
    requires SubflowTask<F>
  Future<std::invoke_result_t<std::decay_t<F>&, Subflow&>> submit_with(TaskOptions options, F&& f) {
    static_assert(detail::subflow_submit_defined<std::decay_t<F>>,
                  "weft::Pool::submit(f(weft::Subflow&)) needs the graph layer: #include <weft/task_scope.hpp> "
                  "(or <weft/weft.hpp>)");
    detail::require_callable(f, "weft::Pool::submit");
    return detail::SubflowSubmit<std::decay_t<F>>::submit(*this, std::forward<F>(f), options);
  }

  // As submit, but never blocks: status full or closed instead of waiting or throwing.
  template <class F, class... Args>
    requires std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>
  Submitted<submit_result_t<F, Args...>> try_submit(F&& f, Args&&... args) {
    detail::require_callable(f, "weft::Pool::try_submit");
    return submit_impl(TaskOptions{}, Admission::try_once, {}, std::forward<F>(f), std::forward<Args>(args)...);
  }

  // As submit, but waits at most `timeout` for room in the queue: status full if there was none.
  template <class Rep, class Period, class F, class... Args>
    requires std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>
  Submitted<submit_result_t<F, Args...>> submit_for(std::chrono::duration<Rep, Period> timeout, F&& f, Args&&... args) {
    detail::require_callable(f, "weft::Pool::submit_for");
    return submit_impl(TaskOptions{}, Admission::until, detail::deadline_after(detail::clamp_to_nanoseconds(timeout)),
                       std::forward<F>(f), std::forward<Args>(args)...);
  }

  // Stop tokens: post and submit of a task that a std::stop_token can cancel.
  //
  // Contract:
  // - The token is looked at as the task starts: stopped by then, the callable is not called; post's task is
  //   skipped silently (counted as run, not as an error), submit's future throws weft::task_cancelled. A token
  //   stopped later does not interrupt anything: a running task polls it, as f(token, args...) when f takes a
  //   std::stop_token first (else f(args...); capture the token, or its std::stop_source, to poll it).
  // - Otherwise exactly as post(f, options) and submit(f, args...): same routing, admission, errors.
  //
  // Example:
  //   std::stop_source stop;
  //   weft::Future<int> f = pool.submit(stop.get_token(), [](std::stop_token token, int limit) {
  //     int i = 0;
  //     while (i < limit && !token.stop_requested()) ++i;  // polls the token while it runs
  //     return i;
  //   }, 1000);
  //   stop.request_stop();  // before the start: f.get() throws weft::task_cancelled; during the run: i < 1000
  //   try { (void)f.get(); } catch (const weft::task_cancelled&) {}

  // Runs f(token) (or f()) on a worker unless `token` is stopped when it starts; as post otherwise.
  template <class F>
    requires StoppableTask<F>
  void post(std::stop_token token, F&& f, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::post");
    post(
        [token = std::move(token), f = std::decay_t<F>(std::forward<F>(f))]() mutable {
          if (token.stop_requested()) return;
          if constexpr (detail::takes_stop_token_v<F>) {
            (void)std::invoke(f, token);
          } else {
            (void)std::invoke(f);
          }
        },
        options);
  }
  // Runs f(token, args...) (or f(args...)) on a worker unless `token` is stopped when it starts (then the future
  // throws task_cancelled); as submit otherwise.
  template <class F, class... Args>
    requires StoppableTask<F, Args...>
  Future<stoppable_result_t<F, Args...>> submit(std::stop_token token, F&& f, Args&&... args) {
    detail::require_callable(f, "weft::Pool::submit");
    return submit(
        [token = std::move(token), f = std::decay_t<F>(std::forward<F>(f))](
            std::decay_t<Args>&&... moved) mutable -> stoppable_result_t<F, Args...> {
          if (token.stop_requested()) detail::throw_stopped_before_start();
          if constexpr (detail::takes_stop_token_v<F, Args...>) {
            return std::invoke(f, token, std::move(moved)...);
          } else {
            return std::invoke(f, std::move(moved)...);
          }
        },
        std::forward<Args>(args)...);
  }

  // Timers: tasks handed to the pool later, each returning a weft::Timer to cancel it (see weft/timer.hpp).
  //
  // Contract:
  // - One timer structure per pool (a heap, scheduler/engine/timer_queue.hpp) serviced by one timer thread, started
  //   with the pool's first timer: it sleeps until the earliest deadline (std::chrono::steady_clock throughout),
  //   then hands each due task to the pool as post() would (from outside the workers, so any worker may take
  //   it). A task never starts before its deadline; how late depends on how busy the workers are. Ordinary
  //   tasks pay nothing for timers: the worker loop does not look at them.
  // - The task runs as a plain task: its exception goes to PoolOptions::on_error (post_*), or to the future
  //   (submit_*). Under PoolOptions::max_queued the hand-over waits for room as post() does, delaying the
  //   timers due after it. A timer not yet handed over is not an accepted task: wait_idle() does not wait for it.
  // - Shutdown (any policy, shutdown_for and the destructor too) first drops every timer not handed to the pool
  //   yet, whatever its deadline, and counts each in PoolStats::timers_dropped; a Drain does not wait for timers
  //   due later. Tasks already handed over are drained (or dropped) as any accepted task; a periodic timer's next
  //   run is dropped (counted) when the pool no longer takes timers.
  // - Throw pool_closed once shutdown has begun, std::invalid_argument for an empty callable (and, for
  //   post_every, a period that is not positive), weft::invalid_option for options the pool cannot honour.
  //
  // Example:
  //   std::atomic<int> ticks{0};
  //   weft::Timer once = pool.post_after(std::chrono::milliseconds(10), [] { std::puts("10 ms later"); });
  //   weft::Timer every = pool.post_every(std::chrono::milliseconds(5), [&ticks] { ++ticks; });
  //   weft::DelayedFuture<int> later = pool.submit_after_delay(std::chrono::milliseconds(1), [] { return 7; });
  //   int seven = later.future.get();  // 7, once the delay passed and a worker ran it
  //   (void)every.cancel();            // no run starts after this returns
  //   (void)once, (void)seven;

  // Hands f to the pool (as post) once `delay` has passed; a delay of zero or less: at once, through the timer.
  template <class Rep, class Period, class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] Timer post_after(std::chrono::duration<Rep, Period> delay, F&& f, TaskOptions options = {}) {
    return post_at(detail::deadline_after(detail::clamp_to_nanoseconds(delay)), std::forward<F>(f), options);
  }
  // Hands f to the pool (as post) at `when` (a time already passed: at once, through the timer).
  template <class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] Timer post_at(std::chrono::steady_clock::time_point when, F&& f, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::post_at");
    auto state = std::make_shared<detail::TimerState>();
    state->work = small_function<void()>(std::forward<F>(f));
    state->options = options;
    return schedule_timer(std::move(state), when, "post_at");
  }
  // Runs f every `period`, first at now + period, until the timer is cancelled or the pool shuts down. Runs never
  // overlap: the next run is scheduled only once the previous one returned, so an overrun does not pile runs up
  // (TimerMode: fixed_rate skips the due times the run overran; fixed_delay waits `period` after each run). A
  // run that throws goes to PoolOptions::on_error and the schedule goes on. f is called on a worker, one run at
  // a time (on whichever worker takes it), and destroyed when the timer is cancelled or dropped.
  template <class Rep, class Period, class F>
    requires std::invocable<std::decay_t<F>&>
  [[nodiscard]] Timer post_every(std::chrono::duration<Rep, Period> period, F&& f,
                                 TimerMode mode = TimerMode::fixed_rate, TaskOptions options = {}) {
    detail::require_callable(f, "weft::Pool::post_every");
    const std::chrono::nanoseconds step = detail::clamp_to_nanoseconds(period);
    if (step <= std::chrono::nanoseconds::zero()) throw_bad_period(step);
    auto state = std::make_shared<detail::TimerState>();
    state->work = small_function<void()>(std::forward<F>(f));
    state->period = step;
    state->mode = mode;
    state->options = options;
    return schedule_timer(std::move(state), detail::deadline_after(step), "post_every");
  }
  // Runs f(args...) on a worker once `delay` has passed; the future carries its value or exception (task_cancelled
  // if the timer was cancelled first). Named apart from submit_after (tasks after other tasks). The task never
  // runs inline in a thread waiting on the future (that could run it before its time).
  template <class Rep, class Period, class F, class... Args>
    requires std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>
  DelayedFuture<submit_result_t<F, Args...>> submit_after_delay(std::chrono::duration<Rep, Period> delay, F&& f,
                                                                Args&&... args) {
    return submit_at(detail::deadline_after(detail::clamp_to_nanoseconds(delay)), std::forward<F>(f),
                     std::forward<Args>(args)...);
  }
  // As submit_after_delay, due at `when`.
  template <class F, class... Args>
    requires std::invocable<std::decay_t<F>&, std::decay_t<Args>&&...>
  DelayedFuture<submit_result_t<F, Args...>> submit_at(std::chrono::steady_clock::time_point when, F&& f,
                                                       Args&&... args) {
    detail::require_callable(f, "weft::Pool::submit_at");
    using R = submit_result_t<F, Args...>;
    using State = detail::FutureTask<R, std::decay_t<F>, std::decay_t<Args>...>;
    auto state = std::make_shared<detail::TimerState>();
    // No inline counter: a waiter must not run the task before its deadline.
    auto* raw = new State(nullptr, this, std::forward<F>(f), std::forward<Args>(args)...);
    Future<R> future = detail::FutureAccess::adopt<R>(raw);
    state->future = raw;  // the queue's reference is the timer's now (its destructor drops it if never handed on)
    Timer timer = schedule_timer(std::move(state), when, "submit_at");
    return {std::move(future), std::move(timer)};
  }
  // For a coroutine (weft::Task, weft/task.hpp): `co_await pool.schedule()` suspends the coroutine and resumes it
  // as a task on one of this pool's workers, with `options` (priority; an affinity picks the worker). The
  // coroutine holds no thread meanwhile. If the pool is shut down before the task runs (refused, or dropped by
  // Shutdown::DropPending), the coroutine resumes where the pool let go of it and the co_await throws
  // weft::task_dropped. Throws weft::invalid_option here for options the pool cannot honour (an affinity past its
  // workers, a priority that is not a weft::Priority).
  //
  // Example:
  //   weft::Task<void> hop(weft::Pool& pool) {
  //     co_await pool.schedule();  // from here on, on one of pool's workers
  //     std::puts("on a worker");
  //   }
  [[nodiscard]] ScheduleAwaiter schedule(TaskOptions options = {});
  // For a coroutine: `co_await pool.sleep_for(d)` suspends the coroutine for at least `d` and resumes it as a task
  // on one of this pool's workers, as `co_await pool.schedule()` does once the time has come. The coroutine holds
  // no worker, no fiber and no thread while it sleeps: it waits as a one-shot timer of this pool (see post_after),
  // counted in PoolStats::timers_fired when due. A delay of zero or less goes through the timer at once.
  //
  // Contract:
  // - Never resumes early (steady_clock); after the co_await the coroutine runs on one of this pool's workers,
  //   whatever thread it slept on, with `options` (priority; an affinity picks the worker).
  // - A shutdown (any policy) never waits for a sleep: it drops the sleeping coroutine's timer (counted in
  //   PoolStats::timers_dropped) and resumes the coroutine there and then, on the thread running the shutdown,
  //   where the co_await throws weft::task_dropped. So does a shutdown that drops the resumption after the timer
  //   handed it over (Shutdown::DropPending: on the thread that drops it). A sleeping coroutine is never lost nor
  //   leaked: it ends through its own code, and a Task awaiting it sees the exception.
  // - A sleep asked of a pool shut down already (or whose shutdown has begun) resumes at once, on the calling
  //   thread, with weft::task_dropped; no timer was queued, so none is counted.
  // - Throws weft::invalid_option here for options the pool cannot honour (as schedule()); the co_await rethrows
  //   std::bad_alloc or std::system_error if the timer could not be queued (nothing left behind).
  //
  // Example:
  //   weft::Task<int> later(weft::Pool& pool) {
  //     co_await pool.sleep_for(std::chrono::milliseconds(10));  // no worker held for these 10 ms
  //     co_return 7;                                             // on one of pool's workers
  //   }
  template <class Rep, class Period>
  [[nodiscard]] SleepAwaiter sleep_for(std::chrono::duration<Rep, Period> delay, TaskOptions options = {});
  // As sleep_for, until `when` (a time already passed: resumes at once, through the timer).
  [[nodiscard]] SleepAwaiter sleep_until(std::chrono::steady_clock::time_point when, TaskOptions options = {});
  // Fire and forget a coroutine: runs `task` as a task on this pool, and nobody waits for it; an exception it
  // lets out goes to PoolOptions::on_error (else Pool::take_errors). The same call as weft::spawn(pool, task),
  // which it forwards to: the contract (errors, shutdown, lifetimes) is written there, in weft/sync_wait.hpp,
  // which defines this member (include it, or weft/weft.hpp, to call it).
  //
  // Example:
  //   pool.spawn(greet());  // greet() returns a weft::Task<void>
  template <class T>
  void spawn(Task<T>&& task);

  // Blocks until every accepted task has finished (tasks they post meanwhile included).
  void wait_idle();

  // Stops accepting tasks from outside the pool; Drain runs every accepted one, DropPending drops those not
  // started (running ones finish). Then joins the workers. Returns the number dropped. Idempotent: a second call
  // returns 0. Under Drain the pool's own tasks may still post, wherever they run (a worker, or a thread running
  // one itself while it waits for it), since what they post belongs to accepted work.
  std::uint64_t shutdown(Shutdown policy = Shutdown::Drain);
  // Drains for at most `timeout`, then drops what is left as DropPending does: tasks not started are dropped, and
  // tasks waiting on an Event, WaitGroup or ConditionVariable (timed or not) wake with weft::task_dropped; then
  // joins the workers once the tasks running at the deadline have returned. `drained` is false if anything was
  // left at the deadline. A timeout past what the clock can hold (hours::max(), an infinite floating-point
  // duration) drains without a deadline.
  ShutdownResult shutdown_for(std::chrono::nanoseconds timeout);
  // Any other duration: converted without overflow (the nanoseconds overload saturates the deadline).
  template <class Rep, class Period>
  ShutdownResult shutdown_for(std::chrono::duration<Rep, Period> timeout) {
    return shutdown_for(detail::clamp_to_nanoseconds(timeout));
  }

  // Number of worker threads.
  [[nodiscard]] unsigned size() const noexcept;
  // True once shutdown (or shutdown_for, or the destructor) has begun: from then on post/submit throw
  // pool_closed and try_/_for return SubmitStatus::Closed. A snapshot: a shutdown may begin right after false.
  [[nodiscard]] bool closed() const noexcept;
  // The calling thread's worker index if it is one of this pool's workers. Only workers: a thread that runs a
  // task of this pool itself while it waits gets nullopt here (see current_thread_index).
  [[nodiscard]] std::optional<unsigned> current_worker() const noexcept;
  // Like oneTBB's this_task_arena::current_thread_index(): an index of the calling thread, in
  // [0, max_thread_index()), while it runs a task of this pool (a hook of this pool included), whichever thread
  // runs it; nullopt on a thread that is not running a task of this pool (weft::parallel_for calls f directly
  // on an outside caller's thread, outside any task, for a range it does not split). Indices are unique among
  // the threads running this pool's tasks at any one moment, so per-thread state can live in an array of
  // max_thread_index() entries, each touched by one thread at a time:
  // - a worker gets its worker index, in [0, size());
  // - another thread running a task of this pool itself (a waiter in Future::get or Run::wait, a thread running
  //   a graph's roots or its own slot's tasks; a worker of another pool included) gets size() + the index of
  //   its slot in this pool, in [size(), max_thread_index()). A thread keeps its slot, and so its index, from
  //   the first task it submits or runs itself until it exits (it is not leased per wait): its index is the
  //   same for every task of this pool it runs. After it exits, another thread may get the same index.
  // A thread that can have no slot (64 other threads hold this pool's slots) never runs a task of this pool
  // itself: it waits for a worker to run it. Inside nested pools each pool answers for itself: a task of pool
  // `inner` run while a worker of `outer` waits sees inner.current_thread_index() >= inner.size() and
  // outer.current_thread_index() == that worker's index.
  //
  // Example:
  //   weft::Pool pool{weft::PoolOptions{.threads = 4}};
  //   std::vector<long> partial(pool.max_thread_index(), 0);  // one accumulator per possible thread
  //   weft::parallel_for(pool, 0, 1000, [&](int i) { partial[*pool.current_thread_index()] += i; });
  //   long total = std::accumulate(partial.begin(), partial.end(), 0L);  // 499500
  [[nodiscard]] std::optional<unsigned> current_thread_index() const noexcept;
  // One past the largest index current_thread_index() can return: size() plus the at most 64 slots for threads
  // that are not workers. Fixed for the pool's life.
  [[nodiscard]] unsigned max_thread_index() const noexcept;
  // The pool's counters (see PoolStats): one WorkerStats per worker, and the pool-wide counts. A snapshot,
  // read counter by counter while the pool runs (not one instant). Callable from any thread.
  [[nodiscard]] PoolStats stats() const;
  // Where each worker may run: one entry per worker (index in [0, size())), the OS numbers of its CPUs, as
  // weft::placement (weft/topology.hpp) chose them for PoolOptions::pinning and numa_node; empty for a worker
  // not pinned (Pinning::None without numa_node). Fixed for the pool's life.
  [[nodiscard]] std::vector<std::vector<unsigned>> placement() const;
  // Where the workers sit, for logs and bug reports: the pinning, the topology's source, and one line per worker
  // with its CPUs and, when weft knows them, their package, NUMA node, core and SMT rank, and whether it steals by
  // distance (its victims' tiers) or at random.
  [[nodiscard]] std::string describe() const;
  // The exceptions kept because PoolOptions::on_error was unset (at most 64; PoolStats::errors counts all).
  [[nodiscard]] std::vector<std::exception_ptr> take_errors();

 private:
  using Admission = detail::Admission;

  friend struct detail::PoolAccess;
  friend class SleepAwaiter;
  friend struct detail::PoolRunHere;

  // Runs fn(context) on the calling thread as one task of this pool: inside the task hooks, with the thread index
  // current_thread_index() reports, counted in no queue. Returns false without running it if this thread can have
  // no index in the pool (more outside threads than it has slots for).
  bool run_here(void (*fn)(void*) noexcept, void* context) noexcept;

  // `inline_tag`: who besides the workers may run the task (detail::InlineTag). The options by reference, here and
  // below: a TaskOptions filled in field by field and passed by value was reloaded as whole words across the
  // separate stores of its fields, a failed store-to-load forwarding (without LTO, a sizeable
  // share of a Subflow spawn's time; docs/perf-log.md).
  SubmitStatus enqueue(small_function<void()>&& task, const TaskOptions& options, Admission admission,
                       std::chrono::steady_clock::time_point deadline,
                       detail::InlineTag inline_tag = detail::kWorkersOnly);
  // A future's state, queued as itself (detail::TaskHeader). Only an accepted state becomes the pool's: on any
  // other status, or an exception, the caller still holds the queue's reference.
  SubmitStatus enqueue_state(detail::TaskHeader* state, const TaskOptions& options, Admission admission,
                             std::chrono::steady_clock::time_point deadline, detail::InlineTag inline_tag);
  // Throws pool_closed for SubmitStatus::Closed (naming `what`, the call); other statuses are the caller's. Inline,
  // with the throw out of line: every submit and post passes here.
  static void admit_or_throw(SubmitStatus status, const char* what) {
    if (status == SubmitStatus::Closed) [[unlikely]]
      throw_closed(what);
  }
  [[noreturn]] static void throw_closed(const char* what);
  // The timers' entry (scheduler/engine/timer_queue.cpp): validates state->options, queues `state` due at `when`.
  // Throws pool_closed (naming Pool::`what`) once shutdown has begun; the state is then dropped unrun.
  Timer schedule_timer(std::shared_ptr<detail::TimerState> state, std::chrono::steady_clock::time_point when,
                       const char* what);
  [[noreturn]] static void throw_bad_period(std::chrono::nanoseconds period);
  // post_bulk's errors (scheduler/engine/pool_bulk.cpp): element `index` of `count` is empty (nothing was posted);
  // the pool closed after `accepted` of `count` tasks were accepted.
  [[noreturn]] static void throw_bulk_empty(std::size_t index, std::size_t count);
  [[noreturn]] static void throw_bulk_closed(std::size_t accepted, std::size_t count);
  // True for a callable that can be empty and is (see detail::require_callable).
  template <class F>
  [[nodiscard]] static bool is_empty_callable(const F& f) noexcept {
    if constexpr (std::is_pointer_v<F> || std::is_member_pointer_v<F>) {
      return f == nullptr;
    } else if constexpr (std::is_class_v<F> && std::is_constructible_v<bool, const F&>) {
      return !static_cast<bool>(f);
    } else {
      return false;
    }
  }
  // The engine's count of tasks run inline by a waiter, which every submitted future state records. Kept here so
  // that a submit compiled in the caller's code reaches it without a call into the library.
  [[nodiscard]] detail::InlineRunCounter* inline_runs() const noexcept { return inline_runs_; }

  template <class F, class... Args>
  Submitted<submit_result_t<F, Args...>> submit_impl(TaskOptions options, Admission admission,
                                                     std::chrono::steady_clock::time_point deadline, F&& f,
                                                     Args&&... args) {
    using R = submit_result_t<F, Args...>;
    using State = detail::FutureTask<R, std::decay_t<F>, std::decay_t<Args>...>;
    // A task with an affinity must run on the pool, never inline in a waiter: it gets no inline counter.
    auto* state = new State(options.affinity ? nullptr : inline_runs(), this, std::forward<F>(f),
                            std::forward<Args>(args)...);
    Future<R> future = detail::FutureAccess::adopt<R>(state);
    // The queue's reference stays ours until the pool accepts the state: refused or thrown, it is dropped here.
    struct QueueHold {
      detail::FutureStateBase* state;
      ~QueueHold() {
        if (state != nullptr) detail::FutureStateBase::finish_queued(state, false);
      }
    } hold{state};
    const detail::InlineTag inline_tag = options.affinity ? detail::kWorkersOnly : detail::kInlineFuture;
    const SubmitStatus status = enqueue_state(state, options, admission, deadline, inline_tag);
    if (status == SubmitStatus::Accepted) {
      hold.state = nullptr;
    } else {
      future = Future<R>();
    }
    return {status, std::move(future)};
  }

  std::unique_ptr<engine::Engine> engine_;
  detail::InlineRunCounter* inline_runs_;  // the engine's (inline_runs()); set once by the constructor
};

// What Pool::schedule() returns: co_await on it moves the coroutine onto one of the pool's workers (see
// Pool::schedule). Used once, in the co_await expression.
class [[nodiscard]] ScheduleAwaiter {
 public:
  // Never ready: the coroutine always goes through the pool's queue.
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  // Queues the coroutine's resumption on the pool. If the pool refuses it, the coroutine resumes here (and
  // await_resume throws task_dropped); nothing of this object is touched once it is queued.
  void await_suspend(std::coroutine_handle<> awaiting) noexcept {
    try {
      pool_->post(detail::CoroResumer(awaiting, &dropped_), options_);
    } catch (...) {
      // Refused: the resumer's destructor has resumed the coroutine, with dropped_ set.
    }
  }
  // Throws weft::task_dropped if the pool never ran the resumption (shut down).
  void await_resume() const {
    if (dropped_) [[unlikely]]
      throw task_dropped(
          "co_await weft::Pool::schedule(): the pool was shut down before it could resume the coroutine");
  }

 private:
  friend class Pool;
  ScheduleAwaiter(Pool& pool, TaskOptions options) noexcept : pool_(&pool), options_(options) {}

  Pool* pool_;
  TaskOptions options_;
  bool dropped_ = false;
};

// What Pool::sleep_for() and Pool::sleep_until() return: co_await on it suspends the coroutine until the deadline,
// then resumes it on one of the pool's workers (see Pool::sleep_for). Used once, in the co_await expression.
class [[nodiscard]] SleepAwaiter {
 public:
  // Never ready: even a deadline already passed goes through the timer, so the coroutine always resumes on a worker.
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  // Queues a one-shot timer whose task resumes the coroutine. False (resume now, await_resume throws task_dropped)
  // if the pool no longer takes timers; rethrows a failure to queue it (std::bad_alloc, std::system_error), which
  // the co_await then throws. Once the timer is queued nothing of this object is touched here again.
  bool await_suspend(std::coroutine_handle<> awaiting) {
    auto state = std::make_shared<detail::TimerState>();
    state->options = options_;
    // Inline (no allocation, noexcept): a throw here would destroy an armed Wake and resume the coroutine early.
    static_assert(small_function<void()>::fits_inline<Wake>);
    state->work = small_function<void()>(Wake(awaiting, this));
    // `state` keeps the timer alive through a refusal, so that the wake can be disarmed before it is destroyed.
    std::shared_ptr<detail::TimerState> keep = state;
    try {
      (void)pool_->schedule_timer(std::move(state), when_, "sleep_until");
    } catch (const pool_closed&) {
      armed_ = false;  // the Wake, never handed on, must not resume the coroutine from under this call
      dropped_ = true;
      return false;
    } catch (...) {
      armed_ = false;
      throw;
    }
    return true;
  }
  // Throws weft::task_dropped if a shutdown let go of the sleeping coroutine (or refused the sleep).
  void await_resume() const {
    if (dropped_) [[unlikely]]
      throw task_dropped(
          "co_await weft::Pool::sleep_for/sleep_until: the pool was shut down before the sleep ended (or before it "
          "began)");
  }

 private:
  friend class Pool;
  SleepAwaiter(Pool& pool, std::chrono::steady_clock::time_point when, TaskOptions options) noexcept
      : pool_(&pool), when_(when), options_(options) {}

  // The timer's task: resumes the coroutine when the pool runs it. Destroyed unrun (a shutdown dropped the timer or
  // the task) while armed, it resumes the coroutine there and then with dropped_ set, as detail::CoroResumer does.
  class Wake {
   public:
    Wake(std::coroutine_handle<> handle, SleepAwaiter* awaiter) noexcept : handle_(handle), awaiter_(awaiter) {}
    Wake(Wake&& other) noexcept : handle_(std::exchange(other.handle_, {})), awaiter_(other.awaiter_) {}
    Wake& operator=(Wake&&) = delete;
    Wake(const Wake&) = delete;
    Wake& operator=(const Wake&) = delete;
    ~Wake() {
      if (!handle_ || !awaiter_->armed_) return;
      awaiter_->dropped_ = true;
      std::exchange(handle_, {}).resume();
    }
    void operator()() noexcept { std::exchange(handle_, {}).resume(); }

   private:
    std::coroutine_handle<> handle_;
    SleepAwaiter* awaiter_;
  };

  Pool* pool_;
  std::chrono::steady_clock::time_point when_;
  TaskOptions options_;
  bool armed_ = true;
  bool dropped_ = false;
};

template <class Rep, class Period>
SleepAwaiter Pool::sleep_for(std::chrono::duration<Rep, Period> delay, TaskOptions options) {
  return sleep_until(detail::deadline_after(detail::clamp_to_nanoseconds(delay)), options);
}

inline SleepAwaiter Pool::sleep_until(std::chrono::steady_clock::time_point when, TaskOptions options) {
  // The options are checked here, where the call is, rather than at the co_await (schedule_timer checks again).
  if (options.affinity && *options.affinity >= size())
    throw invalid_option(
        "weft::Pool::sleep_for/sleep_until: TaskOptions::affinity = " + std::to_string(*options.affinity) +
        ": the pool has " + std::to_string(size()) + " workers (0.." + std::to_string(size() - 1) + ")");
  if (options.priority > Priority::Low)
    throw invalid_option("weft::Pool::sleep_for/sleep_until: TaskOptions::priority = " +
                         std::to_string(static_cast<unsigned>(options.priority)) +
                         ": not a weft::Priority (High, Normal or Low)");
  return SleepAwaiter(*this, when, options);
}

inline ScheduleAwaiter Pool::schedule(TaskOptions options) {
  if (options.affinity && *options.affinity >= size())
    throw invalid_option("weft::Pool::schedule: TaskOptions::affinity = " + std::to_string(*options.affinity) +
                         ": the pool has " + std::to_string(size()) + " workers (0.." + std::to_string(size() - 1) +
                         ")");
  if (options.priority > Priority::Low)
    throw invalid_option(
        "weft::Pool::schedule: TaskOptions::priority = " + std::to_string(static_cast<unsigned>(options.priority)) +
        ": not a weft::Priority (High, Normal or Low)");
  return ScheduleAwaiter(*this, options);
}

}  // namespace weft
