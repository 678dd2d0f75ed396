// The loop bodies weft::parallel_for and TaskScope::parallel_for accept, as concepts: one call per index or
// element, or one call per chunk (a tbb::blocked_range-style body).
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <concepts>
#include <iterator>

namespace weft {

// What parallel_for accepts over an integer range [first, last): f(i) per index, or f(lo, hi) per chunk
// (a tbb::blocked_range-style body; lo < hi, both in [first, last]). f is called concurrently, through a const
// reference.
template <class F, class I>
concept IndexBody = std::integral<I> && (std::invocable<const F&, I> || std::invocable<const F&, I, I>);

// Over random-access iterators [first, last): f(*it) per element, or f(b, e) per chunk of iterators. An f
// taking an integer of another type than the elements satisfies this (the element converts), but is refused
// by a static_assert (detail::takes_integer_not_element).
template <class F, class It>
concept ElementBody = std::random_access_iterator<It> &&
                      (std::invocable<const F&, std::iter_reference_t<It>> || std::invocable<const F&, It, It>);

}  // namespace weft
