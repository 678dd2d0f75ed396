// Shared by the queue tests: the domains under test, an instance-counting item type, and the global
// allocation counter (operator new is replaced in queue_unit_test.cpp for the unit-test executable only).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "scheduler/lockfree/hazard_pointers.hpp"
#include "scheduler/lockfree/ms_queue.hpp"
#include "scheduler/lockfree/qsbr.hpp"

namespace weft::test {

using HpDomain = lockfree::HazardPointerDomain<>;
using QsbrDomain = lockfree::QsbrDomain<>;

// Counts constructions and destructions of live objects (moved-from ones included: each is destroyed once).
struct Counted {
  static inline std::atomic<std::int64_t> constructed{0};
  static inline std::atomic<std::int64_t> destroyed{0};

  explicit Counted(std::uint64_t v) noexcept : value(v) { constructed.fetch_add(1, std::memory_order_relaxed); }
  Counted(Counted&& other) noexcept : value(std::exchange(other.value, ~std::uint64_t{0})) {
    constructed.fetch_add(1, std::memory_order_relaxed);
  }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  Counted& operator=(Counted&&) = delete;
  ~Counted() { destroyed.fetch_add(1, std::memory_order_relaxed); }

  std::uint64_t value;
};

// Allocations through the replaced global operator new (live = news - deletes), unit-test executable only.
struct AllocationCounter {
  static inline std::atomic<std::int64_t> news{0};
  static inline std::atomic<std::int64_t> deletes{0};
  [[nodiscard]] static std::int64_t live() noexcept {
    return news.load(std::memory_order_relaxed) - deletes.load(std::memory_order_relaxed);
  }
};

}  // namespace weft::test
