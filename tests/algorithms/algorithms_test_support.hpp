// What the parallel algorithm tests share: the worker counts (1, 2, 4, 8), the sizes every algorithm is checked
// at (around the block boundaries of the automatic partitioning too), random inputs with a printed seed, and two
// associative operations that are not commutative (2x2 matrix product, string concatenation).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "weft/algorithms.hpp"
#include "weft/task_scope.hpp"

namespace weft::test {

// The large size, scaled by the sanitizer (TSan runs the same code about 10x slower) and WEFT_STRESS_SCALE.
[[nodiscard]] inline std::size_t large_size() {
  return static_cast<std::size_t>(stress_count(weft::test::reduced_runs() ? 20'000
                                               : kAddressSanitizer        ? 60'000
                                                                          : 300'000));
}

// 0, 1, 2, small, around 64 blocks per worker (the automatic block count) for `workers`, and the large size.
[[nodiscard]] inline std::vector<std::size_t> sizes_for(unsigned workers) {
  const std::size_t blocks = std::size_t{64} * workers;
  std::vector<std::size_t> sizes = {
      0, 1, 2, 3, 7, 31, blocks - 1, blocks, blocks + 1, 2 * blocks - 1, 2 * blocks + 1, 1000, 2047, 2048, 2049, 4099};
  sizes.push_back(large_size());
  return sizes;
}

// A 2x2 matrix over the integers mod 2^64: the product is associative and not commutative.
struct Mat {
  std::uint64_t a = 1, b = 0, c = 0, d = 1;
  friend bool operator==(const Mat&, const Mat&) = default;
};
[[nodiscard]] inline Mat operator*(const Mat& x, const Mat& y) noexcept {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}
inline constexpr auto kMatMul = [](const Mat& x, const Mat& y) { return x * y; };
// String concatenation: associative, not commutative.
inline constexpr auto kConcat = [](std::string x, const std::string& y) {
  x += y;
  return x;
};

[[nodiscard]] inline std::vector<Mat> random_mats(std::mt19937_64& random, std::size_t n) {
  std::vector<Mat> v(n);
  for (Mat& m : v) m = Mat{random() % 7, random() % 7, random() % 7, random() % 7};
  return v;
}
[[nodiscard]] inline std::vector<std::string> random_words(std::mt19937_64& random, std::size_t n) {
  std::vector<std::string> v(n);
  for (std::string& w : v) w = std::string(1 + random() % 2, static_cast<char>('a' + random() % 26));
  return v;
}
[[nodiscard]] inline std::vector<std::int64_t> random_ints(std::mt19937_64& random, std::size_t n,
                                                           std::int64_t range = 1'000'000) {
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(range)) - range / 2;
  return v;
}

// The grains each algorithm runs with: automatic, and explicit ones (one element per block; a few; many).
inline constexpr std::size_t kGrains[] = {0, 1, 5, 1000};
// Tiny grains only on ranges up to a few thousand: a block per element of the large range is a test of patience.
[[nodiscard]] inline bool grain_fits(std::size_t grain, std::size_t n) noexcept {
  return grain == 0 || n / grain <= 5000;
}

struct Thrown : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace weft::test
