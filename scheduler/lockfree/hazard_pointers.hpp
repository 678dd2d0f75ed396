// Hazard-pointer reclamation (Michael, "Hazard Pointers", IEEE TPDS 2004) for the scheduler's lock-free
// structures. A HazardPointerDomain is an object, not a process-wide singleton: the Pool owns one; each
// structure is given the domain it reclaims through.
//
// Per thread: K hazard slots, an intrusive retired list and a node cache, in a record registered on first
// use (current()) or explicitly (register_thread()), released at thread exit / handle destruction, and
// reused by later threads. A thread scans when its retired list reaches R = 2H (H = K x records), so each
// scan frees at least R - H nodes: O(1) amortised, and never more than N x R nodes unreclaimed.
//
// Planted bugs for the model test (tests/queue/queue_model.cpp): the WEFT_PLANTED("hazard.*") lines
// (scheduler/atomics/plant.hpp), constant false outside the Relacy model build.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "scheduler/lockfree/hazard_record.hpp"
#include "scheduler/lockfree/node_pool.hpp"
#include "scheduler/lockfree/retirable.hpp"
#include "scheduler/lockfree/thread_record_cache.hpp"
#include "scheduler/lockfree/thread_registry.hpp"

namespace weft::lockfree {

template <atomics::MemoryModel M = atomics::StdMemoryModel, std::size_t K = 2>
class HazardPointerDomain {
  static_assert(K >= 1, "HazardPointerDomain needs at least one hazard slot per thread");
  using Record = HazardRecord<HazardPointerDomain, M, K>;
  using Registry = ThreadRegistry<Record, M>;

 public:
  using memory_model = M;
  static constexpr std::size_t kSlotsPerThread = K;

  struct Options {
    bool recycle_nodes = true;       // false: every reclaimed node is freed (Relacy must see real frees)
    bool check_bounds = false;       // assert the bound at every retire (tests); aborts with a message if broken
    std::size_t scan_threshold = 0;  // 0: R = 2H, the published bound; model tests scan sooner (e.g. 1)
  };
  using Stats = HazardStats;

  // A thread's registration, as the structures use it: cheap to copy, valid while the registration lasts.
  class ThreadRef {
   public:
    // A block for a node: from this thread's cache, the domain's pool, or the system.
    [[nodiscard]] void* allocate(std::size_t bytes, std::size_t align) { return rec_->cache.allocate(bytes, align); }
    void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept { rec_->cache.deallocate(p, bytes, align); }

   private:
    friend HazardPointerDomain;
    explicit ThreadRef(Record* r) noexcept : rec_(r) {}
    Record* rec_;
  };

  // Owns one registration (RAII). The model tests use it: their threads are simulated, thread_local is not.
  class Handle {
   public:
    Handle(Handle&& other) noexcept : rec_(std::exchange(other.rec_, nullptr)) {}
    Handle& operator=(Handle&&) = delete;
    ~Handle() {
      if (rec_ != nullptr) release(rec_);
    }
    [[nodiscard]] ThreadRef ref() const noexcept { return ThreadRef(rec_); }

   private:
    friend HazardPointerDomain;
    explicit Handle(Record* r) noexcept : rec_(r) {}
    Record* rec_;
  };

  // One operation's hazards: protect() publishes, the destructor (or clear()) withdraws them.
  class Guard {
   public:
    explicit Guard(ThreadRef t) noexcept : rec_(*t.rec_) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() { clear(); }

    // Reads src and returns a pointer that stays safe to dereference until this slot is cleared:
    // publish, full fence, re-read, retry until the re-read agrees (the node was still reachable when
    // the hazard became visible to every scanner).
    template <std::size_t Slot, class Atomic>
    [[nodiscard]] auto protect(const Atomic& src) noexcept {
      static_assert(Slot < K, "hazard slot index out of range for this domain's K");
      auto p = src.load(std::memory_order_relaxed);  // a candidate only: validated below
      for (;;) {
        publish<Slot>(p);
        if (WEFT_PLANTED("hazard.no_revalidate")) {
          return p;
        }
        // acquire: the node's contents (written before it was linked with release) are visible to us.
        auto again = src.load(kReread);
        if (again == p) return p;
        p = again;
      }
    }
    // Publishes p in Slot, then checks that src still holds `expected` (whose reachability implies p's).
    template <std::size_t Slot, class N, class Atomic>
    [[nodiscard]] bool protect_if(N* p, const Atomic& src, N* expected) noexcept {
      static_assert(Slot < K, "hazard slot index out of range for this domain's K");
      publish<Slot>(p);
      if (WEFT_PLANTED("hazard.no_revalidate")) {
        return true;
      }
      return src.load(kReread) == expected;  // acquire: as in protect()
    }
    // Withdraws every hazard this guard published.
    void clear() noexcept {
      for (std::size_t i = 0; i < K; ++i) {
        if ((used_ >> i & 1U) == 0) continue;
        // release: our reads of the node happen-before a scanner that sees the slot empty frees it.
        rec_.hazards[i].ptr.store(nullptr, std::memory_order_release);
      }
      used_ = 0;
    }
    // Hands an unlinked object to the domain; it is disposed of once no hazard points to it.
    void retire(Retirable<M>* r) noexcept { rec_.domain->retire(rec_, r); }

   private:
    template <std::size_t Slot>
    void publish(void* p) noexcept {
      used_ |= 1U << Slot;
      if constexpr (M::fences_invisible) {
        // seq_cst store + seq_cst re-read: the store-load order the fence gives, in a form TSan understands.
        rec_.hazards[Slot].ptr.store(p, std::memory_order_seq_cst);
      } else {
        // relaxed: the fence below orders it before the re-read (Michael's "full fence").
        rec_.hazards[Slot].ptr.store(p, std::memory_order_relaxed);
        if (!WEFT_PLANTED("hazard.no_protect_fence")) {
          M::thread_fence(std::memory_order_seq_cst);
        }
      }
    }
    static constexpr auto kReread = M::fences_invisible ? std::memory_order_seq_cst : std::memory_order_acquire;

    Record& rec_;
    unsigned used_ = 0;
  };

  explicit HazardPointerDomain(Options options = {}) : options_(options), pool_(options.recycle_nodes) {}
  HazardPointerDomain(const HazardPointerDomain&) = delete;
  HazardPointerDomain& operator=(const HazardPointerDomain&) = delete;
  // Frees every retired node. Threads must have stopped using the domain; a thread that still holds a
  // record (thread-local or Handle) may outlive it and frees just its record later.
  ~HazardPointerDomain() {
    registry_.destroy([this](Record& r) { dispose_everything(r); }, [this](Record& r) { dispose_everything(r); });
  }

  // A node block straight from the shared pool / to it, for a structure's construction and destruction.
  [[nodiscard]] void* allocate_block(std::size_t bytes, std::size_t align) {
    return pool_.allocate_from_system(bytes, align);
  }
  void free_block(void* p, std::size_t bytes, std::size_t align) noexcept { pool_.give_back(p, bytes, align); }

  // An explicit registration (a worker, or a Relacy thread).
  [[nodiscard]] Handle register_thread() {
    return Handle(registry_.acquire([this] { return new Record(*this); }));
  }

  // The calling thread's registration, made on first use and released at thread exit.
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
  // Releases the calling thread's implicit registration now instead of at thread exit.
  void unregister_current_thread() noexcept {
    if (void* r = thread_record_cache().erase(this); r != nullptr) release(static_cast<Record*>(r));
  }

  // Counters for tests. Exact only while no thread is retiring; the peaks are exact when check_bounds is on.
  [[nodiscard]] Stats stats() const {
    Stats s = bounds_.snapshot();
    registry_.for_each([&s](const Record& r) { r.add_to(s); });
    s.records = registry_.count();
    s.hazard_slots = s.records * K;
    s.system_allocations = pool_.system_allocations();
    s.system_frees = pool_.system_frees();
    return s;
  }

 private:
  friend Record;

  void retire(Record& rec, Retirable<M>* r) noexcept {
    rec.retired.push_back(r);
    const std::size_t n = registry_.count();
    const std::size_t threshold = options_.scan_threshold != 0 ? options_.scan_threshold : 2 * K * n;
    if (options_.check_bounds) bounds_.on_retire();
    if (rec.retired.size >= threshold) scan(rec);
    rec.note_size();
    if (options_.check_bounds && options_.scan_threshold == 0) {
      bounds_.check(rec.retired.size, threshold, K, [this] { return registry_.count(); });
    }
  }

  void scan(Record& rec) noexcept {
    if constexpr (!M::fences_invisible) {
      if (!WEFT_PLANTED("hazard.no_scan_fence")) {
        // Orders our unlinking of the retired nodes before the hazard reads below against every reader's
        // publish-fence-reread: either we see its hazard, or its re-read sees the node unlinked.
        M::thread_fence(std::memory_order_seq_cst);
      }
    }
    auto& hazards = rec.snapshot;
    hazards.clear();
    registry_.for_each([&hazards](const Record& r) {
      for (const auto& slot : r.hazards) {
        // acquire: pairs with clear()'s release, so a reader's last access to a node happens-before its free.
        // seq_cst under TSan: the fence above is then absent (see Guard::publish).
        if (const void* p = slot.ptr.load(kHazardLoad); p != nullptr) hazards.push_back(p);
      }
    });
    std::sort(hazards.begin(), hazards.end());
    Retirable<M>* node = rec.retired.take_all();
    std::size_t freed = 0;
    while (node != nullptr) {
      Retirable<M>* next = node->next_retired;
      // (Planted bug hazard.early_free: every node counts as unprotected.)
      const bool hazardous = !WEFT_PLANTED("hazard.early_free") &&
                             std::binary_search(hazards.begin(), hazards.end(), static_cast<const void*>(node));
      if (hazardous) {
        rec.retired.push_back(node);
      } else {
        node->dispose(node, rec.cache);
        ++freed;
      }
      node = next;
    }
    rec.note_scan(freed);
    if (options_.check_bounds) bounds_.on_reclaim(freed);
  }

  static void release(Record* r) noexcept {
    if (!Registry::begin_release(r)) {
      delete r;  // the domain is gone and already disposed of our leftovers
      return;
    }
    HazardPointerDomain& d = *r->domain;
    if (r->retired.size != 0) d.scan(*r);  // leftovers (still protected) stay with the record for its next owner
    r->cache.drain();
    Registry::end_release(r);
  }

  void dispose_everything(Record& r) noexcept {
    for (Retirable<M>* n = r.retired.take_all(); n != nullptr;) {
      Retirable<M>* next = n->next_retired;
      n->dispose(n, r.cache);
      n = next;
    }
    r.cache.free_all();
  }

  static constexpr auto kHazardLoad = M::fences_invisible ? std::memory_order_seq_cst : std::memory_order_acquire;

  Options options_;
  NodePool<M> pool_;
  Registry registry_;
  BoundTracker bounds_;
};

}  // namespace weft::lockfree
