// weft::small_function: where a callable is stored — inline at and below Capacity, on the heap with exactly one
// allocation above it, on the heap for over-aligned or throwing-move callables — and what InlineOnly rejects.
#include <weft/small_function.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "probes.hpp"
#include "tests/support/counting_new.hpp"

namespace {

using weft::small_function;
using weft::small_function_inline_only;
using weft::test::allocation_counter;

// The documented size: Capacity (a multiple of alignof(void*)) plus one pointer, no padding.
static_assert(sizeof(small_function<void()>) == 128 + sizeof(void*));
static_assert(sizeof(small_function<void(), 128>) == 128 + sizeof(void*));
static_assert(sizeof(small_function<int(int, double), 64>) == 64 + sizeof(void*));
static_assert(sizeof(small_function_inline_only<void(), 32>) == 32 + sizeof(void*));

// A capture of exactly Size bytes with alignment 1, filled with a pattern the call checks.
template <std::size_t Size>
struct bytes_capture {
  unsigned char data[Size];
  [[nodiscard]] bool intact() const noexcept {
    for (std::size_t i = 0; i < Size; ++i) {
      if (data[i] != static_cast<unsigned char>(i * 7 + 1)) return false;
    }
    return true;
  }
  static bytes_capture filled() noexcept {
    bytes_capture capture{};
    for (std::size_t i = 0; i < Size; ++i) capture.data[i] = static_cast<unsigned char>(i * 7 + 1);
    return capture;
  }
};

template <std::size_t Alignment>
struct alignas(Alignment) aligned_capture {
  std::byte data[Alignment];
};

// Callable of Size bytes, stored in small_function<bool()>; the call reports whether its bytes are intact.
template <std::size_t Size>
void check_boundary_capture(bool expect_inline) {
  CAPTURE(Size);
  const auto capture = bytes_capture<Size>::filled();
  auto callable = [capture] { return capture.intact(); };
  static_assert(sizeof(callable) == Size);
  static_assert(small_function<bool()>::fits_inline<decltype(callable)> == (Size <= 128));
  static_assert(std::is_constructible_v<small_function_inline_only<bool()>, decltype(callable)> == (Size <= 128));

  const allocation_counter allocations;
  small_function<bool()> f = callable;
  CHECK(f.is_inline() == expect_inline);
  CHECK(allocations.count() == (expect_inline ? 0U : 1U));
  CHECK(f());
  small_function<bool()> moved = std::move(f);
  CHECK(moved());
  CHECK(moved.is_inline() == expect_inline);
  CHECK(allocations.count() == (expect_inline ? 0U : 1U));  // moving and calling never allocate
}

TEST_CASE("captures of Capacity - 1 and Capacity bytes are inline; Capacity + 1 takes one allocation") {
  // Either side of the 32-byte memcpy used to move small trivially copyable callables, too.
  check_boundary_capture<32>(true);
  check_boundary_capture<33>(true);
  check_boundary_capture<127>(true);
  check_boundary_capture<128>(true);
  check_boundary_capture<129>(false);
  const allocation_counter allocations;
  {
    small_function<bool()> f = [capture = bytes_capture<129>::filled()] { return capture.intact(); };
    CHECK(f());
  }
  CHECK(allocations.count() == 1);
}

template <std::size_t Alignment>
void check_aligned_capture(bool expect_inline) {
  CAPTURE(Alignment);
  const allocation_counter allocations;
  small_function<std::uintptr_t()> f = [data = aligned_capture<Alignment>{}] {
    return reinterpret_cast<std::uintptr_t>(&data);
  };
  CHECK(f.is_inline() == expect_inline);
  CHECK(allocations.count() == (expect_inline ? 0U : 1U));
  CHECK(f() % Alignment == 0);
  small_function<std::uintptr_t()> moved = std::move(f);
  CHECK(moved() % Alignment == 0);
}

TEST_CASE("over-aligned captures are correctly aligned: inline up to alignof(void*), else aligned heap") {
  check_aligned_capture<alignof(void*)>(true);
  check_aligned_capture<16>(false);
  check_aligned_capture<64>(false);
  check_aligned_capture<256>(false);
}

TEST_CASE("a callable whose move may throw goes to the heap, with one allocation, so moves stay noexcept") {
  weft::test::lifetime_counts counts;
  const allocation_counter allocations;
  small_function<int()> f = weft::test::tracked<16, true>(counts, 3);
  CHECK_FALSE(f.is_inline());
  CHECK(allocations.count() == 1);
  small_function<int()> moved = std::move(f);
  CHECK(moved() == 3);
  CHECK(allocations.count() == 1);
  static_assert(!small_function<int()>::fits_inline<weft::test::tracked<16, true>>);
  static_assert(small_function<int()>::fits_inline<weft::test::tracked<16, false>>);
}

TEST_CASE("inline construction is noexcept and allocation-free; the heap path may throw bad_alloc") {
  auto small = [p = static_cast<void*>(nullptr)] { return p; };
  auto large = [capture = bytes_capture<200>{}] { return capture.data[0]; };
  static_assert(std::is_nothrow_constructible_v<small_function<void*()>, decltype(small)>);
  static_assert(!std::is_nothrow_constructible_v<small_function<unsigned char()>, decltype(large)>);
  const allocation_counter allocations;
  small_function<void*()> f = small;
  CHECK(f() == nullptr);
  CHECK(allocations.count() == 0);
}

// InlineOnly: anything that would need the heap does not compile (the error names its size and alignment).
using oversized = decltype([capture = bytes_capture<129>{}] { return capture.data[0]; });
using exact = decltype([capture = bytes_capture<128>{}] { return capture.data[0]; });
using over_aligned = decltype([capture = aligned_capture<16>{}] { return capture.data[0]; });
static_assert(!std::is_constructible_v<small_function_inline_only<unsigned char()>, oversized>);
static_assert(!std::is_assignable_v<small_function_inline_only<unsigned char()>&, oversized>);
static_assert(std::is_constructible_v<small_function_inline_only<unsigned char()>, exact>);
static_assert(!std::is_constructible_v<small_function_inline_only<std::byte()>, over_aligned>);
static_assert(!std::is_constructible_v<small_function_inline_only<int()>, weft::test::tracked<16, true>>);
static_assert(std::is_constructible_v<small_function_inline_only<int()>, weft::test::tracked<16, false>>);
static_assert(std::is_constructible_v<small_function_inline_only<int(), 256>, oversized>);
// The same callables are accepted, via the heap, by the default policy.
static_assert(std::is_constructible_v<small_function<unsigned char()>, oversized>);
static_assert(std::is_constructible_v<small_function<std::byte()>, over_aligned>);

TEST_CASE("InlineOnly stores what fits, with no allocation") {
  const allocation_counter allocations;
  small_function_inline_only<bool()> f = [capture = bytes_capture<128>::filled()] { return capture.intact(); };
  CHECK(f.is_inline());
  CHECK(f());
  CHECK(allocations.count() == 0);
}

}  // namespace
