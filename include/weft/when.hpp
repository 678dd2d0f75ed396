// Combinators over weft::Future: when_any (the first to finish), when_all (every value, or the first exception),
// when_all_settled (every outcome). Each consumes its futures and returns a Future of the combination; none waits
// on a thread: they are built on the continuation machinery of Future::then (a small continuation task per
// member, run on the member's pool once that member is final).
//
// Contract (all three):
// - The futures are consumed (pass them with std::move; a vector by value). An invalid one (default-constructed,
//   moved from, already consumed) throws std::invalid_argument naming its index, and then none is consumed.
// - Members keep running: a combination that is decided early (when_any's first, when_all's first exception)
//   cancels nothing. The later members' results are dropped when they finish: their values destroyed, their
//   exceptions discarded (never rethrown, never sent to PoolOptions::on_error), nothing leaked. Each member's
//   state is kept until it finishes.
// - A member dropped by a shutdown counts as finished with weft::task_dropped.
// - The returned future belongs to the first member's pool: its then() runs there. The members' pools must not
//   be destroyed while a member is unfinished (as for Future::then).
// - A void member's value is std::monostate.
//
// Example:
//   weft::Future<int> a = pool.submit([] { return 1; });
//   weft::Future<std::string> b = pool.submit([] { return std::string("two"); });
//   auto [one, two] = weft::when_all(std::move(a), std::move(b)).get();  // 1, "two"
//   std::vector<weft::Future<int>> racers;
//   for (int i = 0; i < 3; ++i) racers.push_back(pool.submit([i] { return i * 10; }));
//   weft::WhenAnyResult<int> first = weft::when_any(std::move(racers)).get();  // first.value == first.index * 10
//   weft::Future<int> bad = pool.submit([]() -> int { throw std::runtime_error("no"); });
//   std::vector<weft::Future<int>> mixed;
//   mixed.push_back(std::move(bad));
//   mixed.push_back(pool.submit([] { return 3; }));
//   std::vector<weft::Settled<int>> all = weft::when_all_settled(std::move(mixed)).get();  // never throws
//   bool failed = !all[0].has_value();  // true; all[1].value == 3
//   (void)one, (void)two, (void)failed;
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "weft/errors.hpp"
#include "weft/future.hpp"

namespace weft {

// What a Future<T> holds when it has a value, as the combinators hand it on: T, or std::monostate for void.
template <class T>
using when_value_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// when_any's result: which member finished first (its index among the arguments, or in the vector) and its value.
// The variadic form's value is a std::variant whose alternative `index` is set.
template <class V>
struct WhenAnyResult {
  std::size_t index = 0;
  V value;
};

// One member's outcome in when_all_settled: its value, or its exception (exactly one is set).
template <class T>
struct Settled {
  std::optional<when_value_t<T>> value;  // set if the member returned
  std::exception_ptr error;              // set if the member threw (or was dropped: weft::task_dropped)
  // True if the member returned a value.
  [[nodiscard]] bool has_value() const noexcept { return value.has_value(); }
  // The value, or rethrows the member's exception.
  when_value_t<T> get() && {
    if (error) std::rethrow_exception(error);
    return std::move(*value);
  }
};

namespace detail {

// A combined future's state: never queued, settled by whichever member decides the combination.
template <class R>
class WhenResult final : public FutureResult<R> {
 public:
  explicit WhenResult(Pool* pool) noexcept : FutureResult<R>(nullptr, pool) {}

  template <class... A>
  void set_value(A&&... args) noexcept {
    if (!this->try_claim()) return;
    try {
      if constexpr (!std::is_void_v<R>) this->emplace_value(std::forward<A>(args)...);
      this->complete_claimed(FutureStateBase::has_value);
    } catch (...) {
      this->error_ = std::current_exception();  // the combination's value could not be built (out of memory)
      this->complete_claimed(FutureStateBase::has_exception);
    }
  }
  void set_error(std::exception_ptr error) noexcept { (void)this->complete_with_error(std::move(error)); }

  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(WhenResult)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(WhenResult));
  }

 private:
  ~WhenResult() = default;
  // Never queued, so never run: settled by set_value or set_error.
  FutureStateBase::Status run_task() noexcept override { return FutureStateBase::has_exception; }
  void destroy() noexcept override { delete this; }
};

// Where a combination's members report: index, then a pointer to the value (moved from) or the exception.
class WhenSink {
 public:
  WhenSink() = default;
  WhenSink(const WhenSink&) = delete;
  WhenSink& operator=(const WhenSink&) = delete;
  virtual ~WhenSink() = default;
  virtual void arrive(std::size_t index, void* value, std::exception_ptr error) noexcept = 0;
};

[[nodiscard]] inline std::exception_ptr when_member_dropped() noexcept {
  return std::make_exception_ptr(task_dropped(
      "weft::when_*: a member's task was dropped by a shutdown that drops pending work before it started"));
}

// A member's continuation: attached to the member's state as Future::then attaches one, run as a task on the
// member's pool once the member is final; reports the member's outcome to the sink. If it will never run (the
// pool refused or dropped it), it reports the member as dropped instead: every member arrives exactly once.
template <class T>
class WhenLink final : public FutureResult<void> {
 public:
  WhenLink(FutureResult<T>* member, std::shared_ptr<WhenSink> sink, std::size_t index) noexcept
      : FutureResult<void>(nullptr, member->pool()), member_(member), sink_(std::move(sink)), index_(index) {}

  // Attaches this link to its member and lets go of the link's own reference (it has no Future).
  void start() noexcept {
    FutureResult<T>* const member = member_;
    member->attach_continuation(this);  // may run (and finish) at once on a worker
    this->release();
  }

  static void* operator new(std::size_t bytes) { return allocate_future_state(bytes, alignof(WhenLink)); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    deallocate_future_state(p, bytes, alignof(WhenLink));
  }

 private:
  ~WhenLink() { forget_antecedent(); }

  FutureStateBase::Status run_task() noexcept override {
    FutureResult<T>* const member = std::exchange(member_, nullptr);
    switch (member->status()) {
      case FutureStateBase::has_exception:
        sink_->arrive(index_, nullptr, member->take_error());
        break;
      case FutureStateBase::dropped:
        sink_->arrive(index_, nullptr, when_member_dropped());
        break;
      default:
        if constexpr (std::is_void_v<T>) {
          std::monostate none;
          sink_->arrive(index_, &none, nullptr);
        } else {
          try {
            T value = member->take_value();
            sink_->arrive(index_, &value, nullptr);
          } catch (...) {
            sink_->arrive(index_, nullptr, std::current_exception());  // the value's move threw
          }
        }
    }
    member->release();
    sink_.reset();
    return FutureStateBase::has_value;
  }
  void destroy() noexcept override { delete this; }
  // Never to run: the member arrives as dropped, so that the combination still completes.
  void forget_antecedent() noexcept override {
    if (member_ == nullptr) return;
    std::exchange(member_, nullptr)->release();
    sink_->arrive(index_, nullptr, when_member_dropped());
    sink_.reset();
  }

  FutureResult<T>* member_;
  std::shared_ptr<WhenSink> sink_;
  std::size_t index_;
};

template <class T>
void when_link(Future<T>& member, const std::shared_ptr<WhenSink>& sink, std::size_t index) {
  (new WhenLink<T>(FutureAccess::take(member), sink, index))->start();
}

template <class... Ts>
void require_valid_members(const char* what, const Future<Ts>&... futures) {
  std::size_t index = 0;
  const auto check = [&](bool valid) {
    if (!valid)
      throw std::invalid_argument(std::string("weft::") + what + ": the future at index " + std::to_string(index) +
                                  " is invalid (default-constructed, moved from, or already consumed)");
    ++index;
  };
  (check(futures.valid()), ...);
}

template <class T>
void require_valid_members(const char* what, const std::vector<Future<T>>& futures, bool allow_empty) {
  if (futures.empty() && !allow_empty)
    throw std::invalid_argument(std::string("weft::") + what +
                                ": no futures: the first of none never finishes (pass at least one)");
  for (std::size_t i = 0; i < futures.size(); ++i) {
    if (!futures[i].valid())
      throw std::invalid_argument(std::string("weft::") + what + ": the future at index " + std::to_string(i) +
                                  " is invalid (default-constructed, moved from, or already consumed)");
  }
}

// The sinks: a result state and what each combination keeps. `R` the combined future's type.
template <class R>
class WhenSinkBase : public WhenSink {
 public:
  explicit WhenSinkBase(Pool* pool) : result_(new WhenResult<R>(pool)) {}
  ~WhenSinkBase() override {
    if (result_ != nullptr) result_->release();
  }
  // The combined future (its reference is the future's; the sink keeps the producer's).
  [[nodiscard]] Future<R> future() noexcept { return FutureAccess::adopt<R>(result_); }

 protected:
  // Settles the result once (the first caller wins) and gives up the producer's reference.
  template <class... A>
  void decide_value(A&&... args) noexcept {
    result_->set_value(std::forward<A>(args)...);
  }
  void decide_error(std::exception_ptr error) noexcept { result_->set_error(std::move(error)); }
  // First to call wins (acq_rel: a later loser orders after the winner's decision).
  [[nodiscard]] bool claim_decision() noexcept { return !decided_.exchange(true, std::memory_order_acq_rel); }
  // Counts a member in; true for the last one (acq_rel: the last sees every earlier member's stored value).
  [[nodiscard]] bool last_arrival() noexcept { return remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  void expect(std::size_t members) noexcept { remaining_.store(members, std::memory_order_relaxed); }

 private:
  WhenResult<R>* result_;
  std::atomic<bool> decided_{false};
  std::atomic<std::size_t> remaining_{0};
};

// when_any over a vector.
template <class T>
class AnyOfRange final : public WhenSinkBase<WhenAnyResult<when_value_t<T>>> {
 public:
  using WhenSinkBase<WhenAnyResult<when_value_t<T>>>::WhenSinkBase;
  void arrive(std::size_t index, void* value, std::exception_ptr error) noexcept override {
    if (!this->claim_decision()) return;  // a loser: its value or exception is dropped here
    if (value == nullptr) {
      this->decide_error(std::move(error));
    } else {
      try {
        this->decide_value(WhenAnyResult<when_value_t<T>>{index, std::move(*static_cast<when_value_t<T>*>(value))});
      } catch (...) {
        this->decide_error(std::current_exception());  // the value's move threw
      }
    }
  }
};

// when_any over futures of any types.
template <class... Ts>
class AnyOf final : public WhenSinkBase<WhenAnyResult<std::variant<when_value_t<Ts>...>>> {
  using Variant = std::variant<when_value_t<Ts>...>;

 public:
  using WhenSinkBase<WhenAnyResult<Variant>>::WhenSinkBase;
  void arrive(std::size_t index, void* value, std::exception_ptr error) noexcept override {
    if (!this->claim_decision()) return;
    if (value == nullptr) {
      this->decide_error(std::move(error));
      return;
    }
    decide_at(index, value, std::index_sequence_for<Ts...>{});
  }

 private:
  template <std::size_t... I>
  void decide_at(std::size_t index, void* value, std::index_sequence<I...>) noexcept {
    (void)((index == I ? (decide_one<I>(value), true) : false) || ...);
  }
  template <std::size_t I>
  void decide_one(void* value) noexcept {
    using V = std::variant_alternative_t<I, Variant>;
    try {
      this->decide_value(
          WhenAnyResult<Variant>{I, Variant(std::in_place_index<I>, std::move(*static_cast<V*>(value)))});
    } catch (...) {
      this->decide_error(std::current_exception());
    }
  }
};

// when_all and when_all_settled over a vector: `settled` keeps every outcome, else the first exception decides.
template <class T, bool settled>
class AllOfRange final
    : public WhenSinkBase<std::conditional_t<settled, std::vector<Settled<T>>, std::vector<when_value_t<T>>>> {
  using V = when_value_t<T>;
  using R = std::conditional_t<settled, std::vector<Settled<T>>, std::vector<V>>;

 public:
  AllOfRange(Pool* pool, std::size_t members) : WhenSinkBase<R>(pool), slots_(members) { this->expect(members); }
  // No members: ready at once with an empty vector.
  void arrive_none() noexcept {
    if (this->claim_decision()) this->decide_value(R{});
  }
  void arrive(std::size_t index, void* value, std::exception_ptr error) noexcept override {
    if (value != nullptr) {
      try {
        slots_[index].value.emplace(std::move(*static_cast<V*>(value)));
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (!slots_[index].value) {
      if constexpr (settled) {
        slots_[index].error = std::move(error);
      } else if (this->claim_decision()) {
        this->decide_error(std::move(error));  // the first exception wins; later ones are dropped
      }
    }
    if (!this->last_arrival()) return;
    if constexpr (settled) {
      this->decide_value(std::move(slots_));
    } else if (this->claim_decision()) {
      try {
        std::vector<V> values;
        values.reserve(slots_.size());
        for (Settled<T>& slot : slots_) values.push_back(std::move(*slot.value));
        this->decide_value(std::move(values));
      } catch (...) {
        this->decide_error(std::current_exception());
      }
    }
  }

 private:
  std::vector<Settled<T>> slots_;
};

// when_all and when_all_settled over futures of any types.
template <bool settled, class... Ts>
class AllOf final
    : public WhenSinkBase<std::conditional_t<settled, std::tuple<Settled<Ts>...>, std::tuple<when_value_t<Ts>...>>> {
  using R = std::conditional_t<settled, std::tuple<Settled<Ts>...>, std::tuple<when_value_t<Ts>...>>;

 public:
  explicit AllOf(Pool* pool) : WhenSinkBase<R>(pool) { this->expect(sizeof...(Ts)); }
  void arrive(std::size_t index, void* value, std::exception_ptr error) noexcept override {
    store_at(index, value, error, std::index_sequence_for<Ts...>{});
    if (!this->last_arrival()) return;
    if constexpr (settled) {
      this->decide_value(std::move(slots_));
    } else if (this->claim_decision()) {
      try {
        this->decide_value(std::apply([](auto&... slot) { return R(std::move(*slot.value)...); }, slots_));
      } catch (...) {
        this->decide_error(std::current_exception());
      }
    }
  }

 private:
  template <std::size_t... I>
  void store_at(std::size_t index, void* value, std::exception_ptr& error, std::index_sequence<I...>) noexcept {
    (void)((index == I ? (store_one<I>(value, error), true) : false) || ...);
  }
  template <std::size_t I>
  void store_one(void* value, std::exception_ptr& error) noexcept {
    auto& slot = std::get<I>(slots_);
    using V = typename std::remove_reference_t<decltype(*slot.value)>;
    if (value != nullptr) {
      try {
        slot.value.emplace(std::move(*static_cast<V*>(value)));
        return;
      } catch (...) {
        error = std::current_exception();
      }
    }
    if constexpr (settled) {
      slot.error = std::move(error);
    } else if (this->claim_decision()) {
      this->decide_error(std::move(error));
    }
  }

  std::tuple<Settled<Ts>...> slots_;
};

template <class Sink, class... Ts>
auto when_start(std::shared_ptr<Sink> sink, Future<Ts>&... futures) {
  auto future = sink->future();
  std::size_t index = 0;
  const std::shared_ptr<WhenSink> base = sink;
  sink.reset();
  (when_link(futures, base, index++), ...);
  return future;
}

template <class Sink, class T>
auto when_start_range(std::shared_ptr<Sink> sink, std::vector<Future<T>>& futures) {
  auto future = sink->future();
  const std::shared_ptr<WhenSink> base = sink;
  sink.reset();
  for (std::size_t i = 0; i < futures.size(); ++i) when_link(futures[i], base, i);
  return future;
}

template <class T, class... Ts>
[[nodiscard]] Pool* first_pool(const Future<T>& first, const Future<Ts>&...) noexcept {
  return FutureAccess::pool_of(first);
}

}  // namespace detail

// The first member to finish decides: the result carries its index and value, or rethrows its exception (a
// member's exception is an outcome too). At least one future.
template <class T, class... Ts>
[[nodiscard]] Future<WhenAnyResult<std::variant<when_value_t<T>, when_value_t<Ts>...>>> when_any(Future<T>&& first,
                                                                                                 Future<Ts>&&... rest) {
  detail::require_valid_members("when_any", first, rest...);
  auto sink = std::make_shared<detail::AnyOf<T, Ts...>>(detail::first_pool(first, rest...));
  return detail::when_start(std::move(sink), first, rest...);
}
// The same over a vector: the value is the member's own type. Throws std::invalid_argument for an empty vector.
template <class T>
[[nodiscard]] Future<WhenAnyResult<when_value_t<T>>> when_any(std::vector<Future<T>> futures) {
  detail::require_valid_members("when_any", futures, false);
  auto sink = std::make_shared<detail::AnyOfRange<T>>(detail::first_pool(futures.front()));
  return detail::when_start_range(std::move(sink), futures);
}

// Every member's value, in order, once all returned; the first exception (in the order the members finish)
// decides as soon as it arrives, and the later outcomes are dropped.
template <class... Ts>
  requires(sizeof...(Ts) > 0)
[[nodiscard]] Future<std::tuple<when_value_t<Ts>...>> when_all(Future<Ts>&&... futures) {
  detail::require_valid_members("when_all", futures...);
  auto sink = std::make_shared<detail::AllOf<false, Ts...>>(detail::first_pool(futures...));
  return detail::when_start(std::move(sink), futures...);
}
// The same over a vector. An empty vector gives a future that is ready with an empty vector and belongs to no
// pool (then() on it throws std::invalid_argument).
template <class T>
[[nodiscard]] Future<std::vector<when_value_t<T>>> when_all(std::vector<Future<T>> futures) {
  detail::require_valid_members("when_all", futures, true);
  auto sink = std::make_shared<detail::AllOfRange<T, false>>(futures.empty() ? nullptr
                                                                             : detail::first_pool(futures.front()),
                                                             futures.size());
  if (futures.empty()) sink->arrive_none();
  return detail::when_start_range(std::move(sink), futures);
}

// Every member's outcome, value or exception, in order, once all finished. Its future never throws (but for
// running out of memory building the result).
template <class... Ts>
  requires(sizeof...(Ts) > 0)
[[nodiscard]] Future<std::tuple<Settled<Ts>...>> when_all_settled(Future<Ts>&&... futures) {
  detail::require_valid_members("when_all_settled", futures...);
  auto sink = std::make_shared<detail::AllOf<true, Ts...>>(detail::first_pool(futures...));
  return detail::when_start(std::move(sink), futures...);
}
// The same over a vector; an empty vector as for when_all.
template <class T>
[[nodiscard]] Future<std::vector<Settled<T>>> when_all_settled(std::vector<Future<T>> futures) {
  detail::require_valid_members("when_all_settled", futures, true);
  auto sink = std::make_shared<detail::AllOfRange<T, true>>(futures.empty() ? nullptr
                                                                            : detail::first_pool(futures.front()),
                                                            futures.size());
  if (futures.empty()) sink->arrive_none();
  return detail::when_start_range(std::move(sink), futures);
}

}  // namespace weft
