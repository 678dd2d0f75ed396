// Compile-time answers for TaskScope: what a job's callable returns, whether a continuation takes its
// predecessors' values, and the argument list of a heterogeneous when_all.
#pragma once

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/job_state.hpp"
#include "weft/subflow.hpp"

namespace weft {

template <class T>
class Job;

namespace detail {

// How TaskScope refuses a callable of the wrong shape: every job function accepts any F (no constraint on its
// shape), its result type stays well-formed whatever F is (void when F cannot be called as required), and a
// static_assert in its body says what F must take and what to write instead. A constraint would only say
// "Traits::callable evaluated to 'false'" after a page of candidates.

// f()'s result; void (never used: the static_assert fails first) when f() does not compile.
template <class F>
using plain_result = std::conditional_t<std::is_invocable_v<F&>, std::invoke_result<F&>, std::type_identity<void>>;

// submit(f): f() or f(Subflow&) (a job that spawns child work its completion waits for).
template <class F>
concept JobCallable = std::invocable<std::decay_t<F>&> || std::invocable<std::decay_t<F>&, Subflow&>;

template <class F>
using job_result_t =
    typename std::conditional_t<std::is_invocable_v<std::decay_t<F>&, Subflow&>,
                                std::invoke_result<std::decay_t<F>&, Subflow&>, plain_result<std::decay_t<F>>>::type;

// then(job, f): f(const T&) gets the value; f() runs after. For Job<void>, only f().
template <class F, class T>
struct then_traits {
  static constexpr bool by_value = std::is_invocable_v<F&, const T&>;
  static constexpr bool callable = by_value || std::is_invocable_v<F&>;
  using result = typename std::conditional_t<by_value, std::invoke_result<F&, const T&>, plain_result<F>>::type;
};
template <class F>
struct then_traits<F, void> {
  static constexpr bool by_value = false;
  static constexpr bool callable = std::is_invocable_v<F&>;
  using result = typename plain_result<F>::type;
};

// when_all over Job<T>s of one type: f(std::vector<T>) gets every value, in the order given; f() runs after.
template <class F, class T>
struct when_all_traits {
  static constexpr bool by_value = std::is_invocable_v<F&, std::vector<T>>;
  static constexpr bool callable = by_value || std::is_invocable_v<F&>;
  using result = typename std::conditional_t<by_value, std::invoke_result<F&, std::vector<T>>, plain_result<F>>::type;
};
template <class F>
struct when_all_traits<F, void> : then_traits<F, void> {};

template <class J>
struct job_value {};
template <class T>
struct job_value<Job<T>> {
  using type = T;
};
template <class J>
using job_value_t = typename job_value<std::remove_cvref_t<J>>::type;

template <class J>
inline constexpr bool is_job_v = requires { typename job_value_t<J>; };

// The arguments a heterogeneous when_all hands over: const T& per non-void job, in order; void jobs add none.
template <class T>
using value_ref_tuple =
    std::conditional_t<std::is_void_v<T>, std::tuple<>, std::tuple<std::add_lvalue_reference_t<const T>>>;
template <class... Ts>
using values_tuple_t = decltype(std::tuple_cat(std::declval<value_ref_tuple<Ts>>()...));

template <class F, class Tuple>
struct apply_traits {};
template <class F, class... A>
struct apply_traits<F, std::tuple<A...>> {
  static constexpr bool by_value = std::is_invocable_v<F&, A...>;
  static constexpr bool callable = by_value || std::is_invocable_v<F&>;
  using result = typename std::conditional_t<by_value, std::invoke_result<F&, A...>, plain_result<F>>::type;
};

template <class T>
[[nodiscard]] value_ref_tuple<T> value_refs(const JobState<T>& state) noexcept {
  if constexpr (std::is_void_v<T>) {
    return {};
  } else {
    return value_ref_tuple<T>(state.value());
  }
}

// True if every predecessor produced a value. A predecessor that failed or was skipped has cancelled the run
// already, so the graph should not start its successors at all; this keeps a continuation from ever reading
// an empty slot if one does start.
template <class... Ts>
[[nodiscard]] bool all_have_values(const std::shared_ptr<JobState<Ts>>&... states) noexcept {
  return (states->has_value() && ...);
}

}  // namespace detail
}  // namespace weft
