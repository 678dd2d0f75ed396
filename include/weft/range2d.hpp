// weft::Range2d: a rectangle of indices, rows by columns, each side with an optional grain, for weft::parallel_for
// and the range form of weft::parallel_reduce (like tbb::blocked_range2d). The loop cuts it into tiles, each
// split from a larger one along its longer side, and calls the body once per tile with the tile as a Range2d.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>

#include "weft/errors.hpp"

namespace weft {

// A rectangle [row_begin, row_end) x [col_begin, col_end) of indices of type I, and the grain of each side.
//
// Contract:
// - A side whose end is before its begin is refused with weft::invalid_option naming the side and both values
//   (unlike parallel_for(first, last), where last < first is the empty loop: a rectangle is built on purpose,
//   and a reversed side is a mistake); an empty side (end == begin) makes an empty rectangle, over which a loop
//   calls nothing.
// - Grains (a tile's side at most this many indices): both 0 (the default), automatic tiling: the rectangle is
//   halved, along its longer side each time, until there are about 64 tiles per worker (or nothing left to
//   halve). Otherwise each side with a grain g > 0 is halved until it is at most g, always along the side
//   furthest above its grain (its size divided by its grain, as tbb::blocked_range2d decides), and a side with
//   grain 0 is never cut: Range2d(0, n, 1, 0, m, 0) gives one tile per row.
// - The tiles cover the rectangle exactly, none empty; their order is the order of the halvings (first half,
//   then second), not row-major.
//
// Example:
//   weft::parallel_for(pool, weft::Range2d<std::size_t>(0, rows, 0, cols), [&](const weft::Range2d<std::size_t>& t) {
//     for (std::size_t i = t.rows().begin(); i != t.rows().end(); ++i)
//       for (std::size_t j = t.cols().begin(); j != t.cols().end(); ++j) out[j * rows + i] = in[i * cols + j];
//   });
template <std::integral I = std::size_t>
class Range2d {
 public:
  // One side: [begin(), end()), size() indices.
  class Side {
   public:
    constexpr Side(I begin, I end) noexcept : begin_(begin), end_(end) {}
    // The first index.
    [[nodiscard]] constexpr I begin() const noexcept { return begin_; }
    // One past the last index.
    [[nodiscard]] constexpr I end() const noexcept { return end_; }
    // Number of indices (computed in the unsigned type: no overflow on [min, max)).
    [[nodiscard]] constexpr std::size_t size() const noexcept {
      using U = std::make_unsigned_t<I>;
      return end_ <= begin_ ? 0
                            : static_cast<std::size_t>(static_cast<U>(static_cast<U>(end_) - static_cast<U>(begin_)));
    }
    // No index.
    [[nodiscard]] constexpr bool empty() const noexcept { return !(begin_ < end_); }

   private:
    I begin_;
    I end_;
  };

  // Rows [row_begin, row_end) by columns [col_begin, col_end), automatic tiling. Throws weft::invalid_option if a
  // side is reversed.
  Range2d(I row_begin, I row_end, I col_begin, I col_end) : Range2d(row_begin, row_end, 0, col_begin, col_end, 0) {}
  // The same with grains, in tbb::blocked_range2d's order (rows, row grain, columns, column grain); see above
  // for what a grain of 0 means. Throws weft::invalid_option if a side is reversed.
  Range2d(I row_begin, I row_end, std::size_t row_grain, I col_begin, I col_end, std::size_t col_grain)
      : rows_(row_begin, row_end), cols_(col_begin, col_end), row_grain_(row_grain), col_grain_(col_grain) {
    if (row_end < row_begin) throw_reversed("rows", row_begin, row_end);
    if (col_end < col_begin) throw_reversed("columns", col_begin, col_end);
  }

  // The rows, [rows().begin(), rows().end()).
  [[nodiscard]] constexpr Side rows() const noexcept { return rows_; }
  // The columns, [cols().begin(), cols().end()).
  [[nodiscard]] constexpr Side cols() const noexcept { return cols_; }
  // The grain of the rows (0: none; see above).
  [[nodiscard]] constexpr std::size_t row_grain() const noexcept { return row_grain_; }
  // The grain of the columns (0: none; see above).
  [[nodiscard]] constexpr std::size_t col_grain() const noexcept { return col_grain_; }
  // No index: a side is empty.
  [[nodiscard]] constexpr bool empty() const noexcept { return rows_.empty() || cols_.empty(); }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_reversed(const char* side, I begin, I end) {
    std::string message = "weft::Range2d: the ";
    message += side;
    message += " [";
    message += std::to_string(begin);
    message += ", ";
    message += std::to_string(end);
    message += ") are reversed: the end must not come before the begin";
    throw invalid_option(message);
  }

  Side rows_;
  Side cols_;
  std::size_t row_grain_;
  std::size_t col_grain_;
};

}  // namespace weft
