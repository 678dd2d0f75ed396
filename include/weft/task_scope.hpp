// weft::TaskScope: a one-shot graph of typed jobs (submit, then, when_all, parallel_for) run on a weft::Pool.
// It builds a weft::TaskGraph and keeps each job's result in a slot its weft::Job<T> handles share.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/algorithms.hpp"
#include "weft/detail/algorithm_core.hpp"
#include "weft/detail/for_range.hpp"
#include "weft/detail/for_splitter.hpp"
#include "weft/detail/job_state.hpp"
#include "weft/detail/job_traits.hpp"
#include "weft/detail/pipeline.hpp"
#include "weft/detail/pipeline_builder.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/errors.hpp"
#include "weft/job.hpp"
#include "weft/node_options.hpp"
#include "weft/pool.hpp"
#include "weft/stream.hpp"
#include "weft/subflow.hpp"
#include "weft/task_graph.hpp"

namespace weft {

// A one-shot graph of jobs: describe the work, run it once, read the results.
//
// Contract:
// - Building (submit, then, when_all, parallel_for, ...) happens on one thread, before run(); afterwards each
//   throws weft::graph_busy. A job depends on the jobs it is given (then's job, when_all's jobs, or a leading
//   weft::after(jobs...) of the other builders) and starts when all of them finished; a Job of another scope, or
//   an empty one, as a dependency throws weft::invalid_graph naming it.
// - Every job function takes weft::NodeOptions (name, priority, affinity, concurrency; bad values throw
//   weft::invalid_option naming the call, e.g. weft::TaskScope::then, and the job); the loops (parallel_for,
//   reduce, scans) take weft::LoopOptions, the same plus the grain. A job runs once: NodeOptions::tokens other
//   than 1 is refused. For a parallel_for, `concurrency` bounds the chunks executing at once. The semaphores
//   (weft::Semaphore) are taken once per job: a parallel_for job holds them while all its chunks run. A callable
//   of the wrong shape does not compile, with a static_assert saying what it must take.
// - run() starts the run (a second run() throws graph_busy: the scope is one-shot); wait() blocks until it is
//   over (on a pool worker it runs other tasks meanwhile) and rethrows the first exception of any job, which
//   cancelled the run: jobs not started by then are skipped (their get() throws weft::job_cancelled). Run with
//   ErrorPolicy::KeepGoing (run(options)), a failed job skips only the jobs that depend on it.
//   cancel() stops a run the same way without an exception; wait() then returns RunStatus::Cancelled.
// - The destructor waits for a run in flight (never a use-after-free); an exception nobody waited for is
//   dropped then. Results stay readable through Job handles after the scope is gone.
// - Not copyable or movable; one TaskScope must not be used from two threads at once.
//
// Example:
//   weft::Pool pool;
//   weft::TaskScope scope{pool};
//   auto a = scope.submit([] { return 21; });
//   auto b = scope.then(a, [](int x) { return x * 2; });
//   auto d = scope.parallel_for(v.begin(), v.end(), [](int& x) { x *= 2; });
//   scope.when_all({a, b}, [](std::vector<int> values) { return values[0] + values[1]; /* 21 + 42 */ });
//   scope.run_and_wait();  // rethrows the first exception
//   int r = b.get();       // 42
class TaskScope : private detail::PipelineBuilder<TaskScope, Job<void>> {
  using Builder = detail::PipelineBuilder<TaskScope, Job<void>>;
  friend Builder;

 public:
  // An empty scope whose run will go to `pool`, which must outlive the scope's run.
  explicit TaskScope(Pool& pool) : pool_(&pool), shared_(std::make_shared<detail::ScopeShared>()) {
    shared_->pool = &pool;
  }
  // Waits for a run in flight (see the contract). If the scope never ran, its jobs' get() throws
  // weft::job_cancelled.
  ~TaskScope() {
    if (run_.valid()) {
      try {
        static_cast<void>(run_.wait());
      } catch (...) {  // the contract: an exception nobody waited for is dropped by the destructor
      }
      if (keep_going_) note_skipped_jobs();
    }
    mark(detail::ScopePhase::finished);
  }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

  // A job running f() (or f(Subflow&), to spawn child work its completion waits for); Job<R> carries f's result.
  // Another f does not compile, with a static_assert saying so.
  // Example: auto a = scope.submit([] { return 21; });
  template <class F>
  Job<detail::job_result_t<F>> submit(F&& f, NodeOptions options = {}) {
    static_assert(detail::JobCallable<F>,
                  "weft::TaskScope::submit(f): f must take nothing, or weft::Subflow& to spawn child work; to run "
                  "after other jobs and take their values, use then(job, f) or when_all(jobs, f)");
    if constexpr (detail::JobCallable<F>) {  // else only the static_assert's message, no errors after it
      detail::require_callable(f, "weft::TaskScope::submit");
      using R = detail::job_result_t<F>;
      using D = std::decay_t<F>;
      return add_job<R>("weft::TaskScope::submit", {}, std::move(options),
                        [f = D(std::forward<F>(f))](detail::JobState<R>& state, Subflow& sf) mutable {
                          state.execute([&]() -> R {
                            if constexpr (std::is_invocable_v<D&, Subflow&>) {
                              return f(sf);
                            } else {
                              return f();
                            }
                          });
                        });
    } else {
      return {};
    }
  }

  // A job running after `job`: f(job's value as const T&) if f takes it, else f(). Another f does not compile,
  // with a static_assert saying so.
  // Example: auto b = scope.then(a, [](int x) { return x * 2; });  scope.then(b, [] { log("b done"); });
  template <class T, class F, class Traits = detail::then_traits<std::decay_t<F>, T>>
  Job<typename Traits::result> then(const Job<T>& job, F&& f, NodeOptions options = {}) {
    static_assert(Traits::callable,
                  "weft::TaskScope::then(job, f): f must take the job's value (as const T& for a Job<T>) or "
                  "nothing (always nothing for a Job<void>)");
    if constexpr (Traits::callable) {
      detail::require_callable(f, "weft::TaskScope::then");
      using R = typename Traits::result;
      const AnyJob deps[] = {job};
      return add_job<R>("weft::TaskScope::then", deps, std::move(options),
                        [pred = job.state_, f = std::decay_t<F>(std::forward<F>(f))](detail::JobState<R>& state,
                                                                                     Subflow&) mutable {
                          if constexpr (Traits::by_value) {
                            if (!pred->has_value()) return;  // see detail::all_have_values
                            state.execute([&]() -> R { return f(pred->value()); });
                          } else {
                            state.execute([&]() -> R { return f(); });
                          }
                        });
    } else {
      return {};
    }
  }

  // A job running after every job in `jobs`, all Job<T>: f(std::vector<T>) gets their values in order, or f().
  // A braced list or a vector holds any number of jobs, so f cannot take one argument per job here: for that
  // (and for jobs of different types) pass a std::tuple, below. Another f does not compile, with a
  // static_assert saying so.
  // Example: scope.when_all({a, b}, [](std::vector<int> values) { return values[0] + values[1]; });
  template <class T, class F, class Traits = detail::when_all_traits<std::decay_t<F>, T>>
  Job<typename Traits::result> when_all(std::initializer_list<Job<T>> jobs, F&& f, NodeOptions options = {}) {
    return when_all_checked<T, Traits>(std::span<const Job<T>>(jobs.begin(), jobs.size()), std::forward<F>(f),
                                       std::move(options));
  }
  // The same over a vector of jobs.
  template <class T, class F, class Traits = detail::when_all_traits<std::decay_t<F>, T>>
  Job<typename Traits::result> when_all(const std::vector<Job<T>>& jobs, F&& f, NodeOptions options = {}) {
    return when_all_checked<T, Traits>(std::span<const Job<T>>(jobs), std::forward<F>(f), std::move(options));
  }

  // A job running f() after every job in `jobs`, whatever their result types (parallel_for jobs included).
  // f takes nothing: to take the values, pass a std::tuple (below). Another f does not compile, with a
  // static_assert saying so.
  // Example: scope.when_all({a, s, d}, [] { /* all three finished */ });
  template <class F>
  Job<typename detail::plain_result<std::decay_t<F>>::type> when_all(std::initializer_list<AnyJob> jobs, F&& f,
                                                                     NodeOptions options = {}) {
    return when_all_any_checked(std::span<const AnyJob>(jobs.begin(), jobs.size()), std::forward<F>(f),
                                std::move(options));
  }
  // The same over a vector of AnyJobs.
  template <class F>
  Job<typename detail::plain_result<std::decay_t<F>>::type> when_all(const std::vector<AnyJob>& jobs, F&& f,
                                                                     NodeOptions options = {}) {
    return when_all_any_checked(std::span<const AnyJob>(jobs), std::forward<F>(f), std::move(options));
  }

  // A job running after the jobs of a tuple of Jobs of any types: f(const T1&, const T2&, ...) gets the values
  // of the non-void ones in order (Job<void> contributes no argument), or f() takes none. Another f does not
  // compile, with a static_assert saying so.
  // Example:
  //   scope.when_all(std::tuple{a, s}, [](int x, const std::string& y) { return x + static_cast<int>(y.size()); });
  template <class... Js, class F,
            class Traits = detail::apply_traits<std::decay_t<F>, detail::values_tuple_t<detail::job_value_t<Js>...>>>
    requires(detail::is_job_v<Js> && ...)
  Job<typename Traits::result> when_all(const std::tuple<Js...>& jobs, F&& f, NodeOptions options = {}) {
    static_assert(Traits::callable,
                  "weft::TaskScope::when_all(std::tuple{jobs...}, f): f must take the values of the jobs that have "
                  "one, in order (const T1&, const T2&, ...; a Job<void> adds no argument), or nothing");
    if constexpr (Traits::callable) {
      return when_all_tuple<Traits>(jobs, std::forward<F>(f), std::move(options));
    } else {
      return {};
    }
  }

  // A job running f(i) for every i in [first, last) (or f(lo, hi) per chunk), split over the pool; see
  // weft::parallel_for for f and the range. LoopOptions: the job's options and the loop's grain (0: automatic
  // partitioning); LoopOptions::concurrency bounds the chunks executing at once.
  // Example: auto e = scope.parallel_for(0, 1000, [&](int i) { out[i] = i * i; }, {.grain = 100});
  template <std::integral I, std::integral J, class F>
    requires IndexBody<std::decay_t<F>, std::common_type_t<I, J>>
  Job<void> parallel_for(I first, J last, F&& f, LoopOptions options = {}) {
    return index_for_job("weft::TaskScope::parallel_for", {}, first, last, std::forward<F>(f), std::move(options));
  }
  // The same over random-access iterators: f(*it) per element, or f(b, e) per chunk. f gets elements, never
  // indices: an f taking an integer of another type than the elements does not compile (see weft::parallel_for).
  // Example: auto d = scope.parallel_for(v.begin(), v.end(), [](int& x) { x *= 2; });
  template <std::random_access_iterator It, class F>
    requires ElementBody<std::decay_t<F>, It>
  Job<void> parallel_for(It first, It last, F&& f, LoopOptions options = {}) {
    return element_for_job("weft::TaskScope::parallel_for", {}, std::move(first), std::move(last), std::forward<F>(f),
                           std::move(options));
  }
  // Either parallel_for, starting after every job of `deps` (see weft::After: the one way of giving any builder
  // its dependencies).
  // Example: auto d = scope.parallel_for(weft::after(fill), v.begin(), v.end(), [](int& x) { x *= 2; });
  template <std::integral I, std::integral J, class F>
    requires IndexBody<std::decay_t<F>, std::common_type_t<I, J>>
  Job<void> parallel_for(const After& deps, I first, J last, F&& f, LoopOptions options = {}) {
    return index_for_job("weft::TaskScope::parallel_for", deps.jobs(), first, last, std::forward<F>(f),
                         std::move(options));
  }
  template <std::random_access_iterator It, class F>
    requires ElementBody<std::decay_t<F>, It>
  Job<void> parallel_for(const After& deps, It first, It last, F&& f, LoopOptions options = {}) {
    return element_for_job("weft::TaskScope::parallel_for", deps.jobs(), std::move(first), std::move(last),
                           std::forward<F>(f), std::move(options));
  }

  // Parallel algorithms as jobs: each is the blocking algorithm of weft/algorithms.hpp (same contract, same
  // partitioning, same static_asserts on the callables) run as one job of this scope; its Job carries the result
  // (Job<void> for scans, sort and invoke), so then() and when_all() compose with it. The callables are copied
  // into the job; the iterators are taken when the job is added, so the ranges must stay valid (no job may
  // reallocate them: give the jobs that fill them as dependencies, weft::after, to run after them), and
  // untouched by other jobs, until the job finished. An exception of a callable fails the job with it and
  // cancels the run. Reduce and scans take LoopOptions (grain; concurrency bounds the blocks executing at once);
  // sort and invoke take NodeOptions and refuse NodeOptions::concurrency (weft::invalid_option naming the call).
  // Each has a form taking a weft::After first, which starts after those jobs.
  //
  // Example:
  //   weft::Job<long> sum = scope.parallel_reduce(v.begin(), v.end(), 0L);
  //   weft::Job<double> mean = scope.then(sum, [n](long s) { return double(s) / double(n); });
  //   scope.parallel_sort(w.begin(), w.end(), std::greater<>(), {.name = "sort w"});
  //   scope.parallel_invoke([&] { a = left(); }, [&] { b = right(); });
  //   scope.parallel_sort(weft::after(sum), w.begin(), w.end());
  //   scope.parallel_reduce(v.begin(), v.end(), 0L, std::plus<>(), {.name = "sum", .grain = 4096});
  template <std::random_access_iterator It, class T, class Op = std::plus<>>
  Job<T> parallel_reduce(It first, It last, T init, Op op = {}, LoopOptions options = {}) {
    return reduce_job("weft::TaskScope::parallel_reduce", {}, first, last, std::move(init), std::move(op),
                      std::move(options));
  }
  template <std::random_access_iterator It, class T, class Op = std::plus<>>
  Job<T> parallel_reduce(const After& deps, It first, It last, T init, Op op = {}, LoopOptions options = {}) {
    return reduce_job("weft::TaskScope::parallel_reduce", deps.jobs(), first, last, std::move(init), std::move(op),
                      std::move(options));
  }
  template <std::random_access_iterator It, class T, class Op, class Tr>
  Job<T> parallel_transform_reduce(It first, It last, T init, Op reduce, Tr transform, LoopOptions options = {}) {
    return transform_reduce_job("weft::TaskScope::parallel_transform_reduce", {}, first, last, std::move(init),
                                std::move(reduce), std::move(transform), std::move(options));
  }
  template <std::random_access_iterator It, class T, class Op, class Tr>
  Job<T> parallel_transform_reduce(const After& deps, It first, It last, T init, Op reduce, Tr transform,
                                   LoopOptions options = {}) {
    return transform_reduce_job("weft::TaskScope::parallel_transform_reduce", deps.jobs(), first, last, std::move(init),
                                std::move(reduce), std::move(transform), std::move(options));
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class Op = std::plus<>>
  Job<void> parallel_inclusive_scan(It first, It last, Out out, Op op = {}, LoopOptions options = {}) {
    return inclusive_scan_job("weft::TaskScope::parallel_inclusive_scan", {}, first, last, out, std::move(op),
                              std::move(options));
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class Op = std::plus<>>
  Job<void> parallel_inclusive_scan(const After& deps, It first, It last, Out out, Op op = {},
                                    LoopOptions options = {}) {
    return inclusive_scan_job("weft::TaskScope::parallel_inclusive_scan", deps.jobs(), first, last, out, std::move(op),
                              std::move(options));
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class T, class Op = std::plus<>>
  Job<void> parallel_exclusive_scan(It first, It last, Out out, T init, Op op = {}, LoopOptions options = {}) {
    return exclusive_scan_job("weft::TaskScope::parallel_exclusive_scan", {}, first, last, out, std::move(init),
                              std::move(op), std::move(options));
  }
  template <std::random_access_iterator It, std::random_access_iterator Out, class T, class Op = std::plus<>>
  Job<void> parallel_exclusive_scan(const After& deps, It first, It last, Out out, T init, Op op = {},
                                    LoopOptions options = {}) {
    return exclusive_scan_job("weft::TaskScope::parallel_exclusive_scan", deps.jobs(), first, last, out,
                              std::move(init), std::move(op), std::move(options));
  }
  template <std::random_access_iterator It, class Comp = std::less<>>
  Job<void> parallel_sort(It first, It last, Comp comp = {}, NodeOptions options = {}) {
    return sort_job("weft::TaskScope::parallel_sort", {}, first, last, std::move(comp), std::move(options));
  }
  template <std::random_access_iterator It, class Comp = std::less<>>
  Job<void> parallel_sort(const After& deps, It first, It last, Comp comp = {}, NodeOptions options = {}) {
    return sort_job("weft::TaskScope::parallel_sort", deps.jobs(), first, last, std::move(comp), std::move(options));
  }
  // parallel_invoke takes its options, if any, before the callables: scope.parallel_invoke({.name = "halves"}, f,
  // g), and scope.parallel_invoke(weft::after(a), {.name = "halves"}, f, g).
  template <class... Fs>
    requires(sizeof...(Fs) > 0 && (!std::same_as<std::remove_cvref_t<Fs>, NodeOptions> && ...) &&
             (!std::same_as<std::remove_cvref_t<Fs>, After> && ...))
  Job<void> parallel_invoke(Fs&&... fs) {
    return invoke_job("weft::TaskScope::parallel_invoke", {}, NodeOptions{}, std::forward<Fs>(fs)...);
  }
  template <class... Fs>
  Job<void> parallel_invoke(NodeOptions options, Fs&&... fs) {
    return invoke_job("weft::TaskScope::parallel_invoke", {}, std::move(options), std::forward<Fs>(fs)...);
  }
  template <class... Fs>
    requires(sizeof...(Fs) > 0 && (!std::same_as<std::remove_cvref_t<Fs>, NodeOptions> && ...))
  Job<void> parallel_invoke(const After& deps, Fs&&... fs) {
    return invoke_job("weft::TaskScope::parallel_invoke", deps.jobs(), NodeOptions{}, std::forward<Fs>(fs)...);
  }
  template <class... Fs>
  Job<void> parallel_invoke(const After& deps, NodeOptions options, Fs&&... fs) {
    return invoke_job("weft::TaskScope::parallel_invoke", deps.jobs(), std::move(options), std::forward<Fs>(fs)...);
  }
  // Pipelines: a source, then stages, then a sink, each item flowing through them as soon as it is produced
  // (see weft::Stream and weft::StageOptions for the bound on items alive, overflow and order).
  // - The source is called serially until it returns std::nullopt. Its pipeline is one job of the scope: it
  //   starts when the source's dependencies (source(weft::after(jobs...), f)) finished, and the Job<void> that
  //   sink() returns finishes when the last item left the sink, so other jobs may follow it (then, when_all).
  // - A stage's f takes an item (by value, T&& or const T&) and returns the next stage's item, or a
  //   std::optional of it (std::nullopt filters the item out). A fan_out stage's f returns a range (a
  //   std::vector, say) whose elements go on as separate items. A sink's f takes an item and returns nothing.
  // - Items are moved, never copied: move-only items (std::unique_ptr) work.
  // - A fan_out stage's range may refer to the item (a view of it, taken as const T&): the item lives until
  //   the range is used up.
  // - The first exception of a stage (or weft::inbox_full from an Overflow::Fail stage) stops the source,
  //   destroys the items in flight, fails the sink's job with it and cancels the run (wait() rethrows it); a
  //   cancelled run stops the pipeline the same way, and its sink's job throws weft::job_cancelled.
  // - Each stream feeds exactly one stage (to feed several, fork it: broadcast, split; branches meet again in a
  //   join, join_by_key or merge); a stream of another scope, or one already consumed, throws
  //   weft::invalid_graph; run() throws invalid_graph if a pipeline has no sink. Bad options throw
  //   weft::invalid_option naming the call and the stage.
  //
  // Example:
  //   auto lines = scope.source([&]() -> std::optional<std::string> { return next_line(in); });
  //   auto words = scope.fan_out(lines, [](std::string s) { return split(s); }, {.concurrency = 2});
  //   auto longs = scope.stage(words, [](std::string w) -> std::optional<std::string> {
  //     if (w.size() > 8) return w;
  //     return std::nullopt;
  //   });
  //   auto done = scope.sink(longs, [&](const std::string& w) { out << w << '\n'; }, {.order = weft::Order::Input});
  //   scope.then(done, [&] { out.flush(); });

  // The start of a pipeline: f() -> std::optional<T>, called serially until it returns std::nullopt; or
  // f(std::size_t index), given the item's number (0, 1, ...). To run one pipeline many times, see
  // weft::StreamGraph (weft/stream_graph.hpp).
  template <class F>
  auto source(F&& f, StageOptions options = {}) {
    return add_source(std::span<const AnyJob>(), std::forward<F>(f), std::move(options));
  }
  // A source that starts after every job of `deps` (see weft::After).
  // Example: auto values = scope.source(weft::after(fill), [&]() -> std::optional<long> { return next(); });
  template <class F>
  auto source(const After& deps, F&& f, StageOptions options = {}) {
    return add_source(deps.jobs(), std::forward<F>(f), std::move(options));
  }
  // A stage: f(item) -> U, or std::optional<U> to filter; the result is a Stream<U>.
  using Builder::stage;
  // A fan-out stage: f(item) -> a range; each element goes on as an item of the resulting Stream.
  using Builder::fan_out;
  // The end of a pipeline (or of one branch of it): f(item) for every item. The Job<void> finishes when the
  // whole pipeline did: with forks, when the last item has left every sink (each sink returns the same job).
  using Builder::sink;
  // A sequencer (oneTBB's sequencer_node; Order::Input generalised to a key of the user's): key(item) (taking a
  // const T&, returning an integer) is the item's sequence number, and the items go on in that order: 0, 1, 2, ...
  // from the start of the run, each held until every smaller key has passed. The stage hands items on one at a
  // time (concurrency 1), numbered by their keys, so Order::Input stages after it follow the keys. The items held
  // are alive items, within the pipeline's bound (see weft::StageOptions; the stage's capacity adds to it as any
  // stage's does): keys far from the order the items come in can fill it. Errors fail the run, naming the stage,
  // the pipeline and the key: a key that comes twice, or after its turn, with std::out_of_range at once (so does a
  // negative key); a key that never came (an item filtered out or dropped before the stage leaves its key
  // missing) with weft::unmatched_items once the source ended; items held that fill the room the missing key's
  // item needs with weft::would_deadlock; Overflow::Fail with weft::inbox_full once more than `capacity` wait. The
  // key function's exception fails the run as a stage's does. Refused with weft::invalid_option: a concurrency
  // other than 1, Overflow::Drop (a dropped item's key would be missing), Order::Input.
  // Example: auto ordered = scope.sequence(results, [](const Result& r) { return r.index; }, {.name = "reorder"});
  using Builder::sequence;
  // A priority buffer (oneTBB's priority_queue_node): an Order::Any stage that passes items on unchanged, except
  // that the items waiting for it leave highest first by less(a, b) (taking two const T&; true if a ranks below b,
  // as std::priority_queue's comparison), not in the order they came. Items wait only while the stage's
  // `concurrency` slots are taken, so the buffer ranks anything only when what follows holds it back: put it before
  // a slow stage of a small capacity, and give the buffer the capacity (items beyond it act by `overflow`, as any
  // stage's). Items leave numbered anew, in the order they leave (Order::Input stages after it follow that).
  // The comparison runs under the stage's lock: keep it cheap; its exception fails the run. Order::Input is
  // refused with weft::invalid_option.
  // Example:
  //   auto by_rank = [](const Request& a, const Request& b) { return a.rank < b.rank; };
  //   auto urgent_first = scope.priority_buffer(requests, by_rank, {.capacity = 64});
  using Builder::priority_buffer;
  // A fork stage that gives every item to N branches: returns N streams, each to be consumed by one stage;
  // branch j < N - 1 gets a copy of each item (T must be copyable), branch N - 1 the item itself. `in` is
  // consumed: giving it to another stage throws weft::invalid_graph. Each branch gets the items in the order
  // the fork took them (a serial fork, the default, with Order::Input: the order of `in`). The slowest branch
  // bounds the pipeline: the fork hands out an item's copies only while the branches' shared budget has room
  // (see docs/pipelines.md). options.concurrency/capacity/order/overflow act as for any stage.
  // Example: auto [left, right] = scope.broadcast<2>(values, {.name = "tee"});
  using Builder::broadcast;
  // A fork stage that gives each item to exactly one of N branches, in turn (round-robin: item k of the fork to
  // branch k mod N, k counted in the order the fork takes them). Items are moved, never copied.
  // Example: auto [even, odd] = scope.split<2>(jobs);
  // A fork stage that gives each item to branch route(item) (route takes a const T& and returns an integer in
  // 0 .. N - 1). Another value fails the run with std::out_of_range naming the stage, the pipeline and the value.
  // Example: auto [small, large] = scope.split<2>(files, [](const File& f) { return f.size > 1 << 20 ? 1 : 0; });
  using Builder::split;
  // A join by position: the n-th item of each stream (in the order its fork stage or source handed them out)
  // make the n-th tuple, as oneTBB's join_node<queueing> when every branch keeps its order; the tuples go on in
  // the order they are completed. The streams must come from one source (branches of its forks); an item
  // filtered out or dropped on one branch takes its partners with it (counted in RunStats::dropped_by_stage
  // under the join). Inputs that end unequally fail the run with weft::unmatched_items naming the join and the
  // items left on each input. The item types must be nothrow move constructible.
  // Example: auto pairs = scope.join(std::tuple{squares, cubes}, {.name = "pair"});
  using Builder::join;
  // A join by key: one item of each stream with equal keys (key(item), called on items of every stream, perhaps
  // on several at once) make a tuple, as oneTBB's join_node<key_matching>; several items of one stream with one
  // key are matched in their arrival order. Items still waiting for a partner when the inputs end fail the run
  // with weft::unmatched_items; waiting items count against the pipeline's bound (see docs/pipelines.md).
  // Example: auto orders = scope.join_by_key(std::tuple{heads, bodies}, [](const auto& part) { return part.id; });
  using Builder::join_by_key;
  // A merge: the items of every stream (of one source) go on as one stream, in the order they arrive. An empty
  // list of streams throws weft::invalid_graph.
  // Example: auto all = scope.merge({left, right}, {.name = "both"});
  using Builder::merge;

  // Starts the run. Throws graph_busy if the scope already ran (one-shot), else what TaskGraph::run throws
  // (pool_closed, invalid_option for an affinity past the pool's workers): the jobs then never run.
  void run() { run(RunOptions{}); }
  // The same with run options (see weft::RunOptions). Under ErrorPolicy::KeepGoing a failed job does not cancel
  // the run: only the jobs depending on it (directly or not) are skipped, and their get() throws
  // weft::job_cancelled naming the failed job; wait() still rethrows the first exception, at the end.
  // Example: scope.run_and_wait({.on_error = weft::ErrorPolicy::KeepGoing});
  void run(RunOptions options);
  // Waits for the run and rethrows its first exception (again on every call); else says how it ended.
  // Throws std::logic_error before run(), and weft::would_deadlock from inside the run (one of its jobs, a
  // subflow child of one, a pipeline's source, stage or sink): the run could not end while it waits. A refused
  // wait changes nothing: the scope keeps running, and its jobs' get() still says so.
  RunStatus wait();
  // run() then wait().
  RunStatus run_and_wait() {
    run();
    return wait();
  }
  // run(options) then wait().
  RunStatus run_and_wait(RunOptions options) {
    run(options);
    return wait();
  }
  // No job starts after this; running ones finish. Does nothing before run() or after the run.
  void cancel() noexcept {
    // Also from a job, possibly before run() has returned: through the state run() stored before any job
    // started (seq_cst: see GraphImpl::run). Null before run(): nothing to do.
    if (void* live = shared_->live_run.load(std::memory_order_seq_cst)) detail::GraphAccess::cancel_live(live);
  }

  // Jobs added so far.
  [[nodiscard]] std::size_t size() const noexcept { return graph_.size(); }
  // Writes the scope's jobs and their dependencies in Graphviz DOT, as TaskGraph::dump does (e.g. for
  // `dot -Tsvg`): one node per job, labelled with its name (NodeOptions::name, else "job <index>"; a pipeline is
  // one job, named by its source's options or "pipeline <index>") and its non-default options, and an edge from
  // each job to every job that waits for it. Before or after run(), from the thread that builds the scope.
  // Example:
  //   weft::TaskScope scope{pool};
  //   auto load = scope.submit([] { return 1; }, weft::NodeOptions{.name = "load"});
  //   auto parse = scope.then(load, [](int x) { return x + 1; }, weft::NodeOptions{.name = "parse"});
  //   std::ostringstream dot;
  //   scope.dump(dot);  // digraph weft { n0 [label="load"]; n1 [label="parse"]; n0 -> n1; }
  void dump(std::ostream& out) const { graph_.dump(out); }
  // The run's statistics (see RunStats); empty before run().
  [[nodiscard]] RunStats stats() const { return run_.valid() ? run_.stats() : RunStats{}; }
  // The pool the scope runs on (given to the constructor).
  [[nodiscard]] Pool& pool() const noexcept { return *pool_; }

 private:
  // The NodeOptions of a loop job: LoopOptions less its grain.
  static NodeOptions node_options(LoopOptions&& options) {
    NodeOptions node;
    node.name = std::move(options.name);
    node.priority = options.priority;
    node.affinity = options.affinity;
    node.concurrency = options.concurrency;
    node.semaphores = std::move(options.semaphores);
    return node;
  }
  template <std::integral I, std::integral J, class F>
  Job<void> index_for_job(const char* who, std::span<const AnyJob> deps, I first, J last, F&& f, LoopOptions options) {
    detail::require_callable(f, who);
    using C = std::common_type_t<I, J>;
    const C lo = detail::common_index<I, J>(first, "first", who);
    const C hi = detail::common_index<J, I>(last, "last", who);
    const std::size_t grain = options.grain;
    return add_for_job(who, deps, detail::IndexRange<C, std::decay_t<F>>(lo, std::forward<F>(f)),
                       detail::index_count(lo, hi), node_options(std::move(options)), grain);
  }
  template <std::random_access_iterator It, class F>
  Job<void> element_for_job(const char* who, std::span<const AnyJob> deps, It first, It last, F&& f,
                            LoopOptions options) {
    detail::require_callable(f, who);
    const std::size_t n = detail::element_count(first, last, who);
    const std::size_t grain = options.grain;
    return add_for_job(who, deps, detail::ElementRange<It, std::decay_t<F>>(std::move(first), std::forward<F>(f)), n,
                       node_options(std::move(options)), grain);
  }
  // The source of a pipeline, after `deps` (weft/detail/task_scope_pipeline.hpp).
  template <class F>
  auto add_source(std::span<const AnyJob> deps, F&& f, StageOptions options);
  // The one check of f for both when_all overloads over AnyJobs, as when_all_checked below.
  template <class F>
  Job<typename detail::plain_result<std::decay_t<F>>::type> when_all_any_checked(std::span<const AnyJob> jobs, F&& f,
                                                                                 NodeOptions options) {
    static_assert(std::invocable<std::decay_t<F>&>,
                  "weft::TaskScope::when_all(jobs, f) over jobs of different result types (or AnyJobs): f must take "
                  "nothing. To take their values, pass a tuple: "
                  "when_all(std::tuple{a, b}, [](const A& x, const B& y) {...})");
    if constexpr (std::invocable<std::decay_t<F>&>) {
      return when_all_any(jobs, std::forward<F>(f), std::move(options));
    } else {
      return {};
    }
  }
  // The one check of f for both when_all overloads over Job<T>s of one type: a clear static_assert, and no
  // follow-on errors from the body.
  template <class T, class Traits, class F>
  Job<typename Traits::result> when_all_checked(std::span<const Job<T>> jobs, F&& f, NodeOptions options) {
    static_assert(Traits::callable,
                  "weft::TaskScope::when_all(jobs, f) over Job<T>s of one type (a braced list or a std::vector): "
                  "f must take std::vector<T> (their values, in order) or nothing. To take one argument per job, or "
                  "jobs of different types, pass a tuple: "
                  "when_all(std::tuple{a, b}, [](const A& x, const B& y) {...})");
    if constexpr (Traits::callable) {
      return when_all_same<T, Traits>(jobs, std::forward<F>(f), std::move(options));
    } else {
      return {};
    }
  }
  template <class T, class Traits, class F>
  Job<typename Traits::result> when_all_same(std::span<const Job<T>> jobs, F&& f, NodeOptions options);
  template <class Traits, class... Js, class F>
  Job<typename Traits::result> when_all_tuple(const std::tuple<Js...>& jobs, F&& f, NodeOptions options);
  template <class F>
  Job<typename detail::plain_result<std::decay_t<F>>::type> when_all_any(std::span<const AnyJob> jobs, F&& f,
                                                                         NodeOptions options);
  // A job whose body is core(Subflow&) -> detail::Outcome<T> (an algorithm of detail/algorithm_core.hpp);
  // Job<void> for T = detail::Unit.
  template <class T, class Core>
  Job<detail::unit_to_void_t<T>> add_algorithm_job(const char* who, std::span<const AnyJob> deps, NodeOptions options,
                                                   Core core);
  // The algorithm jobs (weft/detail/task_scope_algorithms.hpp); `who` is the public call, named by every error.
  template <class It, class T, class Op>
  Job<T> reduce_job(const char* who, std::span<const AnyJob> deps, It first, It last, T init, Op op,
                    LoopOptions options);
  template <class It, class T, class Op, class Tr>
  Job<T> transform_reduce_job(const char* who, std::span<const AnyJob> deps, It first, It last, T init, Op reduce,
                              Tr transform, LoopOptions options);
  template <class It, class Out, class Op>
  Job<void> inclusive_scan_job(const char* who, std::span<const AnyJob> deps, It first, It last, Out out, Op op,
                               LoopOptions options);
  template <class It, class Out, class T, class Op>
  Job<void> exclusive_scan_job(const char* who, std::span<const AnyJob> deps, It first, It last, Out out, T init, Op op,
                               LoopOptions options);
  template <class It, class Comp>
  Job<void> sort_job(const char* who, std::span<const AnyJob> deps, It first, It last, Comp comp, NodeOptions options);
  template <class... Fs>
  Job<void> invoke_job(const char* who, std::span<const AnyJob> deps, NodeOptions options, Fs&&... fs);
  void require_no_concurrency(const char* who, const NodeOptions& options) const;
  template <class Body>
  Job<void> add_for_job(const char* who, std::span<const AnyJob> deps, Body body, std::size_t n, NodeOptions options,
                        std::size_t grain);
  // Adds one node whose body is make(state, subflow), after `deps`; the heart of every job function. `who` is
  // the public call ("weft::TaskScope::then"), which every error names.
  template <class R, class Make>
  Job<R> add_job(const char* who, std::span<const AnyJob> deps, NodeOptions options, Make make);

  // What detail::PipelineBuilder asks of its owner (see weft/detail/pipeline_builder.hpp).
  static constexpr char kPipelineOwner[] = "weft::TaskScope";
  static constexpr const char* kForeignStream = "another TaskScope: a stage may only consume streams of its own scope";
  // Throws graph_busy, naming `who`, once the scope has run.
  void require_building(const char* who) const;
  [[nodiscard]] bool owns(const detail::Pipeline& pipeline) const noexcept { return pipeline.scope() == shared_.get(); }
  // A pipeline for a new source, named by options.name, else "pipeline <job index>".
  std::shared_ptr<detail::Pipeline> new_pipeline(const char* who, const StageOptions& options);
  static Job<void> sunk(const std::shared_ptr<detail::Pipeline>& pipeline) { return pipeline->job; }
  // KeepGoing, once the run is over: fills shared_->skipped_because from the run's outcomes.
  void note_skipped_jobs() noexcept;
  void check_dependency(const AnyJob& dep, std::size_t position, const char* who) const;
  std::string job_name(const NodeOptions& options) const;
  void mark(detail::ScopePhase phase) noexcept {
    // release: a Job that acquires `finished` sees every job's final status (written before Run::wait returned).
    shared_->phase.store(phase, std::memory_order_release);
  }

  Pool* pool_;
  std::shared_ptr<detail::ScopeShared> shared_;  // shared with every job: where the one-shot scope is in its life
  TaskGraph graph_;
  Run run_;
  std::exception_ptr start_error_;  // what run() threw, rethrown by wait()
  bool keep_going_ = false;         // run with ErrorPolicy::KeepGoing: wait() records which jobs were skipped
  // The pipelines begun by source(); run() refuses one without a sink.
  std::vector<std::shared_ptr<detail::Pipeline>> pipelines_;
};

namespace detail {
// Pool::submit of a callable taking Subflow& (declared in weft/pool.hpp): a plain pool task that runs f as the
// one job of a TaskScope and waits for the scope, so f's children are joined (and their first exception
// rethrown) before the task's future is ready. The result is kept in the task's frame, not in the Job (whose
// get() only lends it), so a move-only result moves out.
template <class F>
struct SubflowSubmit {
  using R = std::invoke_result_t<F&, Subflow&>;

  template <class G>
  static Future<R> submit(Pool& pool, G&& f, TaskOptions options) {
    return pool.submit_with(options, [&pool, options, f = F(std::forward<G>(f))]() mutable -> R {
      TaskScope scope(pool);
      // The body runs as the scope's job, with the task's priority and affinity: on the worker the task asked
      // for (that worker is the one waiting here, so it takes the job from its own mailbox).
      NodeOptions node;
      node.priority = options.priority;
      node.affinity = options.affinity;
      if constexpr (std::is_void_v<R>) {
        (void)scope.submit([&f](Subflow& sf) { std::invoke(f, sf); }, std::move(node));
        (void)scope.run_and_wait();  // rethrows the first exception of f or of a child
      } else {
        std::optional<R> result;
        (void)scope.submit([&f, &result](Subflow& sf) { result.emplace(std::invoke(f, sf)); }, std::move(node));
        (void)scope.run_and_wait();
        return std::move(*result);
      }
    });
  }
};
}  // namespace detail

}  // namespace weft

#include "weft/detail/task_scope_algorithms.hpp"
#include "weft/detail/task_scope_impl.hpp"
#include "weft/detail/task_scope_pipeline.hpp"
