// What every randomised or stress test in tests/ shares: a seed that is printed and can be replayed, and
// operation counts that CI may scale.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>

namespace weft::test {

// The seed for one randomised test: WEFT_SEED from the environment when set (to replay a failure),
// otherwise a fresh one. Always printed, so a failing run can be replayed with WEFT_SEED=<n>.
inline std::uint64_t seed_for(std::string_view test_name) {
  std::uint64_t seed = 0;
  if (const char* fixed = std::getenv("WEFT_SEED"); fixed != nullptr && *fixed != '\0') {
    seed = std::strtoull(fixed, nullptr, 0);
  } else {
    std::random_device device;
    seed = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }
  std::printf("[seed] %.*s: replay with WEFT_SEED=%llu\n", static_cast<int>(test_name.size()), test_name.data(),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

// `n` scaled by WEFT_STRESS_SCALE (a positive real number, default 1). The counts the issues ask for are the
// defaults; the scale exists for quick local runs, never to hide a slow test in CI.
inline std::uint64_t stress_count(std::uint64_t n) {
  double scale = 1.0;
  if (const char* text = std::getenv("WEFT_STRESS_SCALE"); text != nullptr && *text != '\0') {
    const double parsed = std::strtod(text, nullptr);
    if (parsed > 0.0) scale = parsed;
  }
  const auto scaled = static_cast<std::uint64_t>(static_cast<double>(n) * scale);
  return scaled > 0 ? scaled : 1;
}

}  // namespace weft::test
