// What the tests need from the OS beyond the standard library, the same on Linux and Windows: aligned memory that
// one free releases whatever its alignment, the environment, and the page size. The library's own OS calls are
// src/'s; a test asks the OS directly (through these) when it checks what src/ reports.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX  // windows.h's min and max macros would break std::min and std::max
#endif
#include <malloc.h>
#include <windows.h>
// windows.h defines these two as nothing (16-bit pointers' qualifiers): tests use them as names.
#undef far
#undef near

#include "src/os_thread.hpp"
#else
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace weft::test {

// Memory of `size` bytes (at least 1) aligned to `alignment` (a power of two), or null. Every block, whatever its
// alignment, is released by free_memory: Windows's C runtime has no posix_memalign, and what its _aligned_malloc
// returns must go to _aligned_free, so there every block is taken that way.
[[nodiscard]] inline void* allocate_memory(std::size_t size, std::size_t alignment) noexcept {
  if (size == 0) size = 1;
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
#if defined(_WIN32)
  return _aligned_malloc(size, alignment);
#else
  if (alignment == alignof(std::max_align_t)) return std::malloc(size);
  void* memory = nullptr;
  return posix_memalign(&memory, alignment, size) == 0 ? memory : nullptr;
#endif
}

inline void free_memory(void* memory) noexcept {
#if defined(_WIN32)
  _aligned_free(memory);
#else
  std::free(memory);
#endif
}

// The OS's memory page size, asked of the OS (not of src/).
[[nodiscard]] inline std::size_t page_size() noexcept {
#if defined(_WIN32)
  SYSTEM_INFO info{};
  GetSystemInfo(&info);
  return static_cast<std::size_t>(info.dwPageSize);
#else
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
#endif
}

// Sets (or, with null, removes) an environment variable of this process. True on success.
inline bool set_environment(const char* name, const char* value) noexcept {
#if defined(_WIN32)
  // _putenv_s with an empty value removes the variable.
  return _putenv_s(name, value == nullptr ? "" : value) == 0;
#else
  return value == nullptr ? unsetenv(name) == 0 : setenv(name, value, 1) == 0;
#endif
}

// The CPUs the calling thread may run on, ascending, as the OS says (Windows: the first processor group).
[[nodiscard]] inline std::vector<unsigned> thread_cpus() {
  std::vector<unsigned> cpus;
#if defined(_WIN32)
  // Windows has no call that reads a thread's mask: setting one returns the old one, which is set back at once. The
  // process's mask is set meanwhile, the one mask a thread may always have.
  DWORD_PTR process = 0;
  DWORD_PTR system = 0;
  if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system) == 0) return cpus;
  const DWORD_PTR mask = SetThreadAffinityMask(GetCurrentThread(), process);
  if (mask == 0) return cpus;
  (void)SetThreadAffinityMask(GetCurrentThread(), mask);
  for (unsigned cpu = 0; cpu < sizeof(DWORD_PTR) * 8; ++cpu) {
    if ((mask >> cpu) & 1U) cpus.push_back(cpu);
  }
#else
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
#endif
  return cpus;
}

// The calling thread's name as the OS keeps it. On Windows through src/'s own reading (GetThreadDescription,
// which MinGW's headers do not declare), so there it checks a round trip through the OS, not an independent one.
[[nodiscard]] inline std::string thread_name() {
#if defined(_WIN32)
  return weft::os::current_thread_name();
#else
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
#endif
}

// This process's id.
[[nodiscard]] inline std::uint64_t process_id() noexcept {
#if defined(_WIN32)
  return GetCurrentProcessId();
#else
  return static_cast<std::uint64_t>(::getpid());
#endif
}

#if defined(_WIN32)
namespace platform_detail {
// A FILETIME of CPU time (100 ns units) in microseconds.
[[nodiscard]] inline std::chrono::microseconds micros(const FILETIME& time) noexcept {
  const std::uint64_t ticks = (std::uint64_t{time.dwHighDateTime} << 32) | time.dwLowDateTime;
  return std::chrono::microseconds(ticks / 10);
}
}  // namespace platform_detail
#else
namespace platform_detail {
[[nodiscard]] inline std::chrono::microseconds micros(const timeval& time) noexcept {
  return std::chrono::seconds(time.tv_sec) + std::chrono::microseconds(time.tv_usec);
}
}  // namespace platform_detail
#endif

// The CPU time (user + system) the calling thread has used, or the whole process.
[[nodiscard]] inline std::chrono::microseconds thread_cpu_time() noexcept {
#if defined(_WIN32)
  FILETIME created{}, exited{}, kernel{}, user{};
  if (GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user) == 0) return {};
  return platform_detail::micros(kernel) + platform_detail::micros(user);
#else
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return platform_detail::micros(usage.ru_utime) + platform_detail::micros(usage.ru_stime);
#endif
}

[[nodiscard]] inline std::chrono::microseconds process_cpu_time() noexcept {
#if defined(_WIN32)
  FILETIME created{}, exited{}, kernel{}, user{};
  if (GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user) == 0) return {};
  return platform_detail::micros(kernel) + platform_detail::micros(user);
#else
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return platform_detail::micros(usage.ru_utime) + platform_detail::micros(usage.ru_stime);
#endif
}

}  // namespace weft::test
