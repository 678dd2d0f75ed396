// A spin-wait hint: tells the CPU this thread is busy-waiting (frees pipeline resources for the sibling
// hyper-thread and saves power).
#pragma once

namespace weft::atomics {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace weft::atomics
