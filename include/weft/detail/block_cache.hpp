// The common case of the memory a Future's state (and a Subflow child) takes: a block from the calling thread's own
// free list, and back to it. Public only because Pool::submit, Future and Subflow::spawn are templates: written in
// the user's code, the common case needs no call into the library, which a consumer's build without LTO could not
// inline. Users never name anything here. The free lists belong to the thread's cache in
// scheduler/engine/future_alloc.cpp, which also takes the rarer paths (a list empty or full, the thread's first block,
// a thread whose cache is gone).
#pragma once

#include <cstddef>
#include <new>

namespace weft::detail {

// A free block, as a thread's free list and the shared pool behind it (scheduler/lockfree/node_pool.hpp) link it:
// `next` within a list, `ahead` a prefetch hint set when a list goes back to the pool, `next_batch` between the pool's
// batches.
struct FreeBlock {
  FreeBlock* next;
  FreeBlock* ahead;
  FreeBlock* next_batch;
};

// One size class of a thread's cache: its free blocks, newest first, and how many.
struct FreeList {
  FreeBlock* head = nullptr;
  std::size_t count = 0;
};

// Blocks come in kBlockClasses sizes, multiples of kBlockGranule bytes, aligned to kBlockGranule; anything larger
// or more aligned than operator new's default comes from the heap (kUnpooledClass).
inline constexpr std::size_t kBlockGranule = 64;
inline constexpr std::size_t kBlockClasses = 4;
inline constexpr std::size_t kUnpooledClass = kBlockClasses;
// Most blocks a thread's list of one class keeps; the one that would fill it sends the list to the shared pool.
inline constexpr std::size_t kFreeListCapacity = 128;

[[nodiscard]] constexpr std::size_t block_class_for(std::size_t bytes, std::size_t align) noexcept {
  if (align > __STDCPP_DEFAULT_NEW_ALIGNMENT__ || bytes > kBlockGranule * kBlockClasses) return kUnpooledClass;
  return (bytes + kBlockGranule - 1) / kBlockGranule - 1;
}

// The calling thread's free lists of future-state blocks (kBlockClasses of them), or null: before the thread's
// first block, and once its cache is gone (thread exit). Written only by its own thread. Initial-exec whatever the
// user's flags: a task that suspends on a fiber may resume on another thread, and this model reads the thread
// register at each access, where a shared library's default model may reuse an address computed before the switch.
extern thread_local constinit FreeList* tls_future_blocks [[gnu::tls_model("initial-exec")]];

// The rare paths (scheduler/engine/future_alloc.cpp): throw std::bad_alloc.
[[nodiscard]] void* allocate_future_state_slow(std::size_t bytes, std::size_t align);
void deallocate_future_state_slow(void* p, std::size_t bytes, std::size_t align) noexcept;

// A block for a future's state of `bytes` bytes aligned to `align`. Throws std::bad_alloc.
[[nodiscard]] inline void* allocate_future_state(std::size_t bytes, std::size_t align) {
  const std::size_t cls = block_class_for(bytes, align);
  if (cls != kUnpooledClass) {
    if (FreeList* lists = tls_future_blocks; lists != nullptr) {
      FreeList& list = lists[cls];
      if (FreeBlock* block = list.head; block != nullptr) {
        list.head = block->next;
        --list.count;
        return block;
      }
    }
  }
  return allocate_future_state_slow(bytes, align);
}

// Gives back a block allocate_future_state returned for the same `bytes` and `align`, on any thread.
inline void deallocate_future_state(void* p, std::size_t bytes, std::size_t align) noexcept {
  const std::size_t cls = block_class_for(bytes, align);
  if (cls != kUnpooledClass) {
    if (FreeList* lists = tls_future_blocks; lists != nullptr) {
      FreeList& list = lists[cls];
      if (list.count + 1 < kFreeListCapacity) {
        list.head = ::new (p) FreeBlock{list.head, nullptr, nullptr};
        ++list.count;
        return;
      }
    }
  }
  deallocate_future_state_slow(p, bytes, align);
}

}  // namespace weft::detail
