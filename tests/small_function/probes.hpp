// Callables for the small_function tests that report their own lifetime: every construction (plain, copy,
// move) and destruction is counted, so a test can check that each stored callable is destroyed exactly once.
#pragma once

#include <array>
#include <cstddef>
#include <exception>

namespace weft::test {

struct lifetime_counts {
  int constructed = 0;  // all constructors, including copies and moves
  int destroyed = 0;
  int copies = 0;
  int moves = 0;
  [[nodiscard]] int live() const noexcept { return constructed - destroyed; }
};

// A callable of exactly Size bytes (Size a multiple of alignof(void*), at least 2 pointers) whose call returns
// its id. Its move is noexcept unless MoveMayThrow, so where it is stored depends on Size and MoveMayThrow.
template <std::size_t Size = 16, bool MoveMayThrow = false>
class tracked {
 public:
  tracked(lifetime_counts& counts, int id) noexcept : counts_(&counts), id_(id) { ++counts_->constructed; }
  tracked(const tracked& other) noexcept : counts_(other.counts_), id_(other.id_) {
    ++counts_->constructed;
    ++counts_->copies;
  }
  tracked(tracked&& other) noexcept(!MoveMayThrow) : counts_(other.counts_), id_(other.id_) {
    ++counts_->constructed;
    ++counts_->moves;
  }
  tracked& operator=(const tracked&) = delete;
  ~tracked() { ++counts_->destroyed; }

  int operator()() const noexcept { return id_; }

 private:
  static_assert(Size >= 2 * sizeof(void*) && Size % alignof(void*) == 0);
  lifetime_counts* counts_;
  int id_;
  std::array<std::byte, Size - sizeof(void*) - sizeof(int)> padding_{};
};

// What throwing_copy throws: an exception that allocates nothing, so allocation counts stay exact.
struct copy_refused : std::exception {
  [[nodiscard]] const char* what() const noexcept override { return "copy refused"; }
};

// Copying it throws (after counting nothing), so a construction that copies it fails part-way.
struct throwing_copy {
  explicit throwing_copy(lifetime_counts& counts) noexcept : counts(&counts) { ++counts.constructed; }
  throwing_copy(const throwing_copy&) { throw copy_refused(); }
  throwing_copy(throwing_copy&& other) noexcept : counts(other.counts) { ++counts->constructed; }
  ~throwing_copy() { ++counts->destroyed; }
  int operator()() const noexcept { return -1; }
  lifetime_counts* counts;
};

}  // namespace weft::test
