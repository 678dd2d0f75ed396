// Windows: the asymmetric barrier is FlushProcessWriteBuffers (Vista and later), which makes every processor
// running a thread of the process execute a full barrier before it returns, as membarrier's PRIVATE_EXPEDITED does
// (it interrupts them, as membarrier does). It needs no registration and is always there, but for Wine, whose
// version of it is a stub (below).
#include "src/process_barrier.hpp"

#include <windows.h>

namespace weft::os {
namespace {

// Whether this is Wine rather than Windows: Wine's ntdll exports wine_get_version. Wine 8.0 implements
// FlushProcessWriteBuffers as a stub that does nothing (it logs "NtFlushProcessWriteBuffers stub"), which would
// leave the light side's compiler barrier without its partner, a lost wake-up; under Wine the fences on both sides
// are used instead, which are right everywhere.
bool under_wine() noexcept {
  HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  return ntdll != nullptr && GetProcAddress(ntdll, "wine_get_version") != nullptr;
}

}  // namespace

bool process_barrier_available() noexcept {
  // The switch is read once, as on Linux: the answer must not change while a pool relies on it.
  static const bool available = !process_barrier_switched_off() && !under_wine();
  return available;
}

void process_barrier() noexcept { FlushProcessWriteBuffers(); }

}  // namespace weft::os
