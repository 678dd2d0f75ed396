// Windows: the fault handler is a vectored exception handler (AddVectoredExceptionHandler) that asks the filter
// about an access violation or a stack overflow and then lets the search go on, so that the exception ends the process
// as it would have without it (or reaches whatever handler was there first). The alternate stack is the room Windows
// keeps on the thread's own stack for its exception handlers (SetThreadStackGuarantee): Windows runs them on the
// faulting stack and has no sigaltstack.
#include "src/fault_handler.hpp"

#include <atomic>
#include <mutex>

#include <windows.h>

namespace weft::os {
namespace {

// The filter, atomic because a later install_fault_filter may replace it while a fault on another thread reads it.
std::atomic<FaultFilter> installed_filter{nullptr};
void* installed_handler = nullptr;  // under install_mutex
std::mutex install_mutex;

LONG WINAPI on_exception(EXCEPTION_POINTERS* pointers) {
  const EXCEPTION_RECORD* record = pointers != nullptr ? pointers->ExceptionRecord : nullptr;
  if (record == nullptr) return EXCEPTION_CONTINUE_SEARCH;
  // The address the fault touched: an access violation's second parameter. A stack overflow (raised by the OS on a
  // touch of a stack's guard page: src/windows/stack_memory.cpp) may carry none (Wine's does not): the stack
  // pointer is then where the overflow was, within the guard.
  std::uintptr_t address = 0;
  if (record->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && record->NumberParameters >= 2) {
    address = static_cast<std::uintptr_t>(record->ExceptionInformation[1]);
  } else if (record->ExceptionCode == EXCEPTION_STACK_OVERFLOW) {
    if (record->NumberParameters >= 2) {
      address = static_cast<std::uintptr_t>(record->ExceptionInformation[1]);
    } else if (pointers->ContextRecord != nullptr) {
#if defined(__x86_64__) || defined(_M_X64)
      address = static_cast<std::uintptr_t>(pointers->ContextRecord->Rsp);
#elif defined(__aarch64__) || defined(_M_ARM64)
      address = static_cast<std::uintptr_t>(pointers->ContextRecord->Sp);
#endif
    }
  }
  if (address == 0) return EXCEPTION_CONTINUE_SEARCH;
  // acquire: pairs with install_fault_filter's release store.
  const FaultFilter filter = installed_filter.load(std::memory_order_acquire);
  // Recognised or not, the search goes on: the filter only gets to say what happened before the process ends of it.
  if (filter != nullptr) (void)filter(address);
  return EXCEPTION_CONTINUE_SEARCH;
}

}  // namespace

bool install_fault_filter(FaultFilter filter) noexcept {
  const std::lock_guard lock(install_mutex);
  installed_filter.store(filter, std::memory_order_release);
  if (installed_handler != nullptr) return true;
  // First: ahead of handlers installed earlier, as the Linux handler sits on top of the one it found.
  installed_handler = AddVectoredExceptionHandler(1, &on_exception);
  return installed_handler != nullptr;
}

void write_stderr(const char* text, std::size_t length) noexcept {
  HANDLE error = GetStdHandle(STD_ERROR_HANDLE);
  if (error == nullptr || error == INVALID_HANDLE_VALUE) return;
  while (length > 0) {
    const DWORD chunk = length > 65536 ? 65536 : static_cast<DWORD>(length);
    DWORD written = 0;
    if (WriteFile(error, text, chunk, &written, nullptr) == 0 || written == 0) return;
    text += written;
    length -= written;
  }
}

AlternateSignalStack::AlternateSignalStack() noexcept {
  // The room is kept at the end of the thread's own stack for as long as the thread lives; nothing to undo.
  ULONG size = static_cast<ULONG>(kSize);
  active_ = SetThreadStackGuarantee(&size) != 0;
}

AlternateSignalStack::~AlternateSignalStack() = default;

}  // namespace weft::os
