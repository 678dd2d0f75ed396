// weft's parallel algorithms on a pool, blocking like weft::parallel_for: parallel_reduce (over elements, or in
// the range form over indices or a weft::Range2d with a body that folds a chunk and a join),
// parallel_transform_reduce, parallel_inclusive_scan, parallel_exclusive_scan, parallel_sort, parallel_invoke.
// (Inside a TaskScope, scope.parallel_reduce(...) and the others make the same algorithm a job of the graph.)
//
// What they share:
// - Ranges are random-access iterators [first, last); a reversed range (last before first) is refused with
//   std::invalid_argument naming the call. The range form of parallel_reduce takes integer indices instead (as
//   parallel_for does: last <= first is empty) or a weft::Range2d.
// - Operations, transforms and comparators are taken by value, as std's algorithms take them, and called
//   concurrently through const references (std::sort, under the cutoff, copies its comparator as usual);
//   parallel_invoke calls its callables in place, never copying them.
// - Partitioning is parallel_for's: grain 0 (the default) cuts the range into about 64 blocks per worker, run by
//   parallel_for's automatic partitioner; grain g > 0 makes blocks of g elements. A range of one block runs
//   inline in the calling thread.
// - Callable from any thread, and from inside a weft task or job (nested): a waiting worker runs other tasks
//   meanwhile. The first exception thrown by a callable stops the pieces not yet started and is rethrown here;
//   others are dropped. Throws pool_closed if the pool is shutting down.
// - A callable of the wrong shape does not compile, with a static_assert saying what it must take.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <concepts>
#include <cstddef>
#include <functional>
#include <iterator>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "weft/detail/algorithm_core.hpp"
#include "weft/detail/for_range.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/detail/tiles.hpp"
#include "weft/pool.hpp"
#include "weft/range2d.hpp"
#include "weft/task_group.hpp"

namespace weft {

// A reduction or scan operation over values T and elements E: op(T, E) and op(T, T) both give something a T
// can be made from, and so does an element (each block's partial starts from its first element). It must be
// associative; it need not be commutative (partial results combine in order).
template <class Op, class T, class E>
concept ReduceOperation = std::constructible_from<T, E> && std::invocable<const Op&, T, E> &&
                          std::invocable<const Op&, T, T> &&
                          std::constructible_from<T, std::invoke_result_t<const Op&, T, E>> &&
                          std::constructible_from<T, std::invoke_result_t<const Op&, T, T>> &&
                          std::assignable_from<T&, std::invoke_result_t<const Op&, T, T>>;

// A transform of transform_reduce: tr(element) gives something a T can be made from.
template <class Tr, class T, class It>
concept ReduceTransform = std::invocable<const Tr&, std::iter_reference_t<It>> &&
                          std::constructible_from<T, std::invoke_result_t<const Tr&, std::iter_reference_t<It>>>;

// A comparator parallel_sort accepts: a strict weak order on the elements, which may be swapped (std::sortable).
template <class Comp, class It>
concept SortComparator = std::sortable<It, Comp>;

namespace detail {
// parallel_invoke's body: children of `group` for all but the last callable, which runs here, then the wait.
// Each child holds a reference to its callable (one pointer): the callables are called in place.
template <class F>
void invoke_in_group(TaskGroup& group, F& last) {
  static_cast<void>(group.run_and_wait([&last] { std::invoke(last); }));
}
template <class F, class... Rest>
void invoke_in_group(TaskGroup& group, F& first, Rest&... rest) {
  group.run([&first] { std::invoke(first); });
  detail::invoke_in_group(group, rest...);
}

template <class T, class E, class Op>
constexpr bool check_reduce_op() {
  static_assert(ReduceOperation<Op, T, E>,
                "weft parallel reduce/scan: op must be callable as op(T, element) and op(T, T), T being the type of "
                "init (or the elements' value type for an inclusive scan without one), each returning a value a T "
                "can be made from, and a T must be constructible from an element; "
                "e.g. [](T a, const T& b) { return a + b; }");
  return ReduceOperation<Op, T, E>;
}
}  // namespace detail

// Reduces [first, last) on `pool`: the result of std::reduce(first, last, init, op), i.e. init combined with every
// element by op. op must be associative; it need not be commutative: partial results are combined in range
// order, so string concatenation or a matrix product gives the sequential result. An empty range gives init.
//
// Example:
//   std::vector<double> v(n, 0.5);
//   double sum = weft::parallel_reduce(pool, v.begin(), v.end(), 0.0);
//   std::string s = weft::parallel_reduce(pool, words.begin(), words.end(), std::string(), std::plus<>());
template <std::random_access_iterator It, class T, class Op = std::plus<>>
[[nodiscard]] T parallel_reduce(Pool& pool, It first, It last, T init, Op op = {}, std::size_t grain = 0) {
  if constexpr (detail::check_reduce_op<T, std::iter_reference_t<It>, Op>()) {
    detail::require_callable(op, "weft::parallel_reduce");
    const std::size_t n = detail::element_count(first, last, "weft::parallel_reduce");
    if (detail::make_blocks(n, grain, pool.size()).count <= 1) {
      return n == 0 ? init
                    : T(std::invoke(op, std::move(init), detail::fold_block<T>(first, n, op, detail::Identity{})));
    }
    return detail::run_algorithm<T>(
        pool, "weft::parallel_reduce",
        [&](Subflow& sf) {
          return detail::reduce_core(sf, first, n, std::move(init), op, detail::Identity{}, grain, kUnlimited);
        },
        detail::long_share(n, pool.size()));
  } else {
    return init;
  }
}

// std::transform_reduce(first, last, init, reduce, transform) on `pool`: init combined by `reduce` with
// transform(x) for every element x, partial results combined in range order (reduce associative, not
// necessarily commutative). transform is called once per element, concurrently.
//
// Example:
//   std::vector<std::string> words = {"a", "bb", "ccc"};
//   auto size = [](const std::string& w) { return w.size(); };
//   std::size_t letters = weft::parallel_transform_reduce(pool, words.begin(), words.end(), std::size_t{0},
//                                                         std::plus<>(), size);  // 6
template <std::random_access_iterator It, class T, class Op, class Tr>
[[nodiscard]] T parallel_transform_reduce(Pool& pool, It first, It last, T init, Op reduce, Tr transform,
                                          std::size_t grain = 0) {
  static_assert(ReduceTransform<Tr, T, It>,
                "weft::parallel_transform_reduce: transform must be callable with an element and return a value a "
                "T (the type of init) can be made from");
  if constexpr (ReduceTransform<Tr, T, It>) {
    using E = std::invoke_result_t<const Tr&, std::iter_reference_t<It>>;
    if constexpr (detail::check_reduce_op<T, E, Op>()) {
      detail::require_callable(reduce, "weft::parallel_transform_reduce");
      detail::require_callable(transform, "weft::parallel_transform_reduce");
      const std::size_t n = detail::element_count(first, last, "weft::parallel_transform_reduce");
      if (detail::make_blocks(n, grain, pool.size()).count <= 1) {
        return n == 0 ? init
                      : T(std::invoke(reduce, std::move(init), detail::fold_block<T>(first, n, reduce, transform)));
      }
      return detail::run_algorithm<T>(
          pool, "weft::parallel_transform_reduce",
          [&](Subflow& sf) {
            return detail::reduce_core(sf, first, n, std::move(init), reduce, transform, grain, kUnlimited);
          },
          detail::long_share(n, pool.size()));
    }
  }
  return init;
}

// What the range form of parallel_reduce needs of its join: join(T, T) gives something a T can be made from.
template <class Join, class T>
concept ReduceJoin = std::invocable<const Join&, T, T> &&
                     std::constructible_from<T, std::invoke_result_t<const Join&, T, T>>;

// What it needs of its body over [lo, hi) of an index type I: body(lo, hi, running value) gives a T.
template <class Body, class T, class I>
concept IndexReduceBody = std::invocable<const Body&, I, I, T> &&
                          std::constructible_from<T, std::invoke_result_t<const Body&, I, I, T>>;

// Over a weft::Range2d<I>: body(tile, running value) gives a T.
template <class Body, class T, class I>
concept TileReduceBody = std::invocable<const Body&, const Range2d<I>&, T> &&
                         std::constructible_from<T, std::invoke_result_t<const Body&, const Range2d<I>&, T>>;

namespace detail {
template <class T, class Join>
constexpr bool check_reduce_join() {
  static_assert(ReduceJoin<Join, T>,
                "weft::parallel_reduce (range form): join must be callable as join(T, T), T being the type of "
                "identity, returning a value a T can be made from; e.g. [](T a, const T& b) { return a + b; }");
  return ReduceJoin<Join, T>;
}

// Runs range_reduce_core over [0, n) of `fold`'s units, inline when it is one block.
template <class T, class Fold, class Join>
T blocking_range_reduce(Pool& pool, std::size_t n, const T& identity, const Fold& fold, const Join& join,
                        std::size_t grain) {
  if (make_blocks(n, grain, pool.size()).count <= 1) return n == 0 ? identity : T(fold(0, n, T(identity)));
  return run_algorithm<T>(pool, "weft::parallel_reduce", [&](Subflow& sf) {
    return range_reduce_core(sf, n, identity, fold, join, grain, kUnlimited);
  });
}
}  // namespace detail

// The range form of parallel_reduce, as tbb::parallel_reduce(range, identity, body, join) in its functional form:
// [first, last) is cut into chunks that cover it in order; each chunk [lo, hi) is folded by one call
// body(lo, hi, running value) starting from a copy of identity; the chunks' results are combined by join in
// range order. For a loop whose body is cheaper over a whole chunk than per element (a vectorizable sum, a
// running maximum with its index), or whose value is costly to combine per element.
//
// Contract:
// - body(lo, hi, T acc) -> T (something a T is made from) with first <= lo < hi <= last, called concurrently
//   through a const reference; join(T, T) -> T, associative, with identity as its identity (it need not be
//   commutative). The result: join(...join(p0, p1)..., pk) of the chunks' results pi in range order; a range
//   of one chunk gives body(first, last, identity), an empty one (last <= first) identity.
// - Chunks are parallel_reduce's blocks: grain 0 about 64 per worker, run by parallel_for's automatic
//   partitioner, and one call of body may fold several consecutive blocks (fewer partials to join); grain g > 0,
//   chunks of at most g indices. first and last as parallel_for's (their common type, both checked to fit).
// - Nesting, exceptions (the first thrown by body or join is rethrown), pool_closed: as parallel_reduce.
//
// Example:
//   std::vector<double> v(n, 0.5);
//   double sum = weft::parallel_reduce(
//       pool, std::size_t{0}, v.size(), 0.0,
//       [&](std::size_t lo, std::size_t hi, double acc) { return std::accumulate(&v[lo], &v[0] + hi, acc); },
//       std::plus<>());
template <std::integral I, std::integral J, class T, class Body, class Join>
[[nodiscard]] T parallel_reduce(Pool& pool, I first, J last, T identity, Body body, Join join, std::size_t grain = 0) {
  using C = std::common_type_t<I, J>;
  static_assert(IndexReduceBody<Body, T, C>,
                "weft::parallel_reduce (range form): body must be callable as body(lo, hi, T acc), lo and hi indices "
                "of the range's type, acc the running value (T: the type of identity), and return the value "
                "folded over [lo, hi); e.g. [&](std::size_t lo, std::size_t hi, double acc) { ...; return acc; }");
  if constexpr (IndexReduceBody<Body, T, C> && detail::check_reduce_join<T, Join>()) {
    detail::require_callable(body, "weft::parallel_reduce");
    detail::require_callable(join, "weft::parallel_reduce");
    const C lo = detail::common_index<I, J>(first, "first", "weft::parallel_reduce");
    const C hi = detail::common_index<J, I>(last, "last", "weft::parallel_reduce");
    using U = std::make_unsigned_t<C>;
    const auto at = [lo](std::size_t k) {
      return static_cast<C>(static_cast<U>(static_cast<U>(lo) + static_cast<U>(k)));
    };
    const auto fold = [&](std::size_t b, std::size_t e, T acc) {
      return T(std::invoke(body, at(b), at(e), std::move(acc)));
    };
    return detail::blocking_range_reduce(pool, detail::index_count(lo, hi), identity, fold, join, grain);
  } else {
    return identity;
  }
}

// The range form over a rectangle (weft::Range2d, range2d.hpp), as tbb::parallel_reduce over a
// tbb::blocked_range2d: body(tile, running value) -> T once per tile of parallel_for's tiling of `range`
// (about 64 per worker, or tiles of at most the grains); tiles that one piece of the loop runs are folded one
// after another through the running value, from a copy of identity; the pieces' results are joined in tile
// order (the order of the halvings, not row-major: give a join that is commutative, or one whose order does not
// matter to you). An empty rectangle gives identity. Otherwise as the form over indices.
//
// Example:
//   const weft::Range2d<std::size_t> image(0, height, 0, width);
//   std::size_t lit = weft::parallel_reduce(
//       pool, image, std::size_t{0},
//       [&](const weft::Range2d<std::size_t>& t, std::size_t acc) {
//         for (std::size_t y = t.rows().begin(); y != t.rows().end(); ++y)
//           for (std::size_t x = t.cols().begin(); x != t.cols().end(); ++x) acc += pixels[y * width + x] > 128;
//         return acc;
//       },
//       std::plus<>());
template <std::integral I, class T, class Body, class Join>
[[nodiscard]] T parallel_reduce(Pool& pool, const Range2d<I>& range, T identity, Body body, Join join) {
  static_assert(TileReduceBody<Body, T, I>,
                "weft::parallel_reduce (range form over a weft::Range2d<I>): body must be callable as "
                "body(const weft::Range2d<I>& tile, T acc), acc the running value (T: the type of identity), and "
                "return the value folded over the tile");
  if constexpr (TileReduceBody<Body, T, I> && detail::check_reduce_join<T, Join>()) {
    detail::require_callable(body, "weft::parallel_reduce");
    detail::require_callable(join, "weft::parallel_reduce");
    const detail::Tiles2d<I> tiles(range, detail::ForSplitter<void (*)(std::size_t, std::size_t)>::kBlocksPerWorker *
                                              pool.size());
    const auto fold = [&](std::size_t b, std::size_t e, T acc) {
      for (std::size_t k = b; k < e; ++k) {
        const Range2d<I> tile = tiles.tile(k);
        if (!tile.empty()) acc = T(std::invoke(body, tile, std::move(acc)));
      }
      return acc;
    };
    // Tiles from grains: each one block (grain 1 over tile numbers); automatic tiles: automatic blocks of them.
    return detail::blocking_range_reduce(pool, tiles.count(), identity, fold, join, tiles.explicit_grain() ? 1 : 0);
  } else {
    return identity;
  }
}

namespace detail {
template <class It, class Out, class T, class Op>
Out blocking_scan(Pool& pool, const char* call, It first, It last, Out out, std::optional<T> init, const Op& op,
                  bool inclusive, std::size_t grain) {
  static_assert(std::indirectly_writable<Out, const T&>,
                "weft parallel scan: the output iterator must accept the scan's values (T)");
  require_callable(op, call);
  const std::size_t n = element_count(first, last, call);
  if (make_blocks(n, grain, pool.size()).count <= 1) {
    if (n != 0) scan_block(first, out, n, std::move(init), op, inclusive);
  } else {
    static_cast<void>(run_algorithm<Unit>(
        pool, call,
        [&](Subflow& sf) { return scan_core(sf, first, n, out, std::move(init), op, inclusive, grain, kUnlimited); },
        long_share(n, pool.size())));
  }
  return out + static_cast<std::iter_difference_t<Out>>(n);
}
}  // namespace detail

// std::inclusive_scan(first, last, out, op) on `pool`: out[i] = x[0] op x[1] op ... op x[i], computed in the
// elements' value type. A blocked two-pass scan (about 2n applications of op): op must be associative, need not
// be commutative. out is a random-access iterator; it may be first (in place), other overlap is undefined.
// Returns out + (last - first).
//
// Example:
//   std::vector<int> v(n, 1), prefix(n);
//   weft::parallel_inclusive_scan(pool, v.begin(), v.end(), prefix.begin());  // 1, 2, 3, ...
template <std::random_access_iterator It, std::random_access_iterator Out, class Op = std::plus<>>
Out parallel_inclusive_scan(Pool& pool, It first, It last, Out out, Op op = {}, std::size_t grain = 0) {
  using T = std::iter_value_t<It>;
  if constexpr (detail::check_reduce_op<T, std::iter_reference_t<It>, Op>()) {
    return detail::blocking_scan(pool, "weft::parallel_inclusive_scan", first, last, out, std::optional<T>(), op, true,
                                 grain);
  } else {
    return out;
  }
}

// std::exclusive_scan(first, last, out, init, op) on `pool`: out[0] = init, out[i] = init op x[0] op ... op
// x[i-1], computed in the type of init. Otherwise as parallel_inclusive_scan (in place allowed).
//
// Example:
//   std::vector<std::size_t> sizes = {3, 1, 2}, offsets(3);
//   weft::parallel_exclusive_scan(pool, sizes.begin(), sizes.end(), offsets.begin(), std::size_t{0});  // 0, 3, 4
template <std::random_access_iterator It, std::random_access_iterator Out, class T, class Op = std::plus<>>
Out parallel_exclusive_scan(Pool& pool, It first, It last, Out out, T init, Op op = {}, std::size_t grain = 0) {
  if constexpr (detail::check_reduce_op<T, std::iter_reference_t<It>, Op>()) {
    return detail::blocking_scan(pool, "weft::parallel_exclusive_scan", first, last, out,
                                 std::optional<T>(std::move(init)), op, false, grain);
  } else {
    return out;
  }
}

// Sorts [first, last) by comp (std::less<> by default) on `pool`, as std::sort(first, last, comp) would, but NOT
// stably: equivalent elements may end up in any order. A parallel quicksort (partitions around a ninther
// median pivot, parts of at most max(2048, n / (64 * workers)) elements sorted by std::sort; depth-bounded, so
// O(n log n) whatever the input); an already sorted range is detected and left as it is. If comp throws, the
// range holds its elements in an unspecified order.
//
// Example:
//   std::vector<int> v = {3, 1, 2};
//   weft::parallel_sort(pool, v.begin(), v.end());                   // 1, 2, 3
//   weft::parallel_sort(pool, v.begin(), v.end(), std::greater<>());  // 3, 2, 1
template <std::random_access_iterator It, class Comp = std::less<>>
void parallel_sort(Pool& pool, It first, It last, Comp comp = {}) {
  static_assert(SortComparator<Comp, It>,
                "weft::parallel_sort: comp must be a strict weak order on the elements, callable as "
                "comp(const T&, const T&) -> bool, and the elements must be swappable (std::sortable)");
  if constexpr (SortComparator<Comp, It>) {
    detail::require_callable(comp, "weft::parallel_sort");
    const std::size_t n = detail::element_count(first, last, "weft::parallel_sort");
    if (n <= detail::kSortCutoff) {
      std::sort(first, last, comp);
      return;
    }
    static_cast<void>(detail::run_algorithm<detail::Unit>(pool, "weft::parallel_sort", [&](Subflow& sf) {
      return detail::sort_core(sf, first, last, comp);
    }));
  }
}

// Calls every one of fs... (each callable with no arguments) on `pool`, possibly at once, and returns when all
// have returned. The callables are called in place (never copied); their results are discarded. Built on a
// weft::TaskGroup (task_group.hpp): every callable but the last is a child of a group on `pool`, and the last is
// called on the calling thread, which then waits for the others (a wait inside a task runs or suspends as
// TaskGroup::wait does). No graph, and no allocation beyond one small block per child (a reference to its
// callable), from the thread's block cache: cheap enough to recurse with (a recursive fib, a quicksort).
//
// Example:
//   weft::parallel_invoke(pool, [&] { left = build(l); }, [&] { right = build(r); }, [&] { log("building"); });
template <class... Fs>
void parallel_invoke(Pool& pool, Fs&&... fs) {
  static_assert(sizeof...(Fs) >= 1, "weft::parallel_invoke: give at least one callable");
  static_assert((std::invocable<Fs&> && ...),
                "weft::parallel_invoke: every argument after the pool must be callable with no arguments");
  if constexpr ((std::invocable<Fs&> && ...) && sizeof...(Fs) >= 1) {
    (detail::require_callable(fs, "weft::parallel_invoke"), ...);
    if constexpr (sizeof...(Fs) == 1) {
      (std::invoke(fs), ...);
    } else {
      TaskGroup group{pool};
      detail::invoke_in_group(group, fs...);
    }
  }
}

}  // namespace weft
