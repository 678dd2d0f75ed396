#include "src/os_thread.hpp"

#include <algorithm>
#include <array>
#include <system_error>
#include <thread>

#include <cerrno>
#include <cstdint>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weft::os {

unsigned usable_cpu_count() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

bool set_current_thread_name(std::string_view name) noexcept {
  std::array<char, 16> buffer{};  // Linux keeps 15 characters plus the terminator.
  const auto length = std::min(name.size(), buffer.size() - 1);
  std::copy_n(name.data(), length, buffer.data());
  return pthread_setname_np(pthread_self(), buffer.data()) == 0;
}

std::string current_thread_name() {
  std::array<char, 16> buffer{};
  if (pthread_getname_np(pthread_self(), buffer.data(), buffer.size()) != 0) return {};
  return std::string(buffer.data());
}

std::uint32_t current_thread_id() noexcept { return static_cast<std::uint32_t>(syscall(SYS_gettid)); }

bool pin_current_thread(std::span<const unsigned> cpus) noexcept {
  if (cpus.empty()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const unsigned cpu : cpus) {
    if (cpu >= CPU_SETSIZE) return false;
    CPU_SET(cpu, &set);
  }
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

std::vector<unsigned> allowed_cpus() {
  std::vector<unsigned> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

std::optional<std::string> set_current_thread_nice(int nice) {
  // On Linux the nice value is per thread: PRIO_PROCESS with the thread id changes only this thread.
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  // Not strerror: every worker calls this as it starts, and strerror may share one buffer between threads.
  if (setpriority(PRIO_PROCESS, tid, nice) != 0) return std::system_category().message(errno);
  return std::nullopt;
}

namespace {

thread_local StackBounds tls_stack;
thread_local bool tls_stack_known = false;

}  // namespace

StackBounds current_stack_bounds() noexcept {
  if (!tls_stack_known) {
    pthread_attr_t attr;
    void* base = nullptr;
    std::size_t size = 0;
    // For the main thread glibc derives the bounds from RLIMIT_STACK and the mapping, for other threads from
    // how they were created; either way `base` is the lowest address, guard pages excluded.
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      if (pthread_attr_getstack(&attr, &base, &size) != 0) size = 0;
      pthread_attr_destroy(&attr);
    }
    tls_stack = size != 0 ? StackBounds{reinterpret_cast<std::uintptr_t>(base), size} : StackBounds{};
    tls_stack_known = true;
  }
  return tls_stack;
}

}  // namespace weft::os
