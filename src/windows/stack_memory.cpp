// Windows: stack memory is reserved with VirtualAlloc and only its usable part committed; the guard below stays
// reserved and uncommitted, so that a touch faults (an access violation) as a PROT_NONE page does on Linux.
#include "src/stack_memory.hpp"

#include <windows.h>

namespace weft::os {

std::size_t page_size() noexcept {
  SYSTEM_INFO info{};
  GetSystemInfo(&info);
  return info.dwPageSize > 0 ? static_cast<std::size_t>(info.dwPageSize) : 4096;
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
  return low;
}

void unmap_guarded_stack(void* low, std::size_t /*usable*/, std::size_t guard) noexcept {
  // MEM_RELEASE frees the whole reservation, given its base and a size of 0.
  VirtualFree(static_cast<std::byte*>(low) - guard, 0, MEM_RELEASE);
}

}  // namespace weft::os
