// Recycling of fixed-size node blocks so a steady stream of push/pop never calls malloc.
//
// Two levels: a per-thread NodeCache (plain lists, no atomics: only its owner touches it) in front of a
// shared NodePool (one lock-free stack per size class). The shared stacks are ABA-safe by construction:
// blocks are pushed with a CAS (a push never reads the old top's fields, so an A-B-A top is harmless) and
// taken only all at once with exchange(nullptr), never with the read-next-then-CAS pop that suffers ABA.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "scheduler/cache_line.hpp"
#include "scheduler/memory_model.hpp"

namespace weft::sched {

// Blocks are pooled in size classes of 64, 128, 192 and 256 bytes; larger or over-aligned nodes bypass the pool.
inline constexpr std::size_t kPoolGranule = 64;
inline constexpr std::size_t kPoolClasses = 4;
inline constexpr std::size_t kUnpooled = kPoolClasses;

[[nodiscard]] constexpr std::size_t pool_class_for(std::size_t bytes, std::size_t align) noexcept {
  if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__ || bytes > kPoolGranule * kPoolClasses) return kUnpooled;
  return (bytes + kPoolGranule - 1) / kPoolGranule - 1;
}

// A free block, linked through `next` on a thread's lists and in the chains of the shared stacks. `ahead` is a
// prefetch hint only, never dereferenced: in a chain handed to the shared pool, the block kPrefetchAhead
// links further along that chain, or null. A stale hint (that block was reused since) costs one useless
// prefetch; a prefetch of any address is harmless.
struct FreeBlock {
  FreeBlock* next;
  FreeBlock* ahead;
};

// How far ahead a thread that takes blocks freed by others fetches them (see NodeCache::allocate).
inline constexpr std::size_t kPrefetchAhead = 8;

template <MemoryModel M>
class NodePool {
 public:
  // recycle = false frees every block at once: the model tests need real frees so Relacy sees early frees.
  explicit NodePool(bool recycle) noexcept : recycle_(recycle) {
    for (auto& s : shared_) s.top.store(nullptr, std::memory_order_relaxed);  // no other thread sees us yet
  }
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() {
    for (auto& s : shared_) release_chain(s.top.load(std::memory_order_relaxed));  // no user is left
  }

  [[nodiscard]] bool recycles() const noexcept { return recycle_; }
  // Blocks obtained from / returned to the system since construction.
  [[nodiscard]] std::uint64_t system_allocations() const noexcept {
    return system_allocations_.load(std::memory_order_relaxed);  // a statistic: no ordering needed
  }
  [[nodiscard]] std::uint64_t system_frees() const noexcept {
    return system_frees_.load(std::memory_order_relaxed);  // a statistic: no ordering needed
  }

  [[nodiscard]] void* allocate_from_system(std::size_t bytes, std::size_t align) {
    const std::size_t cls = pool_class_for(bytes, align);
    // Pooled blocks start on a cache line, so a node's first line is a known one (scheduler/task.hpp).
    void* p = cls == kUnpooled ? ::operator new(bytes, std::align_val_t{align})
                               : ::operator new((cls + 1) * kPoolGranule, std::align_val_t{kPoolGranule});
    system_allocations_.fetch_add(1, std::memory_order_relaxed);  // a statistic: no ordering needed
    return p;
  }
  void free_to_system(void* p, std::size_t cls, std::size_t align) noexcept {
    ::operator delete(p, std::align_val_t{cls == kUnpooled ? align : kPoolGranule});
    system_frees_.fetch_add(1, std::memory_order_relaxed);  // a statistic: no ordering needed
  }

  // Returns one block without a cache: to the shared pool when recycling, else to the system.
  void give_back(void* p, std::size_t bytes, std::size_t align) noexcept {
    const std::size_t cls = pool_class_for(bytes, align);
    if (cls == kUnpooled || !recycle_) {
      free_to_system(p, cls, align);
      return;
    }
    auto* b = ::new (p) FreeBlock{nullptr, nullptr};
    push_chain(cls, b, b);
  }

  // Pushes the chain first..last (linked through FreeBlock::next) onto the shared stack of class cls.
  void push_chain(std::size_t cls, FreeBlock* first, FreeBlock* last) noexcept {
    FreeBlock* top = shared_[cls].top.load(std::memory_order_relaxed);  // only a guess for the CAS
    do {
      last->next = top;
      // release: the taker's acquire exchange must see the chain's links (and the blocks' last writes).
    } while (!shared_[cls].top.compare_exchange_weak(top, first, std::memory_order_release,
                                                      std::memory_order_relaxed));
  }
  // Takes every block of class cls at once (nullptr if none).
  [[nodiscard]] FreeBlock* take_all(std::size_t cls) noexcept {
    // acquire: pairs with push_chain's release so the links and the blocks' prior use happen-before our reuse.
    return shared_[cls].top.exchange(nullptr, std::memory_order_acquire);
  }

  void release_chain(FreeBlock* b) noexcept {
    while (b != nullptr) {
      FreeBlock* next = b->next;
      free_to_system(b, 0, 0);
      b = next;
    }
  }

 private:
  struct alignas(kCacheLine) SharedStack {
    typename M::template atomic<FreeBlock*> top;
  };
  std::array<SharedStack, kPoolClasses> shared_;
  bool recycle_;
  std::atomic<std::uint64_t> system_allocations_{0};
  std::atomic<std::uint64_t> system_frees_{0};
};

// One thread's cache in front of a NodePool. Not thread-safe: owned by one thread record.
//
// Two lists per class. `freed` holds what this thread gave back, newest first, with its tail known: at
// kCapacity blocks it goes to the shared pool whole, in O(1). `taken` holds what the last refill took from the
// shared pool (all of it, in one exchange), handed out before asking the pool again. Allocation prefers
// `freed` (recently touched, likely cached). No operation walks a list, except drain() and free_all() at a
// thread's or domain's end: the old single list spilled by walking 128 cold blocks, and after a large refill
// did so on every free (a submitter that had taken a million blocks paid ~40 us per free in the next workload).
template <MemoryModel M>
class NodeCache {
 public:
  explicit NodeCache(NodePool<M>& pool) noexcept : pool_(&pool) {}
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;
  ~NodeCache() { free_all(); }

  // A block of at least `bytes` bytes aligned to `align`: from this cache, else the shared pool, else malloc.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t align) {
    const std::size_t cls = pool_class_for(bytes, align);
    if (cls == kUnpooled || !pool_->recycles()) return pool_->allocate_from_system(bytes, align);
    // The common case, kept free of calls so that it compiles to a few instructions at the caller.
    Freed& freed = freed_[cls];
    if (FreeBlock* b = freed.head; b != nullptr) {
      freed.head = b->next;
      if (--freed.count == 0) freed.tail = nullptr;
      return b;
    }
    return allocate_taken(cls, bytes, align);
  }

  // Returns a block obtained from allocate() with the same bytes/align.
  void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept {
    const std::size_t cls = pool_class_for(bytes, align);
    if (cls == kUnpooled || !pool_->recycles()) {
      pool_->free_to_system(p, cls, align);
      return;
    }
    Freed& freed = freed_[cls];
    auto* b = ::new (p) FreeBlock{freed.head, nullptr};
    if (freed.head == nullptr) freed.tail = b;
    freed.head = b;
    if (++freed.count == kCapacity) spill(cls);
  }

  // Hands every cached block to the shared pool (a thread leaving the domain).
  void drain() noexcept {
    for (std::size_t cls = 0; cls < kPoolClasses; ++cls) {
      Freed& freed = freed_[cls];
      if (freed.head != nullptr) {
        link_ahead(freed.head);
        pool_->push_chain(cls, freed.head, freed.tail);
      }
      freed = Freed{};
      if (FreeBlock* first = std::exchange(taken_[cls], nullptr); first != nullptr) {
        FreeBlock* last = first;
        while (last->next != nullptr) last = last->next;
        pool_->push_chain(cls, first, last);
      }
    }
  }
  // Frees every cached block to the system (the domain is being destroyed).
  void free_all() noexcept {
    for (std::size_t cls = 0; cls < kPoolClasses; ++cls) {
      // An orphaned record's cache may outlive its pool, emptied: then both lists are null.
      pool_release(std::exchange(freed_[cls], Freed{}).head);
      pool_release(std::exchange(taken_[cls], nullptr));
    }
  }

 private:
  static constexpr std::size_t kCapacity = 128;

  // Out of line, so that allocate() and deallocate() stay small enough to inline with no register saves.
  [[gnu::noinline]] void* allocate_taken(std::size_t cls, std::size_t bytes, std::size_t align) {
    if (taken_[cls] == nullptr) taken_[cls] = pool_->take_all(cls);
    if (FreeBlock* b = taken_[cls]; b != nullptr) {
      taken_[cls] = b->next;
      // Taken blocks were last written by the threads that freed them (a submitter's blocks come back from
      // the workers that ran its tasks), so each is a cache miss, and following `next` alone would take
      // them one at a time: the stall on the next link was 60% of a no-op post's time, and prefetching just
      // the next block hid only part of it. `ahead` names a block about kPrefetchAhead links on, so that
      // many misses are in flight at once. The next block is fetched too, for the first blocks of a chain
      // and for chains without hints. For writing: the task is constructed in it.
      if (b->ahead != nullptr) __builtin_prefetch(b->ahead, 1);
      if (b->next != nullptr) __builtin_prefetch(b->next, 1);
      return b;
    }
    return pool_->allocate_from_system(bytes, align);
  }

  // The freed list is full: it goes to the shared pool whole.
  [[gnu::noinline]] void spill(std::size_t cls) noexcept {
    Freed& freed = freed_[cls];
    link_ahead(freed.head);
    pool_->push_chain(cls, freed.head, freed.tail);
    freed = Freed{};
  }

  struct Freed {
    FreeBlock* head = nullptr;
    FreeBlock* tail = nullptr;
    std::size_t count = 0;
  };

  // Sets every `ahead` hint of a chain about to go to the shared pool. Its blocks were freed by this thread
  // lately, so the walk stays in this core's cache; doing it here rather than at each free keeps the hints
  // off the path of a thread that reuses its own blocks (a recursive spawn's worker lost ~5% to it).
  static void link_ahead(FreeBlock* first) noexcept {
    FreeBlock* lead = first;
    for (std::size_t i = 0; i < kPrefetchAhead && lead != nullptr; ++i) lead = lead->next;
    for (FreeBlock* b = first; b != nullptr; b = b->next) {
      b->ahead = lead;
      if (lead != nullptr) lead = lead->next;
    }
  }

  void pool_release(FreeBlock* list) noexcept {
    if (list != nullptr) pool_->release_chain(list);
  }

  NodePool<M>* pool_;
  std::array<Freed, kPoolClasses> freed_{};
  std::array<FreeBlock*, kPoolClasses> taken_{};
};

}  // namespace weft::sched
