// A cheap clock for heuristics that only compare durations with rough budgets (never for what a user reads):
// the time-stamp counter on x86, the generic timer's virtual count on ARM64, else steady_clock's nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace weft::detail {

// Ticks of the cycle clock: cheaper to read than steady_clock (docs/perf-log.md). On ARM64 `cntvct_el0`, which
// Linux lets user code read; no `isb` before it: a read that the CPU takes a few instructions early is as good
// for a heuristic, and the barrier would cost more than the read.
[[nodiscard]] inline std::uint64_t now_cycles() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  // The compiler's builtin rather than <x86intrin.h>'s __rdtsc(): the same instruction, without the ~50,000 lines
  // of intrinsic declarations that header would add to every translation unit including weft's headers.
  return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
  std::uint64_t ticks;
  asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
  return ticks;
#else
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

// Ticks of now_cycles() in a microsecond, roughly. The time-stamp counter runs at the CPU's nominal rate (1–4 GHz
// on the machines weft targets; 2 GHz taken, a constant: heuristics built on it are off by that factor at worst);
// steady_clock at 1,000 ns. ARM64's generic timer runs at whatever rate the platform chose (from about 19 MHz to
// 1 GHz), so it is read from `cntfrq_el0`, a register read as cheap as the count's.
#if defined(__aarch64__)
[[nodiscard]] inline std::uint64_t cycles_per_microsecond() noexcept {
  std::uint64_t hertz;
  asm("mrs %0, cntfrq_el0" : "=r"(hertz));
  // At least 1: a firmware that left the register 0 must not make every budget 0.
  return hertz >= 1'000'000 ? hertz / 1'000'000 : 1;
}
#else
[[nodiscard]] constexpr std::uint64_t cycles_per_microsecond() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return 2000;
#else
  return 1000;
#endif
}
#endif

}  // namespace weft::detail
