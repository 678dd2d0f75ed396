// weft::when_all, when_any and when_all_settled over weft::Task: run Tasks in parallel on the pool of the
// coroutine that awaits them, and give every value, the first to end, or every outcome. Each has a variadic form
// (a tuple, or a variant, of the members' values) and a form over a std::vector of Tasks of one type. The same
// combinators over weft::Future are in weft/when.hpp; sync_wait over these awaitables in weft/sync_wait.hpp.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <array>
#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "weft/detail/coro_resumer.hpp"
#include "weft/pool.hpp"
#include "weft/task.hpp"
#include "weft/when.hpp"

namespace weft {

namespace detail {

template <class T>
using when_all_value_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
when_all_value_t<T> take_when_all_value(Task<T>& task) {
  if constexpr (std::is_void_v<T>) {
    TaskAccess::handle(task).promise().take_result();
    return {};
  } else {
    return TaskAccess::handle(task).promise().take_result();
  }
}

// Starts a member somewhere other than this thread's next instruction: as a task of `pool` (the awaiting
// coroutine's), or, awaited from no pool's task, here and now, until the member first suspends.
inline void start_elsewhere(Pool* pool, std::coroutine_handle<> member) noexcept {
  if (pool == nullptr) {
    member.resume();
    return;
  }
  try {
    pool->post(CoroResumer(member, nullptr));
  } catch (...) {
    // Refused (shut down): the resumer's destructor has run the member here.
  }
}

// Checks every Task of a range form, naming the index of the first that cannot start.
template <class T>
void require_unstarted_all(const std::vector<Task<T>>& tasks, const char* what) {
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    try {
      TaskAccess::require_unstarted(tasks[i], what);
    } catch (const std::logic_error& error) {
      throw std::logic_error(std::string(error.what()) + " (the Task at index " + std::to_string(i) + ")");
    }
  }
}

}  // namespace detail

// The awaitable weft::when_all(tasks...) returns: co_await on it runs every Task, in parallel on the pool whose
// task is awaiting it, and gives a std::tuple of their values (std::monostate for a Task<void>).
//
// Contract:
// - Lazily started, as a Task: nothing runs until it is awaited, once (again throws std::logic_error).
// - The first Task runs on the awaiting thread (symmetric transfer); each other one is queued as a task on the
//   pool whose task (or whose inline run) is awaiting. Awaited from no pool's task (a coroutine that sync_wait
//   started on a plain thread, before its first suspension), the others start one after another on that thread
//   and run until each first suspends.
// - The awaiting coroutine resumes once every Task ended, on the thread of the last one to end.
// - If some Tasks threw, the co_await rethrows the exception of the first of them in argument order, after every
//   Task ended; the other exceptions are dropped.
template <class... T>
class [[nodiscard]] WhenAll {
 public:
  // The tasks to run; each must be valid and never started (checked when awaited).
  explicit WhenAll(Task<T>&&... tasks) noexcept : tasks_(std::move(tasks)...) {}
  // Takes over other's Tasks (before it is awaited; moving a started one throws std::logic_error).
  // Not noexcept: moving one that is being awaited is a bug in the caller, reported rather than terminating.
  WhenAll(WhenAll&& other) : tasks_(std::move(other.tasks_)) {  // NOLINT(performance-noexcept-move-constructor)
    if (other.started_) throw std::logic_error("weft::when_all: moved while awaited");
  }
  WhenAll& operator=(WhenAll&&) = delete;
  WhenAll(const WhenAll&) = delete;
  WhenAll& operator=(const WhenAll&) = delete;
  ~WhenAll() = default;

  [[nodiscard]] bool await_ready() {
    if (started_) throw std::logic_error("weft::when_all: awaited already (it runs its Tasks once)");
    std::apply([](const Task<T>&... tasks) { (detail::TaskAccess::require_unstarted(tasks, "weft::when_all"), ...); },
               tasks_);
    return sizeof...(T) == 0;
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    started_ = true;
    join_.parent = awaiting;
    join_.remaining.store(sizeof...(T), std::memory_order_relaxed);  // published by the queueing of each member
    std::apply(
        [awaiting](Task<T>&... tasks) {
          (detail::TaskAccess::handle(tasks).promise().inherit_stop_token(awaiting), ...);
        },
        tasks_);
    std::apply([this](Task<T>&... tasks) { (start(tasks), ...); }, tasks_);
    // The first member is not started yet, so none of the others can be the last to end: the awaiting coroutine
    // cannot resume (and free this object) before it is; it runs now, on this thread.
    return first_;
  }
  std::tuple<detail::when_all_value_t<T>...> await_resume() {
    // Braced: the members are taken in argument order, so the first one that threw is the one rethrown.
    return std::apply(
        [](Task<T>&... tasks) {
          return std::tuple<detail::when_all_value_t<T>...>{detail::take_when_all_value(tasks)...};
        },
        tasks_);
  }

 private:
  template <class U>
  void start(Task<U>& task) noexcept {
    detail::TaskAccess::mark_started(task);
    const auto handle = detail::TaskAccess::handle(task);
    handle.promise().set_join(&join_);
    if (!first_) {
      first_ = handle;
      return;
    }
    detail::start_elsewhere(detail::coro_current_pool(), handle);
  }

  std::tuple<Task<T>...> tasks_;
  detail::TaskJoin join_;
  std::coroutine_handle<> first_;
  bool started_ = false;
};

// Runs the Tasks in parallel and gives their values: co_await weft::when_all(f(), g()) (see WhenAll).
//
// Example:
//   weft::Task<int> fib(int n) {
//     if (n < 2) co_return n;
//     auto [a, b] = co_await weft::when_all(fib(n - 1), fib(n - 2));
//     co_return a + b;
//   }
//   weft::Task<int> fib_on(weft::Pool& pool, int n) {
//     co_await pool.schedule();  // on a worker: when_all's members then run in parallel on the pool
//     co_return co_await fib(n);
//   }
template <class... T>
[[nodiscard]] WhenAll<T...> when_all(Task<T>&&... tasks) noexcept {
  return WhenAll<T...>(std::move(tasks)...);
}

// The awaitable weft::when_all(std::vector<Task<T>>) returns: WhenAll over a vector. co_await on it runs every
// Task, in parallel on the pool whose task is awaiting it, and gives a std::vector of their values in the
// vector's order (std::monostate for a Task<void>).
//
// Contract: as WhenAll's, the first Task of the vector in the role of the first argument; an empty vector gives an
// empty vector at once. If some Tasks threw, the co_await rethrows the exception of the first of them in the
// vector's order, after every Task ended. Throws std::logic_error, naming the index, for an empty or started
// Task (none has started then), and std::length_error for more than 2^32 - 1 Tasks.
template <class T>
class [[nodiscard]] WhenAllRange {
 public:
  // The tasks to run; each must be valid and never started (checked when awaited).
  explicit WhenAllRange(std::vector<Task<T>> tasks) noexcept : tasks_(std::move(tasks)) {}
  // Takes over other's Tasks (before it is awaited; moving a started one throws std::logic_error).
  WhenAllRange(WhenAllRange&& other)
      : tasks_(std::move(other.tasks_)) {  // NOLINT(performance-noexcept-move-constructor)
    if (other.started_) throw std::logic_error("weft::when_all: moved while awaited");
  }
  WhenAllRange& operator=(WhenAllRange&&) = delete;
  WhenAllRange(const WhenAllRange&) = delete;
  WhenAllRange& operator=(const WhenAllRange&) = delete;
  ~WhenAllRange() = default;

  [[nodiscard]] bool await_ready() {
    if (started_) throw std::logic_error("weft::when_all: awaited already (it runs its Tasks once)");
    detail::require_unstarted_all(tasks_, "weft::when_all");
    if (tasks_.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("weft::when_all: " + std::to_string(tasks_.size()) +
                              " Tasks, more than one when_all counts (2^32 - 1)");
    return tasks_.empty();
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    started_ = true;
    join_.parent = awaiting;
    // Published by the queueing of each member.
    join_.remaining.store(static_cast<std::uint32_t>(tasks_.size()), std::memory_order_relaxed);
    for (Task<T>& task : tasks_) {
      detail::TaskAccess::mark_started(task);
      auto& promise = detail::TaskAccess::handle(task).promise();
      promise.set_join(&join_);
      promise.inherit_stop_token(awaiting);
    }
    // The first member is not started until this returns, so none of the others can be the last to end: the
    // awaiting coroutine (and this object, with the vector) lives on while the others are started.
    Pool* const pool = detail::coro_current_pool();
    for (std::size_t i = 1; i < tasks_.size(); ++i)
      detail::start_elsewhere(pool, detail::TaskAccess::handle(tasks_[i]));
    return detail::TaskAccess::handle(tasks_.front());
  }
  std::vector<detail::when_all_value_t<T>> await_resume() {
    std::vector<detail::when_all_value_t<T>> values;
    values.reserve(tasks_.size());
    for (Task<T>& task : tasks_) values.push_back(detail::take_when_all_value(task));  // rethrows the first failure
    return values;
  }

 private:
  std::vector<Task<T>> tasks_;
  detail::TaskJoin join_;
  bool started_ = false;
};

// Runs a vector of Tasks in parallel and gives their values in order (see WhenAllRange).
//
// Example:
//   weft::Task<int> sum_of_squares(int n) {
//     std::vector<weft::Task<int>> parts;
//     for (int i = 1; i <= n; ++i) parts.push_back(square(i));
//     int sum = 0;
//     for (int v : co_await weft::when_all(std::move(parts))) sum += v;
//     co_return sum;
//   }
template <class T>
[[nodiscard]] WhenAllRange<T> when_all(std::vector<Task<T>> tasks) noexcept {
  return WhenAllRange<T>(std::move(tasks));
}

namespace detail {

// when_any over Tasks: what the members share with the awaiting coroutine. Each member runs inside an AnyMember
// wrapper that owns its Task and a share of this state, so that the losers run to their end and free their
// frames (and, the last of them, this state) after the awaiting coroutine has gone on.
template <class V>
struct AnyState {
  std::atomic<bool> decided{false};  // set by the first member to end
  std::coroutine_handle<> parent;    // written before any member starts
  std::size_t index = 0;             // the winner's, written by it before it resumes the parent
  std::optional<V> value;
  std::exception_ptr error;
};

// The wrapper coroutine of one when_any member: started lazily, frees itself at its end, and hands the thread to
// the coroutine its body named (the parent, for the winner; nothing for the others) by symmetric transfer.
class AnyMember {
 public:
  struct promise_type {
    std::coroutine_handle<> next = std::noop_coroutine();
    AnyMember get_return_object() noexcept {
      return AnyMember(std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      [[nodiscard]] bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> self) noexcept {
        const std::coroutine_handle<> next = self.promise().next;
        self.destroy();  // frees the member's Task and its share of the state
        return next;
      }
      void await_resume() const noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // the body catches everything
  };
  // Names the coroutine the wrapper hands the thread to at its end; does not suspend.
  struct HandTo {
    std::coroutine_handle<> next;
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<promise_type> self) noexcept {
      self.promise().next = next;
      return false;
    }
    void await_resume() const noexcept {}
  };
  [[nodiscard]] std::coroutine_handle<promise_type> handle() const noexcept { return handle_; }

 private:
  explicit AnyMember(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}
  std::coroutine_handle<promise_type> handle_;
};

// Where a when_any member puts the winner's value: the variadic form's variant alternative I, or the range form's
// value as it is.
template <std::size_t I>
struct StoreAlternative {
  template <class V, class U>
  static void store(std::optional<V>& out, U&& value) {
    out.emplace(std::in_place_index<I>, std::forward<U>(value));
  }
};
struct StoreValue {
  template <class V, class U>
  static void store(std::optional<V>& out, U&& value) {
    out.emplace(std::forward<U>(value));
  }
};

// The body of one when_any member: awaits the Task, and if it is the first to end, records its index and outcome
// and hands the thread to the awaiting coroutine.
template <class Store, class V, class T>
AnyMember any_member(std::shared_ptr<AnyState<V>> state, std::size_t index, Task<T> task) {
  std::optional<when_all_value_t<T>> value;
  std::exception_ptr error;
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      value.emplace();
    } else {
      value.emplace(co_await std::move(task));
    }
  } catch (...) {
    error = std::current_exception();
  }
  // acq_rel: one member wins; its writes below are published to the parent by the symmetric transfer (same
  // thread) that resumes it.
  if (!state->decided.exchange(true, std::memory_order_acq_rel)) {
    state->index = index;
    if (error) {
      state->error = std::move(error);
    } else {
      Store::store(state->value, std::move(*value));
    }
    co_await AnyMember::HandTo{state->parent};
  }
  // A loser's value and exception are dropped here, with its frame.
}

// Starts the wrappers: the first by symmetric transfer from the caller, the others as tasks of the current pool
// (or, outside any pool, one after another on this thread). `handles` must stay valid until this returns, though
// the awaiting coroutine (and whatever owns the wrappers' list there) may resume and end meanwhile: the caller
// passes a copy of its own, or one kept alive by a share of the members' state.
inline std::coroutine_handle<> start_members(std::span<const std::coroutine_handle<>> handles) noexcept {
  Pool* const pool = coro_current_pool();
  for (std::size_t i = 1; i < handles.size(); ++i) start_elsewhere(pool, handles[i]);
  return handles[0];
}

template <class T>
Task<Settled<T>> settle(Task<T> task) {
  Settled<T> settled;
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(task);
      settled.value.emplace();
    } else {
      settled.value.emplace(co_await std::move(task));
    }
  } catch (...) {
    settled.error = std::current_exception();
  }
  co_return settled;
}

template <class... T>
Task<std::tuple<Settled<T>...>> settle_all(Task<T>... tasks) {
  auto settled = co_await weft::when_all(settle(std::move(tasks))...);
  co_return std::move(settled);
}

// when_any over a vector: the members' shared state, with the list of their wrappers, which the starting thread
// reads through a share of this state (the awaiting coroutine may end, and free its WhenAnyRange, meanwhile).
template <class V>
struct AnyRangeState : AnyState<V> {
  std::vector<std::coroutine_handle<>> members;
};

template <class T>
Task<std::vector<Settled<T>>> settle_range(std::vector<Task<T>> tasks) {
  std::vector<Task<Settled<T>>> settled;
  settled.reserve(tasks.size());
  for (Task<T>& task : tasks) settled.push_back(settle(std::move(task)));
  co_return co_await weft::when_all(std::move(settled));
}

}  // namespace detail

// The awaitable weft::when_any(tasks...) returns: co_await on it runs every Task, in parallel as when_all does,
// and gives the first to end: its index among the arguments and its value (a std::variant whose alternative
// `index` is set; std::monostate for a Task<void>), or rethrows its exception.
//
// Contract:
// - Lazily started and awaited once (again throws std::logic_error), as when_all; each Task must be valid and
//   never started (checked when awaited).
// - The awaiting coroutine resumes as soon as the first Task ends, on that Task's thread. The others keep running
//   to their ends (nothing cancels them: give them a stop token, weft::with_stop_token, to poll); their values are
//   dropped and their exceptions discarded (never rethrown, never sent to PoolOptions::on_error), and each one's
//   frame is freed at its end. Keep what they use alive until they end.
// - If the first to end threw, the co_await rethrows that exception.
//
// Example:
//   auto [index, value] = co_await weft::when_any(fetch(primary), fetch(mirror));  // the faster one
template <class... T>
class [[nodiscard]] WhenAny {
  static_assert(sizeof...(T) > 0, "weft::when_any: give it at least one Task");

 public:
  using value_type = WhenAnyResult<std::variant<detail::when_all_value_t<T>...>>;

  // The tasks to run; each must be valid and never started (checked when awaited).
  explicit WhenAny(Task<T>&&... tasks) noexcept : tasks_(std::move(tasks)...) {}
  WhenAny(WhenAny&& other) noexcept = default;
  WhenAny& operator=(WhenAny&&) = delete;
  WhenAny(const WhenAny&) = delete;
  WhenAny& operator=(const WhenAny&) = delete;
  ~WhenAny() = default;

  // Throws std::logic_error for an invalid or started Task, or if awaited again; std::bad_alloc if the shared
  // state or a wrapper cannot be allocated (nothing has started then, and the Tasks are freed unstarted).
  [[nodiscard]] bool await_ready() {
    if (state_) throw std::logic_error("weft::when_any: awaited already (it runs its Tasks once)");
    std::apply([](const Task<T>&... tasks) { (detail::TaskAccess::require_unstarted(tasks, "weft::when_any"), ...); },
               tasks_);
    state_ = std::make_shared<State>();
    std::apply([this](Task<T>&... tasks) { promises_ = {&detail::TaskAccess::handle(tasks).promise()...}; }, tasks_);
    make_members(std::index_sequence_for<T...>{});
    return false;
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    state_->parent = awaiting;
    for (detail::TaskPromiseBase* promise : promises_) promise->inherit_stop_token(awaiting);
    // The members own their Tasks now; a member started below may end and resume the awaiting coroutine (which
    // frees this object) before this returns: only the local copy of the handles is touched from here on.
    const std::array<std::coroutine_handle<>, sizeof...(T)> handles = members_;
    return detail::start_members(handles);
  }
  value_type await_resume() {
    if (state_->error) std::rethrow_exception(state_->error);
    return value_type{state_->index, std::move(*state_->value)};
  }

 private:
  using State = detail::AnyState<std::variant<detail::when_all_value_t<T>...>>;

  template <std::size_t... I>
  void make_members(std::index_sequence<I...> /*indices*/) {
    std::size_t made = 0;
    try {
      ((members_[I] = detail::any_member<detail::StoreAlternative<I>>(state_, I, std::move(std::get<I>(tasks_)))
                          .handle(),
        ++made),
       ...);
    } catch (...) {
      for (std::size_t i = 0; i < made; ++i) members_[i].destroy();  // frees the wrappers and their Tasks, unstarted
      throw;
    }
  }

  std::tuple<Task<T>...> tasks_;
  std::shared_ptr<State> state_;
  std::array<std::coroutine_handle<>, sizeof...(T)> members_{};
  std::array<detail::TaskPromiseBase*, sizeof...(T)> promises_{};  // the members', for their stop tokens
};

// Runs the Tasks in parallel and gives the first to end (see WhenAny): co_await weft::when_any(f(), g()).
template <class... T>
[[nodiscard]] WhenAny<T...> when_any(Task<T>&&... tasks) noexcept {
  return WhenAny<T...>(std::move(tasks)...);
}

// The awaitable weft::when_any(std::vector<Task<T>>) returns: WhenAny over a vector of Tasks of one type. Gives the
// first to end: its index in the vector and its value (std::monostate for a Task<void>), or rethrows its exception.
//
// Contract: as WhenAny's. Throws std::logic_error when awaited, naming the index, for an empty or started Task
// (none has started then); weft::when_any throws std::invalid_argument for an empty vector.
template <class T>
class [[nodiscard]] WhenAnyRange {
 public:
  using value_type = WhenAnyResult<detail::when_all_value_t<T>>;

  // The tasks to run; each must be valid and never started (checked when awaited).
  explicit WhenAnyRange(std::vector<Task<T>> tasks) noexcept : tasks_(std::move(tasks)) {}
  WhenAnyRange(WhenAnyRange&& other) noexcept = default;
  WhenAnyRange& operator=(WhenAnyRange&&) = delete;
  WhenAnyRange(const WhenAnyRange&) = delete;
  WhenAnyRange& operator=(const WhenAnyRange&) = delete;
  ~WhenAnyRange() = default;

  // Throws std::logic_error for an invalid or started Task, or if awaited again; std::bad_alloc if the shared
  // state or a wrapper cannot be allocated (nothing has started then, and the Tasks are freed unstarted).
  [[nodiscard]] bool await_ready() {
    if (state_) throw std::logic_error("weft::when_any: awaited already (it runs its Tasks once)");
    detail::require_unstarted_all(tasks_, "weft::when_any");
    auto state = std::make_shared<State>();
    state->members.reserve(tasks_.size());
    promises_.reserve(tasks_.size());
    for (Task<T>& task : tasks_) promises_.push_back(&detail::TaskAccess::handle(task).promise());
    try {
      for (std::size_t i = 0; i < tasks_.size(); ++i) {
        state->members.push_back(
            detail::any_member<detail::StoreValue>(std::shared_ptr<detail::AnyState<V>>(state), i, std::move(tasks_[i]))
                .handle());
      }
    } catch (...) {
      for (std::coroutine_handle<> member : state->members) member.destroy();  // frees them and their Tasks
      throw;
    }
    state_ = std::move(state);
    return false;
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    state_->parent = awaiting;
    for (detail::TaskPromiseBase* promise : promises_) promise->inherit_stop_token(awaiting);
    // A member started below may end and resume the awaiting coroutine (which frees this object) before this
    // returns: the list of members is read through a share of the state of this thread's own.
    const std::shared_ptr<State> keep = state_;
    return detail::start_members(keep->members);
  }
  value_type await_resume() {
    if (state_->error) std::rethrow_exception(state_->error);
    return value_type{state_->index, std::move(*state_->value)};
  }

 private:
  using V = detail::when_all_value_t<T>;
  using State = detail::AnyRangeState<V>;

  std::vector<Task<T>> tasks_;
  std::shared_ptr<State> state_;
  std::vector<detail::TaskPromiseBase*> promises_;  // the members', for their stop tokens
};

// Runs a vector of Tasks in parallel and gives the first to end (see WhenAnyRange). Throws std::invalid_argument
// for an empty vector (it has no first to end).
//
// Example:
//   std::vector<weft::Task<std::string>> mirrors;
//   for (const auto& url : urls) mirrors.push_back(fetch(url));
//   weft::WhenAnyResult<std::string> first = co_await weft::when_any(std::move(mirrors));
template <class T>
[[nodiscard]] WhenAnyRange<T> when_any(std::vector<Task<T>> tasks) {
  if (tasks.empty()) throw std::invalid_argument("weft::when_any: the vector of Tasks is empty (no first to end)");
  return WhenAnyRange<T>(std::move(tasks));
}

// Runs the Tasks in parallel, as when_all, and gives every outcome: a std::tuple of weft::Settled<T> (its value, or
// its exception), in argument order. Never throws for a Task's failure; throws std::logic_error here for an
// invalid or started Task (none is consumed then). The result is itself a Task, started when awaited (or given to
// sync_wait, spawn).
//
// Example:
//   auto [a, b] = co_await weft::when_all_settled(may_fail(), other());
//   if (!a.has_value()) log(a.error);  // b is independent of a's failure
template <class... T>
[[nodiscard]] Task<std::tuple<Settled<T>...>> when_all_settled(Task<T>&&... tasks) {
  (detail::TaskAccess::require_unstarted(tasks, "weft::when_all_settled"), ...);
  return detail::settle_all(std::move(tasks)...);
}

// Runs a vector of Tasks in parallel, as when_all, and gives every outcome in the vector's order: a std::vector of
// weft::Settled<T>. Never throws for a Task's failure; throws std::logic_error here, naming the index, for an
// empty or started Task (none is consumed then). An empty vector gives an empty vector.
//
// Example:
//   std::vector<weft::Task<int>> jobs;
//   for (int i = 0; i < 4; ++i) jobs.push_back(may_fail(i));
//   std::vector<weft::Settled<int>> outcomes = co_await weft::when_all_settled(std::move(jobs));
template <class T>
[[nodiscard]] Task<std::vector<Settled<T>>> when_all_settled(std::vector<Task<T>> tasks) {
  detail::require_unstarted_all(tasks, "weft::when_all_settled");
  return detail::settle_range(std::move(tasks));
}

}  // namespace weft
