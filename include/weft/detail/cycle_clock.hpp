// A cheap clock for heuristics that only compare durations with rough budgets (never for what a user reads):
// the time-stamp counter where there is one, else steady_clock's nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace weft::detail {

// Ticks of the cycle clock: cheaper to read than steady_clock (docs/perf-log.md).
[[nodiscard]] inline std::uint64_t now_cycles() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

// Ticks in a microsecond, roughly: the time-stamp counter runs at the CPU's nominal rate (1–4 GHz on the machines
// weft targets; 2 GHz taken), steady_clock at 1,000 ns. Heuristics built on it are off by that factor at worst.
inline constexpr std::uint64_t kCyclesPerMicrosecond =
#if defined(__x86_64__) || defined(__i386__)
    2000;
#else
    1000;
#endif

}  // namespace weft::detail
