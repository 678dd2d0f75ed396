// Windows: stack memory is reserved with VirtualAlloc and its usable part committed. The guard below is laid out
// as Windows lays out a thread's stack, for Windows runs an exception's handlers on the faulting stack: a stack
// with no room left below the fault could not run the handler that reports it (the OS then ends the thread, or
// the process, without a word). From the bottom:
//   - one page never committed: the end of the reservation (the context's DeallocationStack);
//   - the room a stack-overflow exception's handlers run in: AlternateSignalStack::kSize (64 KiB), reserved, and
//     the same as the guarantee weft's workers ask of SetThreadStackGuarantee;
//   - one guard page (PAGE_GUARD), committed.
// While a context runs on the stack with its stack fields in the thread information block (src/context_switch.hpp),
// a touch of the guard page is a stack overflow as on a thread's own stack: the OS lifts the guard, moves it a page
// down while it stays above the room, and then raises EXCEPTION_STACK_OVERFLOW with the room committed for the
// handlers (the fault handler's filter then names the overflow: src/windows/fault_handler.cpp). So a stack takes
// up to one page more than its usable size before it overflows. Without the stack fields (no fiber on it), a touch
// of the guard page raises a guard-page exception, and one of the room an access violation.
#include "src/stack_memory.hpp"

#include <windows.h>

#include "src/fault_handler.hpp"

namespace weft::os {

std::size_t page_size() noexcept {
  SYSTEM_INFO info{};
  GetSystemInfo(&info);
  return info.dwPageSize > 0 ? static_cast<std::size_t>(info.dwPageSize) : 4096;
}

std::size_t stack_guard_size() noexcept {
  const std::size_t page = page_size();
  return page + (AlternateSignalStack::kSize + page - 1) / page * page + page;
}

void* map_guarded_stack(std::size_t usable, std::size_t guard) noexcept {
  // Reserved first, the whole of it: address space only. Committing the usable part charges it to the process's
  // commit limit, but a page takes physical memory only once it is touched, as with MAP_NORESERVE on Linux.
  void* base = VirtualAlloc(nullptr, guard + usable, MEM_RESERVE, PAGE_NOACCESS);
  if (base == nullptr) return nullptr;
  void* low = static_cast<std::byte*>(base) + guard;
  if (VirtualAlloc(low, usable, MEM_COMMIT, PAGE_READWRITE) == nullptr) {
    VirtualFree(base, 0, MEM_RELEASE);
    return nullptr;
  }
  // The guard page, when the guard has room for it above its bottom page (stack_guard_size's guard has).
  const std::size_t page = page_size();
  if (guard >= 2 * page &&
      VirtualAlloc(static_cast<std::byte*>(low) - page, page, MEM_COMMIT, PAGE_READWRITE | PAGE_GUARD) == nullptr) {
    VirtualFree(base, 0, MEM_RELEASE);
    return nullptr;
  }
  return low;
}

void unmap_guarded_stack(void* low, std::size_t /*usable*/, std::size_t guard) noexcept {
  // MEM_RELEASE frees the whole reservation, given its base and a size of 0.
  VirtualFree(static_cast<std::byte*>(low) - guard, 0, MEM_RELEASE);
}

}  // namespace weft::os
