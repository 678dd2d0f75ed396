// What the pipeline tests share: the pipeline's modes to run each test in, a counted item type (to check the
// bound on items alive and that every item is destroyed exactly once), a per-item spin derived from a seed (to
// reorder items without a shared generator), the documented bound of a chain of stages, and a check of an
// exception's type and message.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "graph/pipeline/pipeline_run.hpp"
#include "tests/scope/scope_test_support.hpp"
#include "weft/stream.hpp"
#include "weft/task_scope.hpp"

namespace weft::test {

using detail::pipeline::TestMode;

// How a run carries its items (graph/pipeline/pipeline_run.hpp): automatic (cheap items run solo on the thread holding
// the source's turn, slow ones are handed off), shared forced (hand-offs, inboxes and rings even for cheap
// items), solo forced (the source's turn is never handed off; a pipeline without a fan-out stage stays solo).
inline constexpr std::array<TestMode, 3> kModes = {TestMode::automatic, TestMode::shared, TestMode::solo};

[[nodiscard]] inline const char* mode_name(TestMode mode) noexcept {
  switch (mode) {
    case TestMode::automatic:
      return "automatic";
    case TestMode::shared:
      return "shared";
    case TestMode::solo:
      return "solo";
  }
  return "?";
}

// Forces a mode on the runs that start while it lives (each run reads it once, when it starts).
class ForcedMode {
 public:
  explicit ForcedMode(TestMode mode) noexcept : was_(detail::pipeline::test_mode.exchange(mode)) {}
  ForcedMode(const ForcedMode&) = delete;
  ForcedMode& operator=(const ForcedMode&) = delete;
  ~ForcedMode() { detail::pipeline::test_mode.store(was_); }

 private:
  TestMode was_;
};

// Runs body() once per mode; a failing check prints the mode.
template <class Body>
void for_each_mode(Body&& body) {
  for (const TestMode mode : kModes) {
    INFO("mode: " << std::string(mode_name(mode)));
    const ForcedMode forced(mode);
    body();
  }
}

// Runs body(workers) for every mode and worker count.
template <class Body>
void for_each_mode_and_worker_count(Body&& body) {
  for_each_mode([&] { for_each_scope_worker_count(body); });
}

// Counts the Counted objects of one test. `alive` counts items: an object made from a value is one more item, a
// moved-to object takes over the item of its source (which no longer counts), and only the destruction of an
// object still holding an item ends one. So moving an item from slot to slot never changes `alive`, and
// `peak` is the largest number of items that existed at once. `constructed` and `destroyed` count every
// constructor (moves included) and every destructor: after a run they must be equal.
class Census {
 public:
  void made() noexcept {
    // relaxed: the counts are read after the run, whose end orders every update before the read; the peak
    // is taken along the counter's own modification order, which follows every slot hand-off (each goes
    // through a lock), so it never exceeds the items that really existed at once.
    constructed_.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t now = alive_.fetch_add(1, std::memory_order_relaxed) + 1;
    std::int64_t seen = peak_.load(std::memory_order_relaxed);
    while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  void moved() noexcept { constructed_.fetch_add(1, std::memory_order_relaxed); }
  void ended() noexcept { alive_.fetch_sub(1, std::memory_order_relaxed); }
  void destroyed() noexcept { destroyed_.fetch_add(1, std::memory_order_relaxed); }

  [[nodiscard]] std::int64_t alive() const noexcept { return alive_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t peak() const noexcept { return peak_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t constructed() const noexcept { return constructed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t destroyed_count() const noexcept { return destroyed_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> alive_{0};
  std::atomic<std::int64_t> peak_{0};
  std::atomic<std::uint64_t> constructed_{0};
  std::atomic<std::uint64_t> destroyed_{0};
};

// A move-only item counted by a Census (see there). `value` says which item it is.
class Counted {
 public:
  Counted(Census& census, std::uint64_t value) noexcept : census_(&census), value_(value), holds_(true) {
    census_->made();
  }
  Counted(Counted&& other) noexcept : census_(other.census_), value_(other.value_), holds_(other.holds_) {
    other.holds_ = false;
    census_->moved();
  }
  Counted& operator=(Counted&& other) noexcept {
    if (this != &other) {
      if (holds_) census_->ended();
      census_ = other.census_;
      value_ = other.value_;
      holds_ = std::exchange(other.holds_, false);
    }
    return *this;
  }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  ~Counted() {
    if (holds_) census_->ended();
    census_->destroyed();
  }

  [[nodiscard]] std::uint64_t value() const noexcept { return value_; }
  [[nodiscard]] bool holds() const noexcept { return holds_; }

 private:
  Census* census_;
  std::uint64_t value_;
  bool holds_;
};

// After a run: every Counted object made was destroyed, and no item is left.
inline void check_balanced(const Census& census) {
  INFO("constructed = " << census.constructed() << ", destroyed = " << census.destroyed_count()
                        << ", items alive = " << census.alive());
  CHECK(census.constructed() == census.destroyed_count());
  CHECK(census.alive() == 0);
}

// A source function making 0, 1, ..., n - 1, then std::nullopt (a source is called serially: the count needs no
// synchronisation).
[[nodiscard]] inline auto numbers_below(std::uint64_t n) {
  return [next = std::uint64_t{0}, n]() mutable -> std::optional<std::uint64_t> {
    if (next == n) return std::nullopt;
    return next++;
  };
}

// A source function making Counted items 0, 1, ..., n - 1 (tallied by `census`), then std::nullopt.
[[nodiscard]] inline auto counted_below(Census& census, std::uint64_t n) {
  return [&census, next = std::uint64_t{0}, n]() mutable -> std::optional<Counted> {
    if (next == n) return std::nullopt;
    return Counted(census, next++);
  };
}

// A counted item that can be copied (a broadcast copies its items): a copy is one more item of the census.
class Copied {
 public:
  Copied(Census& census, std::uint64_t value) noexcept : census_(&census), value_(value), holds_(true) {
    census_->made();
  }
  Copied(const Copied& other) noexcept : census_(other.census_), value_(other.value_), holds_(other.holds_) {
    if (holds_) {
      census_->made();
    } else {
      census_->moved();
    }
  }
  Copied(Copied&& other) noexcept : census_(other.census_), value_(other.value_), holds_(other.holds_) {
    other.holds_ = false;
    census_->moved();
  }
  Copied& operator=(const Copied&) = delete;
  Copied& operator=(Copied&&) = delete;
  ~Copied() {
    if (holds_) census_->ended();
    census_->destroyed();
  }
  [[nodiscard]] std::uint64_t value() const noexcept { return value_; }

 private:
  Census* census_;
  std::uint64_t value_;
  bool holds_;
};

// A source function making Copied items 0, 1, ..., n - 1 (tallied by `census`), then std::nullopt.
[[nodiscard]] inline auto copied_below(Census& census, std::uint64_t n) {
  return [&census, next = std::uint64_t{0}, n]() mutable -> std::optional<Copied> {
    if (next == n) return std::nullopt;
    return Copied(census, next++);
  };
}

// A well-mixed 64-bit value of (seed, item): per-item decisions without a generator shared between threads.
[[nodiscard]] inline std::uint64_t mix(std::uint64_t seed, std::uint64_t item) noexcept {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (item + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A short spin of a length chosen by (seed, item), 0 to `max_rounds`: so a parallel stage finishes its items
// out of order.
inline void random_spin(std::uint64_t seed, std::uint64_t item, unsigned max_rounds) noexcept {
  busy_work(static_cast<unsigned>(mix(seed, item) % (max_rounds + 1)));
}

// The documented bound on the items alive in one segment of a pipeline (the stages consuming the items of the
// source, or of one fan-out stage): the sum over those stages of capacity + min(concurrency, workers + 1),
// plus 1 for the source in the first segment. See weft::StageOptions and graph/pipeline/pipeline_run.cpp.
[[nodiscard]] inline std::int64_t segment_bound(std::initializer_list<StageOptions> consumers, unsigned workers,
                                                bool has_source) {
  std::int64_t bound = has_source ? 1 : 0;
  for (const StageOptions& options : consumers) {
    const std::size_t concurrency = options.concurrency < workers + 1u ? options.concurrency : workers + 1u;
    bound += static_cast<std::int64_t>(options.capacity + concurrency);
  }
  return bound;
}

// Runs f, which must throw E; checks that the message contains every one of `parts`. Returns the message.
template <class E, class F>
std::string check_throws_naming(F&& f, std::initializer_list<std::string> parts) {
  std::string message;
  bool thrown = false;
  try {
    f();
  } catch (const E& e) {
    thrown = true;
    message = e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw another exception: " << e.what());
    return {};
  }
  if (!thrown) {
    FAIL_CHECK("did not throw");
    return {};
  }
  for (const std::string& part : parts) {
    INFO("message: " << message);
    INFO("expected in it: " << part);
    CHECK(message.find(part) != std::string::npos);
  }
  return message;
}

// An exception thrown by a test's own stage; the message says where.
struct StageFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace weft::test
