// Quiescent-state-based reclamation (QSBR; McKenney & Slingwine's RCU grace periods, in the style of
// liburcu's QSBR flavour) for the scheduler's lock-free structures.
//
// A registered thread is online (it may hold references into structures) or offline (it holds none). An
// online thread announces a quiescent state (quiescent(): a worker calls it between tasks) to say it holds
// no references now. A node retired by thread P becomes safe once every thread online at the time has
// announced after P's next epoch advance. An offline thread never holds reclamation back (a worker goes
// offline before it parks); an online thread that never announces holds it back for everyone, without
// bound: that is QSBR's price for read sides that cost nothing.
//
// Threads without an explicit registration (d.current(), e.g. submitters) register offline and are online
// only for the length of each operation (a Guard), so they never hold reclamation back.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/lockfree/node_pool.hpp"
#include "scheduler/lockfree/qsbr_record.hpp"
#include "scheduler/lockfree/retirable.hpp"
#include "scheduler/lockfree/thread_record_cache.hpp"
#include "scheduler/lockfree/thread_registry.hpp"

namespace weft::lockfree {

template <atomics::MemoryModel M = atomics::StdMemoryModel>
class QsbrDomain {
  using Record = QsbrRecord<QsbrDomain, M>;
  using Registry = ThreadRegistry<Record, M>;

 public:
  using memory_model = M;
  using Stats = QsbrStats;

  struct Options {
    bool recycle_nodes = true;           // false: reclaimed nodes are freed (Relacy must see real frees)
    std::size_t reclaim_threshold = 64;  // a quiescent/offline point runs a pass once this many are retired
  };

  // A thread's registration, as the structures and workers use it: cheap to copy.
  class ThreadRef {
   public:
    [[nodiscard]] void* allocate(std::size_t bytes, std::size_t align) { return rec_->cache.allocate(bytes, align); }
    void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept { rec_->cache.deallocate(p, bytes, align); }
    // Announces that this (online) thread holds no reference into any structure of the domain.
    void quiescent() const noexcept { rec_->domain->quiescent(*rec_); }
    // Leaves / rejoins the set of threads reclamation waits for (before parking / after waking).
    void go_offline() const noexcept { rec_->domain->go_offline(*rec_); }
    void go_online() const noexcept { rec_->domain->go_online(*rec_); }
    [[nodiscard]] bool online() const noexcept { return rec_->online; }

   private:
    friend QsbrDomain;
    explicit ThreadRef(Record* r) noexcept : rec_(r) {}
    Record* rec_;
  };

  // Owns one registration (RAII), online from the start. For workers and the Relacy model tests.
  class Handle {
   public:
    Handle(Handle&& other) noexcept : rec_(std::exchange(other.rec_, nullptr)) {}
    Handle& operator=(Handle&&) = delete;
    ~Handle() {
      if (rec_ != nullptr) release(rec_);
    }
    [[nodiscard]] ThreadRef ref() const noexcept { return ThreadRef(rec_); }

   private:
    friend QsbrDomain;
    explicit Handle(Record* r) noexcept : rec_(r) {}
    Record* rec_;
  };

  // One operation. An offline thread is brought online for its length (and runs a pass when it leaves).
  class Guard {
   public:
    explicit Guard(ThreadRef t) noexcept : rec_(*t.rec_), was_offline_(!rec_.online) {
      if (was_offline_) rec_.domain->go_online(rec_);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (was_offline_) rec_.domain->go_offline(rec_);
    }
    // Online threads' references stay valid until their next quiescent state: a plain load suffices.
    template <std::size_t Slot, class Atomic>
    [[nodiscard]] auto protect(const Atomic& src) noexcept {
      return src.load(kLoad);  // acquire: the node's contents, released by its linker, are visible
    }
    template <std::size_t Slot, class N, class Atomic>
    [[nodiscard]] bool protect_if(N*, const Atomic& src, N* expected) noexcept {
      return src.load(kLoad) == expected;  // acquire: as in protect()
    }
    void clear() noexcept {}
    void retire(Retirable<M>* r) noexcept { rec_.add_retired(r); }

   private:
    Record& rec_;
    bool was_offline_;
  };

  explicit QsbrDomain(Options options = {}) : options_(options), pool_(options.recycle_nodes) {
    global_epoch_.store(1, std::memory_order_relaxed);  // not shared yet; 0 is reserved for "offline"
  }
  QsbrDomain(const QsbrDomain&) = delete;
  QsbrDomain& operator=(const QsbrDomain&) = delete;
  // Frees every retired node. Threads must have stopped using the domain (see HazardPointerDomain).
  ~QsbrDomain() {
    registry_.destroy([this](Record& r) { dispose_everything(r); }, [this](Record& r) { dispose_everything(r); });
  }

  [[nodiscard]] void* allocate_block(std::size_t bytes, std::size_t align) {
    return pool_.allocate_from_system(bytes, align);
  }
  void free_block(void* p, std::size_t bytes, std::size_t align) noexcept { pool_.give_back(p, bytes, align); }

  // An explicit registration, online from the start.
  [[nodiscard]] Handle register_thread() {
    Record* r = registry_.acquire([this] { return new Record(*this); });
    go_online(*r);
    return Handle(r);
  }
  // The calling thread's implicit registration (offline between operations), released at thread exit.
  [[nodiscard]] ThreadRef current() {
    auto& cache = thread_record_cache();
    if (auto* r = static_cast<Record*>(cache.find(this)); r != nullptr) {
      // acquire: a destroyed domain's orphaning (possibly at this address) happened-before we reuse the entry.
      if (r->state.load(std::memory_order_acquire) != kRecordOrphaned) return ThreadRef(r);
      cache.erase(this);
      delete r;
    }
    Record* r = registry_.acquire([this] { return new Record(*this); });
    cache.insert(this, r, [](void* rec) noexcept { release(static_cast<Record*>(rec)); });
    return ThreadRef(r);
  }
  void unregister_current_thread() noexcept {
    if (void* r = thread_record_cache().erase(this); r != nullptr) release(static_cast<Record*>(r));
  }

  [[nodiscard]] Stats stats() const {
    Stats s;
    registry_.for_each([&s](const Record& r) { r.add_to(s); });
    s.records = registry_.count();
    s.epoch = global_epoch_.load(std::memory_order_relaxed);  // a statistic: no ordering
    s.system_allocations = pool_.system_allocations();
    s.system_frees = pool_.system_frees();
    return s;
  }

 private:
  friend Record;

  void announce(Record& r) noexcept {
    // acquire: reading an epoch made by a reclaimer's release advance means that reclaimer's unlinks
    // happen-before our coming reads, so we cannot reach what it retired before the advance.
    const std::uint64_t e = global_epoch_.load(kLoad);
    if constexpr (M::fences_invisible) {
      r.local_epoch.store(e, std::memory_order_seq_cst);  // with seq_cst structure loads: the fence's effect
    } else {
      // release: our reads so far happen-before a reclaimer that sees this epoch frees what we read.
      r.local_epoch.store(e, std::memory_order_release);
      // Store-load: either a reclaimer's scan sees this announcement, or our later reads see its unlinks.
      M::thread_fence(std::memory_order_seq_cst);
    }
  }
  void go_online(Record& r) noexcept {
    r.online = true;
    announce(r);
  }
  void quiescent(Record& r) noexcept {
    announce(r);
    if (r.retired.size >= options_.reclaim_threshold) reclaim(r);
  }
  void go_offline(Record& r) noexcept {
    if (r.retired.size >= options_.reclaim_threshold) reclaim(r);
    r.online = false;
    // release: our reads happen-before a reclaimer that sees us offline and frees what we read.
    r.local_epoch.store(kOffline, std::memory_order_release);
  }

  // A pass by a thread that holds no references: advance the epoch, then free what every online thread
  // has announced past.
  void reclaim(Record& self) noexcept {
    if (self.untargeted != nullptr) {
      // acq_rel: release makes our unlinks (before this advance) happen-before any thread that reads the
      // new epoch (or a later one, through the RMW release sequence).
      const std::uint64_t target = global_epoch_.fetch_add(1, kAdvance) + 1;
      self.assign_target(target);
    }
    if constexpr (!M::fences_invisible) {
      // Pairs with announce()'s fence: a thread whose announcement we miss sees our unlinks.
      M::thread_fence(std::memory_order_seq_cst);
    }
    std::uint64_t min_announced = std::numeric_limits<std::uint64_t>::max();
    registry_.for_each([&](const Record& r) {
      if (&r == &self) return;
      // acquire: pairs with announce()/go_offline()'s release: that thread's reads happen-before our frees.
      const std::uint64_t e = r.local_epoch.load(kLoad);
      if (e != kOffline) min_announced = std::min(min_announced, e);
    });
    self.reclaim_up_to(min_announced);
  }

  static void release(Record* r) noexcept {
    if (!Registry::begin_release(r)) {
      delete r;  // the domain is gone and already disposed of our leftovers
      return;
    }
    QsbrDomain& d = *r->domain;
    if (r->retired.size != 0) d.reclaim(*r);  // leftovers stay with the record for its next owner
    r->online = false;
    r->local_epoch.store(kOffline, std::memory_order_release);  // release: as in go_offline()
    r->cache.drain();
    Registry::end_release(r);
  }

  void dispose_everything(Record& r) noexcept {
    for (Retirable<M>* n = r.retired.take_all(); n != nullptr;) {
      Retirable<M>* next = n->next_retired;
      n->dispose(n, r.cache);
      n = next;
    }
    r.untargeted = nullptr;
    r.cache.free_all();
  }

  static constexpr auto kLoad = M::fences_invisible ? std::memory_order_seq_cst : std::memory_order_acquire;
  static constexpr auto kAdvance = M::fences_invisible ? std::memory_order_seq_cst : std::memory_order_acq_rel;

  Options options_;
  NodePool<M> pool_;
  Registry registry_;
  alignas(atomics::kCacheLine) typename M::template atomic<std::uint64_t> global_epoch_;
};

}  // namespace weft::lockfree
