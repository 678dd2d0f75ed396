// weft::small_function: every stored callable is destroyed exactly once — through moves, reassignment, swap,
// self-move, `= nullptr`, containers, and exceptions thrown while building or calling it.
#include <weft/small_function.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "probes.hpp"
#include "tests/support/counting_new.hpp"

namespace {

using weft::small_function;
using weft::test::lifetime_counts;
using weft::test::tracked;

using small_tracked = tracked<16>;          // inline, relocated by its move constructor
using large_tracked = tracked<256>;         // heap
using fragile_tracked = tracked<16, true>;  // heap: its move may throw

// Too large for the inline storage, and copying it throws.
struct large_throwing_copy {
  weft::test::throwing_copy inner;
  std::array<std::byte, 200> padding;
  int operator()() const noexcept { return inner(); }
};

TEST_CASE_TEMPLATE("moves hand the callable on and destroy it exactly once", callable, small_tracked, large_tracked,
                   fragile_tracked) {
  lifetime_counts counts;
  {
    small_function<int()> first = callable(counts, 7);
    CHECK(counts.live() == 1);  // the temporary is gone, the stored copy remains
    small_function<int()> second = std::move(first);
    small_function<int()> third;
    third = std::move(second);
    CHECK(counts.live() == 1);
    CHECK_FALSE(first);   // NOLINT(bugprone-use-after-move)
    CHECK_FALSE(second);  // NOLINT(bugprone-use-after-move)
    CHECK(third() == 7);
  }
  CHECK(counts.live() == 0);
  CHECK(counts.destroyed == counts.constructed);
}

TEST_CASE("a heap-stored callable is never moved: its pointer is") {
  lifetime_counts counts;
  small_function<int()> first = fragile_tracked(counts, 1);
  const int moves_to_store = counts.moves;
  small_function<int()> second = std::move(first);
  small_function<int()> third = std::move(second);
  CHECK_FALSE(third.is_inline());
  CHECK(counts.moves == moves_to_store);
  CHECK(counts.live() == 1);
}

TEST_CASE("reassignment, = nullptr and destruction each destroy the current callable once") {
  lifetime_counts a;
  lifetime_counts b;
  lifetime_counts c;
  small_function<int()> f = small_tracked(a, 1);
  f = large_tracked(b, 2);
  CHECK(a.live() == 0);
  CHECK(b.live() == 1);
  CHECK(f() == 2);
  f = small_tracked(c, 3);
  CHECK(b.live() == 0);
  CHECK(f() == 3);
  f = nullptr;
  CHECK(c.live() == 0);
  f = nullptr;  // already empty: nothing more to destroy
  CHECK(c.destroyed == c.constructed);
}

TEST_CASE("self-move-assignment and self-swap keep the callable") {
  lifetime_counts counts;
  small_function<int()> f = small_tracked(counts, 5);
  small_function<int()>& alias = f;
  f = std::move(alias);
  CHECK(f() == 5);
  f.swap(alias);
  CHECK(f() == 5);
  CHECK(counts.live() == 1);
}

TEST_CASE("swap exchanges inline, heap and empty callables without creating or losing any") {
  lifetime_counts counts;
  small_function<int()> inline_one = small_tracked(counts, 1);
  small_function<int()> heap_one = large_tracked(counts, 2);
  small_function<int()> empty;
  swap(inline_one, heap_one);
  CHECK(inline_one() == 2);
  CHECK(heap_one() == 1);
  CHECK_FALSE(inline_one.is_inline());
  CHECK(heap_one.is_inline());
  heap_one.swap(empty);
  CHECK(empty() == 1);
  CHECK_FALSE(heap_one);
  CHECK(counts.live() == 2);
}

TEST_CASE("move-only captures travel through a growing vector and are freed once") {
  lifetime_counts counts;
  std::vector<small_function<int()>> tasks;
  for (int i = 0; i < 100; ++i) {
    auto owned = std::make_unique<small_tracked>(counts, i);
    tasks.emplace_back([p = std::move(owned)] { return (*p)(); });  // reallocation moves (noexcept) the tasks
  }
  CHECK(counts.live() == 100);
  int sum = 0;
  for (auto& task : tasks) sum += task();
  CHECK(sum == 99 * 100 / 2);
  tasks.clear();
  CHECK(counts.live() == 0);
}

TEST_CASE("an exception while building the callable leaves nothing behind") {
  lifetime_counts counts;
  const weft::test::throwing_copy source(counts);
  CHECK_THROWS_AS(small_function<int()>{source}, weft::test::copy_refused);
  CHECK(counts.live() == 1);  // only the source

  SUBCASE("the heap path frees its allocation when the copy throws") {
    const large_throwing_copy large_source{weft::test::throwing_copy(counts), {}};
    const weft::test::allocation_counter allocations;
    CHECK_THROWS_AS(small_function<int()>{large_source}, weft::test::copy_refused);
    CHECK(allocations.count() == 1);  // and ASan's leak check shows it was freed
    CHECK(counts.live() == 2);        // the two sources
  }
  SUBCASE("a failed heap allocation constructs nothing") {
    lifetime_counts big;
    const large_tracked large(big, 1);
    weft::test::fail_next_allocation_on_this_thread();
    CHECK_THROWS_AS(small_function<int()>{large}, std::bad_alloc);
    CHECK(big.live() == 1);
  }
  SUBCASE("a throwing assignment keeps the old callable (strong guarantee)") {
    lifetime_counts old_counts;
    small_function<int()> f = small_tracked(old_counts, 9);
    CHECK_THROWS_AS(f = source, weft::test::copy_refused);
    CHECK(f() == 9);
    CHECK(old_counts.live() == 1);
  }
}

TEST_CASE("a callable that throws from its call is still destroyed exactly once") {
  lifetime_counts counts;
  {
    small_function<void()> f = [probe = small_tracked(counts, 1)] {
      throw std::runtime_error(std::to_string(probe()));
    };
    CHECK_THROWS_WITH_AS(f(), "1", std::runtime_error);
    CHECK_THROWS_WITH_AS(f(), "1", std::runtime_error);
    CHECK(counts.live() == 1);
  }
  CHECK(counts.live() == 0);
}

}  // namespace
