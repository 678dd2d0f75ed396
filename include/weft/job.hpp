// weft::Job<T> and weft::AnyJob: the handles of TaskScope jobs and their results; weft::after(jobs...): the
// dependencies a TaskScope builder starts after (weft/task_scope.hpp includes this header).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <concepts>
#include <memory>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/job_state.hpp"
#include "weft/errors.hpp"

namespace weft {

class AnyJob;
class TaskScope;
namespace detail {
template <class T>
class JobAwaiter;
}  // namespace detail

// The handle of one job of a TaskScope and of its result: a job made from a callable returning T is a Job<T>.
// Copyable and cheap (a shared pointer to the result slot). Functions returning a Job are not [[nodiscard]]: a
// job runs whether or not its handle is kept.
//
// Contract:
// - get() returns the value (a const T& into the shared slot, valid while any copy of this Job lives, even after
//   the scope is destroyed) or nothing for Job<void>, once the job has finished: after TaskScope::wait(), or
//   from a job that runs after this one. It rethrows the job's own exception; throws weft::job_cancelled if the
//   job never ran (its run was cancelled or failed first, or the scope was destroyed unrun); throws
//   std::logic_error if the job has not run yet (scope not run, or still running) or the Job is empty.
// - ready() is true once the job returned or threw. Both may be called from any thread.
//
// Example:
//   weft::TaskScope scope{pool};
//   weft::Job<int> a = scope.submit([] { return 21; });
//   scope.run_and_wait();
//   int v = a.get();  // 21
template <class T>
class Job {
 public:
  using value_type = T;  // the job's result type (void for a job that returns nothing)

  // An empty handle, of no scope (valid() is false): get() and name() throw std::logic_error on it.
  Job() noexcept = default;

  // True if the handle was returned by a TaskScope (false if default-constructed).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // True once the job returned or threw, so that get() returns or rethrows at once; false if it has not
  // finished, never ran (get() throws weft::job_cancelled), or the handle is empty.
  [[nodiscard]] bool ready() const noexcept { return state_ != nullptr && state_->ready(); }

  // The job's value (a reference into the shared slot; nothing for Job<void>) once it finished; see the
  // contract for what it throws.
  std::conditional_t<std::is_void_v<T>, void, std::add_lvalue_reference_t<const T>> get() const {
    require_valid("get");
    state_->require_value("weft::Job::get");
    if constexpr (!std::is_void_v<T>) return state_->value();
  }

  // The job's name: NodeOptions::name, or "job <index>" (the index of its node in the scope's graph).
  [[nodiscard]] const std::string& name() const {
    require_valid("name");
    return state_->name();
  }

 private:
  friend class AnyJob;
  friend class TaskScope;
  friend class detail::JobAwaiter<T>;  // co_await job (weft/task.hpp)

  void require_valid(const char* what) const {
    if (state_ == nullptr) {
      std::string message = "weft::Job::";
      message += what;
      message += ": empty Job (default-constructed): it belongs to no scope";
      throw std::logic_error(message);
    }
  }

  std::shared_ptr<detail::JobState<T>> state_;
};

// A Job of any result type: what when_all(f) with a no-argument f and weft::after take as dependencies.
// Implicitly made from any Job<T>, so that `{a, b, c}` may mix result types.
//
// Example:
//   std::vector<weft::AnyJob> deps{scope.submit([] { return 1; }), scope.parallel_for(0, n, body)};
//   scope.when_all(deps, [] { /* after both */ });
class AnyJob {
 public:
  // An empty handle (valid() is false); as a dependency it throws weft::invalid_graph.
  AnyJob() noexcept = default;
  // Refers to the same job as `job` (shares its result slot; an empty Job gives an empty AnyJob).
  template <class T>
  AnyJob(const Job<T>& job) noexcept : state_(job.state_) {}  // NOLINT(google-explicit-constructor): on purpose

  // As Job<T>::valid(): true if it refers to a job.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // As Job<T>::ready(): true once the job returned or threw.
  [[nodiscard]] bool ready() const noexcept { return state_ != nullptr && state_->ready(); }
  // As Job<T>::get(), without the value: returns if the job finished, else throws what Job::get() would.
  void get() const {
    if (state_ == nullptr) throw std::logic_error("weft::AnyJob::get: empty job (default-constructed)");
    state_->require_value("weft::AnyJob::get");
  }

 private:
  friend class TaskScope;
  std::shared_ptr<detail::JobStateBase> state_;
};

class After;
template <class... Js>
  requires(std::convertible_to<const Js&, AnyJob> && ...)
[[nodiscard]] After after(const Js&... jobs);
template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<const R&>, AnyJob>
[[nodiscard]] After after(const R& jobs);

// The jobs a TaskScope builder waits for, made by weft::after and passed as the builder's first argument: the
// one spelling of "this job starts after those" for parallel_for, the parallel algorithms (reduce,
// transform_reduce, the scans, sort, invoke) and source. then(job, f) and when_all(jobs, f) take their jobs
// directly, since they also hand over the jobs' values.
//
// Why a leading argument, and not a member of the options or a leading braced list: the dependencies read first,
// before a body that may run for lines; the options keep their braced form (`{.name = "sum"}`) and a reduce or
// sort need not spell out its default operation to reach them; NodeOptions, which TaskGraph nodes share, gains
// no member their edges make meaningless; and a leading braced list would have to be told apart from the plain
// forms' first iterator or index, and from a braced NodeOptions, in every builder. A misplaced dependency (a
// bare `{a, b}` first, or weft::after anywhere but first) matches no builder and does not compile.
//
// Owns a copy of the handles (cheap: shared pointers), so it may be kept and passed to several builders.
// An empty or foreign job in it is refused when the builder is called: weft::invalid_graph naming the builder
// and the dependency's position.
//
// Example:
//   auto fill = scope.submit([&] { std::iota(v.begin(), v.end(), 0L); });
//   auto doubled = scope.parallel_for(weft::after(fill), v.begin(), v.end(), [](long& x) { x *= 2; });
//   std::vector<weft::AnyJob> deps{fill, doubled};
//   weft::Job<long> total = scope.parallel_reduce(weft::after(deps), v.begin(), v.end(), 0L);
class After {
 public:
  // The jobs, in the order given.
  [[nodiscard]] std::span<const AnyJob> jobs() const noexcept { return jobs_; }

 private:
  explicit After(std::vector<AnyJob> jobs) noexcept : jobs_(std::move(jobs)) {}
  template <class... Js>
    requires(std::convertible_to<const Js&, AnyJob> && ...)
  friend After after(const Js&... jobs);
  template <std::ranges::input_range R>
    requires std::convertible_to<std::ranges::range_reference_t<const R&>, AnyJob>
  friend After after(const R& jobs);

  std::vector<AnyJob> jobs_;
};

// After every one of `jobs` (Jobs of any result types, or AnyJobs): weft::after(a, b).
template <class... Js>
  requires(std::convertible_to<const Js&, AnyJob> && ...)
[[nodiscard]] After after(const Js&... jobs) {
  return After(std::vector<AnyJob>{AnyJob(jobs)...});
}

// After every job of a range of them: a std::vector<weft::AnyJob>, a std::span<const weft::AnyJob>, a
// std::vector<weft::Job<T>>. An empty range adds no dependency.
template <std::ranges::input_range R>
  requires std::convertible_to<std::ranges::range_reference_t<const R&>, AnyJob>
[[nodiscard]] After after(const R& jobs) {
  std::vector<AnyJob> all;
  if constexpr (std::ranges::sized_range<const R&>) all.reserve(std::ranges::size(jobs));
  for (const auto& job : jobs) all.emplace_back(job);
  return After(std::move(all));
}

}  // namespace weft
