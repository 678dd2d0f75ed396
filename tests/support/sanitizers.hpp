// Which sanitizer a test binary was built with, and the deadlines scaled for it: shared by every test fixture.
#pragma once

#include <chrono>
#include <cstdlib>

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

// True when the test runs under an emulator: a cross build's tests run under its exe_wrapper (qemu-user), and
// tests/meson.build sets WEFT_TEST_EMULATED for them. Everything is several times slower there, and the process's
// resident memory includes the emulator's own (its translated code, its per-thread state).
[[nodiscard]] inline bool emulated() noexcept {
  static const bool value = std::getenv("WEFT_TEST_EMULATED") != nullptr;
  return value;
}

// True where every operation costs many times its native price: under ThreadSanitizer, under an emulator, and
// under AddressSanitizer (its build at -Og, every access checked). Randomised and stress cases run the smaller of
// the two counts they name there (stress_count(reduced_runs() ? few : many)); every case still runs, on every pool
// configuration it names. Under AddressSanitizer the few suffice: a memory error shows on the first run of the
// path that makes it, and the interleavings that need many rounds are ThreadSanitizer's and the release build's,
// which run the full counts natively.
[[nodiscard]] inline bool reduced_runs() noexcept { return kThreadSanitizer || kAddressSanitizer || emulated(); }

// Deadlines only guard against hangs; sanitizers and emulation slow everything down, so they get more time.
[[nodiscard]] inline std::chrono::seconds patience(int plain_seconds) {
  const int factor = (kThreadSanitizer ? 10 : kAddressSanitizer ? 4 : 1) * (emulated() ? 5 : 1);
  return std::chrono::seconds(plain_seconds * factor);
}

}  // namespace weft::test
