// How a weft::Range2d becomes tiles: a complete binary tree of halvings, every level halving the same side, whose
// leaves (the tiles) are numbered 0 .. count()-1 in depth-first order. So the loop over a rectangle is a loop over
// tile numbers, run by the one-dimensional splitter (ForSplitter) with its automatic partitioning and grains, and
// a run of consecutive numbers is a compact part of the rectangle (a subtree), as a recursive split would give.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "weft/range2d.hpp"

namespace weft::detail {

template <std::integral I>
class Tiles2d {
 public:
  // Deep enough for any rectangle that fits in memory's worth of tiles, shallow enough for a 64-bit count.
  static constexpr unsigned kMaxDepth = 40;

  // `automatic_target`: the tile count automatic tiling aims for (when both grains are 0).
  Tiles2d(const Range2d<I>& range, std::size_t automatic_target) noexcept : range_(range) {
    if (range.empty()) return;
    // The largest and the smallest side of a node at the current level, per side: halving a side of size s gives
    // ceil(s/2) and floor(s/2), so after k halvings the sizes are within [floor(s/2^k), ceil(s/2^k)].
    std::size_t row_max = range.rows().size(), col_max = range.cols().size();
    const std::size_t gr = range.row_grain(), gc = range.col_grain();
    const bool automatic = gr == 0 && gc == 0;
    while (depth_ < kMaxDepth) {
      bool rows = false;
      if (automatic) {
        if ((std::size_t{1} << depth_) >= automatic_target || (row_max < 2 && col_max < 2)) break;
        rows = row_max >= col_max;  // the longer side (a side of 1 is never the longer of a side of 2 or more)
      } else {
        const bool row_over = gr != 0 && row_max > gr, col_over = gc != 0 && col_max > gc;
        if (!row_over && !col_over) break;
        // Both over: the side further above its grain, row_max / gr against col_max / gc, multiplied out in
        // floating point (the product may not fit an integer).
        rows = row_over && (!col_over || static_cast<double>(row_max) * static_cast<double>(gc) >=
                                             static_cast<double>(col_max) * static_cast<double>(gr));
      }
      if (rows) {
        row_max = row_max - row_max / 2;
        row_levels_ |= std::uint64_t{1} << depth_;
      } else {
        col_max = col_max - col_max / 2;
      }
      ++depth_;
    }
    count_ = std::size_t{1} << depth_;
  }

  // Number of tiles (0 for an empty rectangle). Some may be empty (a side of 1 halved beside a side of 2, at
  // the same level), and the loops skip them.
  [[nodiscard]] std::size_t count() const noexcept { return count_; }

  // Tile k < count(): the halvings of level l take the first half if bit (depth - 1 - l) of k is 0.
  [[nodiscard]] Range2d<I> tile(std::size_t k) const noexcept {
    std::size_t r_lo = 0, r_hi = range_.rows().size(), c_lo = 0, c_hi = range_.cols().size();
    for (unsigned level = 0; level < depth_; ++level) {
      const bool second = ((k >> (depth_ - 1 - level)) & 1) != 0;
      if ((row_levels_ >> level) & 1) {
        const std::size_t mid = r_lo + (r_hi - r_lo) / 2;
        (second ? r_lo : r_hi) = mid;
      } else {
        const std::size_t mid = c_lo + (c_hi - c_lo) / 2;
        (second ? c_lo : c_hi) = mid;
      }
    }
    return Range2d<I>(at(range_.rows().begin(), r_lo), at(range_.rows().begin(), r_hi), range_.row_grain(),
                      at(range_.cols().begin(), c_lo), at(range_.cols().begin(), c_hi), range_.col_grain());
  }

  // Whether the tiles came from grains (each tile is then one piece of the loop) rather than automatic tiling.
  [[nodiscard]] bool explicit_grain() const noexcept { return range_.row_grain() != 0 || range_.col_grain() != 0; }

 private:
  // first + k, wrapping in the unsigned type: k never exceeds the side's size, so the result is in range.
  [[nodiscard]] static I at(I first, std::size_t k) noexcept {
    using U = std::make_unsigned_t<I>;
    return static_cast<I>(static_cast<U>(static_cast<U>(first) + static_cast<U>(k)));
  }

  Range2d<I> range_;
  std::uint64_t row_levels_ = 0;  // bit l: level l halves the rows (else the columns)
  unsigned depth_ = 0;
  std::size_t count_ = 0;
};

// The body of a parallel_for over a Range2d: tiles [lo, hi) of `tiles`, the empty ones skipped.
template <std::integral I, class F>
class TileRange {
 public:
  TileRange(const Tiles2d<I>& tiles, F f) : tiles_(tiles), f_(f) {}
  void operator()(std::size_t lo, std::size_t hi) const {
    for (std::size_t k = lo; k < hi; ++k) {
      const Range2d<I> tile = tiles_.tile(k);
      if (!tile.empty()) f_(tile);
    }
  }

 private:
  const Tiles2d<I>& tiles_;
  F f_;
};

}  // namespace weft::detail
