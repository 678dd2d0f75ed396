// Replaces the global operator new/delete for pool_alloc_test only: counts every allocation made by any
// thread (the pool's workers included) while counting is switched on. Memory comes from malloc, which the
// sanitizers intercept, so ASan still checks every block.
#include "tests/pool/counting_new.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<bool> counting{false};
std::atomic<std::uint64_t> counted{0};

void* allocate(std::size_t size, std::size_t alignment) {
  // relaxed: a statistic read after the pool has been waited for (which orders the workers' increments).
  if (counting.load(std::memory_order_relaxed)) counted.fetch_add(1, std::memory_order_relaxed);
  if (size == 0) size = 1;
  void* memory = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    memory = std::malloc(size);
  } else if (posix_memalign(&memory, alignment, size) != 0) {
    memory = nullptr;
  }
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
}

}  // namespace

namespace weft::test {

void count_allocations(bool on) noexcept {
  counting.store(on, std::memory_order_seq_cst);  // seq_cst: a plain, obviously ordered switch for tests
}
std::uint64_t allocations_counted() noexcept { return counted.load(std::memory_order_seq_cst); }
void reset_allocation_count() noexcept { counted.store(0, std::memory_order_seq_cst); }

}  // namespace weft::test

void* operator new(std::size_t size) { return allocate(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
