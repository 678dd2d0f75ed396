// What a steal attempt on a work-stealing deque reports.
#pragma once

#include <cstddef>

namespace weft::lockfree {

// Why a steal returned what it did. A scheduler treats `empty` as "try another victim or park" and
// `lost_race` as "this victim had work a moment ago: retrying it is likely to pay".
enum class StealStatus : unsigned char {
  success,    // the item is ours
  empty,      // the deque held no item when we looked
  lost_race,  // another thief or the owner took the item we were after
};

// The outcome of one steal: `item` is meaningful only when `status == StealStatus::success`.
template <class T>
struct StealResult {
  StealStatus status;
  T item;

  [[nodiscard]] constexpr bool stolen() const noexcept { return status == StealStatus::success; }
  [[nodiscard]] constexpr explicit operator bool() const noexcept { return stolen(); }
};

// The outcome of one batch steal: `count` items (at least 1) were taken when `status == success`, else none.
struct BatchStealResult {
  StealStatus status;
  std::size_t count;

  [[nodiscard]] constexpr explicit operator bool() const noexcept { return status == StealStatus::success; }
};

}  // namespace weft::lockfree
