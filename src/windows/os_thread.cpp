// Windows: the process's affinity mask (GetProcessAffinityMask: the first processor group, up to 64 CPUs), thread
// descriptions for names (Windows 10 1607 and later; looked up at run time, since older kernels and some
// toolchains' headers lack them), SetThreadAffinityMask for pinning, thread priorities for nice, and
// GetCurrentThreadStackLimits for the stack's bounds.
#include "src/os_thread.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <thread>

#include <windows.h>

namespace weft::os {
namespace {

// The CPUs this process may run on, as a mask of the first processor group (0 if the OS would not say).
[[nodiscard]] DWORD_PTR process_mask() noexcept {
  DWORD_PTR process = 0;
  DWORD_PTR system = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) == 0) return 0;
  return process;
}

// kernel32's SetThreadDescription and GetThreadDescription, or null where the OS has none.
using SetDescription = HRESULT(WINAPI*)(HANDLE, PCWSTR);
using GetDescription = HRESULT(WINAPI*)(HANDLE, PWSTR*);

template <class Function>
[[nodiscard]] Function kernel32_function(const char* name) noexcept {
  HMODULE kernel32 = GetModuleHandleW(L"kernel32.dll");
  if (kernel32 == nullptr) return nullptr;
  // The cast from FARPROC is the documented way to call what GetProcAddress found; through void* to keep GCC's
  // -Wcast-function-type quiet about the signature it cannot check.
  return reinterpret_cast<Function>(reinterpret_cast<void*>(GetProcAddress(kernel32, name)));
}

}  // namespace

unsigned usable_cpu_count() noexcept {
  const int n = std::popcount(static_cast<std::uint64_t>(process_mask()));
  if (n > 0) return static_cast<unsigned>(n);
  return std::max(1u, std::thread::hardware_concurrency());
}

bool set_current_thread_name(std::string_view name) noexcept {
  static const auto set = kernel32_function<SetDescription>("SetThreadDescription");
  if (set == nullptr) return false;
  // Truncated to the 15 characters Linux keeps, so that a name reads the same on both.
  std::array<wchar_t, 16> wide{};
  const auto length = std::min(name.size(), wide.size() - 1);
  // Names are ASCII in practice (weft's own are); a byte above 127 is taken as Latin-1 rather than refused.
  std::transform(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(length), wide.begin(),
                 [](char c) { return static_cast<wchar_t>(static_cast<unsigned char>(c)); });
  return SUCCEEDED(set(GetCurrentThread(), wide.data()));
}

std::string current_thread_name() {
  static const auto get = kernel32_function<GetDescription>("GetThreadDescription");
  if (get == nullptr) return {};
  PWSTR wide = nullptr;
  if (FAILED(get(GetCurrentThread(), &wide)) || wide == nullptr) return {};
  std::string name;
  for (const wchar_t* c = wide; *c != L'\0'; ++c) name.push_back(*c < 128 ? static_cast<char>(*c) : '?');
  LocalFree(wide);
  return name;
}

std::uint32_t current_thread_id() noexcept { return static_cast<std::uint32_t>(GetCurrentThreadId()); }

bool pin_current_thread(std::span<const unsigned> cpus) noexcept {
  if (cpus.empty()) return false;
  DWORD_PTR mask = 0;
  for (const unsigned cpu : cpus) {
    if (cpu >= sizeof(DWORD_PTR) * 8) return false;  // beyond the first processor group
    mask |= DWORD_PTR{1} << cpu;
  }
  return SetThreadAffinityMask(GetCurrentThread(), mask) != 0;
}

std::vector<unsigned> allowed_cpus() {
  std::vector<unsigned> cpus;
  const DWORD_PTR mask = process_mask();
  for (unsigned cpu = 0; cpu < sizeof(DWORD_PTR) * 8; ++cpu) {
    if ((mask >> cpu) & 1U) cpus.push_back(cpu);
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

std::optional<std::string> set_current_thread_nice(int nice) {
  // Windows has seven thread priorities where Linux has forty nice values: the nearest one, keeping the order
  // (lower nice, higher priority) and 0 as normal.
  const int priority = nice <= -15 ? THREAD_PRIORITY_HIGHEST
                       : nice < 0  ? THREAD_PRIORITY_ABOVE_NORMAL
                       : nice == 0 ? THREAD_PRIORITY_NORMAL
                       : nice < 10 ? THREAD_PRIORITY_BELOW_NORMAL
                       : nice < 19 ? THREAD_PRIORITY_LOWEST
                                   : THREAD_PRIORITY_IDLE;
  if (SetThreadPriority(GetCurrentThread(), priority) == 0) {
    return "SetThreadPriority failed (error " + std::to_string(GetLastError()) + ")";
  }
  return std::nullopt;
}

namespace {

thread_local StackBounds tls_stack;
thread_local bool tls_stack_known = false;

}  // namespace

StackBounds current_stack_bounds() noexcept {
  if (!tls_stack_known) {
    ULONG_PTR low = 0;
    ULONG_PTR high = 0;
    // The whole reservation of the thread's stack: `low` is its base, below the guard page and the pages Windows
    // keeps for handling a stack overflow, which is what the depth guard's reserve (stack_guard.cpp) stays above.
    GetCurrentThreadStackLimits(&low, &high);
    tls_stack = high > low ? StackBounds{static_cast<std::uintptr_t>(low), static_cast<std::size_t>(high - low)}
                           : StackBounds{};
    tls_stack_known = true;
  }
  return tls_stack;
}

}  // namespace weft::os

#if defined(__MINGW32__) && defined(__GNUC__) && !defined(__clang__)
// MinGW-w64's GCC keeps thread_locals in emulated TLS (libgcc's emutls) and runs their destructors, at a thread's
// exit, from a winpthreads key of libstdc++'s (__cxa_thread_atexit). winpthreads runs the keys' destructors in the
// order the keys were made, and emutls frees a thread's thread_locals from a key of its own, made at the first
// access to any thread_local: libstdc++'s key, made at the first thread_local that has a destructor, comes after it,
// so those destructors ran on freed memory (a crash at the exit of any thread that used the pool). Registering a
// destructor that does nothing, before any thread_local is touched (init_priority 101, the earliest a program may
// ask for), makes libstdc++'s key first, and every thread's destructors then run before its storage is freed.
// Neither clang (native TLS) nor MSVC has emulated TLS.
extern "C" int __cxa_thread_atexit(void (*destructor)(void*), void* object, void* dso_handle) noexcept;
extern "C" char __dso_handle;

namespace weft::os {
namespace {

struct ThreadExitOrder {
  ThreadExitOrder() noexcept {
    (void)__cxa_thread_atexit([](void*) {}, nullptr, &__dso_handle);
  }
};
[[gnu::init_priority(101)]] const ThreadExitOrder thread_exit_order;

}  // namespace
}  // namespace weft::os
#endif
