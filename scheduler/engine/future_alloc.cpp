// Where future states live: a thread's NodeCache in front of one process-wide NodePool
// (scheduler/lockfree/node_pool.hpp), the same two-level recycling the task domain uses, so a steady stream of submit +
// get allocates nothing.
#include <cstddef>
#include <cstdint>
#include <new>

#include "scheduler/engine/future_alloc.hpp"
#include "scheduler/lockfree/node_pool.hpp"
#include "weft/detail/future_state.hpp"

namespace weft::detail {
namespace {

using StatePool = lockfree::NodePool<atomics::StdMemoryModel>;
using Cache = lockfree::NodeCache<atomics::StdMemoryModel>;

// Never destroyed: a Future (and so a block) may be released by any thread up to the very end of the process,
// later than any static destructor could be ordered. Its blocks stay reachable through it. Built in static
// storage, not on the heap: this function is noexcept, and the first submit of a process may meet a full heap
// (a failed `new` here used to terminate the process instead of letting that submit throw std::bad_alloc).
StatePool& shared_pool() noexcept {
  alignas(StatePool) static std::byte storage[sizeof(StatePool)];
  static StatePool* const pool = ::new (static_cast<void*>(storage)) StatePool(true);
  return *pool;
}

// The calling thread's cache; at thread exit its blocks go to the shared pool for other threads. Reached
// through `tls_cache_in_use`, a plain pointer (no initialisation guard on the hot path) that is null before
// the cache is built and again once it is destroyed.
thread_local Cache* tls_cache_in_use = nullptr;
enum class CacheState : std::uint8_t { unborn, alive, gone };
thread_local CacheState tls_state = CacheState::unborn;  // trivially destructible: readable at any time
struct ThreadCache {
  Cache cache{shared_pool()};
  ThreadCache() noexcept {
    tls_state = CacheState::alive;
    tls_cache_in_use = &cache;
    tls_future_blocks = cache.free_lists();  // the shared pool recycles (StatePool(true)), as the inline path assumes
  }
  ~ThreadCache() {
    tls_future_blocks = nullptr;
    tls_cache_in_use = nullptr;
    tls_state = CacheState::gone;
    cache.drain();
  }
};
thread_local ThreadCache tls_cache;

// First use on this thread (builds the cache), or after its cache was destroyed (a state made or released
// from another thread-local's destructor): then the system, or the shared pool, directly.
[[gnu::noinline]] void* allocate_without_cache(std::size_t bytes, std::size_t align) {
  if (tls_state == CacheState::gone) return shared_pool().allocate_from_system(bytes, align);
  return tls_cache.cache.allocate(bytes, align);
}
[[gnu::noinline]] void deallocate_without_cache(void* p, std::size_t bytes, std::size_t align) noexcept {
  if (tls_state == CacheState::gone) {
    shared_pool().give_back(p, bytes, align);
    return;
  }
  tls_cache.cache.deallocate(p, bytes, align);
}

}  // namespace

thread_local constinit FreeList* tls_future_blocks = nullptr;

// The inline path (weft/detail/block_cache.hpp) found no block on the thread's list, the list full, or no list.
void* allocate_future_state_slow(std::size_t bytes, std::size_t align) {
  if (Cache* cache = tls_cache_in_use; cache != nullptr) return cache->allocate(bytes, align);
  return allocate_without_cache(bytes, align);
}

void deallocate_future_state_slow(void* p, std::size_t bytes, std::size_t align) noexcept {
  if (Cache* cache = tls_cache_in_use; cache != nullptr) {
    cache->deallocate(p, bytes, align);
    return;
  }
  deallocate_without_cache(p, bytes, align);
}

std::uint64_t future_state_blocks_held() noexcept {
  // Frees first: a block counted as freed was allocated before, so the difference never wraps below zero.
  const std::uint64_t frees = shared_pool().system_frees();
  return shared_pool().system_allocations() - frees;
}

}  // namespace weft::detail
