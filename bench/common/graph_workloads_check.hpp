// The checks of the graph workloads (graph_workloads.hpp): each compares what a run left behind with a
// sequential reference, then resets the data for the next run. Called outside the timed regions only; the
// expensive references (LCG, sin*cos) are computed once per process.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>

#include "bench/common/graph_workloads.hpp"

namespace weft::bench {

namespace detail {

// One sin*cos task. Not inlined, so the reference and the tasks run the very same code and the sums compare
// exactly (an inlined copy could be vectorised or contracted differently).
[[gnu::noinline]] inline double sincos_task(std::size_t i) noexcept {
  double sum = 0;
  double x = static_cast<double>(i) * 1e-3;
  for (int s = 0; s < kSinCosSteps; ++s) {
    sum += std::sin(x) * std::cos(x);
    x += 1e-4;
  }
  return sum;
}

}  // namespace detail

inline bool ChainData::check() noexcept {
  std::uint64_t expected = 0;
  for (std::size_t i = 0; i < n_; ++i) expected = expected * 6364136223846793005ULL + 1442695040888963407ULL;
  const bool ok = state_ == expected;
  state_ = 0;
  return ok;
}

inline bool LayeredData::check() noexcept {
  const std::size_t last = (shape_.depth - 1) * shape_.width;
  const std::uint64_t got = std::accumulate(values_.begin() + static_cast<std::ptrdiff_t>(last), values_.end(),
                                            std::uint64_t{0});
  // The reference: a fresh instance visited layer by layer, which respects every edge.
  LayeredData reference(shape_);
  for (std::size_t l = 0; l < shape_.depth; ++l)
    for (std::size_t k = 0; k < shape_.width; ++k) reference.visit(l, k);
  const std::uint64_t expected = std::accumulate(reference.values_.begin() + static_cast<std::ptrdiff_t>(last),
                                                 reference.values_.end(), std::uint64_t{0});
  const bool ok = got == expected && std::find(values_.begin(), values_.end(), 0) == values_.end();
  std::fill(values_.begin(), values_.end(), 0);
  return ok;
}

inline bool TreeData::check() noexcept {
  // Level d (1-based) holds 2^(d-1) nodes of depth d.
  std::uint64_t expected = 0;
  for (std::size_t d = 1; d <= levels_; ++d) expected += d * (std::uint64_t{1} << (d - 1));
  const std::uint64_t got = std::accumulate(depth_.begin(), depth_.end(), std::uint64_t{0});
  std::fill(depth_.begin(), depth_.end(), 0);
  return got == expected;
}

inline bool WavefrontData::check() noexcept {
  // The corner sums, mod 2^64, the path counts of every block: a block computed before either predecessor
  // (or not at all) changes it. Recomputed row by row on a fresh instance.
  WavefrontData reference(side_);
  for (std::size_t i = 0; i < side_; ++i)
    for (std::size_t j = 0; j < side_; ++j) reference.visit(i, j);
  const bool ok = values_ == reference.values_;
  std::fill(values_.begin(), values_.end(), 0);
  return ok;
}

inline bool IndependentData::check() noexcept {
  bool ok = true;
  for (std::size_t i = 0; i < out_.size(); ++i) ok &= out_[i] == i * 0x9E3779B97F4A7C15ULL + 1;
  std::fill(out_.begin(), out_.end(), 0);
  return ok;
}

inline LcgData::LcgData() : values_(kLcgInts) { std::iota(values_.begin(), values_.end(), std::uint32_t{0}); }

inline bool LcgData::check() noexcept {
  static const std::vector<std::uint32_t> expected = [] {
    LcgData reference;
    for (std::size_t i = 0; i < reference.size(); ++i) reference.visit(i);
    return reference.values_;
  }();
  const bool ok = values_ == expected;
  std::iota(values_.begin(), values_.end(), std::uint32_t{0});
  return ok;
}

inline void SinCosData::visit(std::size_t i) noexcept { out_[i] = detail::sincos_task(i); }

inline bool SinCosData::check() noexcept {
  static const std::vector<double> expected = [] {
    SinCosData reference;
    for (std::size_t i = 0; i < reference.size(); ++i) reference.visit(i);
    return reference.out_;
  }();
  const bool ok = out_ == expected;
  std::fill(out_.begin(), out_.end(), 0.0);
  return ok;
}

}  // namespace weft::bench
