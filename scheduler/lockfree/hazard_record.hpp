// One thread's state in a HazardPointerDomain, and the counters that make the domain's bound checkable.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/lockfree/node_pool.hpp"
#include "scheduler/lockfree/retirable.hpp"
#include "scheduler/lockfree/thread_registry.hpp"

namespace weft::lockfree {

// What a domain reports to tests (see HazardPointerDomain::stats for when the values are exact).
struct HazardStats {
  std::size_t records = 0;                  // N: registrations ever made (records are reused, never freed)
  std::size_t hazard_slots = 0;             // H = N x K
  std::size_t retired_now = 0;              // retired, not yet reclaimed, over all records
  std::size_t peak_retired_per_thread = 0;  // largest retired list after a retire returned (must be < R)
  std::size_t peak_unreclaimed = 0;         // largest total seen by a bound check (check_bounds only)
  std::uint64_t bound_checks = 0;           // retires whose bound was checked
  std::uint64_t scans = 0;
  std::uint64_t reclaimed = 0;
  std::uint64_t system_allocations = 0;  // node blocks taken from / given back to the system
  std::uint64_t system_frees = 0;
};

// The domain-wide unreclaimed count, kept only when the domain checks its bound (one shared counter).
class BoundTracker {
 public:
  // release: a checker that sees this increment (acquire) also sees our registration in the record count.
  void on_retire() noexcept { unreclaimed_.fetch_add(1, std::memory_order_release); }
  void on_reclaim(std::size_t n) noexcept { unreclaimed_.fetch_sub(n, std::memory_order_relaxed); }  // a count
  // Aborts with a message unless list < r (the threshold this retire used) and the total unreclaimed is at
  // most N x R for the current N (records_now(), read after the total) and R = 2 x K x N.
  template <class RecordsNow>
  void check(std::size_t list, std::size_t r, std::size_t k, const RecordsNow& records_now) noexcept {
    // acquire: every record whose retires we count was registered before them, so records_now() sees it.
    // Any value in the counter's modification order is the true total at that point of its history.
    const std::size_t total = unreclaimed_.load(std::memory_order_acquire);
    const std::size_t n = records_now();
    const std::size_t bound = n * 2 * k * n;
    if (list >= r || total > bound) {
      std::fprintf(stderr, "hazard-pointer bound broken: retired list %zu (R = %zu), unreclaimed %zu > N*R = %zu\n",
                   list, r, total, bound);
      std::abort();
    }
    std::size_t peak = peak_.load(std::memory_order_relaxed);  // a statistic: no ordering
    while (total > peak && !peak_.compare_exchange_weak(peak, total, std::memory_order_relaxed)) {
    }
    checks_.fetch_add(1, std::memory_order_relaxed);  // a statistic: no ordering
  }
  [[nodiscard]] HazardStats snapshot() const noexcept {
    HazardStats s;
    s.peak_unreclaimed = peak_.load(std::memory_order_relaxed);  // statistics: no ordering
    s.bound_checks = checks_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  alignas(atomics::kCacheLine) std::atomic<std::size_t> unreclaimed_{0};
  std::atomic<std::size_t> peak_{0};
  std::atomic<std::uint64_t> checks_{0};
};

template <class Domain, atomics::MemoryModel M, std::size_t K>
struct alignas(atomics::kCacheLine) HazardRecord : RegistryRecord<M> {
  struct Slot {
    typename M::template atomic<void*> ptr;  // void*, not const void*: Relacy's atomic rejects const pointees
  };

  explicit HazardRecord(Domain& d) : domain(&d), cache(d.pool_) {
    for (auto& s : hazards) s.ptr.store(nullptr, std::memory_order_relaxed);  // published by the registry's CAS
  }

  // Owner-written statistics: std::atomic (not M's) so that tests may read them and Relacy ignores them.
  void note_size() noexcept {
    retired_now.store(retired.size, std::memory_order_relaxed);  // statistics: no ordering
    if (retired.size > peak_retired.load(std::memory_order_relaxed)) {
      peak_retired.store(retired.size, std::memory_order_relaxed);
    }
  }
  void note_scan(std::size_t freed) noexcept {
    scans.store(scans.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // owner-only writer
    reclaimed.store(reclaimed.load(std::memory_order_relaxed) + freed, std::memory_order_relaxed);
    retired_now.store(retired.size, std::memory_order_relaxed);
  }
  void add_to(HazardStats& s) const noexcept {
    s.retired_now += retired_now.load(std::memory_order_relaxed);  // statistics: no ordering
    s.peak_retired_per_thread = std::max(s.peak_retired_per_thread, peak_retired.load(std::memory_order_relaxed));
    s.scans += scans.load(std::memory_order_relaxed);
    s.reclaimed += reclaimed.load(std::memory_order_relaxed);
  }

  std::array<Slot, K> hazards;
  Domain* domain;
  RetiredList<M> retired;
  NodeCache<M> cache;
  std::vector<const void*> snapshot;  // scan scratch; grows only when H does
  std::atomic<std::size_t> retired_now{0};
  std::atomic<std::size_t> peak_retired{0};
  std::atomic<std::uint64_t> scans{0};
  std::atomic<std::uint64_t> reclaimed{0};
};

}  // namespace weft::lockfree
