// Timeouts from users, in any std::chrono duration, made safe to add to now(): a timeout past what the clock can
// hold (hours::max(), a floating-point infinity) becomes the furthest deadline the clock can express (about 292
// years on), never an overflow that turns into a deadline in the past (shutdown_for would then drop every
// pending task at once).
#pragma once

#include <chrono>
#include <type_traits>

namespace weft::detail {

// `timeout` in nanoseconds, saturating: zero, negative or NaN -> 0; from nanoseconds::max() up -> max().
template <class Rep, class Period>
[[nodiscard]] constexpr std::chrono::nanoseconds clamp_to_nanoseconds(
    std::chrono::duration<Rep, Period> timeout) noexcept {
  using std::chrono::nanoseconds;
  if (!(timeout > std::chrono::duration<Rep, Period>::zero())) return nanoseconds::zero();
  // In long double nanoseconds no count overflows, and 2^63 is exact. A floating-point Rep is converted from
  // there: duration_cast would multiply in Rep, and a float just under the limit can round up to 2^63.
  const long double ns = std::chrono::duration<long double, std::nano>(timeout).count();
  if (!(ns < 0x1p63L)) return nanoseconds::max();
  if constexpr (std::is_floating_point_v<Rep>) {
    return nanoseconds(static_cast<nanoseconds::rep>(ns));
  } else {
    return std::chrono::duration_cast<nanoseconds>(timeout);
  }
}

// now() + timeout, saturating one tick short of time_point::max() (which the waits read as "no deadline").
[[nodiscard]] inline std::chrono::steady_clock::time_point deadline_after(std::chrono::nanoseconds timeout) noexcept {
  using Clock = std::chrono::steady_clock;
  const auto now = Clock::now();
  const auto room = Clock::time_point::max() - now - Clock::duration(1);
  return timeout >= room ? now + room : now + std::chrono::duration_cast<Clock::duration>(timeout);
}

}  // namespace weft::detail
