// What every TaskScope / parallel_for test shares: the worker counts each test runs with (1, 2, 4, 8), the
// Pool tests' watchdog and counters, and small helpers to read an exception's message.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <string>

#include "tests/pool/pool_test_support.hpp"
#include "weft/parallel_for.hpp"
#include "weft/pool.hpp"
#include "weft/task_scope.hpp"

namespace weft::test {

inline constexpr std::array<unsigned, 4> kScopeWorkerCounts = {1, 2, 4, 8};

// Runs body(workers) once per worker count; a failing check prints the count.
template <class Body>
void for_each_scope_worker_count(Body&& body) {
  for (const unsigned workers : kScopeWorkerCounts) {
    INFO("workers = " << workers);
    body(workers);
  }
}

[[nodiscard]] inline std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "<not a std::exception>";
  }
}

// Counts how many run at once: enter() on the way in, leave() on the way out; max() is the peak.
class InFlight {
 public:
  void enter() noexcept {
    // relaxed: only the counts matter, read after the run (which orders every update before the read).
    const unsigned now = current_.fetch_add(1, std::memory_order_relaxed) + 1;
    unsigned seen = max_.load(std::memory_order_relaxed);
    while (now > seen && !max_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  void leave() noexcept { current_.fetch_sub(1, std::memory_order_relaxed); }
  [[nodiscard]] unsigned max() const noexcept { return max_.load(std::memory_order_relaxed); }

 private:
  std::atomic<unsigned> current_{0};
  std::atomic<unsigned> max_{0};
};

// Spins a little so that chunks overlap in time (no timing is asserted on).
inline void busy_work(unsigned rounds) noexcept {
  volatile unsigned sink = 0;
  for (unsigned i = 0; i < rounds; ++i) sink = sink + i;
}

}  // namespace weft::test
