#include "src/stack_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace weft::os {

std::size_t page_size() noexcept {
  const long page = ::sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<std::size_t>(page) : 4096;
}

std::size_t stack_guard_size() noexcept { return page_size(); }

void* map_guarded_stack(std::size_t usable, std::size_t guard) noexcept {
  // MAP_NORESERVE: a stack costs only the pages it touches. MAP_STACK: a hint, and documents the use.
  void* base = ::mmap(nullptr, guard + usable, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  // The guard is set once here, never again while the stack lives (a reuse costs no system call).
  if (guard != 0 && ::mprotect(base, guard, PROT_NONE) != 0) {
    ::munmap(base, guard + usable);
    return nullptr;
  }
  return static_cast<std::byte*>(base) + guard;
}

void unmap_guarded_stack(void* low, std::size_t usable, std::size_t guard) noexcept {
  ::munmap(static_cast<std::byte*>(low) - guard, guard + usable);
}

}  // namespace weft::os
