// How weft::parallel_for sees a range: as offsets [0, n) and a body that runs the user's f over [lo, hi).
// One adapter for integer ranges, one for random-access iterators; the splitter knows neither.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "weft/errors.hpp"
#include "weft/loop_body.hpp"

namespace weft {

namespace detail {

// The index type of parallel_for(first, last) when first and last have different integer types (0 and a
// size_t, say): their common type, with both values checked to fit in it.
template <std::integral I, std::integral J>
[[nodiscard]] std::common_type_t<I, J> common_index(I value, const char* which, const char* call) {
  using C = std::common_type_t<I, J>;
  if (!std::in_range<C>(value)) {
    std::string message = call;
    message += ": ";
    message += which;
    message += " = ";
    message += std::to_string(value);
    message += " does not fit the range's common index type (mixing signed and unsigned bounds?)";
    throw invalid_option(message);
  }
  return static_cast<C>(value);
}

// Number of indices in [first, last); 0 when last <= first (an empty range, as in tbb::parallel_for).
// Computed in the unsigned type, so that e.g. [INT64_MIN, INT64_MAX) does not overflow.
template <std::integral I>
[[nodiscard]] constexpr std::size_t index_count(I first, I last) noexcept {
  if (!(first < last)) return 0;
  using U = std::make_unsigned_t<I>;
  return static_cast<std::size_t>(static_cast<U>(static_cast<U>(last) - static_cast<U>(first)));
}

template <std::integral I, class F>
class IndexRange {
 public:
  IndexRange(I first, F f) : first_(first), f_(std::move(f)) {}

  // Runs f over offsets [lo, hi) of the range. Thread-safe as far as f is.
  void operator()(std::size_t lo, std::size_t hi) const {
    if constexpr (std::invocable<const F&, I, I>) {
      f_(at(lo), at(hi));
    } else {
      // The index itself walks, its bound and f held in locals: a store of f that may alias first_ (a size_t
      // index beside uint64_t data) cannot make the loop re-read it, so the loop compiles as a plain counted
      // loop. Every value of i lies in [first, last], so ++i never overflows.
      const F& f = f_;
      const I end = at(hi);
      for (I i = at(lo); i != end; ++i) f(i);
    }
  }

 private:
  // first + k, wrapping in the unsigned type: k never exceeds the range's size, so the result is in range.
  [[nodiscard]] I at(std::size_t k) const noexcept {
    using U = std::make_unsigned_t<I>;
    return static_cast<I>(static_cast<U>(static_cast<U>(first_) + static_cast<U>(k)));
  }

  I first_;
  F f_;
};

// parallel_for(first, last, step, f): offset k of [0, count) is index first + k * step, f(index) per offset.
// The step's magnitude and direction are kept apart, so a negative step counts down over unsigned indices too.
template <std::integral I, class F>
class StridedRange {
 public:
  StridedRange(I first, std::uintmax_t magnitude, bool down, F f)
      : first_(first), magnitude_(magnitude), down_(down), f_(std::move(f)) {}

  void operator()(std::size_t lo, std::size_t hi) const {
    // The index walks by +-|step| in the unsigned type (wrapping past `last` after the final call is harmless),
    // with its step and f in locals, so nothing is re-read from this object per index.
    using U = std::make_unsigned_t<I>;
    const F& f = f_;
    const auto delta = static_cast<U>(down_ ? U{0} - static_cast<U>(magnitude_) : static_cast<U>(magnitude_));
    auto u = static_cast<U>(at(lo));
    for (std::size_t left = hi - lo; left != 0; --left, u = static_cast<U>(u + delta)) f(static_cast<I>(u));
  }

 private:
  // first +- k * |step|, wrapping in the unsigned type: the offset never passes `last`, so the result is in range.
  [[nodiscard]] I at(std::size_t k) const noexcept {
    using U = std::make_unsigned_t<I>;
    const auto offset = static_cast<U>(static_cast<std::uintmax_t>(k) * magnitude_);
    return static_cast<I>(down_ ? static_cast<U>(static_cast<U>(first_) - offset)
                                : static_cast<U>(static_cast<U>(first_) + offset));
  }

  I first_;
  std::uintmax_t magnitude_;
  bool down_;
  F f_;
};

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_zero_step(const char* call) {
  std::string message = call;
  message += ": step = 0: the step must not be zero (1 visits every index; a negative step counts down)";
  throw invalid_option(message);
}

// The indices first, first + step, ... before last (step > 0), or after last (step < 0, counting down), as
// offsets [0, count): count = ceil(|last - first| / |step|), 0 when last is not in the step's direction. A zero
// step is refused with weft::invalid_option naming `call` and the value.
struct Stride {
  std::size_t count = 0;
  std::uintmax_t magnitude = 1;
  bool down = false;
};
template <std::integral I, std::integral S>
[[nodiscard]] Stride make_stride(I first, I last, S step, const char* call) {
  if (step == 0) [[unlikely]]
    throw_zero_step(call);
  using US = std::make_unsigned_t<S>;
  Stride stride;
  stride.down = step < 0;
  // |step| in the unsigned type: 0 - step wraps to the magnitude, even for the type's minimum.
  stride.magnitude = stride.down ? static_cast<US>(US{0} - static_cast<US>(step)) : static_cast<US>(step);
  const std::size_t distance = stride.down ? index_count(last, first) : index_count(first, last);
  stride.count = distance == 0 ? 0 : static_cast<std::size_t>((distance - 1) / stride.magnitude + 1);
  return stride;
}

// The type of the one parameter of a callable with one fixed signature: a function (pointer), or a class with
// exactly one operator() that is not a template (a lambda that is not generic, a std::function). no_parameter
// for anything else (a generic lambda, an overload set, more than one parameter): such an f takes what it is
// given on purpose.
struct no_parameter {};
template <class M>
struct call_operator_parameter {
  using type = no_parameter;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A)> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A) const> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A) noexcept> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A) const noexcept> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A)&> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A) const&> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A) & noexcept> {
  using type = A;
};
template <class R, class C, class A>
struct call_operator_parameter<R (C::*)(A) const & noexcept> {
  using type = A;
};

template <class F>
struct sole_parameter {
  using type = no_parameter;
};
template <class F>
  requires requires { &F::operator(); }
struct sole_parameter<F> : call_operator_parameter<decltype(&F::operator())> {};
template <class R, class A>
struct sole_parameter<R (*)(A)> {
  using type = A;
};
template <class R, class A>
struct sole_parameter<R (*)(A) noexcept> {
  using type = A;
};

// True if f, called per element of [first, last), takes an integer of another type than the elements: then
// each element would reach f converted, which is what a body written for indices (f(std::size_t i) over
// v.begin(), v.end()) silently gets. Refused rather than guessed: such an f must take the element type (or be
// generic), and an index loop is parallel_for(0, v.size(), f). An f taking the elements' own integer type
// (std::size_t over a vector of std::size_t) is accepted: it gets the elements, as it says.
template <class F, class It>
inline constexpr bool takes_integer_not_element = [] {
  using P = typename sole_parameter<std::decay_t<F>>::type;
  if constexpr (std::is_same_v<P, no_parameter>) {
    return false;
  } else {
    using D = std::remove_cvref_t<P>;
    return std::integral<D> && !std::same_as<D, std::iter_value_t<It>> &&
           !std::same_as<D, std::remove_cvref_t<std::iter_reference_t<It>>>;
  }
}();

template <std::random_access_iterator It, class F>
class ElementRange {
  static_assert(!takes_integer_not_element<F, It>,
                "weft::parallel_for(first, last, f) over iterators calls f with each element, never its index, "
                "and this f takes an integer of another type than the elements (so each element would arrive "
                "converted). Take the element (auto&, T&, const T& or T for elements of type T), or loop over "
                "indices: parallel_for(std::size_t{0}, v.size(), [&](std::size_t i) { ... })");

 public:
  ElementRange(It first, F f) : first_(std::move(first)), f_(std::move(f)) {}

  void operator()(std::size_t lo, std::size_t hi) const {
    using D = std::iter_difference_t<It>;
    It begin = first_ + static_cast<D>(lo);
    const It end = first_ + static_cast<D>(hi);
    if constexpr (std::invocable<const F&, It, It>) {
      f_(begin, end);
    } else {
      const F& f = f_;
      for (; begin != end; ++begin) f(*begin);
    }
  }

 private:
  It first_;
  F f_;
};

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_reversed_range(const char* call, long long distance) {
  std::string message = call;
  message += ": the iterator range is reversed (last - first = ";
  message += std::to_string(distance);
  message += "): last must not come before first";
  throw std::invalid_argument(message);
}

// Number of elements in [first, last). last before first is refused, naming `call`: unlike an integer range,
// where it is the empty range by convention, a reversed pair of iterators is a caller's mistake (swapped
// arguments, say) that would otherwise run nothing and say nothing.
template <std::random_access_iterator It>
[[nodiscard]] std::size_t element_count(const It& first, const It& last, const char* call) {
  const auto n = last - first;
  if (n < 0) [[unlikely]]
    throw_reversed_range(call, static_cast<long long>(n));
  return static_cast<std::size_t>(n);
}

}  // namespace detail
}  // namespace weft
