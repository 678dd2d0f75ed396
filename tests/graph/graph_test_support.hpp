// What every TaskGraph test shares: the worker counts graphs run with, a wait that turns a hung run into a
// failure with a message (and the seed), exception-message helpers, and per-node execution recorders.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "tests/pool/pool_test_support.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"

namespace weft::test {

// The exception a test's node throws on purpose (one type for the area: its files share one executable).
struct Boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Graphs run with these worker counts (the 1, 2, 4, 8; 8 > cores on this machine on purpose).
inline constexpr std::array<unsigned, 4> kGraphWorkerCounts = {1, 2, 4, 8};

template <class Body>
void for_each_graph_worker_count(Body&& body) {
  for (const unsigned workers : kGraphWorkerCounts) {
    INFO("workers = " << workers);
    body(workers);
  }
}

// Waits for `run` at most `limit`; if it is still running, prints `what` (which should carry the seed) and kills
// the process: a hung run cannot be failed cleanly, since the Run destructor would wait for it forever.
inline void await_or_die(Run& run, const std::string& what, std::chrono::seconds limit) {
  if (run.wait_for(limit)) return;
  std::fflush(stdout);
  std::fprintf(stderr, "\nHUNG RUN: '%s' not done within %llds\n", what.c_str(), static_cast<long long>(limit.count()));
  std::fflush(stderr);
  std::_Exit(87);
}

[[nodiscard]] inline std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "<not a std::exception>";
  }
}

[[nodiscard]] inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Raises `max` to at least `value` (relaxed: only the test thread reads it, after the run's wait()).
inline void raise_to(std::atomic<std::uint64_t>& max, std::uint64_t value) noexcept {
  std::uint64_t seen = max.load(std::memory_order_relaxed);
  while (seen < value && !max.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

// Counts the executions of one node that are in flight at once, and the maximum seen.
struct InFlight {
  std::atomic<std::uint64_t> now{0};
  std::atomic<std::uint64_t> max{0};
  // relaxed: the modification order of `now` alone orders executions that the graph orders; acquire/release
  // here would add happens-before edges of the test's own, hiding from TSan an ordering the graph fails to give.
  void enter() noexcept { raise_to(max, now.fetch_add(1, std::memory_order_relaxed) + 1); }
  void leave() noexcept { now.fetch_sub(1, std::memory_order_relaxed); }
};

// Spins for about `iterations` steps of work the optimiser cannot remove, to widen race windows.
inline void busy_work(unsigned iterations) noexcept {
  volatile unsigned sink = 0;
  for (unsigned i = 0; i < iterations; ++i) sink = sink + i;
}

// Waits (yielding) until pred() holds or `limit` passes; true if it held. For gates that must never hang a
// test when an implementation legitimately serialises what the test hoped to overlap.
template <class Pred>
[[nodiscard]] bool spin_until(Pred pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::yield();
  }
  return true;
}

// A capture that counts its own destruction (a moved-from one counts nothing): how many callables are gone.
// `slow`: it yields the CPU before it counts, which widens the window in which a waiter could see it still alive.
class CountsDestruction {
 public:
  explicit CountsDestruction(std::atomic<int>& destroyed, bool slow = false) noexcept
      : destroyed_(&destroyed), slow_(slow) {}
  CountsDestruction(CountsDestruction&& other) noexcept
      : destroyed_(std::exchange(other.destroyed_, nullptr)), slow_(other.slow_) {}
  CountsDestruction(const CountsDestruction&) = delete;
  CountsDestruction& operator=(const CountsDestruction&) = delete;
  CountsDestruction& operator=(CountsDestruction&&) = delete;
  ~CountsDestruction() {
    if (destroyed_ == nullptr) return;
    if (slow_) std::this_thread::yield();
    destroyed_->fetch_add(1, std::memory_order_relaxed);
  }

 private:
  std::atomic<int>* destroyed_;
  bool slow_;
};

}  // namespace weft::test
