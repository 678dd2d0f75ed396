// weft::detail::JobState<T>: the result slot of one TaskScope job, shared by the job's node body and every Job
// handle, so that a result outlives the scope that computed it.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/coro_wait_list.hpp"
#include "weft/errors.hpp"
#include "weft/task_graph.hpp"

namespace weft {
class Pool;
}  // namespace weft

namespace weft::detail {

// Where a one-shot scope is in its life. Every job keeps the scope's copy alive, so a Job that outlives its
// scope can still tell "skipped by a cancelled run" (finished) from "asked too early" (building, running).
enum class ScopePhase : std::uint8_t { building, running, finished };

struct ScopeShared {
  // release by the scope when it changes phase; acquire by Job::get(), which then sees every job's final
  // status, because the scope publishes `finished` only after Run::wait() returned.
  std::atomic<ScopePhase> phase{ScopePhase::building};
  // The run's state (graph/run_state.hpp), stored by TaskScope::run() before any job starts: cancel() from a
  // job reaches the run before run() has returned. Null before run().
  std::atomic<void*> live_run{nullptr};
  // Under ErrorPolicy::KeepGoing, filled by TaskScope::wait() before the scope is marked finished: for each job
  // (by node index) that was skipped, the name of the failed job it depends on (directly or not); else empty.
  std::vector<std::string> skipped_because;
  // The scope's pool (set by TaskScope's constructor): where a coroutine awaiting a job resumes if it was not
  // on a pool's task when it suspended.
  Pool* pool = nullptr;
  // Coroutines awaiting a job of the scope (weft/task.hpp), closed when the scope's run is over: a job that never
  // ran (cancelled, skipped) wakes its awaiters this way. Closed by `run_over`, which TaskScope::run() pushes on
  // its run's own list of waiters (so the run's end closes it, whether or not anybody waits for the scope).
  CoroWaitList run_end;
  struct RunOver : CoroWaiter {
    CoroWaitList* list;
    explicit RunOver(CoroWaitList& to_close) noexcept
        : CoroWaiter{nullptr, [](CoroWaiter& self) noexcept { static_cast<RunOver&>(self).list->close(); }},
          list(&to_close) {}
  };
  RunOver run_over{run_end};
};

// What every job's slot has, whatever its result type.
class JobStateBase {
 public:
  enum class Status : std::uint8_t { pending, value, error };

  explicit JobStateBase(std::shared_ptr<ScopeShared> scope) noexcept : scope_(std::move(scope)) {}
  JobStateBase(const JobStateBase&) = delete;
  JobStateBase& operator=(const JobStateBase&) = delete;
  // Closes the waiters' list, if the job never closed it (it never ran): a coroutine that awaited it was resumed
  // by its scope's run end already (its awaiter held this state until then), and what is left on the list is only
  // its entry's reference, which this releases.
  virtual ~JobStateBase() { waiters_.close_unshared(); }

  [[nodiscard]] const ScopeShared* scope() const noexcept { return scope_.get(); }
  // The scope's shared part, for a coroutine awaiting the job (weft/task.hpp); and who keeps it alive.
  [[nodiscard]] const std::shared_ptr<ScopeShared>& shared_scope() const noexcept { return scope_; }
  [[nodiscard]] Node node() const noexcept { return node_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  // Set once by the scope while it builds, before any run reads them (run() orders them before the bodies).
  void bind(Node node, std::string name) {
    node_ = node;
    name_ = std::move(name);
  }

  // True once the job returned (value) or threw (error).
  [[nodiscard]] bool ready() const noexcept { return status_.load(std::memory_order_acquire) != Status::pending; }
  [[nodiscard]] bool has_value() const noexcept { return status_.load(std::memory_order_acquire) == Status::value; }

  // Called by the job's body, once. release: whoever acquires the status sees the value or error written first.
  // Then wakes the coroutines awaiting the job (the list's close publishes the status it follows).
  void set_done() noexcept {
    status_.store(Status::value, std::memory_order_release);
    waiters_.close();
  }
  void set_error(std::exception_ptr error) noexcept {
    error_ = std::move(error);
    status_.store(Status::error, std::memory_order_release);
    waiters_.close();
  }
  // The coroutines awaiting this job (weft/task.hpp): closed when the job returned or threw; one that never ran
  // is woken through its scope's ScopeShared::run_end instead, and its list closed by the destructor.
  [[nodiscard]] CoroWaitList& waiters() noexcept { return waiters_; }

  // Returns if the job has a value; else throws what Job::get() promises: the job's own exception,
  // job_cancelled (the run is over and the job never ran), or std::logic_error (asked too early). `call` is
  // the public call the errors name ("weft::Job::get", "weft::AnyJob::get").
  void require_value(const char* call) const {
    if (check_status()) return;
    // acquire: pairs with the scope's release of `finished`, after which every status is final...
    const ScopePhase phase = scope_->phase.load(std::memory_order_acquire);
    // ...so this second look is the last word once the phase says finished.
    if (check_status()) return;
    std::string message = std::string(call) + ": job '" + name_ + "' ";
    if (phase == ScopePhase::finished) {
      const std::vector<std::string>& because = scope_->skipped_because;
      if (node_.index() < because.size() && !because[node_.index()].empty()) {
        message += "did not run: job '" + because[node_.index()] +
                   "', which it depends on, failed (ErrorPolicy::KeepGoing skips the jobs after a failed one)";
        throw job_cancelled(message);
      }
      message += "did not run: its scope's run was cancelled or failed before the job started";
      throw job_cancelled(message);
    }
    message += phase == ScopePhase::building
                   ? "has not run: its scope was not run yet (call TaskScope::run_and_wait() first)"
                   : "has not finished: its scope is still running (call TaskScope::wait() first)";
    throw std::logic_error(message);
  }

 private:
  // True if a value is there; rethrows the job's exception; false while pending.
  bool check_status() const {
    switch (status_.load(std::memory_order_acquire)) {
      case Status::value:
        return true;
      case Status::error:
        std::rethrow_exception(error_);
      case Status::pending:
        break;
    }
    return false;
  }

  std::shared_ptr<ScopeShared> scope_;
  Node node_{};
  std::string name_{};
  std::exception_ptr error_{};  // written before status_ becomes error
  std::atomic<Status> status_{Status::pending};
  CoroWaitList waiters_;
};

// The slot of a job returning T (a value) or void (only done/failed).
template <class T>
class JobState final : public JobStateBase {
  static_assert(!std::is_reference_v<T>,
                "weft::TaskScope: a job may not return a reference: return a pointer or std::reference_wrapper");

 public:
  using JobStateBase::JobStateBase;

  // Runs the job's callable once: keeps its value, or keeps its exception and rethrows it to the run (which
  // cancels the run and hands it to TaskScope::wait()).
  template <class Call>
  void execute(Call&& call) {
    try {
      if constexpr (std::is_void_v<T>) {
        std::forward<Call>(call)();
      } else {
        value_.emplace(std::forward<Call>(call)());
      }
    } catch (...) {
      set_error(std::current_exception());
      throw;
    }
    set_done();
  }

  // Precondition: has_value() (or require_value() returned).
  template <class U = T>
    requires(!std::is_void_v<U>)
  [[nodiscard]] const U& value() const noexcept {
    return *value_;
  }

 private:
  struct Nothing {};
  // Written by the body before set_done()'s release; read only after an acquire that saw `value`.
  [[no_unique_address]] std::conditional_t<std::is_void_v<T>, Nothing, std::optional<T>> value_{};
};

}  // namespace weft::detail
