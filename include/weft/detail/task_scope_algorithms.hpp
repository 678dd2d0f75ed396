// The TaskScope forms of the parallel algorithms (declared in weft/task_scope.hpp, included at its end): each
// wraps one core of weft/detail/algorithm_core.hpp in a job.
#pragma once

#include <exception>
#include <functional>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "weft/algorithms.hpp"
#include "weft/detail/algorithm_core.hpp"
#include "weft/task_scope.hpp"

namespace weft {

template <class T, class Core>
Job<detail::unit_to_void_t<T>> TaskScope::add_algorithm_job(const char* who, std::span<const AnyJob> deps,
                                                            NodeOptions options, Core core) {
  using R = detail::unit_to_void_t<T>;
  return add_job<R>(who, deps, std::move(options),
                    [core = std::move(core)](detail::JobState<R>& state, Subflow& sf) mutable {
                      // What the core's frame throws the run has not seen: the job fails with it, and so does
                      // the run.
                      detail::Outcome<T> outcome = [&] {
                        try {
                          return core(sf);
                        } catch (...) {
                          state.set_error(std::current_exception());
                          throw;
                        }
                      }();
                      // A piece's exception already reached the run (the piece rethrew it): only the job keeps it.
                      if (outcome.error) {
                        state.set_error(outcome.error);
                      } else if (outcome.value) {
                        if constexpr (std::is_void_v<R>) {
                          state.set_done();
                        } else {
                          state.execute([&]() -> R { return std::move(*outcome.value); });
                        }
                      }  // else a cancellation skipped pieces: the job stays pending and reads as cancelled
                    });
}

inline void TaskScope::require_no_concurrency(const char* who, const NodeOptions& options) const {
  if (options.concurrency == kUnlimited) return;
  std::string message = who;
  message += ": job '" + job_name(options) + "': NodeOptions::concurrency = " + std::to_string(options.concurrency);
  message += " is not supported here (it bounds the blocks of a parallel_for, reduce or scan); leave it unset";
  throw invalid_option(message);
}

template <class It, class T, class Op>
Job<T> TaskScope::reduce_job(const char* who, std::span<const AnyJob> deps, It first, It last, T init, Op op,
                             LoopOptions options) {
  if constexpr (detail::check_reduce_op<T, std::iter_reference_t<It>, Op>()) {
    detail::require_callable(op, who);
    const std::size_t n = detail::element_count(first, last, who);
    const unsigned concurrency = options.concurrency;
    const std::size_t grain = options.grain;
    return add_algorithm_job<T>(who, deps, node_options(std::move(options)),
                                [first, n, init = std::move(init), op = std::move(op), grain,
                                 concurrency](Subflow& sf) mutable {
                                  return detail::reduce_core(sf, first, n, std::move(init), op, detail::Identity{},
                                                             grain, concurrency);
                                });
  } else {
    return {};
  }
}

template <class It, class T, class Op, class Tr>
Job<T> TaskScope::transform_reduce_job(const char* who, std::span<const AnyJob> deps, It first, It last, T init,
                                       Op reduce, Tr transform, LoopOptions options) {
  static_assert(ReduceTransform<Tr, T, It>,
                "weft::TaskScope::parallel_transform_reduce: transform must be callable with an element and return a "
                "value a T (the type of init) can be made from");
  if constexpr (ReduceTransform<Tr, T, It>) {
    using E = std::invoke_result_t<const Tr&, std::iter_reference_t<It>>;
    if constexpr (detail::check_reduce_op<T, E, Op>()) {
      detail::require_callable(reduce, who);
      detail::require_callable(transform, who);
      const std::size_t n = detail::element_count(first, last, who);
      const unsigned concurrency = options.concurrency;
      const std::size_t grain = options.grain;
      return add_algorithm_job<T>(who, deps, node_options(std::move(options)),
                                  [first, n, init = std::move(init), reduce = std::move(reduce),
                                   transform = std::move(transform), grain, concurrency](Subflow& sf) mutable {
                                    return detail::reduce_core(sf, first, n, std::move(init), reduce, transform, grain,
                                                               concurrency);
                                  });
    }
  }
  return {};
}

template <class It, class Out, class Op>
Job<void> TaskScope::inclusive_scan_job(const char* who, std::span<const AnyJob> deps, It first, It last, Out out,
                                        Op op, LoopOptions options) {
  using T = std::iter_value_t<It>;
  if constexpr (detail::check_reduce_op<T, std::iter_reference_t<It>, Op>()) {
    static_assert(std::indirectly_writable<Out, const T&>,
                  "weft::TaskScope::parallel_inclusive_scan: the output iterator must accept the scan's values");
    detail::require_callable(op, who);
    const std::size_t n = detail::element_count(first, last, who);
    const unsigned concurrency = options.concurrency;
    const std::size_t grain = options.grain;
    return add_algorithm_job<detail::Unit>(who, deps, node_options(std::move(options)),
                                           [first, n, out, op = std::move(op), grain, concurrency](Subflow& sf) {
                                             return detail::scan_core(sf, first, n, out, std::optional<T>(), op, true,
                                                                      grain, concurrency);
                                           });
  } else {
    return {};
  }
}

template <class It, class Out, class T, class Op>
Job<void> TaskScope::exclusive_scan_job(const char* who, std::span<const AnyJob> deps, It first, It last, Out out,
                                        T init, Op op, LoopOptions options) {
  if constexpr (detail::check_reduce_op<T, std::iter_reference_t<It>, Op>()) {
    static_assert(std::indirectly_writable<Out, const T&>,
                  "weft::TaskScope::parallel_exclusive_scan: the output iterator must accept the scan's values");
    detail::require_callable(op, who);
    const std::size_t n = detail::element_count(first, last, who);
    const unsigned concurrency = options.concurrency;
    const std::size_t grain = options.grain;
    return add_algorithm_job<detail::Unit>(
        who, deps, node_options(std::move(options)),
        [first, n, out, init = std::move(init), op = std::move(op), grain, concurrency](Subflow& sf) mutable {
          return detail::scan_core(sf, first, n, out, std::optional<T>(std::move(init)), op, false, grain, concurrency);
        });
  } else {
    return {};
  }
}

template <class It, class Comp>
Job<void> TaskScope::sort_job(const char* who, std::span<const AnyJob> deps, It first, It last, Comp comp,
                              NodeOptions options) {
  static_assert(SortComparator<Comp, It>,
                "weft::TaskScope::parallel_sort: comp must be a strict weak order on the elements, callable as "
                "comp(const T&, const T&) -> bool, and the elements must be swappable (std::sortable)");
  if constexpr (SortComparator<Comp, It>) {
    detail::require_callable(comp, who);
    static_cast<void>(detail::element_count(first, last, who));
    require_no_concurrency(who, options);
    return add_algorithm_job<detail::Unit>(who, deps, std::move(options),
                                           [first, last, comp = std::move(comp)](Subflow& sf) {
                                             return detail::sort_core(sf, first, last, comp);
                                           });
  } else {
    return {};
  }
}

template <class... Fs>
Job<void> TaskScope::invoke_job(const char* who, std::span<const AnyJob> deps, NodeOptions options, Fs&&... fs) {
  static_assert(sizeof...(Fs) >= 1, "weft::TaskScope::parallel_invoke: give at least one callable");
  static_assert((std::invocable<std::decay_t<Fs>&> && ...),
                "weft::TaskScope::parallel_invoke: every callable must be callable with no arguments");
  if constexpr ((std::invocable<std::decay_t<Fs>&> && ...) && sizeof...(Fs) >= 1) {
    (detail::require_callable(fs, who), ...);
    require_no_concurrency(who, options);
    return add_algorithm_job<detail::Unit>(who, deps, std::move(options),
                                           [fs = std::tuple<std::decay_t<Fs>...>(std::forward<Fs>(fs)...)](
                                               Subflow& sf) mutable { return detail::invoke_core(sf, fs); });
  } else {
    return {};
  }
}

}  // namespace weft
