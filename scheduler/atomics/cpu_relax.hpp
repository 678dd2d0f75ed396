// A spin-wait hint: tells the CPU this thread is busy-waiting (frees pipeline resources for the sibling
// hyper-thread and saves power).
#pragma once

namespace weft::atomics {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  // `isb`, not `yield`: ARM64 cores without SMT (Neoverse, Apple's) retire `yield` as a nop, so a spin loop sized
  // for x86's pause (tens to a hundred-odd cycles) would reread the line back to back; `isb` drains the pipeline,
  // a comparable pause, as Rust's std::hint::spin_loop and other runtimes use on ARM64.
  asm volatile("isb" ::: "memory");
#endif
}

}  // namespace weft::atomics
