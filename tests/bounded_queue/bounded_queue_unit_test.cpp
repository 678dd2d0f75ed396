// BoundedQueue on one thread: exact capacity over many laps, full/empty, FIFO against a std::deque oracle,
// object lifetimes, copy semantics, bad capacities, and no allocation after construction.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include "graph/inbox/bounded_queue.hpp"
#include "scheduler/atomics/cache_line.hpp"
#include "tests/bounded_queue/bounded_queue_test_support.hpp"
#include "tests/support/counting_new.hpp"
#include "tests/support/stress.hpp"
#include "weft/errors.hpp"

namespace {

using weft::inbox::BoundedQueue;
using weft::test::Counted;

// Fills to capacity, checks the next push is refused, drains in order; several laps so that every slot is
// reused with a later turn.
void check_exact_capacity(std::size_t capacity) {
  INFO("capacity = " << capacity);
  BoundedQueue<std::uint64_t> q(capacity);
  CHECK(q.capacity() == capacity);
  std::uint64_t next = 0;
  for (int lap = 0; lap < 5; ++lap) {
    CHECK(q.empty_hint());
    CHECK_FALSE(q.try_pop().has_value());
    const std::uint64_t first = next;
    for (std::size_t i = 0; i < capacity; ++i) REQUIRE(q.try_push(next++));
    CHECK(q.size_hint() == capacity);
    CHECK_FALSE(q.try_push(std::uint64_t{999'999}));  // exactly capacity, never more
    CHECK(q.size_hint() == capacity);
    for (std::uint64_t v = first; v < next; ++v) {
      const auto got = q.try_pop();
      REQUIRE(got.has_value());
      CHECK(*got == v);
    }
    CHECK_FALSE(q.try_pop().has_value());
    // Half a lap, so that the next lap starts mid-ring.
    for (std::size_t i = 0; i < capacity / 2; ++i) REQUIRE(q.try_push(next++));
    for (std::size_t i = 0; i < capacity / 2; ++i) {
      CHECK(q.try_pop() == std::optional<std::uint64_t>(next - capacity / 2 + i));
    }
  }
}

TEST_CASE("capacity is exact for 1, 2, 3, 64 and 1000, on every lap") {
  for (const std::size_t capacity : {1, 2, 3, 64, 1000}) check_exact_capacity(capacity);
}

TEST_CASE("random single-threaded pushes and pops match a std::deque oracle") {
  const std::uint64_t seed = weft::test::seed_for("bounded_queue oracle");
  for (const std::size_t capacity : {1, 2, 3, 7, 64, 100}) {
    INFO("capacity = " << capacity << ", seed = " << seed);
    std::mt19937_64 rng(seed + capacity);
    BoundedQueue<std::uint64_t> q(capacity);
    std::deque<std::uint64_t> oracle;
    std::uint64_t next = 1;
    const std::uint64_t ops = weft::test::stress_count(200'000);
    for (std::uint64_t op = 0; op < ops; ++op) {
      // Bias drifts every 1000 ops, so the queue spends time both near full and near empty.
      const bool push_bias = ((op / 1000) & 1) == 0;
      const bool push = (rng() % 4) < (push_bias ? 3u : 1u);
      if (push) {
        const bool accepted = q.try_push(next);
        REQUIRE(accepted == (oracle.size() < capacity));
        if (accepted) oracle.push_back(next);
        ++next;
      } else {
        const auto got = q.try_pop();
        REQUIRE(got.has_value() == !oracle.empty());
        if (got) {
          REQUIRE(*got == oracle.front());
          oracle.pop_front();
        }
      }
      REQUIRE(q.size_hint() == oracle.size());
      REQUIRE(q.empty_hint() == oracle.empty());
    }
  }
}

TEST_CASE("every item is destroyed exactly once: popped, refused, and left in the queue") {
  Counted::reset();
  {
    BoundedQueue<Counted> q(3);
    for (std::uint64_t i = 0; i < 3; ++i) REQUIRE(q.try_push(Counted(i)));
    Counted refused(77);
    CHECK_FALSE(q.try_push(std::move(refused)));
    CHECK(refused.value == 77);  // a refused push leaves its argument untouched
    {
      auto got = q.try_pop();
      REQUIRE(got.has_value());
      CHECK(got->value == 0);
    }
    REQUIRE(q.try_push(Counted(3)));
    CHECK(Counted::live() == 4);  // 3 queued + `refused`
  }                               // the queue's destructor destroys items 1, 2, 3
  CHECK(Counted::live() == 0);
  CHECK(Counted::constructed.load() == Counted::destroyed.load());
}

TEST_CASE("move-only items") {
  BoundedQueue<std::unique_ptr<int>> q(2);
  REQUIRE(q.try_push(std::make_unique<int>(1)));
  REQUIRE(q.try_push(std::make_unique<int>(2)));
  auto p = std::make_unique<int>(3);
  CHECK_FALSE(q.try_push(std::move(p)));
  REQUIRE(p != nullptr);  // not moved from
  CHECK(**q.try_pop() == 1);
  CHECK(**q.try_pop() == 2);
  REQUIRE(q.try_push(std::move(p)));
}  // leaves one unique_ptr queued: ASan's leak check covers the destructor

TEST_CASE("a throwing copy leaves the queue unchanged") {
  BoundedQueue<weft::test::ThrowingCopy> q(2);
  const weft::test::ThrowingCopy ok{1, false};
  REQUIRE(q.try_push(ok));  // lvalue: copied
  const weft::test::ThrowingCopy bad{2, true};
  CHECK_THROWS_AS((void)q.try_push(bad), std::runtime_error);
  CHECK(q.size_hint() == 1);
  REQUIRE(q.try_push(weft::test::ThrowingCopy{3, true}));  // rvalue: moved, never copies
  CHECK_FALSE(q.try_push(ok));
  CHECK(q.try_pop()->value == 1);
  CHECK(q.try_pop()->value == 3);
  CHECK_FALSE(q.try_pop().has_value());
}

TEST_CASE("capacity 0 and absurd capacities throw invalid_option naming the value") {
  const std::size_t bad[] = {0, BoundedQueue<int>::max_capacity() + 1, ~std::size_t{0}};
  for (const std::size_t capacity : bad) {
    INFO("capacity = " << capacity);
    std::string message;
    try {
      BoundedQueue<int> q(capacity);
    } catch (const weft::invalid_option& e) {
      message = e.what();
    }
    CHECK(message.find("capacity " + std::to_string(capacity)) != std::string::npos);
  }
  CHECK_NOTHROW(BoundedQueue<int>(1));
}

TEST_CASE("no allocation after construction") {
  BoundedQueue<std::uint64_t> q(5);
  const weft::test::allocation_counter allocations;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    (void)q.try_push(i);
    (void)q.try_push(i);
    (void)q.try_pop();
  }
  while (q.try_pop()) {
  }
  CHECK(allocations.count() == 0);
}

TEST_CASE("head and tail sit on separate cache lines") {
  // The whole object is line-aligned and spans the read-only line plus one line each for head and tail.
  CHECK(alignof(BoundedQueue<int>) == weft::atomics::kCacheLine);
  CHECK(sizeof(BoundedQueue<int>) == 3 * weft::atomics::kCacheLine);
}

}  // namespace
