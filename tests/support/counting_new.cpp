// Replaces the global operator new/delete for the executables that link this file, so that allocations can be
// counted: per thread (no atomics), and process-wide while switched on. Memory comes from malloc/posix_memalign
// (Windows: _aligned_malloc; tests/support/platform.hpp), which the sanitizers intercept, so ASan still checks every
// heap block.
#include "tests/support/counting_new.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

#include "tests/support/platform.hpp"

namespace {

constinit thread_local std::size_t allocations = 0;
constinit thread_local std::size_t largest = 0;
// Allocations to let pass before one fails; kNoFailure when none is set up.
constexpr std::size_t kNoFailure = static_cast<std::size_t>(-1);
constinit thread_local std::size_t fail_countdown = kNoFailure;
std::atomic<bool> counting{false};
std::atomic<std::uint64_t> counted{0};

void* allocate(std::size_t size, std::size_t alignment) {
  ++allocations;
  if (size > largest) largest = size;
  // relaxed: a statistic read after the counted threads have been waited for (which orders their increments).
  if (counting.load(std::memory_order_relaxed)) counted.fetch_add(1, std::memory_order_relaxed);
  if (fail_countdown != kNoFailure) {
    if (fail_countdown == 0) {
      fail_countdown = kNoFailure;
      throw std::bad_alloc();
    }
    --fail_countdown;
  }
  void* memory = weft::test::allocate_memory(size, alignment);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
}

}  // namespace

namespace weft::test {

std::size_t allocations_on_this_thread() noexcept { return allocations; }

std::size_t largest_allocation_on_this_thread() noexcept { return largest; }

void reset_largest_allocation_on_this_thread() noexcept { largest = 0; }

void fail_next_allocation_on_this_thread() noexcept { fail_countdown = 0; }

void fail_allocation_after_on_this_thread(std::size_t skip) noexcept { fail_countdown = skip; }

bool cancel_allocation_failure_on_this_thread() noexcept {
  return std::exchange(fail_countdown, kNoFailure) != kNoFailure;
}

void count_allocations(bool on) noexcept {
  counting.store(on, std::memory_order_seq_cst);  // seq_cst: a plain, obviously ordered switch for tests
}
std::uint64_t allocations_counted() noexcept { return counted.load(std::memory_order_seq_cst); }
void reset_allocation_count() noexcept { counted.store(0, std::memory_order_seq_cst); }

}  // namespace weft::test

// The standard library's nothrow forms call these, so they are counted too. So do its array forms, but a
// sanitizer runtime replaces those itself (then `new T[n]` would bypass the count): they are replaced here too.
void* operator new(std::size_t size) { return allocate(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size) { return allocate(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__); }
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* memory) noexcept { weft::test::free_memory(memory); }
void operator delete(void* memory, std::size_t) noexcept { weft::test::free_memory(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { weft::test::free_memory(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { weft::test::free_memory(memory); }
void operator delete[](void* memory) noexcept { weft::test::free_memory(memory); }
void operator delete[](void* memory, std::size_t) noexcept { weft::test::free_memory(memory); }
void operator delete[](void* memory, std::align_val_t) noexcept { weft::test::free_memory(memory); }
void operator delete[](void* memory, std::size_t, std::align_val_t) noexcept { weft::test::free_memory(memory); }
