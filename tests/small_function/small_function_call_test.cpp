// weft::small_function: what a call does — argument forwarding, results, R = void, empty calls, exceptions,
// function and member pointers — and which callables the constructor accepts.
#include <weft/small_function.hpp>

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using weft::small_function;

// Counts how an argument travels: operator() takes Args by value, so one copy by the caller is expected for an
// lvalue argument; forwarding into the callable must add moves only.
struct passage {
  int copies = 0;
  int moves = 0;
  passage() = default;
  passage(const passage& other) : copies(other.copies + 1), moves(other.moves) {}
  passage(passage&& other) noexcept : copies(other.copies), moves(other.moves + 1) {}
};

struct point {
  int x = 0;
  int y = 0;
  [[nodiscard]] int sum() const { return x + y; }
};

int twice(int v) { return 2 * v; }

// Results a function must not be built from: wrong arguments, unconvertible result, or a reference R that
// would bind to a temporary.
using takes_string = decltype([](const std::string& s) { return static_cast<int>(s.size()); });
using returns_int = decltype([] { return 1; });
using returns_long_ref = decltype([]() -> long& {
  static long value = 0;
  return value;
});
static_assert(!std::is_constructible_v<small_function<int(int)>, takes_string>);
static_assert(!std::is_constructible_v<small_function<std::string()>, returns_int>);
static_assert(!std::is_constructible_v<small_function<const int&()>, returns_int>);
static_assert(!std::is_constructible_v<small_function<const int&()>, returns_long_ref>);
static_assert(std::is_constructible_v<small_function<const long&()>, returns_long_ref>);
static_assert(!std::is_constructible_v<small_function<void()>, int>);
static_assert(std::is_constructible_v<small_function<void()>, returns_int>);
// Copy is deleted; move, swap and the bool test are noexcept; bool conversion is explicit.
static_assert(!std::is_copy_constructible_v<small_function<void()>>);
static_assert(!std::is_copy_assignable_v<small_function<void()>>);
static_assert(std::is_nothrow_move_constructible_v<small_function<void()>>);
static_assert(std::is_nothrow_move_assignable_v<small_function<void()>>);
static_assert(std::is_nothrow_swappable_v<small_function<void()>>);
static_assert(!std::is_convertible_v<small_function<void()>, bool>);
// Another small_function can be wrapped only by moving it in: its copy is deleted.
static_assert(!std::is_constructible_v<small_function<void()>, small_function<int()>&>);
static_assert(std::is_constructible_v<small_function<void()>, small_function<int()>&&>);

TEST_CASE("arguments reach the callable as declared: references, move-only values, no extra copies") {
  int counter = 0;
  small_function<void(int&)> increment = [](int& target) { ++target; };
  increment(counter);
  increment(counter);
  CHECK(counter == 2);

  small_function<int(std::unique_ptr<int>)> by_value = [](std::unique_ptr<int> p) { return *p; };
  CHECK(by_value(std::make_unique<int>(41)) == 41);

  auto kept = std::make_unique<int>(5);
  small_function<bool(std::unique_ptr<int>&&)> by_rvalue_ref = [](std::unique_ptr<int>&& p) { return p != nullptr; };
  CHECK(by_rvalue_ref(std::move(kept)));
  CHECK(kept != nullptr);  // an rvalue reference was passed on, not a moved-from copy

  const std::string text = "weft";
  small_function<const void*(const std::string&)> address_of = [](const std::string& s) -> const void* { return &s; };
  CHECK(address_of(text) == &text);

  small_function<passage(passage)> relay = [](passage p) { return p; };
  const passage original;
  const passage arrived = relay(original);
  CHECK(arrived.copies == 1);
}

TEST_CASE("results are returned, converted, or discarded for R = void") {
  small_function<std::unique_ptr<int>()> make = [] { return std::make_unique<int>(7); };
  CHECK(*make() == 7);

  std::vector<int> values{1, 2, 3};
  small_function<int&(std::vector<int>&)> last = [](std::vector<int>& v) -> int& { return v.back(); };
  CHECK(&last(values) == &values.back());

  small_function<long(int)> widened = [](int v) { return v * 3; };
  CHECK(widened(5) == 15L);

  int side_effect = 0;
  small_function<void()> discard = [&side_effect] {
    ++side_effect;
    return std::string("discarded");
  };
  discard();
  CHECK(side_effect == 1);
}

TEST_CASE("function pointers, member pointers, and null pointers that give an empty function") {
  small_function<int(int)> by_reference = twice;
  small_function<int(int)> by_pointer = &twice;
  CHECK(by_reference(4) == 8);
  CHECK(by_pointer(5) == 10);

  point p{3, 4};
  small_function<int(const point&)> x_of = &point::x;
  small_function<int(const point&)> sum_of = &point::sum;
  CHECK(x_of(p) == 3);
  CHECK(sum_of(p) == 7);

  int (*null_function)(int) = nullptr;
  small_function<int(int)> from_null = null_function;
  CHECK_FALSE(from_null);
  CHECK_THROWS_AS(from_null(1), std::bad_function_call);
  int point::*null_member = nullptr;
  small_function<int(const point&)> from_null_member = null_member;
  CHECK(from_null_member == nullptr);
}

TEST_CASE("an empty std::function gives an empty small_function; a full one is stored and called") {
  const std::function<int(int)> empty_copy;
  small_function<int(int)> from_copy = empty_copy;
  CHECK_FALSE(from_copy);
  CHECK_FALSE(from_copy.is_inline());  // nothing stored at all, not an empty std::function inside
  small_function<int(int)> from_rvalue = std::function<int(int)>{};
  CHECK(from_rvalue == nullptr);
  CHECK_THROWS_AS(from_rvalue(1), std::bad_function_call);
  small_function<int(int)> assigned = [](int v) { return v; };
  assigned = std::function<int(int)>{};
  CHECK_FALSE(assigned);

  const std::function<int(int)> full = twice;
  small_function<int(int)> from_full = full;
  REQUIRE(from_full);
  CHECK(from_full(21) == 42);
  CHECK(full(1) == 2);  // copied, not moved from
  // A std::function of another signature that is empty converts to an empty one too.
  small_function<long(int)> widened = std::function<int(int)>{};
  CHECK_FALSE(widened);
}

TEST_CASE("an empty small_function is false, equals nullptr, and throws bad_function_call when called") {
  small_function<int()> empty;
  CHECK_FALSE(empty);
  CHECK(empty == nullptr);
  CHECK(nullptr == empty);
  CHECK_FALSE(empty.is_inline());
  CHECK_THROWS_AS(empty(), std::bad_function_call);

  small_function<int()> full = [] { return 1; };
  CHECK(full);
  CHECK(full != nullptr);
  small_function<int()> taker = std::move(full);
  CHECK(full == nullptr);  // NOLINT(bugprone-use-after-move): a moved-from function is empty by contract
  CHECK_THROWS_AS(full(), std::bad_function_call);
  taker = nullptr;
  CHECK_FALSE(taker);
  CHECK_THROWS_AS(taker(), std::bad_function_call);
  small_function<void(int)> from_nullptr = nullptr;
  CHECK_THROWS_AS(from_nullptr(3), std::bad_function_call);
}

TEST_CASE("an exception from the callable propagates and leaves the callable stored") {
  int calls = 0;
  small_function<int(bool)> flaky = [&calls](bool fail) {
    ++calls;
    if (fail) throw std::runtime_error("boom");
    return calls;
  };
  CHECK_THROWS_WITH_AS(flaky(true), "boom", std::runtime_error);
  CHECK(flaky);
  CHECK(flaky(false) == 2);

  small_function<void()> void_thrower = [] { throw std::logic_error("void boom"); };
  CHECK_THROWS_WITH_AS(void_thrower(), "void boom", std::logic_error);
}

}  // namespace
