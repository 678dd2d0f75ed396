// A range of items that the tasks of a run claim a few at a time: a join group's members, a graph's roots.
//
// Why not split the range into tasks up front (one post per item), or halve it lazily? A post and a steal cost
// more than a small node does, so one task per item made a layered graph's run mostly queueing.
// A lazily halved range, on the other hand, is held by the thread that runs it: if that thread is inside a long
// item when other workers run dry, they find nothing to steal until the item ends. Here little is held: a
// claim takes a few items (at most 1/(2 * threads) of what is left), every other item stays claimable by any
// thread running one of the range's tasks, and a claimer first makes sure that one task of the range waits in
// some queue (keep_one_queued) while items are left. So a worker that runs dry always finds a way in, and a
// range of small items on busy workers costs a few tasks and a few claims.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "scheduler/atomics/cache_line.hpp"

namespace weft::graph {

class alignas(atomics::kCacheLine) ClaimCursor {
 public:
  // Starts the range [first, end) with no task queued. Called by the one thread that starts the range, before it
  // posts the range's first task (the post publishes these stores to whoever runs that task).
  // `queued`: tasks of the range the caller is about to post itself (counted before any claimer can look).
  void reset(std::uint32_t first, std::uint32_t end, std::uint32_t queued = 0) noexcept {
    next_.store(first, std::memory_order_relaxed);
    end_ = end;
    queued_.store(queued, std::memory_order_relaxed);
  }

  // Claims the next items [lo, hi) (hi == lo: none is left): a share of what is left that shrinks as the range
  // empties (OpenMP's guided schedule), about 1/(2 * threads) of it and at least one item. One item per claim
  // puts every item's claim on one contended line (much slower on 2^20 tiny roots; docs/perf-log.md),
  // while a share this size still leaves half of the range to the others, and single items at the end to even
  // out the finish. Each item is in exactly one claim.
  // relaxed: the RMW order alone makes claims disjoint; what an item needs to see was published by the post of
  // the task its claimer runs (or by the join counter its starter decremented).
  static constexpr std::uint32_t kOne = std::uint32_t{1} << 30;  // as `threads`: a share of exactly one item
  struct Claim {
    std::uint32_t lo;
    std::uint32_t hi;
  };
  [[nodiscard]] Claim claim(std::uint32_t threads) noexcept {
    std::uint32_t lo = next_.load(std::memory_order_relaxed);
    std::uint32_t hi = lo;
    do {
      if (lo >= end_) return {lo, lo};
      hi = lo + std::max<std::uint32_t>(1, (end_ - lo) / (2 * std::clamp<std::uint32_t>(threads, 1, kOne)));
    } while (!next_.compare_exchange_weak(lo, hi, std::memory_order_relaxed));
    return {lo, hi};
  }
  // Claims one item (a thread that should not take more, or wants one to run in place).
  [[nodiscard]] Claim claim_one() noexcept { return claim(kOne); }
  // Claims every item left (a task dropped unrun: what it claims here is what its run lost).
  [[nodiscard]] Claim claim_rest() noexcept {
    const std::uint32_t lo = next_.exchange(end_, std::memory_order_relaxed);
    return {lo, end_};
  }
  // Some item is still unclaimed (a hint: another thread may claim it first).
  [[nodiscard]] bool has_left() const noexcept { return next_.load(std::memory_order_relaxed) < end_; }

  // Tasks of this range posted and not yet started. keep_one_queued posts one when none is and items are left;
  // every task of the range calls task_started() first thing, run or dropped.
  void task_started() noexcept { queued_.fetch_sub(1, std::memory_order_relaxed); }

  // Before a claim: if items are left and no task of the range is queued, counts one and calls post() to queue
  // it. (If post() fails, the task's own drop path calls task_started(), as it does for every task.)
  // The look is a hint: a task that just started may still count, but it then claims items itself, so some
  // thread goes on claiming while any are left.
  template <class Post>
  void keep_one_queued(Post&& post) noexcept {
    if (queued_.load(std::memory_order_relaxed) != 0 || !has_left()) return;
    queued_.fetch_add(1, std::memory_order_relaxed);
    post();
  }

 private:
  std::atomic<std::uint32_t> next_{0};  // never past end_
  std::uint32_t end_ = 0;
  // On next_'s line on purpose: a claimer just took that line for its RMW, so this look costs nothing more.
  std::atomic<std::uint32_t> queued_{0};
};

}  // namespace weft::graph
