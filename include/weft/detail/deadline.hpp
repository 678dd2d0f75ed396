// Timeouts from users, in any std::chrono duration, made safe to add to now(): a timeout past what the clock can
// hold (hours::max(), a floating-point infinity) means "wait as long as it takes", never an overflow that turns
// into a deadline in the past (shutdown_for would then drop every pending task at once).
#pragma once

#include <chrono>

namespace weft::detail {

// `timeout` in nanoseconds, saturating: zero, negative or NaN -> 0; beyond nanoseconds::max() -> max().
template <class Rep, class Period>
[[nodiscard]] constexpr std::chrono::nanoseconds clamp_to_nanoseconds(std::chrono::duration<Rep, Period> timeout) noexcept {
  using std::chrono::nanoseconds;
  if (!(timeout > std::chrono::duration<Rep, Period>::zero())) return nanoseconds::zero();
  // Compared in long double seconds, where no count can overflow; below the limit the cast is exact enough.
  const long double seconds = std::chrono::duration<long double>(timeout).count();
  if (!(seconds < std::chrono::duration<long double>(nanoseconds::max()).count())) return nanoseconds::max();
  return std::chrono::duration_cast<nanoseconds>(timeout);
}

// now() + timeout, saturating one tick short of time_point::max() (which the waits read as "no deadline").
[[nodiscard]] inline std::chrono::steady_clock::time_point deadline_after(std::chrono::nanoseconds timeout) noexcept {
  using Clock = std::chrono::steady_clock;
  const auto now = Clock::now();
  const auto room = Clock::time_point::max() - now - Clock::duration(1);
  return timeout >= room ? now + room : now + std::chrono::duration_cast<Clock::duration>(timeout);
}

}  // namespace weft::detail
