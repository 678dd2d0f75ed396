// What the fiber tests share: which sanitizer the build has, deadlines scaled for it, switch counts scaled for
// it (and by WEFT_STRESS_SCALE), and the watchdog.
#pragma once

#include <chrono>
#include <cstdint>

#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"

namespace weft::test {

// `plain` in a build without sanitizers; a twentieth under TSan and a fifth under ASan, whose switches cost
// microseconds instead of nanoseconds. Then scaled by WEFT_STRESS_SCALE.
[[nodiscard]] inline std::uint64_t switch_count(std::uint64_t plain) {
  return stress_count(weft::test::reduced_runs() ? plain / 20 : kAddressSanitizer ? plain / 5 : plain);
}

}  // namespace weft::test
