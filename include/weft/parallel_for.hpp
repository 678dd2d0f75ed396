// weft::parallel_for(pool, first, last, f): a blocking parallel loop, like tbb::parallel_for; with a step
// (first, last, step, f), and over a rectangle (weft::Range2d, like tbb::blocked_range2d).
// (Inside a TaskScope, scope.parallel_for(...) makes the same loop a job of the graph instead.)
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <concepts>
#include <cstddef>
#include <exception>
#include <iterator>
#include <type_traits>
#include <utility>

#include "weft/detail/for_range.hpp"
#include "weft/detail/for_splitter.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/detail/tiles.hpp"
#include "weft/node_options.hpp"
#include "weft/pool.hpp"
#include "weft/range2d.hpp"
#include "weft/subflow.hpp"
#include "weft/task_graph.hpp"

namespace weft {

namespace detail {
// One node whose body splits the range into its Subflow; Run::wait() runs other tasks when called on a worker,
// so a parallel_for nested in a task neither blocks a worker idle nor deadlocks.
template <class Body>
void run_blocking_for(Pool& pool, const Body& body, std::size_t n, std::size_t grain) {
  if (n == 0) return;
  // The calling thread runs a range with nothing to split (one index, or at most `grain`), and with automatic
  // partitioning starts on the range itself, ending here a loop too small to be worth waking the pool for. As a
  // task of the pool, as every chunk is (its hooks, its thread index), and so not on a thread that can have no
  // index in it (the pool's tasks then run it all). Not on a pool that is shut down: that is refused (below) as
  // for any loop.
  std::size_t first = 0;
  bool long_rest = false;
  const bool whole = n == 1 || (grain != 0 && n <= grain);
  if ((whole || grain == 0) && !pool.closed()) {
    std::exception_ptr error;
    auto start = [&]() noexcept {
      try {
        if (whole) {
          body(0, n);
          first = n;
        } else {
          first = run_while_small(body, n, pool.size(), long_rest);
        }
      } catch (...) {
        error = std::current_exception();
      }
    };
    (void)PoolRunHere::run(pool, start);
    if (error) std::rethrow_exception(error);
  }
  if (first == n) return;
  const auto rest = [&body, first](std::size_t lo, std::size_t hi) { body(first + lo, first + hi); };
  const std::size_t left = n - first;
  TaskGraph graph;
  graph.add_node(
      [&rest, left, grain, long_rest](Subflow& sf) {
        bool complete = false;
        // A piece's exception already went to the run, which wait() rethrows: nothing more to do with it.
        static_cast<void>(run_split(rest, sf, left, grain, kUnlimited, complete, long_rest));
      },
      NodeOptions{.name = "parallel_for"});
  // Errors of the run (pool_closed) name weft::parallel_for, the call the user made.
  // A rest predicted long: an outside caller sleeps at once rather than spin beside the workers (kLongRest).
  Run run = GraphAccess::run(graph, pool, Caller{"weft::parallel_for"});
  (void)GraphAccess::wait(run, Caller{"weft::parallel_for"}, !long_rest);
}
}  // namespace detail

// Runs f(i) for every i in [first, last) on `pool`, and returns when all have run.
//
// Contract:
// - f(i) is called exactly once per index, concurrently, through a const reference to f; or, if f takes two
//   indices, f(lo, hi) once per chunk, the chunks covering [first, last) exactly (a tbb::blocked_range body).
// - last <= first is an empty range: nothing runs. first and last may have different integer types (0 and a
//   size_t); both must fit their common type, else weft::invalid_option naming the value.
// - Every chunk, the ones the calling thread runs itself included, runs as a task of the pool: inside its hooks,
//   with a Pool::current_thread_index().
// - grain 0: automatic partitioning. The calling thread first runs the range's start itself, chunk by chunk,
//   for as long as the whole loop is predicted to take less than about 20 microseconds (what starting the
//   workers costs): a loop that small runs entirely inline. The rest is cut into about 4 pieces per worker,
//   each run as chunks of about 1/64 of a worker's share (f(lo, hi) is called about 64 times per worker, as
//   oneTBB's auto_partitioner does), and a piece that is running gives half of what it has left to workers
//   that ran dry. While the workers run the rest, a calling thread that is not a worker waits: it looks for
//   the end for a moment before it sleeps, unless the rest is predicted (at the pace of its start) to take a
//   worker 100 microseconds or more, when it sleeps at once and leaves the cores to the workers. grain g > 0:
//   chunks of at most g indices. A range of one index, or of at most `grain`, runs inline in the calling thread.
// - Callable from any thread, and from inside a weft task or job (nested loops): a waiting worker runs other
//   tasks meanwhile. The first exception thrown by f stops the chunks not yet started and is rethrown here.
//   Throws pool_closed if the pool is shutting down.
//
// Example:
//   weft::Pool pool;
//   std::vector<double> y(n);
//   weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { y[i] = std::sqrt(double(i)); });
template <std::integral I, std::integral J, class F>
  requires IndexBody<std::decay_t<F>, std::common_type_t<I, J>>
void parallel_for(Pool& pool, I first, J last, F&& f, std::size_t grain = 0) {
  detail::require_callable(f, "weft::parallel_for");
  using C = std::common_type_t<I, J>;
  const C lo = detail::common_index<I, J>(first, "first", "weft::parallel_for");
  const C hi = detail::common_index<J, I>(last, "last", "weft::parallel_for");
  // f by reference: the loop ends before this frame does, so the user's callable is never copied.
  const detail::IndexRange<C, const std::remove_reference_t<F>&> body(lo, f);
  detail::run_blocking_for(pool, body, detail::index_count(lo, hi), grain);
}

// Runs f(*it) for every it in [first, last) (random-access iterators) on `pool`, and returns when all have run.
// Same contract as the integer form; f may instead take two iterators, f(b, e), once per chunk. f gets the
// elements, never their indices: an f of one fixed signature taking an integer of another type than the
// elements (f(std::size_t) over a std::vector<int>: meant for indices, it would get each element converted)
// does not compile, with a static_assert saying what to write. A reversed range (last before first) is not
// empty here but refused: std::invalid_argument naming the call.
//
// Example:
//   std::vector<int> v(1000, 1);
//   weft::parallel_for(pool, v.begin(), v.end(), [](int& x) { x *= 2; });
template <std::random_access_iterator It, class F>
  requires ElementBody<std::decay_t<F>, It>
void parallel_for(Pool& pool, It first, It last, F&& f, std::size_t grain = 0) {
  detail::require_callable(f, "weft::parallel_for");
  const std::size_t n = detail::element_count(first, last, "weft::parallel_for");
  const detail::ElementRange<It, const std::remove_reference_t<F>&> body(std::move(first), f);
  detail::run_blocking_for(pool, body, n, grain);
}

// Runs f(i) for i = first, first + step, first + 2 step, ... while i is before last (step > 0), or, for a
// negative step, first, first + step, ... while i is after last (counting down: parallel_for(pool, 9, -1, -1, f)
// visits 9 .. 0). Like tbb::parallel_for(first, last, step, f), which takes positive steps only.
//
// Contract:
// - As the form without a step (exactly once per index, concurrently, through a const reference, the same
//   partitioning, nesting and exceptions), with f taking one index (no chunk body). A range with last not in the
//   step's direction from first is empty. `grain` counts the indices visited, not the distance they span.
// - step 0 is refused with weft::invalid_option: "weft::parallel_for: step = 0: ...". The step may have any
//   integer type, and any value but 0: no index is computed past last, so nothing overflows.
//
// Example:
//   weft::parallel_for(pool, 0, n, 2, [&](int i) { even[i / 2] = i; });  // 0, 2, 4, ... below n
template <std::integral I, std::integral J, std::integral S, class F>
  requires std::invocable<const std::decay_t<F>&, std::common_type_t<I, J>>
void parallel_for(Pool& pool, I first, J last, S step, F&& f, std::size_t grain = 0) {
  detail::require_callable(f, "weft::parallel_for");
  using C = std::common_type_t<I, J>;
  const C lo = detail::common_index<I, J>(first, "first", "weft::parallel_for");
  const C hi = detail::common_index<J, I>(last, "last", "weft::parallel_for");
  const detail::Stride stride = detail::make_stride(lo, hi, step, "weft::parallel_for");
  const detail::StridedRange<C, const std::remove_reference_t<F>&> body(lo, stride.magnitude, stride.down, f);
  detail::run_blocking_for(pool, body, stride.count, grain);
}

// Runs f(tile) over tiles of `range` (weft::Range2d, range2d.hpp) that cover it exactly, each once and none
// empty, concurrently, through a const reference to f; returns when all have run. A tile is itself a Range2d
// (its rows() and cols()). Tiles are halvings of the rectangle along its longer side: with both grains 0,
// about 64 per worker, run by the automatic partitioning of the one-dimensional form (the calling thread keeps a
// loop too small to share); with grains, tiles of at most the grains, each one piece of the loop. An empty
// rectangle runs nothing. Otherwise as the one-dimensional form (nesting, exceptions, pool_closed).
//
// Example:
//   const weft::Range2d<int> grid(1, n - 1, 1, n - 1);  // the interior of an n x n grid
//   weft::parallel_for(pool, grid, [&](const weft::Range2d<int>& t) {
//     for (int i = t.rows().begin(); i != t.rows().end(); ++i)
//       for (int j = t.cols().begin(); j != t.cols().end(); ++j) next[i][j] = (cur[i - 1][j] + cur[i + 1][j]) / 2;
//   });
template <std::integral I, class F>
  requires std::invocable<const std::decay_t<F>&, const Range2d<I>&>
void parallel_for(Pool& pool, const Range2d<I>& range, F&& f) {
  detail::require_callable(f, "weft::parallel_for");
  const detail::Tiles2d<I> tiles(range, detail::ForSplitter<void (*)(std::size_t, std::size_t)>::kBlocksPerWorker *
                                            pool.size());
  const detail::TileRange<I, const std::remove_reference_t<F>&> body(tiles, f);
  // Tiles from grains: one a piece (grain 1 over tile numbers); automatic tiles: automatic over them.
  detail::run_blocking_for(pool, body, tiles.count(), tiles.explicit_grain() ? 1 : 0);
}

}  // namespace weft
