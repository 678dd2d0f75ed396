// The cores of weft's parallel algorithms (reduce, scan, sort, invoke): each runs inside one node body that has a
// Subflow, spawns its pieces into that one Subflow, joins, and says how it went (an Outcome). The blocking forms
// (weft/algorithms.hpp) run a core as the one node of a TaskGraph; the TaskScope forms run it as a job's body.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/for_splitter.hpp"
#include "weft/node_options.hpp"
#include "weft/pool.hpp"
#include "weft/subflow.hpp"
#include "weft/task_graph.hpp"

namespace weft::detail {

// The value of an algorithm that produces none (scan, sort, invoke): its job is a Job<void>.
struct Unit {};

template <class T>
struct unit_to_void {
  using type = T;
};
template <>
struct unit_to_void<Unit> {
  using type = void;
};
// The result type of the job that runs a core of Outcome<T>.
template <class T>
using unit_to_void_t = typename unit_to_void<T>::type;

// How a core went. value is set iff every piece ran and none threw. error is the first exception of a spawned
// piece: the run already has it (the piece rethrew it to its Subflow). Neither: a cancellation skipped pieces.
// What the core's own frame throws (pool_closed from a spawn, an exception of the sequential combine step) it
// throws, after the join: the run has not seen that yet.
template <class T>
struct Outcome {
  std::optional<T> value{};
  std::exception_ptr error{};
};

// The first exception of the pieces a core spawned itself (sort, invoke), kept for the job's slot.
class FirstError {
 public:
  void record(std::exception_ptr error) noexcept {
    bool expected = false;
    // Only the winner writes error_; it is read after the join, which orders the write before the read.
    if (taken_.compare_exchange_strong(expected, true, std::memory_order_relaxed)) error_ = std::move(error);
  }
  [[nodiscard]] std::exception_ptr get() const noexcept { return error_; }

 private:
  std::atomic<bool> taken_{false};
  std::exception_ptr error_{};
};

// Reduce and scan cut [0, n) into blocks of equal size (the last may be shorter), whose partial results are kept
// in an array indexed by block and combined in block order: so an associative operation that is not commutative
// gets the sequential result. The blocks are then the indices of one parallel_for (run_split), which brings
// parallel_for's automatic partitioning: grain 0 makes ForSplitter::kBlocksPerWorker blocks per worker (each one
// body call of the splitter's automatic mode), grain g makes blocks of g elements.
struct Blocks {
  std::size_t n = 0;
  std::size_t size = 1;
  std::size_t count = 0;
  [[nodiscard]] std::size_t begin(std::size_t b) const noexcept { return b * size; }
  [[nodiscard]] std::size_t end(std::size_t b) const noexcept { return std::min(n, (b + 1) * size); }
};

[[nodiscard]] inline Blocks make_blocks(std::size_t n, std::size_t grain, std::size_t workers) noexcept {
  Blocks blocks;
  blocks.n = n;
  if (grain != 0) {
    blocks.size = grain;
  } else {
    const std::size_t target = ForSplitter<void (*)(std::size_t, std::size_t)>::kBlocksPerWorker * workers;
    blocks.size = std::max<std::size_t>(1, (n + target - 1) / target);
  }
  blocks.count = n == 0 ? 0 : (n - 1) / blocks.size + 1;
  return blocks;
}

// run_split's grain over block indices: automatic over blocks when the user gave none, else one block a piece.
[[nodiscard]] constexpr std::size_t block_grain(std::size_t grain) noexcept { return grain == 0 ? 0 : 1; }

// op(...op(op(T(tr(x0)), tr(x1)), tr(x2))..., tr(x[n-1])) over n >= 1 elements: the partial of one block.
template <class T, class It, class Op, class Tr>
[[nodiscard]] T fold_block(It it, std::size_t n, const Op& op, const Tr& tr) {
  // The iterator alone walks (no index beside it), so the loop compiles as oneTBB's does, by pointer.
  const It last = std::next(it, static_cast<std::iter_difference_t<It>>(n));
  T acc(std::invoke(tr, *it));
  for (++it; it != last; ++it) acc = std::invoke(op, std::move(acc), std::invoke(tr, *it));
  return acc;
}

// The identity transform of reduce and scan: the element as the iterator gives it (no copy).
struct Identity {
  template <class U>
  constexpr U&& operator()(U&& u) const noexcept {
    return std::forward<U>(u);
  }
};

// Reduce: init combined with the partials of the blocks, in block order.
template <class T, class It, class Op, class Tr>
Outcome<T> reduce_core(Subflow& sf, It first, std::size_t n, T init, const Op& op, const Tr& tr, std::size_t grain,
                       unsigned concurrency) {
  using D = std::iter_difference_t<It>;
  const Blocks blocks = make_blocks(n, grain, sf.pool().size());
  Outcome<T> outcome;
  if (blocks.count <= 1) {  // nothing to split: one sequential fold
    outcome.value.emplace(n == 0 ? std::move(init)
                                 : T(std::invoke(op, std::move(init), fold_block<T>(first, n, op, tr))));
    return outcome;
  }
  std::vector<std::optional<T>> partials(blocks.count);
  const auto body = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      partials[b].emplace(
          fold_block<T>(first + static_cast<D>(blocks.begin(b)), blocks.end(b) - blocks.begin(b), op, tr));
    }
  };
  bool complete = false;
  outcome.error = run_split(body, sf, blocks.count, block_grain(grain), concurrency, complete,
                            long_share(n, sf.pool().size()));
  if (outcome.error || !complete) return outcome;
  T acc = std::move(init);
  for (std::optional<T>& partial : partials) acc = std::invoke(op, std::move(acc), std::move(*partial));
  outcome.value.emplace(std::move(acc));
  return outcome;
}

// The range form of reduce: [0, n) (indices, or tile numbers) cut into blocks as reduce's are; a piece of the
// loop, blocks [lo, hi), is folded in one call, fold(begin of lo, end of hi - 1, copy of identity), its partial
// kept at slot lo; the partials are joined in slot order (so a join that is not commutative gets the pieces in
// range order). No partial (n == 0) gives identity.
template <class T, class Fold, class Join>
Outcome<T> range_reduce_core(Subflow& sf, std::size_t n, const T& identity, const Fold& fold, const Join& join,
                             std::size_t grain, unsigned concurrency) {
  const Blocks blocks = make_blocks(n, grain, sf.pool().size());
  Outcome<T> outcome;
  if (blocks.count <= 1) {  // nothing to split: one fold
    outcome.value.emplace(n == 0 ? identity : T(fold(0, n, T(identity))));
    return outcome;
  }
  std::vector<std::optional<T>> partials(blocks.count);
  const auto body = [&](std::size_t lo, std::size_t hi) {
    partials[lo].emplace(fold(blocks.begin(lo), blocks.end(hi - 1), T(identity)));
  };
  bool complete = false;
  outcome.error = run_split(body, sf, blocks.count, block_grain(grain), concurrency, complete,
                            long_share(n, sf.pool().size()));
  if (outcome.error || !complete) return outcome;
  std::optional<T> acc;
  for (std::optional<T>& partial : partials) {
    if (!partial) continue;  // a block folded by the call of an earlier one
    if (acc) {
      acc.emplace(std::invoke(join, std::move(*acc), std::move(*partial)));
    } else {
      acc = std::move(partial);
    }
  }
  outcome.value.emplace(std::move(*acc));
  return outcome;
}

// Scans one block of `size` >= 1 elements from `carry` (what precedes the block; empty: nothing does, in an
// inclusive scan without init). Each element is read before its output is written, so `to` may be `in`.
template <class T, class It, class Out, class Op>
void scan_block(It in, Out to, std::size_t size, std::optional<T> carry, const Op& op, bool inclusive) {
  if (inclusive) {
    T acc = carry ? T(std::invoke(op, std::move(*carry), *in)) : T(*in);
    *to = acc;
    for (std::size_t k = 1; k < size; ++k) {
      acc = std::invoke(op, std::move(acc), *++in);
      *++to = acc;
    }
  } else {
    T acc = std::move(*carry);
    for (std::size_t k = 0; k < size; ++k, ++in, ++to) {
      T current = acc;
      acc = std::invoke(op, std::move(acc), *in);
      *to = std::move(current);
    }
  }
}

// A blocked two-pass scan. Pass 1 folds every block but the last; the block offsets follow sequentially, in
// block order (init, then init + sum(block 0), ...); pass 2 scans every block from its offset. `init` empty: an
// inclusive scan without one (block 0 starts from its first element). out may be first (an in-place scan).
template <class T, class It, class Out, class Op>
Outcome<Unit> scan_core(Subflow& sf, It first, std::size_t n, Out out, std::optional<T> init, const Op& op,
                        bool inclusive, std::size_t grain, unsigned concurrency) {
  using D = std::iter_difference_t<It>;
  using DO = std::iter_difference_t<Out>;
  const Blocks blocks = make_blocks(n, grain, sf.pool().size());
  Outcome<Unit> outcome;
  if (blocks.count <= 1) {  // nothing to split: one sequential pass
    if (n != 0) scan_block(first, out, n, std::move(init), op, inclusive);
    outcome.value.emplace();
    return outcome;
  }
  std::vector<std::optional<T>> carry(blocks.count);  // pass 1: block sums; then each block's offset
  const auto sum_blocks = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      carry[b].emplace(
          fold_block<T>(first + static_cast<D>(blocks.begin(b)), blocks.end(b) - blocks.begin(b), op, Identity{}));
    }
  };
  bool complete = false;
  outcome.error = run_split(sum_blocks, sf, blocks.count - 1, block_grain(grain), concurrency, complete,
                            long_share(n, sf.pool().size()));
  if (outcome.error || !complete) return outcome;
  std::optional<T> offset = std::move(init);
  for (std::optional<T>& slot : carry) {
    std::optional<T> sum = std::move(slot);
    slot = offset;
    if (!sum) break;  // the last block's: never computed, never needed
    if (offset) {
      offset.emplace(std::invoke(op, std::move(*offset), std::move(*sum)));
    } else {
      offset = std::move(sum);
    }
  }
  const auto scan_blocks = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t b = lo; b < hi; ++b) {
      scan_block(first + static_cast<D>(blocks.begin(b)), out + static_cast<DO>(blocks.begin(b)),
                 blocks.end(b) - blocks.begin(b), std::move(carry[b]), op, inclusive);
    }
  };
  complete = false;
  outcome.error = run_split(scan_blocks, sf, blocks.count, block_grain(grain), concurrency, complete,
                            long_share(n, sf.pool().size()));
  if (!outcome.error && complete) outcome.value.emplace();
  return outcome;
}

// Parallel quicksort: a piece partitions its range around a median pivot (less, equal, greater or equal),
// spawns the less part into the one Subflow and goes on with the greater, until a part is at most `cutoff`
// elements, which std::sort sorts. Depth is bounded as in introsort: past 2 log2(n) levels a piece hands its
// range to std::sort whole, so adversarial inputs stay O(n log n). Not stable.
template <class It, class Comp>
class Sorter {
 public:
  Sorter(Subflow& root, const Comp& comp, std::size_t cutoff, unsigned max_depth) noexcept
      : root_(root), comp_(comp), cutoff_(cutoff), max_depth_(max_depth) {}
  Sorter(const Sorter&) = delete;
  Sorter& operator=(const Sorter&) = delete;

  void spawn(It first, It last, unsigned depth) { root_.spawn(Piece{this, first, last, depth}); }
  [[nodiscard]] std::exception_ptr error() const noexcept { return error_.get(); }

 private:
  struct Piece {
    Sorter* self;
    It first;
    It last;
    unsigned depth;
    void operator()() { self->run(first, last, depth); }
  };

  void run(It first, It last, unsigned depth) {
    try {
      while (static_cast<std::size_t>(last - first) > cutoff_ && depth < max_depth_) {
        if (root_.cancelled()) return;
        ++depth;
        const auto [less_end, greater_begin] = partition(first, last);
        if (less_end - first > 1) spawn(first, less_end, depth);
        first = greater_begin;
      }
      if (!root_.cancelled()) std::sort(first, last, comp_);
    } catch (...) {
      error_.record(std::current_exception());
      throw;  // to the Subflow's child wrapper: the run learns of it and cancels
    }
  }

  // [first, a) < pivot, [a, b) equivalent to it, [b, last) not less than it; returns {a, b}. The pivot is the
  // median of three medians of three (Tukey's ninther). The equivalents are gathered (a second pass over the
  // rest) only when one of the other samples is equivalent to the pivot: then keys repeat often enough for it
  // to pay, and a range of equal keys is done in one step; otherwise [a, b) is the pivot alone, and one pass
  // suffices (on strings the second pass was a sizeable share of the sort; docs/perf-log.md).
  std::pair<It, It> partition(It first, It last) {
    const auto n = last - first;
    const It mid = first + n / 2;
    const It samples[9] = {first,       first + n / 8,    first + n / 4,    mid - n / 8, mid,
                           mid + n / 8, last - 1 - n / 4, last - 1 - n / 8, last - 1};
    const It pivot = median(median(samples[0], samples[1], samples[2]), median(samples[3], samples[4], samples[5]),
                            median(samples[6], samples[7], samples[8]));
    bool repeats = false;
    for (const It& s : samples) {
      if (s != pivot && !std::invoke(comp_, *s, *pivot) && !std::invoke(comp_, *pivot, *s)) repeats = true;
    }
    std::iter_swap(first, pivot);  // the pivot waits at *first, outside the ranges partitioned
    It less_end = std::partition(first + 1, last, [&](const auto& x) { return std::invoke(comp_, x, *first); });
    It equal_end = repeats
                       ? std::partition(less_end, last, [&](const auto& x) { return !std::invoke(comp_, *first, x); })
                       : less_end;
    std::iter_swap(first, less_end - 1);  // the pivot joins its equals
    return {less_end - 1, equal_end};
  }

  It median(It a, It b, It c) const {
    if (std::invoke(comp_, *a, *b)) {
      if (std::invoke(comp_, *b, *c)) return b;
      return std::invoke(comp_, *a, *c) ? c : a;
    }
    if (std::invoke(comp_, *a, *c)) return a;
    return std::invoke(comp_, *b, *c) ? c : b;
  }

  Subflow& root_;
  const Comp& comp_;
  const std::size_t cutoff_;
  const unsigned max_depth_;
  FirstError error_;
};

// Below this many elements a sort runs whole in std::sort (also the least piece the automatic cutoff makes).
inline constexpr std::size_t kSortCutoff = 2048;

[[nodiscard]] inline std::size_t sort_cutoff(std::size_t n, std::size_t workers) noexcept {
  return std::max(kSortCutoff, n / (ForSplitter<void (*)(std::size_t, std::size_t)>::kBlocksPerWorker * workers));
}

template <class It, class Comp>
Outcome<Unit> sort_core(Subflow& sf, It first, It last, const Comp& comp) {
  Outcome<Unit> outcome;
  const auto n = static_cast<std::size_t>(last - first);
  if (n <= kSortCutoff) {  // nothing worth splitting
    std::sort(first, last, comp);
    outcome.value.emplace();
    return outcome;
  }
  // Already sorted (a frequent case that quicksort would partition in full at every level): is_sorted_until
  // stops at the first inversion, so on other inputs this costs a few comparisons.
  if (std::is_sorted(first, last, comp)) {
    outcome.value.emplace();
    return outcome;
  }
  Sorter<It, Comp> sorter(sf, comp, sort_cutoff(n, sf.pool().size()), 2 * static_cast<unsigned>(std::bit_width(n)));
  std::exception_ptr start_error;
  try {
    sorter.spawn(first, last, 0);
  } catch (...) {
    start_error = std::current_exception();  // pool_closed: nothing was spawned, but join to be uniform
  }
  sf.join();
  if (start_error) std::rethrow_exception(start_error);
  outcome.error = sorter.error();
  if (!outcome.error && !sf.cancelled()) outcome.value.emplace();
  return outcome;
}

// Invoke: every callable a child of the one Subflow, then the join.
template <class Tuple>
Outcome<Unit> invoke_core(Subflow& sf, Tuple& fs) {
  Outcome<Unit> outcome;
  FirstError error;
  std::atomic<std::size_t> ran{0};
  std::exception_ptr start_error;
  try {
    std::apply(
        [&](auto&... f) {
          (sf.spawn([&f, &error, &ran] {
            try {
              std::invoke(f);
            } catch (...) {
              error.record(std::current_exception());
              throw;
            }
            // relaxed: read after the join, which orders every finished child before it.
            ran.fetch_add(1, std::memory_order_relaxed);
          }),
           ...);
        },
        fs);
  } catch (...) {
    start_error = std::current_exception();  // pool_closed: the children spawned so far still need the join
  }
  sf.join();
  if (start_error) std::rethrow_exception(start_error);
  outcome.error = error.get();
  if (!outcome.error && ran.load(std::memory_order_relaxed) == std::tuple_size_v<Tuple>) outcome.value.emplace();
  return outcome;
}

// Runs core(Subflow&) -> Outcome<T> as the one node of a TaskGraph on `pool` and returns its value; Run::wait()
// rethrows the first exception (and runs other tasks meanwhile on a worker, so nested calls neither idle a
// worker nor deadlock). `call` names the public call in the run's own errors (pool_closed). `long_work`: the
// algorithm is known to take at least kLongRest, so a calling thread that is not a worker sleeps at once.
template <class T, class Core>
T run_algorithm(Pool& pool, const char* call, Core&& core, bool long_work = false) {
  std::optional<T> result;
  TaskGraph graph;
  graph.add_node([&result, &core](Subflow& sf) { result = std::move(core(sf).value); }, NodeOptions{.name = call});
  Run run = GraphAccess::run(graph, pool, Caller{call});
  (void)GraphAccess::wait(run, Caller{call}, !long_work);
  if (!result) [[unlikely]] {
    // wait() returned, so no piece threw and nothing was cancelled: every piece ran. Not reached.
    throw std::logic_error(std::string(call) + ": internal error: the run ended without a result");
  }
  return std::move(*result);
}

}  // namespace weft::detail
