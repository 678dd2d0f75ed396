// Recycling of fixed-size node blocks so a steady stream of push/pop never calls malloc.
//
// Two levels: a per-thread NodeCache (plain lists, no atomics: only its owner touches it) in front of a
// shared NodePool (one stack of batches per size class). A cache gives blocks back a batch at a time (at most
// NodeCache::kCapacity blocks, linked through `next`) and refills one batch at a time, so what a thread holds
// is bounded by a constant whatever the others do: the pool's memory is the peak of blocks in use plus that
// constant per live thread. (A refill that took the whole shared stack would not bound it: with several
// submitters, the first would take every free block and the others, finding the stack empty, go to malloc, so
// the memory would grow by the others' backlog on every round of new threads.)
//
// The shared stack is a Treiber stack of batches: any thread pushes a batch with a CAS that never reads the
// old top's fields, and taking a batch is serialised by a mutex per stack. Only a taker removes batches, so
// while one holds the mutex the top it read stays on the stack, its `next_batch` link cannot change, and the
// classic pop's ABA (the top taken, reused and pushed back between the read of its link and the CAS) cannot
// happen: a CAS that fails only saw pushes. The mutex is taken once per batch, never on the per-block paths.
//
// Planted bugs for the model test (tests/queue/node_pool_model.cpp): the WEFT_PLANTED("node_pool.*") lines
// (scheduler/atomics/plant.hpp), constant false outside the Relacy model build.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <utility>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/memory_model.hpp"
#include "scheduler/atomics/plant.hpp"
#include "weft/detail/block_cache.hpp"

namespace weft::lockfree {

// Blocks are pooled in size classes of 64, 128, 192 and 256 bytes; larger or over-aligned nodes bypass the pool.
// The classes, the block's links and a cache's lists are declared with the public inline path of future states
// (weft/detail/block_cache.hpp), which pops and pushes a thread's lists as NodeCache does.
inline constexpr std::size_t kPoolGranule = weft::detail::kBlockGranule;
inline constexpr std::size_t kPoolClasses = weft::detail::kBlockClasses;
inline constexpr std::size_t kUnpooled = weft::detail::kUnpooledClass;

[[nodiscard]] constexpr std::size_t pool_class_for(std::size_t bytes, std::size_t align) noexcept {
  return weft::detail::block_class_for(bytes, align);
}

// A free block, linked through `next` on a thread's lists and within a batch (a batch's last block has a null
// `next`). `next_batch` is meaningful in a batch's first block only, while the batch is on a shared stack: the
// first block of the batch pushed before it, or null. `ahead` is a prefetch hint only, never dereferenced: the
// block kPrefetchAhead links further along the same batch, or null. A stale hint (that block was reused since)
// costs one useless prefetch; a prefetch of any address is harmless.
using FreeBlock = weft::detail::FreeBlock;

// How far ahead a thread that takes blocks freed by others fetches them (see NodeCache::allocate).
inline constexpr std::size_t kPrefetchAhead = 8;

template <atomics::MemoryModel M>
class NodePool {
 public:
  // recycle = false frees every block at once: the model tests need real frees so Relacy sees early frees.
  explicit NodePool(bool recycle) noexcept : recycle_(recycle) {
    for (auto& s : shared_) s.top.store(nullptr, std::memory_order_relaxed);  // no other thread sees us yet
  }
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() {
    for (auto& s : shared_) release_batches(s.top.load(std::memory_order_relaxed));  // no user is left
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
    // Pooled blocks start on a cache line, so a node's first line is a known one (scheduler/engine/task.hpp).
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
    push_batch(cls, ::new (p) FreeBlock{nullptr, nullptr, nullptr});
  }

  // Pushes the batch that starts at `first` (linked through FreeBlock::next, the last block's `next` null)
  // onto the shared stack of class cls. Lock-free: reads nothing but the top pointer.
  void push_batch(std::size_t cls, FreeBlock* first) noexcept {
    SharedStack& stack = shared_[cls];
    FreeBlock* top = stack.top.load(std::memory_order_relaxed);  // only a guess for the CAS
    do {
      first->next_batch = top;
      // release: the taker's acquire must see the batch's links (and the blocks' last writes).
    } while (!stack.top.compare_exchange_weak(top, first, push_order(), std::memory_order_relaxed));
  }

  // Takes the newest batch of class cls (nullptr if the stack is empty): a null-terminated chain.
  [[nodiscard]] FreeBlock* take_batch(std::size_t cls) noexcept {
    SharedStack& stack = shared_[cls];
    if (WEFT_PLANTED("node_pool.unlocked_take")) return pop_batch(stack);  // planted bug: the pop's ABA
    // The only remover: the top read below stays on the stack, with the same next_batch, until our CAS.
    const std::lock_guard<typename M::mutex> lock(stack.takers);
    return pop_batch(stack);
  }

  // Frees every block of the batches from `first` on (linked through next_batch) to the system.
  void release_batches(FreeBlock* first) noexcept {
    while (first != nullptr) {
      FreeBlock* const below = first->next_batch;
      release_chain(first);
      first = below;
    }
  }
  // Frees the chain from `b` on (linked through next) to the system.
  void release_chain(FreeBlock* b) noexcept {
    while (b != nullptr) {
      FreeBlock* next = b->next;
      free_to_system(b, 0, 0);
      b = next;
    }
  }

 private:
  // release: publishes the batch's links (planted bug node_pool.relaxed_push: relaxed).
  [[nodiscard]] static std::memory_order push_order() noexcept {
    return WEFT_PLANTED("node_pool.relaxed_push") ? std::memory_order_relaxed : std::memory_order_release;
  }
  struct alignas(atomics::kCacheLine) SharedStack {
    typename M::template atomic<FreeBlock*> top;
    typename M::mutex takers;  // held by take_batch only: pushes never wait for it
  };

  // take_batch's pop, under the mutex but for the planted bug.
  [[nodiscard]] static FreeBlock* pop_batch(SharedStack& stack) noexcept {
    // acquire: pairs with push_batch's release, so the batch's links and its blocks' prior use happen-before
    // our reads and our reuse. On failure too: the top seen then is the next one dereferenced.
    FreeBlock* top = stack.top.load(std::memory_order_acquire);
    while (top != nullptr) {
      FreeBlock* const below = top->next_batch;
      if (stack.top.compare_exchange_weak(top, below, std::memory_order_acquire, std::memory_order_acquire)) break;
    }
    return top;
  }
  std::array<SharedStack, kPoolClasses> shared_;
  bool recycle_;
  std::atomic<std::uint64_t> system_allocations_{0};
  std::atomic<std::uint64_t> system_frees_{0};
};

// One thread's cache in front of a NodePool. Not thread-safe: owned by one thread record.
//
// Two lists per class. `freed` holds what this thread gave back, newest first: at kCapacity blocks it goes to
// the shared pool whole, as one batch, in O(1). `taken` holds the rest of the batch the last refill took from the
// shared pool, handed out before asking the pool again. Allocation prefers `freed` (recently touched, likely
// cached). So a cache holds fewer than kCapacity freed blocks and at most one batch (kCapacity) taken per class:
// the constant per thread in the pool's bound. No operation walks a cold list, except free_all() at a domain's
// end: the old single list spilled by walking 128 cold blocks, and after a large refill did so on every free.
template <atomics::MemoryModel M>
class NodeCache {
 public:
  explicit NodeCache(NodePool<M>& pool) noexcept : pool_(&pool) {}
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;
  ~NodeCache() { free_all(); }

  // Blocks per batch: the most a spill gives and a refill takes at once. A cache holds fewer than kCapacity
  // freed and at most kCapacity taken blocks per class.
  static constexpr std::size_t kCapacity = weft::detail::kFreeListCapacity;

  // A block of at least `bytes` bytes aligned to `align`: from this cache, else the shared pool, else malloc.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t align) {
    const std::size_t cls = pool_class_for(bytes, align);
    if (cls == kUnpooled || !pool_->recycles()) return pool_->allocate_from_system(bytes, align);
    // The common case, kept free of calls so that it compiles to a few instructions at the caller.
    Freed& freed = freed_[cls];
    if (FreeBlock* b = freed.head; b != nullptr) {
      freed.head = b->next;
      --freed.count;
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
    freed.head = ::new (p) FreeBlock{freed.head, nullptr, nullptr};
    if (++freed.count == kCapacity) spill(cls);
  }

  // This cache's free lists, one per class (kPoolClasses), for the inline path of future states
  // (weft/detail/block_cache.hpp), which must pop and push them as allocate and deallocate do here.
  [[nodiscard]] weft::detail::FreeList* free_lists() noexcept { return freed_.data(); }

  // Hands every cached block to the shared pool (a thread leaving the domain): at most two batches per class.
  void drain() noexcept {
    for (std::size_t cls = 0; cls < kPoolClasses; ++cls) {
      if (freed_[cls].head != nullptr) spill(cls);
      // What is left of a taken batch is a batch itself (null-terminated; its hints point within it).
      if (FreeBlock* rest = std::exchange(taken_[cls], nullptr); rest != nullptr) pool_->push_batch(cls, rest);
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
  // Out of line, so that allocate() and deallocate() stay small enough to inline with no register saves.
  [[gnu::noinline]] void* allocate_taken(std::size_t cls, std::size_t bytes, std::size_t align) {
    // One batch, never the whole stack: what a thread holds stays bounded while others find blocks too.
    if (taken_[cls] == nullptr) taken_[cls] = pool_->take_batch(cls);
    if (FreeBlock* b = taken_[cls]; b != nullptr) {
      taken_[cls] = b->next;
      // Taken blocks were last written by the threads that freed them (a submitter's blocks come back from
      // the workers that ran its tasks), so each is a cache miss, and following `next` alone would take
      // them one at a time: the stall on the next link was most of a no-op post's time, and prefetching just
      // the next block hid only part of it. `ahead` names a block about kPrefetchAhead links on, so that
      // many misses are in flight at once. The next block is fetched too, for the first blocks of a chain
      // and for chains without hints. For writing: the task is constructed in it.
      if (b->ahead != nullptr) __builtin_prefetch(b->ahead, 1);
      if (b->next != nullptr) __builtin_prefetch(b->next, 1);
      return b;
    }
    return pool_->allocate_from_system(bytes, align);
  }

  // The freed list is full (or the thread leaves): it goes to the shared pool whole, as one batch.
  [[gnu::noinline]] void spill(std::size_t cls) noexcept {
    Freed& freed = freed_[cls];
    link_ahead(freed.head);
    pool_->push_batch(cls, freed.head);
    freed = Freed{};
  }

  // Newest first; the oldest block's `next` is null, so the list is a batch as it stands.
  using Freed = weft::detail::FreeList;

  // Sets every `ahead` hint of a batch about to go to the shared pool. Its blocks were freed by this thread
  // lately, so the walk stays in this core's cache; doing it here rather than at each free keeps the hints
  // off the path of a thread that reuses its own blocks (a recursive spawn's worker lost time to it; docs/perf-log.md).
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

}  // namespace weft::lockfree
