// Which sanitizer a test binary was built with, and the deadlines scaled for it: shared by every test fixture.
#pragma once

#include <chrono>

namespace weft::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Deadlines only guard against hangs; sanitizers slow everything down, so they get more time.
[[nodiscard]] inline std::chrono::seconds patience(int plain_seconds) {
  const int factor = kThreadSanitizer ? 10 : kAddressSanitizer ? 4 : 1;
  return std::chrono::seconds(plain_seconds * factor);
}

}  // namespace weft::test
