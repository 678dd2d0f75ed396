// weft's parallel algorithms against oneTBB's counterparts, each weft case next to its oneTBB case:
// reduce (a sum of int64), transform_reduce (a sum of square roots), inclusive scan (int64 prefix sums), sort
// (random int32, and random strings), invoke (a recursive sum that splits with parallel_invoke down to 4096
// elements, so it measures the cost of nested invokes), and the fork-join recursions: fib(30) through task groups
// (weft::TaskGroup against tbb::task_group, one half run, the other run_and_wait) and fib(25) through
// parallel_invoke (a task per call that splits: nothing but the cost of a nested invoke), skynet (10 children a
// node, 10^6 and 10^7 leaves, a group per node) and nqueens(12) (a group per row, a child per safe placement),
// each by weft::TaskGroup against tbb::task_group written the same way, as is a 1024 x 1024 matrix product by
// recursion into quadrants (matmul_1024_task_group: two phases of four quadrant products a level, one template
// for both libraries); fib(30) as weft::Task coroutines, each
// node a `co_await weft::when_all(fib(n - 1), fib(n - 2))`, and skynet (10^6 leaves) as coroutines, each node a
// `co_await weft::when_all` of its 10 children, each against the same tbb::task_group recursion. The
// co_await rows (weft only, one worker, ns per await): a Future already ready, and a Task that completes at once
// (its frame's allocation included). The range forms:
// the range-body reduce (a sum of 10^6 and 10^7 doubles, body over a chunk, join) against tbb::parallel_reduce's
// functional form, a 2048 x 2048 transpose over weft::Range2d against tbb::blocked_range2d, and a 256-bin
// histogram of 2^24 values through weft::PerWorker against tbb::combinable (local() once per element, the
// lookup measured).
// The head-to-head light rows: a sum of 10^7 int32 into an int64 (reduce_sum_int32_10M), and a parallel_for over
// 10^4 and 10^6 items of one LCG step each (parallel_for_lcg_10000, parallel_for_lcg_1000000), each against
// oneTBB's default partitioner.
//
// Both libraries get 2 threads (WEFT_BENCH_THREADS to change): a weft Pool of 2 workers, and a oneTBB
// task_arena of 2 slots, one of which is the calling thread's (so oneTBB runs on the caller and one worker; weft
// on two workers while the caller waits). Each sample is one whole call timed with steady_clock (manual time:
// restoring the unsorted input and checking the result stay out). Every result is checked against the
// sequential one once per benchmark.
// Ratios: run with --benchmark_repetitions=5 --benchmark_report_aggregates_only=true and divide the weft
// median by the oneTBB median of the same case. `algorithms_bench --fib30-peak-rss [runs]` measures instead the
// peak RSS of fib(30) by task groups, each side in a process of its own (see fib_peak_rss below).
#include <benchmark/benchmark.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/blocked_range2d.h>
#include <oneapi/tbb/combinable.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_invoke.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench/common/peak_rss.hpp"
#include "weft/algorithms.hpp"
#include "weft/parallel_for.hpp"
#include "weft/per_worker.hpp"
#include "weft/pool.hpp"
#include "weft/range2d.hpp"
#include "weft/sync_wait.hpp"
#include "weft/task.hpp"
#include "weft/task_group.hpp"
#include "weft/task_scope.hpp"

namespace {

unsigned bench_threads() {
  if (const char* text = std::getenv("WEFT_BENCH_THREADS"); text != nullptr && *text != '\0') {
    const long n = std::strtol(text, nullptr, 10);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return 2;
}

constexpr std::size_t kReduceSize = std::size_t{1} << 24;
constexpr std::size_t kScanSize = std::size_t{1} << 24;
constexpr std::size_t kSortSize = std::size_t{1} << 22;
constexpr std::size_t kStringSortSize = std::size_t{1} << 19;
constexpr std::size_t kInvokeSize = std::size_t{1} << 22;
constexpr std::size_t kInvokeLeaf = 4096;

struct Data {
  std::vector<std::int64_t> ints;
  std::vector<double> doubles;
  std::vector<std::int32_t> unsorted;
  std::vector<std::string> words;
  Data() : ints(kReduceSize), doubles(kReduceSize), unsorted(kSortSize), words(kStringSortSize) {
    std::mt19937_64 random(42);
    for (auto& x : ints) x = static_cast<std::int64_t>(random() % 1000);
    for (auto& x : doubles) x = static_cast<double>(random() % 1'000'000);
    for (auto& x : unsorted) x = static_cast<std::int32_t>(random());
    for (auto& w : words) w = std::to_string(random()) + "-key";
  }
};

struct Env {
  Data data;
  weft::Pool pool;
  tbb::global_control parallelism;
  tbb::task_arena arena;
  explicit Env(unsigned threads)
      : pool(weft::PoolOptions{.threads = threads}),
        parallelism(tbb::global_control::max_allowed_parallelism, threads),
        arena(static_cast<int>(threads)) {
    arena.initialize();
  }
};
Env* env = nullptr;

template <class Call>
double seconds(Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// --- reduce --- (the sum of int64s, or of int32s into an int64)
template <class T>
std::int64_t weft_sum(const std::vector<T>& v) {
  return weft::parallel_reduce(env->pool, v.begin(), v.end(), std::int64_t{0});
}
template <class T>
std::int64_t tbb_sum(const std::vector<T>& v) {
  std::int64_t r = 0;
  env->arena.execute([&] {
    r = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, v.size()), std::int64_t{0},
        [&](const tbb::blocked_range<std::size_t>& range, std::int64_t acc) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) acc += v[i];
          return acc;
        },
        std::plus<>());
  });
  return r;
}

// --- transform_reduce ---
double weft_roots(const std::vector<double>& v) {
  return weft::parallel_transform_reduce(env->pool, v.begin(), v.end(), 0.0, std::plus<>(),
                                         [](double x) { return std::sqrt(x); });
}
double tbb_roots(const std::vector<double>& v) {
  double r = 0;
  env->arena.execute([&] {
    r = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, v.size()), 0.0,
        [&](const tbb::blocked_range<std::size_t>& range, double acc) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) acc += std::sqrt(v[i]);
          return acc;
        },
        std::plus<>());
  });
  return r;
}

// --- inclusive scan ---
void weft_scan(const std::vector<std::int64_t>& in, std::vector<std::int64_t>& out) {
  weft::parallel_inclusive_scan(env->pool, in.begin(), in.end(), out.begin());
}
void tbb_scan(const std::vector<std::int64_t>& in, std::vector<std::int64_t>& out) {
  env->arena.execute([&] {
    tbb::parallel_scan(
        tbb::blocked_range<std::size_t>(0, in.size()), std::int64_t{0},
        [&](const tbb::blocked_range<std::size_t>& range, std::int64_t sum, bool is_final) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) {
            sum += in[i];
            if (is_final) out[i] = sum;
          }
          return sum;
        },
        std::plus<>());
  });
}

// --- sort ---
template <class T>
void weft_sort(std::vector<T>& v) {
  weft::parallel_sort(env->pool, v.begin(), v.end());
}
template <class T>
void tbb_sort(std::vector<T>& v) {
  env->arena.execute([&] { tbb::parallel_sort(v.begin(), v.end()); });
}

// --- invoke: a recursive sum split in halves by parallel_invoke ---
std::int64_t weft_tree(const std::int64_t* p, std::size_t n) {
  if (n <= kInvokeLeaf) return std::accumulate(p, p + n, std::int64_t{0});
  std::int64_t a = 0, b = 0;
  weft::parallel_invoke(
      env->pool, [&] { a = weft_tree(p, n / 2); }, [&] { b = weft_tree(p + n / 2, n - n / 2); });
  return a + b;
}
std::int64_t tbb_tree_in_arena(const std::int64_t* p, std::size_t n) {
  if (n <= kInvokeLeaf) return std::accumulate(p, p + n, std::int64_t{0});
  std::int64_t a = 0, b = 0;
  tbb::parallel_invoke([&] { a = tbb_tree_in_arena(p, n / 2); }, [&] { b = tbb_tree_in_arena(p + n / 2, n - n / 2); });
  return a + b;
}
std::int64_t tbb_tree(const std::int64_t* p, std::size_t n) {
  std::int64_t r = 0;
  env->arena.execute([&] { r = tbb_tree_in_arena(p, n); });
  return r;
}

// --- fork-join recursion: fib(30) by task groups (run one half, run_and_wait the other), fib(25) by
// parallel_invoke. The root is posted so that the whole recursion runs on weft's workers (the caller waits in
// wait_idle), as oneTBB's runs in its arena (the caller and one worker). ---
constexpr int kGroupFibN = 30;
constexpr int kInvokeFibN = 25;

std::uint64_t fib_value(int n) {
  std::uint64_t a = 0, b = 1;
  for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
  return a;
}
// The pool of the task-group recursions: env->pool, or the peak-RSS child's own pool (which has no Env).
weft::Pool* group_pool = nullptr;
template <class Recursion, class... Args>
auto weft_root(weft::Pool& pool, Recursion recursion, Args... args) {
  decltype(recursion(args...)) r{};
  pool.post([&r, recursion, args...] { r = recursion(args...); });
  pool.wait_idle();
  return r;
}
// A group of either library for the recursions written once for both (matmul): weft's on group_pool.
template <class Group>
Group make_group() {
  if constexpr (std::is_same_v<Group, weft::TaskGroup>) {
    return Group{*group_pool};
  } else {
    return Group{};
  }
}
std::uint64_t weft_group_fib(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t a = 0, b = 0;
  weft::TaskGroup g{*group_pool};
  g.run([&a, n] { a = weft_group_fib(n - 1); });
  g.run_and_wait([&b, n] { b = weft_group_fib(n - 2); });
  return a + b;
}
std::uint64_t tbb_group_fib(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t a = 0, b = 0;
  tbb::task_group g;
  g.run([&a, n] { a = tbb_group_fib(n - 1); });
  g.run_and_wait([&b, n] { b = tbb_group_fib(n - 2); });
  return a + b;
}
std::uint64_t weft_invoke_fib(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t a = 0, b = 0;
  weft::parallel_invoke(
      env->pool, [&a, n] { a = weft_invoke_fib(n - 1); }, [&b, n] { b = weft_invoke_fib(n - 2); });
  return a + b;
}
std::uint64_t tbb_invoke_fib(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t a = 0, b = 0;
  tbb::parallel_invoke([&a, n] { a = tbb_invoke_fib(n - 1); }, [&b, n] { b = tbb_invoke_fib(n - 2); });
  return a + b;
}

void bm_fib(benchmark::State& state, bool weft, int n, std::uint64_t (*weft_fib)(int), std::uint64_t (*tbb_fib)(int)) {
  bool ok = true;
  for (auto _ : state) {
    std::uint64_t r = 0;
    state.SetIterationTime(seconds([&] {
      if (weft) {
        r = weft_root(env->pool, weft_fib, n);
      } else {
        env->arena.execute([&] { r = tbb_fib(n); });
      }
    }));
    ok = ok && r == fib_value(n);
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- fib(30) as coroutines: each node a weft::Task that awaits when_all of its two halves (the second queued on
// the pool, the first run inline), against the task-group recursion of oneTBB above. The root hops onto the pool
// first (pool.schedule()), so the recursion runs on weft's workers while the caller waits in sync_wait. ---
weft::Task<std::uint64_t> coro_fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [a, b] = co_await weft::when_all(coro_fib(n - 1), coro_fib(n - 2));
  co_return a + b;
}
weft::Task<std::uint64_t> coro_fib_root(weft::Pool& pool, int n) {
  co_await pool.schedule();
  co_return co_await coro_fib(n);
}
void bm_coro_fib(benchmark::State& state, bool weft) {
  bool ok = true;
  for (auto _ : state) {
    std::uint64_t r = 0;
    state.SetIterationTime(seconds([&] {
      if (weft) {
        r = weft::sync_wait(coro_fib_root(env->pool, kGroupFibN));
      } else {
        env->arena.execute([&] { r = tbb_group_fib(kGroupFibN); });
      }
    }));
    ok = ok && r == fib_value(kGroupFibN);
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- the cost of one co_await that does not suspend, on a pool of one worker: kAwaits awaits in one coroutine
// running on the worker, timed together (divide by kAwaits, 65,536, for one await). A Future made ready beforehand (the
// futures are submitted and waited for outside the timing), or a Task that completes at once (its frame allocated and
// freed in each await). ---
constexpr int kAwaits = 1 << 16;
weft::Task<std::uint64_t> await_ready_futures(weft::Pool& pool, std::vector<weft::Future<int>>& futures) {
  co_await pool.schedule();
  std::uint64_t sum = 0;
  for (weft::Future<int>& f : futures) sum += static_cast<std::uint64_t>(co_await std::move(f));
  co_return sum;
}
weft::Task<int> completed_task(int v) { co_return v; }
weft::Task<std::uint64_t> await_completed_tasks(weft::Pool& pool) {
  co_await pool.schedule();
  std::uint64_t sum = 0;
  for (int i = 0; i < kAwaits; ++i) sum += static_cast<std::uint64_t>(co_await completed_task(i));
  co_return sum;
}
void bm_co_await(benchmark::State& state, bool future) {
  static weft::Pool one{weft::PoolOptions{.threads = 1}};
  const std::uint64_t expected = std::uint64_t{kAwaits} * (kAwaits - 1) / 2;
  bool ok = true;
  std::vector<weft::Future<int>> futures;
  for (auto _ : state) {
    std::uint64_t r = 0;
    if (future) {
      futures.clear();
      for (int i = 0; i < kAwaits; ++i) futures.push_back(one.submit([i] { return i; }));
      one.wait_idle();
      state.SetIterationTime(seconds([&] { r = weft::sync_wait(await_ready_futures(one, futures)); }));
    } else {
      state.SetIterationTime(seconds([&] { r = weft::sync_wait(await_completed_tasks(one)); }));
    }
    ok = ok && r == expected;
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- skynet: a tree with 10 children a node down to `leaves` leaves (a power of 10), each leaf returning its
// index, each inner node summing its children's sums; a group per node, 9 children run, the 10th run_and_wait. ---
constexpr std::uint64_t kSkynetFanout = 10;
std::uint64_t weft_skynet(std::uint64_t first, std::uint64_t leaves) {
  if (leaves == 1) return first;
  const std::uint64_t step = leaves / kSkynetFanout;
  std::array<std::uint64_t, kSkynetFanout> sums{};
  weft::TaskGroup g{*group_pool};
  for (std::uint64_t i = 0; i + 1 < kSkynetFanout; ++i) {
    g.run([&sums, i, first, step] { sums[i] = weft_skynet(first + i * step, step); });
  }
  g.run_and_wait(
      [&sums, first, step] { sums[kSkynetFanout - 1] = weft_skynet(first + (kSkynetFanout - 1) * step, step); });
  return std::accumulate(sums.begin(), sums.end(), std::uint64_t{0});
}
std::uint64_t tbb_skynet(std::uint64_t first, std::uint64_t leaves) {
  if (leaves == 1) return first;
  const std::uint64_t step = leaves / kSkynetFanout;
  std::array<std::uint64_t, kSkynetFanout> sums{};
  tbb::task_group g;
  for (std::uint64_t i = 0; i + 1 < kSkynetFanout; ++i) {
    g.run([&sums, i, first, step] { sums[i] = tbb_skynet(first + i * step, step); });
  }
  g.run_and_wait(
      [&sums, first, step] { sums[kSkynetFanout - 1] = tbb_skynet(first + (kSkynetFanout - 1) * step, step); });
  return std::accumulate(sums.begin(), sums.end(), std::uint64_t{0});
}

// --- skynet as coroutines: each inner node a weft::Task that awaits when_all of its 10 children (the first run
// inline, the other 9 queued on the pool), against the task-group recursion of oneTBB above. The root hops onto the
// pool first, as coro_fib_root does. ---
weft::Task<std::uint64_t> coro_skynet(std::uint64_t first, std::uint64_t leaves);
template <std::size_t... I>
weft::Task<std::uint64_t> coro_skynet_children(std::uint64_t first, std::uint64_t step, std::index_sequence<I...>) {
  auto sums = co_await weft::when_all(coro_skynet(first + I * step, step)...);
  co_return std::apply([](auto... sum) { return (sum + ...); }, sums);
}
weft::Task<std::uint64_t> coro_skynet(std::uint64_t first, std::uint64_t leaves) {
  if (leaves == 1) co_return first;
  co_return co_await coro_skynet_children(first, leaves / kSkynetFanout, std::make_index_sequence<kSkynetFanout>{});
}
weft::Task<std::uint64_t> coro_skynet_root(weft::Pool& pool, std::uint64_t leaves) {
  co_await pool.schedule();
  co_return co_await coro_skynet(0, leaves);
}

void bm_skynet(benchmark::State& state, bool weft, std::uint64_t leaves, bool coro = false) {
  const std::uint64_t want = leaves * (leaves - 1) / 2;  // the sum of 0 .. leaves - 1
  bool ok = true;
  for (auto _ : state) {
    std::uint64_t r = 0;
    state.SetIterationTime(seconds([&] {
      if (weft && coro) {
        r = weft::sync_wait(coro_skynet_root(env->pool, leaves));
      } else if (weft) {
        r = weft_root(env->pool, weft_skynet, std::uint64_t{0}, leaves);
      } else {
        env->arena.execute([&] { r = tbb_skynet(0, leaves); });
      }
    }));
    ok = ok && r == want;
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- nqueens(12): the solutions counted by a recursion over rows with a group per row: every queen placement
// that is safe so far is a child, which copies the board; a row's count is the sum of its children's. ---
constexpr int kQueens = 12;
constexpr std::uint64_t kQueensSolutions = 14200;
using Board = std::array<std::int8_t, kQueens>;  // board[r]: the column of the queen on row r
bool queen_safe(const Board& board, int row, int column) {
  for (int r = 0; r < row; ++r) {
    const int c = board[static_cast<std::size_t>(r)];
    if (c == column || c - column == row - r || column - c == row - r) return false;
  }
  return true;
}
std::uint64_t weft_queens(Board board, int row) {
  if (row == kQueens) return 1;
  std::array<std::uint64_t, kQueens> counts{};
  weft::TaskGroup g{*group_pool};
  for (int column = 0; column < kQueens; ++column) {
    if (!queen_safe(board, row, column)) continue;
    board[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(column);
    g.run([&counts, board, row, column] { counts[static_cast<std::size_t>(column)] = weft_queens(board, row + 1); });
  }
  g.wait();
  return std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
}
std::uint64_t tbb_queens(Board board, int row) {
  if (row == kQueens) return 1;
  std::array<std::uint64_t, kQueens> counts{};
  tbb::task_group g;
  for (int column = 0; column < kQueens; ++column) {
    if (!queen_safe(board, row, column)) continue;
    board[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(column);
    g.run([&counts, board, row, column] { counts[static_cast<std::size_t>(column)] = tbb_queens(board, row + 1); });
  }
  g.wait();
  return std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
}

void bm_queens(benchmark::State& state, bool weft) {
  bool ok = true;
  for (auto _ : state) {
    std::uint64_t r = 0;
    state.SetIterationTime(seconds([&] {
      if (weft) {
        r = weft_root(env->pool, weft_queens, Board{}, 0);
      } else {
        env->arena.execute([&] { r = tbb_queens(Board{}, 0); });
      }
    }));
    ok = ok && r == kQueensSolutions;
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- matmul 1024 x 1024: C += A * B by recursion into quadrants, oneTBB task_group style: each product of
// blocks of n > kMatmulLeaf splits into 8 of half the size, in two phases of 4 (the four quadrants of C, each
// written by one child of a phase), a group per phase (3 run, the 4th run_and_wait); a leaf of kMatmulLeaf is a
// plain i-k-j loop. Row-major doubles, one stride for all three. ---
constexpr std::size_t kMatmulN = 1024;
constexpr std::size_t kMatmulLeaf = 64;
struct Matmul {
  std::vector<double> a, b, c;
  Matmul() : a(kMatmulN * kMatmulN), b(kMatmulN * kMatmulN), c(kMatmulN * kMatmulN) {
    std::mt19937_64 random(7);
    for (auto& x : a) x = static_cast<double>(random() % 17) - 8;
    for (auto& x : b) x = static_cast<double>(random() % 13) - 6;
  }
  // C[i][j] as the plain sum: the check of a sample of entries (small integers, so exact in doubles).
  [[nodiscard]] double entry(std::size_t i, std::size_t j) const {
    double sum = 0;
    for (std::size_t k = 0; k < kMatmulN; ++k) sum += a[i * kMatmulN + k] * b[k * kMatmulN + j];
    return sum;
  }
};
void matmul_leaf(const double* __restrict a, const double* __restrict b, double* __restrict c, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      const double x = a[i * kMatmulN + k];
      for (std::size_t j = 0; j < n; ++j) c[i * kMatmulN + j] += x * b[k * kMatmulN + j];
    }
  }
}
template <class Group>
void matmul(const double* a, const double* b, double* c, std::size_t n) {
  if (n <= kMatmulLeaf) {
    matmul_leaf(a, b, c, n);
    return;
  }
  const std::size_t h = n / 2;
  const auto at = [h](auto* m, std::size_t row, std::size_t column) { return m + (row * h) * kMatmulN + column * h; };
  for (std::size_t k = 0; k < 2; ++k) {  // C_ij += A_ik * B_kj, the four (i, j) of one k at once
    Group g = make_group<Group>();
    g.run([=] { matmul<Group>(at(a, 0, k), at(b, k, 0), at(c, 0, 0), h); });
    g.run([=] { matmul<Group>(at(a, 0, k), at(b, k, 1), at(c, 0, 1), h); });
    g.run([=] { matmul<Group>(at(a, 1, k), at(b, k, 0), at(c, 1, 0), h); });
    g.run_and_wait([=] { matmul<Group>(at(a, 1, k), at(b, k, 1), at(c, 1, 1), h); });
  }
}

void bm_matmul(benchmark::State& state, bool weft) {
  static Matmul m;
  std::mt19937_64 random(11);
  std::vector<std::pair<std::size_t, std::size_t>> sample(64);
  for (auto& [i, j] : sample) i = random() % kMatmulN, j = random() % kMatmulN;
  bool ok = true;
  for (auto _ : state) {
    std::fill(m.c.begin(), m.c.end(), 0.0);
    state.SetIterationTime(seconds([&] {
      if (weft) {
        weft_root(env->pool, [] {
          matmul<weft::TaskGroup>(m.a.data(), m.b.data(), m.c.data(), kMatmulN);
          return 0;
        });
      } else {
        env->arena.execute([&] { matmul<tbb::task_group>(m.a.data(), m.b.data(), m.c.data(), kMatmulN); });
      }
    }));
    for (const auto& [i, j] : sample) ok = ok && m.c[i * kMatmulN + j] == m.entry(i, j);
  }
  if (!ok) state.SkipWithError("wrong result");
}

// Times the sum of `v` by weft or oneTBB, checking each result against std::accumulate's.
template <class T>
void time_sum(benchmark::State& state, bool weft, const std::vector<T>& v) {
  const std::int64_t want = std::accumulate(v.begin(), v.end(), std::int64_t{0});
  bool ok = true;
  for (auto _ : state) {
    std::int64_t r = 0;
    state.SetIterationTime(seconds([&] { r = weft ? weft_sum(v) : tbb_sum(v); }));
    ok = ok && r == want;
  }
  if (!ok) state.SkipWithError("wrong result");
}

void bm_reduce(benchmark::State& state, bool weft) { time_sum(state, weft, env->data.ints); }

void bm_transform_reduce(benchmark::State& state, bool weft) {
  const auto& v = env->data.doubles;
  double want = 0;
  for (double x : v) want += std::sqrt(x);
  bool ok = true;
  for (auto _ : state) {
    double r = 0;
    state.SetIterationTime(seconds([&] { r = weft ? weft_roots(v) : tbb_roots(v); }));
    ok = ok && std::abs(r - want) <= 1e-9 * want;
  }
  if (!ok) state.SkipWithError("wrong result");
}

void bm_scan(benchmark::State& state, bool weft) {
  const auto& in = env->data.ints;
  std::vector<std::int64_t> want(in.size()), out(in.size());
  std::inclusive_scan(in.begin(), in.end(), want.begin());
  bool checked = false, ok = true;
  for (auto _ : state) {
    state.SetIterationTime(seconds([&] { weft ? weft_scan(in, out) : tbb_scan(in, out); }));
    if (!checked) ok = out == want, checked = true;
  }
  if (!ok) state.SkipWithError("wrong result");
}

template <class T>
void bm_sort(benchmark::State& state, const std::vector<T>& unsorted, bool weft) {
  std::vector<T> want = unsorted;
  std::sort(want.begin(), want.end());
  std::vector<T> v;
  bool checked = false, ok = true;
  for (auto _ : state) {
    v = unsorted;  // untimed
    state.SetIterationTime(seconds([&] { weft ? weft_sort(v) : tbb_sort(v); }));
    if (!checked) ok = v == want, checked = true;
  }
  if (!ok) state.SkipWithError("wrong result");
}

void bm_invoke(benchmark::State& state, bool weft) {
  const auto& v = env->data.ints;
  const std::size_t n = std::min(kInvokeSize, v.size());
  const std::int64_t want = std::accumulate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), std::int64_t{0});
  bool ok = true;
  for (auto _ : state) {
    std::int64_t r = 0;
    state.SetIterationTime(seconds([&] { r = weft ? weft_tree(v.data(), n) : tbb_tree(v.data(), n); }));
    ok = ok && r == want;
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- range forms ---
double weft_range_sum(const std::vector<double>& v, std::size_t n) {
  return weft::parallel_reduce(
      env->pool, std::size_t{0}, n, 0.0,
      [&v](std::size_t lo, std::size_t hi, double acc) {
        for (std::size_t i = lo; i != hi; ++i) acc += v[i];
        return acc;
      },
      std::plus<>());
}
double tbb_range_sum(const std::vector<double>& v, std::size_t n) {
  double r = 0;
  env->arena.execute([&] {
    r = tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(0, n), 0.0,
        [&v](const tbb::blocked_range<std::size_t>& range, double acc) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) acc += v[i];
          return acc;
        },
        std::plus<>());
  });
  return r;
}

void bm_range_reduce(benchmark::State& state, bool weft, std::size_t n) {
  const auto& v = env->data.doubles;
  double want = 0;
  for (std::size_t i = 0; i < n; ++i) want += v[i];
  bool ok = true;
  for (auto _ : state) {
    double r = 0;
    state.SetIterationTime(seconds([&] { r = weft ? weft_range_sum(v, n) : tbb_range_sum(v, n); }));
    ok = ok && std::abs(r - want) <= 1e-9 * want;
  }
  if (!ok) state.SkipWithError("wrong result");
}

constexpr std::size_t kSide = 2048;

void bm_transpose(benchmark::State& state, bool weft) {
  const auto& in = env->data.doubles;  // the first kSide * kSide
  std::vector<double> out(kSide * kSide);
  const auto tile = [&](std::size_t r0, std::size_t r1, std::size_t c0, std::size_t c1) {
    for (std::size_t i = r0; i != r1; ++i) {
      for (std::size_t j = c0; j != c1; ++j) out[j * kSide + i] = in[i * kSide + j];
    }
  };
  for (auto _ : state) {
    state.SetIterationTime(seconds([&] {
      if (weft) {
        weft::parallel_for(env->pool, weft::Range2d<std::size_t>(0, kSide, 0, kSide),
                           [&](const weft::Range2d<std::size_t>& t) {
                             tile(t.rows().begin(), t.rows().end(), t.cols().begin(), t.cols().end());
                           });
      } else {
        env->arena.execute([&] {
          tbb::parallel_for(tbb::blocked_range2d<std::size_t>(0, kSide, 0, kSide),
                            [&](const tbb::blocked_range2d<std::size_t>& t) {
                              tile(t.rows().begin(), t.rows().end(), t.cols().begin(), t.cols().end());
                            });
        });
      }
    }));
  }
  bool ok = true;
  for (std::size_t i = 0; i < kSide; i += 7) {
    for (std::size_t j = 0; j < kSide; j += 5) ok = ok && out[j * kSide + i] == in[i * kSide + j];
  }
  if (!ok) state.SkipWithError("wrong result");
}

constexpr std::size_t kBins = 256;
using Bins = std::array<std::uint64_t, kBins>;

void bm_histogram(benchmark::State& state, bool weft) {
  const auto& v = env->data.ints;
  Bins want{};
  for (const std::int64_t x : v) ++want[static_cast<std::size_t>(x) % kBins];
  bool ok = true;
  for (auto _ : state) {
    Bins total{};
    state.SetIterationTime(seconds([&] {
      const auto add = [](Bins a, const Bins& b) {
        for (std::size_t k = 0; k < kBins; ++k) a[k] += b[k];
        return a;
      };
      if (weft) {
        weft::PerWorker<Bins> bins(env->pool, [] { return Bins{}; });
        weft::parallel_for(env->pool, std::size_t{0}, v.size(),
                           [&](std::size_t i) { ++bins.local()[static_cast<std::size_t>(v[i]) % kBins]; });
        total = bins.combine(add);
      } else {
        tbb::combinable<Bins> bins([] { return Bins{}; });
        env->arena.execute([&] {
          tbb::parallel_for(std::size_t{0}, v.size(),
                            [&](std::size_t i) { ++bins.local()[static_cast<std::size_t>(v[i]) % kBins]; });
        });
        total = bins.combine(add);
      }
    }));
    ok = ok && total == want;
  }
  if (!ok) state.SkipWithError("wrong result");
}

// --- small loops: what a parallel_for of tiny items costs per call (weft's calling thread starts the range and
// keeps a loop too small to be worth waking the workers for; oneTBB's caller works in its arena) ---
enum class Front : std::uint8_t { weft_pool, weft_scope, tbb };

void bm_small_for(benchmark::State& state, std::size_t n, Front front) {
  std::vector<std::int64_t> out(n);
  const auto body = [&out](std::size_t i) { out[i] += static_cast<std::int64_t>(i) * 3; };
  std::int64_t calls = 0;
  for (auto _ : state) {
    state.SetIterationTime(seconds([&] {
      switch (front) {
        case Front::weft_pool:
          weft::parallel_for(env->pool, std::size_t{0}, n, body);
          break;
        case Front::weft_scope: {
          weft::TaskScope scope{env->pool};
          (void)scope.parallel_for(std::size_t{0}, n, body);
          scope.run_and_wait();
          break;
        }
        case Front::tbb:
          env->arena.execute([&] { tbb::parallel_for(std::size_t{0}, n, body); });
          break;
      }
    }));
    ++calls;
  }
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == static_cast<std::int64_t>(i) * 3 * calls;
  if (!ok) state.SkipWithError("an index ran a wrong number of times");
}

// --- the light loop of the head-to-head comparison: one LCG step per item, out[i] = out[i] * a + c over 10^4
// uint64 items a call (the body a `for` over items of almost no work: what the split, start and join cost), and
// over 10^6 (how evenly the work is shared). ---
constexpr std::uint64_t kLcgMul = 6364136223846793005ULL;
constexpr std::uint64_t kLcgAdd = 1442695040888963407ULL;

void bm_lcg_for(benchmark::State& state, std::size_t n, bool weft) {
  std::vector<std::uint64_t> out(n);
  std::iota(out.begin(), out.end(), std::uint64_t{0});
  const auto body = [&out](std::size_t i) { out[i] = out[i] * kLcgMul + kLcgAdd; };
  std::uint64_t calls = 0;
  for (auto _ : state) {
    state.SetIterationTime(seconds([&] {
      if (weft) {
        weft::parallel_for(env->pool, std::size_t{0}, n, body);
      } else {
        env->arena.execute([&] { tbb::parallel_for(std::size_t{0}, n, body); });
      }
    }));
    ++calls;
  }
  // Every item took exactly `calls` steps: x -> mul^calls * x + add * (mul^(calls-1) + ... + 1).
  std::uint64_t mul = 1;
  std::uint64_t add = 0;
  for (std::uint64_t c = 0; c < calls; ++c) mul *= kLcgMul, add = add * kLcgMul + kLcgAdd;
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && out[i] == mul * i + add;
  if (!ok) state.SkipWithError("an index ran a wrong number of times");
}

// --- the head-to-head reduction: a sum of 10^7 int32 into an int64 (weft's iterator form against
// tbb::parallel_reduce's functional form over a blocked_range) ---
constexpr std::size_t kIntSumSize = 10'000'000;

void bm_int_sum(benchmark::State& state, bool weft) {
  static const std::vector<std::int32_t> v = [] {
    std::vector<std::int32_t> ints(kIntSumSize);
    std::mt19937 random(7);
    for (auto& x : ints) x = static_cast<std::int32_t>(random() % 1000);
    return ints;
  }();
  time_sum(state, weft, v);
}

// --- peak RSS of fib(30) by task groups. Each measurement is a fresh process (this executable again, with
// --fib30-peak-rss-child=<weft|oneTBB> <threads>) that creates only its side's pool or arena, runs the recursion
// once and prints its VmRSS before the pool and its VmHWM after: neither the other library nor the Env's input
// data count towards the high-water mark. --fib30-peak-rss [runs] runs the children, the sides alternating, and
// prints each and the medians. ---
constexpr std::string_view kPeakRssChildFlag = "--fib30-peak-rss-child=";

int fib_peak_rss_child(std::string_view side, unsigned threads) {
  const long baseline = weft::bench::status_kib("VmRSS");
  std::uint64_t r = 0;
  if (side == "weft") {
    weft::Pool pool(weft::PoolOptions{.threads = threads});
    group_pool = &pool;
    r = weft_root(pool, weft_group_fib, kGroupFibN);
  } else if (side == "oneTBB") {
    tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
    tbb::task_arena arena(static_cast<int>(threads));
    arena.execute([&] { r = tbb_group_fib(kGroupFibN); });
  } else {
    std::fprintf(stderr, "%.*s: unknown side '%.*s' (weft or oneTBB)\n", static_cast<int>(kPeakRssChildFlag.size()),
                 kPeakRssChildFlag.data(), static_cast<int>(side.size()), side.data());
    return 2;
  }
  if (r != fib_value(kGroupFibN)) {
    std::fprintf(stderr, "fib(%d): wrong result %llu\n", kGroupFibN, static_cast<unsigned long long>(r));
    return 1;
  }
  std::printf("%ld %ld\n", baseline, weft::bench::status_kib("VmHWM"));
  return baseline > 0 ? 0 : 1;
}

int fib_peak_rss(unsigned threads, int runs) {
  std::vector<weft::bench::PeakRss> samples[2];
  const char* const sides[2] = {"weft", "oneTBB"};
  std::printf("fib(%d) by task groups, peak RSS, %u threads a side, one process a sample\n", kGroupFibN, threads);
  for (int run = 0; run < runs; ++run) {
    for (int side = 0; side < 2; ++side) {
      const auto output = weft::bench::run_self(std::string(kPeakRssChildFlag) + sides[side] + " " +
                                                std::to_string(threads));
      weft::bench::PeakRss sample;
      if (!output || std::sscanf(output->c_str(), "%ld %ld", &sample.baseline_kib, &sample.peak_kib) != 2) {
        std::fprintf(stderr, "the %s child failed\n", sides[side]);
        return 1;
      }
      std::printf("  %-6s baseline %6ld KiB  peak %6ld KiB  over baseline %6ld KiB\n", sides[side], sample.baseline_kib,
                  sample.peak_kib, sample.workload_kib());
      samples[side].push_back(sample);
    }
  }
  const auto median = [](std::vector<long> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  long peak[2], over[2];
  for (int side = 0; side < 2; ++side) {
    std::vector<long> peaks, overs;
    for (const auto& sample : samples[side]) peaks.push_back(sample.peak_kib), overs.push_back(sample.workload_kib());
    peak[side] = median(peaks);
    over[side] = median(overs);
  }
  std::printf("medians: weft peak %ld KiB, over baseline %ld KiB; oneTBB peak %ld KiB, over baseline %ld KiB\n",
              peak[0], over[0], peak[1], over[1]);
  std::printf("weft / oneTBB: peak %.2f, over baseline %.2f\n", static_cast<double>(peak[0]) / peak[1],
              static_cast<double>(over[0]) / static_cast<double>(over[1]));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = bench_threads();
  if (argc >= 3 && std::string_view(argv[1]).substr(0, kPeakRssChildFlag.size()) == kPeakRssChildFlag) {
    return fib_peak_rss_child(std::string_view(argv[1]).substr(kPeakRssChildFlag.size()),
                              static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)));
  }
  if (argc >= 2 && std::string_view(argv[1]) == "--fib30-peak-rss") {
    const int runs = argc >= 3 ? static_cast<int>(std::strtol(argv[2], nullptr, 10)) : 5;
    return fib_peak_rss(threads, std::max(runs, 1));
  }
  Env environment(threads);
  env = &environment;
  group_pool = &environment.pool;
  static_assert(kScanSize <= kReduceSize);
  struct Case {
    const char* name;
    std::function<void(benchmark::State&, bool)> run;
  };
  const std::vector<Case> cases = {
      {"reduce_sum_int64_16M", bm_reduce},
      {"reduce_sum_int32_10M", bm_int_sum},
      {"transform_reduce_sqrt_16M", bm_transform_reduce},
      {"inclusive_scan_int64_16M", bm_scan},
      {"sort_int32_4M", [](benchmark::State& s, bool w) { bm_sort(s, env->data.unsorted, w); }},
      {"sort_string_512K", [](benchmark::State& s, bool w) { bm_sort(s, env->data.words, w); }},
      {"invoke_tree_4M_leaf4096", bm_invoke},
      {"fib30_task_group",
       [](benchmark::State& s, bool w) { bm_fib(s, w, kGroupFibN, weft_group_fib, tbb_group_fib); }},
      {"fib30_coro_when_all", bm_coro_fib},
      {"fib25_parallel_invoke",
       [](benchmark::State& s, bool w) { bm_fib(s, w, kInvokeFibN, weft_invoke_fib, tbb_invoke_fib); }},
      {"skynet_1M_task_group", [](benchmark::State& s, bool w) { bm_skynet(s, w, 1'000'000); }},
      {"skynet_10M_task_group", [](benchmark::State& s, bool w) { bm_skynet(s, w, 10'000'000); }},
      {"skynet_1M_coro_when_all", [](benchmark::State& s, bool w) { bm_skynet(s, w, 1'000'000, true); }},
      {"nqueens12_task_group", bm_queens},
      {"matmul_1024_task_group", bm_matmul},
      {"range_reduce_double_1M", [](benchmark::State& s, bool w) { bm_range_reduce(s, w, 1'000'000); }},
      {"range_reduce_double_10M", [](benchmark::State& s, bool w) { bm_range_reduce(s, w, 10'000'000); }},
      {"transpose_2048_range2d", bm_transpose},
      {"histogram_256_per_worker_16M", bm_histogram},
  };
  for (const Case& c : cases) {
    for (const bool weft : {true, false}) {
      const std::string name = std::string(c.name) + (weft ? "/weft" : "/oneTBB");
      benchmark::RegisterBenchmark(name.c_str(), [run = c.run, weft](benchmark::State& s) { run(s, weft); })
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime();
    }
  }
  for (const bool future : {true, false}) {
    const std::string name = future ? "co_await_ready_future/weft" : "co_await_completed_task/weft";
    benchmark::RegisterBenchmark(name.c_str(), [future](benchmark::State& s) { bm_co_await(s, future); })
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime();
  }
  for (const std::size_t n : {std::size_t{64}, std::size_t{1000}, std::size_t{10000}}) {
    for (const auto& [front, side] : {std::pair{Front::weft_pool, "weft"}, std::pair{Front::weft_scope, "weft_scope"},
                                      std::pair{Front::tbb, "oneTBB"}}) {
      const std::string name = "parallel_for_tiny_" + std::to_string(n) + "/" + side;
      benchmark::RegisterBenchmark(name.c_str(), [n, front = front](benchmark::State& s) { bm_small_for(s, n, front); })
          ->Unit(benchmark::kMicrosecond)
          ->UseManualTime();
    }
  }
  for (const std::size_t n : {std::size_t{10'000}, std::size_t{1'000'000}}) {
    for (const bool weft : {true, false}) {
      const std::string name = "parallel_for_lcg_" + std::to_string(n) + (weft ? "/weft" : "/oneTBB");
      benchmark::RegisterBenchmark(name.c_str(), [n, weft](benchmark::State& s) { bm_lcg_for(s, n, weft); })
          ->Unit(benchmark::kMicrosecond)
          ->UseManualTime();
    }
  }
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("oneTBB", TBB_runtime_version());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
