// One thread's state in a QsbrDomain: its announced epoch, its retired nodes and its node cache.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/lockfree/node_pool.hpp"
#include "scheduler/lockfree/retirable.hpp"
#include "scheduler/lockfree/thread_registry.hpp"

namespace weft::lockfree {

// What a QsbrDomain reports to tests. retired_now may be read at any time; the rest is exact when idle.
struct QsbrStats {
  std::size_t records = 0;
  std::size_t retired_now = 0;
  std::size_t peak_retired_per_thread = 0;
  std::uint64_t passes = 0;  // reclamation attempts (each advances the epoch once)
  std::uint64_t reclaimed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t system_allocations = 0;
  std::uint64_t system_frees = 0;
};

inline constexpr std::uint64_t kOffline = 0;

template <class Domain, atomics::MemoryModel M>
struct alignas(atomics::kCacheLine) QsbrRecord : RegistryRecord<M> {
  explicit QsbrRecord(Domain& d) : domain(&d), cache(d.pool_) {
    local_epoch.store(kOffline, std::memory_order_relaxed);  // published by the registry's release CAS
  }

  // Appends r; it gets its safe epoch at this thread's next reclamation pass.
  void add_retired(Retirable<M>* r) noexcept {
    r->safe_epoch = 0;
    retired.push_back(r);
    if (untargeted == nullptr) untargeted = r;
    note_size();
  }
  // Gives every node retired since the last pass the epoch `target` (nodes stay in retirement order).
  void assign_target(std::uint64_t target) noexcept {
    for (Retirable<M>* n = untargeted; n != nullptr; n = n->next_retired) n->safe_epoch = target;
    untargeted = nullptr;
  }
  // Disposes of the oldest nodes whose safe epoch every online thread has reached (at least min_announced).
  void reclaim_up_to(std::uint64_t min_announced) noexcept {
    std::size_t freed = 0;
    while (retired.head != nullptr && retired.head->safe_epoch != 0 && retired.head->safe_epoch <= min_announced) {
      Retirable<M>* n = retired.head;
      retired.head = n->next_retired;
      if (retired.head == nullptr) retired.tail = nullptr;
      --retired.size;
      n->dispose(n, cache);
      ++freed;
    }
    passes.store(passes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // owner-only writer
    reclaimed.store(reclaimed.load(std::memory_order_relaxed) + freed, std::memory_order_relaxed);
    note_size();
  }

  void note_size() noexcept {
    retired_now.store(retired.size, std::memory_order_relaxed);  // statistics: no ordering
    if (retired.size > peak_retired.load(std::memory_order_relaxed)) {
      peak_retired.store(retired.size, std::memory_order_relaxed);
    }
  }
  void add_to(QsbrStats& s) const noexcept {
    s.retired_now += retired_now.load(std::memory_order_relaxed);  // statistics: no ordering
    s.peak_retired_per_thread = std::max(s.peak_retired_per_thread, peak_retired.load(std::memory_order_relaxed));
    s.passes += passes.load(std::memory_order_relaxed);
    s.reclaimed += reclaimed.load(std::memory_order_relaxed);
  }

  // The last epoch this thread announced at a quiescent state, or kOffline.
  typename M::template atomic<std::uint64_t> local_epoch;
  Domain* domain;
  bool online = false;  // owner-only mirror of local_epoch != kOffline
  RetiredList<M> retired;
  Retirable<M>* untargeted = nullptr;  // first retired node without a safe epoch yet
  NodeCache<M> cache;
  // Owner-written statistics: std::atomic (not M's) so tests may read them and Relacy ignores them.
  std::atomic<std::size_t> retired_now{0};
  std::atomic<std::size_t> peak_retired{0};
  std::atomic<std::uint64_t> passes{0};
  std::atomic<std::uint64_t> reclaimed{0};
};

}  // namespace weft::lockfree
