// How many idle workers of each spin group (a NUMA node's workers, scheduler/topology/spin_groups.hpp) spin at
// once. The worker loop asks before it spins: a worker its group has no room for makes one look for work and parks
// (as with PoolOptions::spin_before_park = 0), the others spin as before.
//
// Contract:
// - A group never has more spinners than its bound: try_enter() admits by compare-and-swap below the bound.
// - Nothing here takes part in the wake-up protocol (scheduler/engine/parking.hpp). A worker refused its spin is
//   still a counted searcher for its one look, then parks through prepare_park()'s checks, exactly as a worker
//   whose spin timed out: the count only chooses between two paths the protocol already allows, so every order
//   here is relaxed.
// - No groups (an unpinned pool, or one whose workers span nodes): try_enter() admits every worker and touches no
//   shared line. The local spawn and run paths never come here.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/topology/spin_groups.hpp"

namespace weft::engine {

class SpinQuota {
 public:
  SpinQuota() = default;
  explicit SpinQuota(topology::SpinGroups groups)
      : group_of_(std::move(groups.group_of)),
        counters_(groups.bound.empty() ? nullptr : std::make_unique<Counter[]>(groups.bound.size())),
        groups_(static_cast<unsigned>(groups.bound.size())) {
    for (unsigned g = 0; g < groups_; ++g) counters_[g].bound = groups.bound[g];
  }

  // Whether the pool bounds its spinners (its workers' places are known).
  [[nodiscard]] bool bounded() const noexcept { return counters_ != nullptr; }
  [[nodiscard]] unsigned groups() const noexcept { return groups_; }
  [[nodiscard]] unsigned group_of(unsigned worker) const noexcept { return group_of_[worker]; }
  [[nodiscard]] unsigned bound(unsigned group) const noexcept { return counters_[group].bound; }

  // Worker `worker` is about to spin: true if it may (then it calls leave() when it stops), false if its group
  // has as many spinners as its bound.
  [[nodiscard]] bool try_enter(unsigned worker) noexcept {
    if (counters_ == nullptr) return true;
    Counter& counter = counters_[group_of_[worker]];
    // relaxed: a heuristic count (see the contract); the CAS alone keeps the bound.
    unsigned now = counter.spinning.load(std::memory_order_relaxed);
    do {
      if (now >= counter.bound) return false;
    } while (!counter.spinning.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
    // The most seen at once, for tests and Pool::describe(): a statistic, relaxed.
    unsigned peak = counter.peak.load(std::memory_order_relaxed);
    while (peak < now + 1 && !counter.peak.compare_exchange_weak(peak, now + 1, std::memory_order_relaxed)) {
    }
    return true;
  }
  // A worker try_enter() admitted stops spinning.
  void leave(unsigned worker) noexcept {
    if (counters_ == nullptr) return;
    counters_[group_of_[worker]].spinning.fetch_sub(1, std::memory_order_relaxed);
  }
  // The most workers of `group` seen spinning at once.
  [[nodiscard]] unsigned peak(unsigned group) const noexcept {
    return counters_[group].peak.load(std::memory_order_relaxed);
  }

 private:
  // One line per group: its spinners come and go at every idle moment, and another node's must not share it.
  struct alignas(atomics::kCacheLine) Counter {
    std::atomic<unsigned> spinning{0};
    std::atomic<unsigned> peak{0};
    unsigned bound = 1;
  };
  std::vector<unsigned> group_of_;
  std::unique_ptr<Counter[]> counters_;
  unsigned groups_ = 0;
};

}  // namespace weft::engine
