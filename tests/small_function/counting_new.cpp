// Replaces the global operator new/delete for small_function_test so that allocations can be counted.
// Thread-local counters: each test counts only its own thread, and no atomics are needed. Memory comes from
// malloc/posix_memalign, which the sanitizers intercept, so ASan still checks every heap block.
#include "counting_new.hpp"

#include <cstdlib>
#include <new>

namespace {

constinit thread_local std::size_t allocations = 0;
constinit thread_local bool fail_next = false;

void* allocate(std::size_t size, std::size_t alignment) {
  ++allocations;
  if (fail_next) {
    fail_next = false;
    throw std::bad_alloc();
  }
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

std::size_t allocations_on_this_thread() noexcept { return allocations; }

void fail_next_allocation_on_this_thread() noexcept { fail_next = true; }

}  // namespace weft::test

// The array and nothrow forms of the standard library call these, so they are counted too.
void* operator new(std::size_t size) { return allocate(size, __STDCPP_DEFAULT_NEW_ALIGNMENT__); }
void* operator new(std::size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::align_val_t) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t, std::align_val_t) noexcept { std::free(memory); }
