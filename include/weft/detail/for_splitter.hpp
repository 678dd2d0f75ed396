// The range splitter behind every weft::parallel_for: one object on the stack of a node body that has a
// Subflow, spawning chunks of [0, n) into that one Subflow, so that only the body joins.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>

#include "weft/detail/cycle_clock.hpp"
#include "weft/node_options.hpp"
#include "weft/pool.hpp"
#include "weft/subflow.hpp"

namespace weft::detail {

// Splits [0, n) over the pool and runs `body(lo, hi)` on every piece exactly once.
//
// Three modes:
// - automatic (grain 0, no concurrency limit), after oneTBB's auto_partitioner: the range is cut up front into
//   about kChunksPerWorker pieces per worker by halving (each half carries half of the split budget); a piece
//   that finds itself stolen (it runs on another worker than the one that spawned it: a sign that workers are
//   idle) earns one more halving, so idle workers keep finding halves to steal while a busy pool is not flooded.
//   A piece then runs in blocks of about 1/(kBlocksPerWorker * workers) of the range (one body call each), and
//   before each block looks whether any spawned piece is still waiting to start: if none is, a worker that
//   runs dry finds nothing to steal, so the piece offers the second half of what it has left (lazy binary
//   splitting). Without this the last piece ran whole on one worker while the others idled: up to an eighth
//   of the loop on two workers.
// - explicit grain: halve until a piece has at most `grain` indices (oneTBB's simple_partitioner).
// - concurrency limit c: min(c, workers, blocks) loopers claim blocks of `grain` indices (automatic: about 8
//   blocks per looper) from a shared cursor, so at most c blocks ever run at once, whatever nests inside them.
//
// Contract: start() then root.join() (which the caller must do before this object dies, even if start()
// throws); after the join, complete() says whether every index ran and error() gives the first exception of
// a piece, which the run was also told about (the piece rethrew it).
template <class Body>
class ForSplitter {
 public:
  static constexpr std::uint32_t kChunksPerWorker = 4;
  // Blocks per worker (automatic mode): a block is one body call and the step between looks for demand, so a
  // worker is left idle at the end for about one block plus a steal. 64, as many body calls per thread as
  // tbb::parallel_for's auto_partitioner makes on a large range (counted: 128 on 2 threads, 512 on 8), so a
  // chunk body's set-up costs what it costs there.
  static constexpr std::size_t kBlocksPerWorker = 64;

  ForSplitter(const Body& body, Subflow& root, std::size_t n, std::size_t grain, unsigned concurrency) noexcept
      : body_(body), root_(root), pool_(root.pool()), n_(n), grain_(grain), concurrency_(concurrency) {}
  ForSplitter(const ForSplitter&) = delete;
  ForSplitter& operator=(const ForSplitter&) = delete;

  void start() {
    if (n_ == 0) return;
    if (concurrency_ == kUnlimited) {
      const std::size_t budget = grain_ != 0 ? 0
                                             : std::min<std::size_t>(n_, std::size_t{kChunksPerWorker} * pool_.size());
      block_ = std::max<std::size_t>(1, n_ / (kBlocksPerWorker * pool_.size()));
      spawn_chunk(Chunk{this, 0, n_, static_cast<std::uint32_t>(budget), worker()});
      return;
    }
    const std::size_t lanes = std::min<std::size_t>(concurrency_, pool_.size());
    step_ = grain_ != 0 ? grain_ : std::max<std::size_t>(1, n_ / (lanes * 8));
    // No more loopers than workers or blocks: more could not run at once anyway.
    const std::size_t loopers = std::min<std::size_t>(lanes, (n_ - 1) / step_ + 1);
    for (std::size_t i = 0; i < loopers; ++i) root_.spawn(Looper{this});
  }

  // After the join: every index ran (no piece was skipped by a cancellation, none threw).
  [[nodiscard]] bool complete() const noexcept { return done_.load(std::memory_order_relaxed) == n_; }
  // After the join: the first exception a piece threw, or null.
  [[nodiscard]] std::exception_ptr error() const noexcept { return error_; }

 private:
  // A spawned piece: 32 bytes, so the Subflow's child (this plus a pointer) stays far inside small_function's
  // inline buffer and spawning allocates nothing.
  struct Chunk {
    ForSplitter* self;
    std::size_t lo;
    std::size_t hi;
    std::uint32_t budget;  // pieces this one may still be cut into (automatic mode)
    std::int32_t origin;   // worker that spawned it; -1: not a worker
    void operator()() { self->run_chunk(*this); }
  };
  struct Looper {
    ForSplitter* self;
    void operator()() { self->run_looper(); }
  };
  static_assert(sizeof(Chunk) + sizeof(void*) <= 128 && std::is_nothrow_move_constructible_v<Chunk>,
                "a parallel_for chunk must fit small_function's inline buffer next to the Subflow's pointer");

  [[nodiscard]] std::int32_t worker() const noexcept {
    const std::optional<unsigned> w = pool_.current_worker();
    return w ? static_cast<std::int32_t>(*w) : -1;
  }

  void run_chunk(Chunk c) {
    // relaxed: a hint of demand only (see run_on_demand); no data is handed over through it.
    if (grain_ == 0) waiting_.fetch_sub(1, std::memory_order_relaxed);
    try {
      std::size_t lo = c.lo;
      std::size_t hi = c.hi;
      const std::int32_t me = worker();
      if (grain_ == 0) {
        std::uint32_t budget = c.budget;
        // Stolen: someone was idle, so cut once more than planned (oneTBB's demand-driven extra depth).
        if (me != c.origin) budget = std::max<std::uint32_t>(budget, 1) * 2;
        while (budget > 1 && hi - lo > 1) {
          const std::size_t mid = lo + (hi - lo) / 2;
          const std::uint32_t right = budget / 2;
          spawn_chunk(Chunk{this, mid, hi, right, me});
          hi = mid;
          budget -= right;
        }
        run_on_demand(lo, hi, me);
      } else {
        while (hi - lo > grain_) {
          const std::size_t mid = lo + (hi - lo) / 2;
          spawn_chunk(Chunk{this, mid, hi, 0, me});
          hi = mid;
        }
        run_piece(lo, hi);
      }
    } catch (...) {
      record(std::current_exception());
      throw;  // to the Subflow's child wrapper: the run learns of it and cancels
    }
  }

  void run_looper() {
    try {
      for (;;) {
        // relaxed: the cursor only hands out disjoint blocks; the RMW order alone makes them disjoint.
        std::size_t lo = cursor_.load(std::memory_order_relaxed);
        std::size_t hi = 0;
        do {
          if (lo >= n_) return;
          hi = lo + std::min(step_, n_ - lo);
        } while (!cursor_.compare_exchange_weak(lo, hi, std::memory_order_relaxed));
        run_piece(lo, hi);
      }
    } catch (...) {
      record(std::current_exception());
      throw;
    }
  }

  void run_piece(std::size_t lo, std::size_t hi) {
    if (root_.cancelled()) return;  // leaves done_ short: the job reports it did not complete
    body_(lo, hi);
    // relaxed: read only after the join, which orders every finished child before it.
    done_.fetch_add(hi - lo, std::memory_order_relaxed);
  }

  // Automatic mode: [lo, hi) block by block, giving away the second half of what is left whenever no spawned
  // piece waits to start. The hint may be stale either way: a false "none waiting" costs one spawn the owner
  // may pop back itself; a false "some waiting" delays the offer by one block.
  void run_on_demand(std::size_t lo, std::size_t hi, std::int32_t me) {
    const std::size_t first = lo;
    while (lo < hi && !root_.cancelled()) {  // a cancelled run leaves done_ short, as run_piece does
      if (hi - lo >= 2 * block_ && waiting_.load(std::memory_order_relaxed) == 0) {
        const std::size_t mid = lo + (hi - lo) / 2;
        spawn_chunk(Chunk{this, mid, hi, 1, me});
        hi = mid;
      }
      const std::size_t end = lo + std::min(block_, hi - lo);
      body_(lo, end);
      lo = end;
    }
    // Once per piece, not per block: the blocks of all workers would share one contended line.
    done_.fetch_add(lo - first, std::memory_order_relaxed);
  }

  // Spawns a piece; in automatic mode it counts as waiting until it starts (the only mode that looks).
  void spawn_chunk(Chunk c) {
    if (grain_ != 0) {
      root_.spawn(c);
      return;
    }
    // relaxed: see run_on_demand.
    waiting_.fetch_add(1, std::memory_order_relaxed);
    try {
      root_.spawn(c);
    } catch (...) {
      waiting_.fetch_sub(1, std::memory_order_relaxed);  // refused: it will never start
      throw;
    }
  }

  void record(std::exception_ptr error) noexcept {
    bool expected = false;
    // Only the winner writes error_; it is read after the join, which orders the write before the read.
    if (has_error_.compare_exchange_strong(expected, true, std::memory_order_relaxed)) error_ = std::move(error);
  }

  const Body& body_;
  Subflow& root_;
  Pool& pool_;
  const std::size_t n_;
  const std::size_t grain_;
  const unsigned concurrency_;
  std::size_t step_ = 1;                   // looper block size; written by start() before any looper is spawned
  std::size_t block_ = 1;                  // automatic mode's block; written by start() before any chunk is spawned
  std::atomic<std::uint32_t> waiting_{0};  // chunks spawned and not yet started (a demand hint)
  std::atomic<std::size_t> cursor_{0};
  std::atomic<std::size_t> done_{0};
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_{};
};

// How long a loop may run on the calling thread alone before the rest of it is split over the pool: about what
// starting the pool's workers on it costs (posting, waking a parked worker, joining), so a loop predicted to
// take less runs inline, and one that turns out longer pays at most about this much serially first.
inline constexpr std::chrono::microseconds kInlineBudget{20};
// How long the rest of a loop, shared by the workers, must be predicted to take for the calling thread, if it is
// not a worker, to sleep at once in the join: a thread outside the pool otherwise looks for the end for about
// 100 us before it sleeps (the wait's spin, which lets a short run end without a sleep and a wake-up), and with
// as many workers as cores that spin takes a core from a worker for as long (1.3 to 1.5x on a loop of 10^6
// light items on 2 cores; docs/perf-log.md). A rest this long ends after the spin would have anyway.
inline constexpr std::chrono::microseconds kLongRest{100};
// Elements a worker's share of a reduction or scan must reach for its join to count as long (kLongRest): these
// have no inline start to measure a pace, and a fold of 2^19 elements takes longer than kLongRest even at a tenth
// of a nanosecond each.
inline constexpr std::size_t kLongShare = std::size_t{1} << 19;
[[nodiscard]] inline bool long_share(std::size_t n, unsigned workers) noexcept {
  return n / std::max<unsigned>(workers, 1) >= kLongShare;
}

// How many blocks run_while_small runs between two looks at the clock, at most (it starts at 1 and doubles): a
// look costs more than a block of a tiny body, and each look has just found the whole loop, at the pace so far,
// within the budget.
inline constexpr std::size_t kMaxInlineStride = 8;

// Automatic partitioning's first step, on the calling thread: runs [0, n) here block by block (a block is the
// automatic mode's unit: 1/(kBlocksPerWorker * workers) of the range, one body call) while the time spent plus
// what the rest is predicted to take at the pace so far stays within kInlineBudget. Returns how many leading
// indices ran: n when the whole loop was small enough, else the caller splits [returned, n) over the pool.
// The clock is read after 1, 2, 4, then every kMaxInlineStride blocks (each stretch one body call): a loop
// whose late indices are costly (a costly tail) runs at most that many blocks of them here (an eighth of a
// worker's share) before the rest is shared. Exceptions of body propagate (nothing else has started).
// `long_rest`, set when not all ran: whether the rest, shared by `workers` at the pace so far, is predicted to take
// at least kLongRest.
// Timed with the cycle clock, and not at every block: a steady_clock read per block was a large share of a small
// loop's time, and even a cycle-clock read per block made a loop of tiny bodies several times slower
// (docs/perf-log.md).
template <class Body>
[[nodiscard]] std::size_t run_while_small(const Body& body, std::size_t n, unsigned workers, bool& long_rest) {
  const std::uint64_t start = now_cycles();
  // A constant where the clock's rate is one (x86); on ARM64 the rate is read from the CPU.
  const auto budget = static_cast<double>(kInlineBudget.count()) * static_cast<double>(cycles_per_microsecond());
  const std::size_t block = std::max<std::size_t>(1, n / (ForSplitter<Body>::kBlocksPerWorker *
                                                          std::max<unsigned>(workers, 1)));
  std::size_t done = 0;
  // Blocks until the next look at the clock: 1, 2, 4, ... up to kMaxInlineStride.
  std::size_t stride = 1;
  while (done < n) {
    const std::size_t end = done + std::min(block * stride, n - done);
    body(done, end);
    done = end;
    if (done == n) break;
    const auto spent = static_cast<double>(now_cycles() - start);
    // The whole loop at the pace so far (spent * n / done, multiplied out); a loop that grows costlier is
    // stopped by `spent` itself.
    if (spent * static_cast<double>(n) > budget * static_cast<double>(done)) {
      // The rest per worker at the same pace, spent * (n - done) / done / workers, against kLongRest.
      const auto shares = static_cast<double>(done) * static_cast<double>(std::max<unsigned>(workers, 1));
      long_rest = spent * static_cast<double>(n - done) >=
                  static_cast<double>(kLongRest.count()) * static_cast<double>(cycles_per_microsecond()) * shares;
      break;
    }
    stride = std::min(stride * 2, kMaxInlineStride);
  }
  return done;
}

// Subflow's join for weft's templates, the calling thread sleeping at once when it is not a worker: for a join
// after work predicted to last at least kLongRest.
struct LongJoin {
  static void join(Subflow& sf, bool long_work) { sf.join(!long_work); }
};

// Pool::run_here for weft's templates: runs `work()` (noexcept) on the calling thread as a task of `pool`.
struct PoolRunHere {
  template <class Work>
  static bool run(Pool& pool, Work& work) noexcept {
    return pool.run_here([](void* context) noexcept { (*static_cast<Work*>(context))(); }, &work);
  }
};

// The body of a parallel_for node: splits, joins, and says how it went. Throws only after the join (so the
// splitter on this frame outlives every piece), and only what starting threw (e.g. pool_closed), which the
// run has not seen yet. Returns the first exception of a piece (the run has seen it) or null; `complete`
// tells whether every index ran. `long_work`: the loop is predicted to take at least kLongRest (LongJoin).
template <class Body>
std::exception_ptr run_split(const Body& body, Subflow& sf, std::size_t n, std::size_t grain, unsigned concurrency,
                             bool& complete, bool long_work = false) {
  ForSplitter<Body> splitter(body, sf, n, grain, concurrency);
  std::exception_ptr start_error;
  try {
    splitter.start();
  } catch (...) {
    start_error = std::current_exception();  // e.g. pool_closed: pieces spawned so far still need the join
  }
  LongJoin::join(sf, long_work && start_error == nullptr);
  complete = start_error == nullptr && splitter.complete();
  if (start_error) std::rethrow_exception(start_error);
  return splitter.error();
}

}  // namespace weft::detail
