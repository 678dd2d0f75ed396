// Shared by the BoundedQueue tests: item types that count their lives or throw on copy, and a watchdog that
// turns a hang into a failure with a message (the Pool tests' one lives with the Pool; this one needs no Pool).
#pragma once

#include "tests/support/watchdog.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace weft::test {

#if defined(__SANITIZE_THREAD__)
inline constexpr int kSanitizerSlowdown = 10;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int kSanitizerSlowdown = 4;
#else
inline constexpr int kSanitizerSlowdown = 1;
#endif

// Counts constructions and destructions (moved-from objects included: each is destroyed once).
struct Counted {
  static inline std::atomic<std::int64_t> constructed{0};
  static inline std::atomic<std::int64_t> destroyed{0};
  static void reset() noexcept {
    constructed.store(0);
    destroyed.store(0);
  }
  [[nodiscard]] static std::int64_t live() noexcept { return constructed.load() - destroyed.load(); }

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

// Its copy constructor throws when `throw_on_copy` is set; its move never throws.
struct ThrowingCopy {
  int value = 0;
  bool throw_on_copy = false;

  ThrowingCopy(int v, bool t) noexcept : value(v), throw_on_copy(t) {}
  ThrowingCopy(const ThrowingCopy& other) : value(other.value), throw_on_copy(other.throw_on_copy) {
    if (throw_on_copy) throw std::runtime_error("ThrowingCopy: copy refused");
  }
  ThrowingCopy(ThrowingCopy&&) noexcept = default;
  ThrowingCopy& operator=(const ThrowingCopy&) = default;
  ThrowingCopy& operator=(ThrowingCopy&&) noexcept = default;
  ~ThrowingCopy() = default;
};

}  // namespace weft::test
