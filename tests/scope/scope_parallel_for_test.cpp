// TaskScope::parallel_for, alone and after other jobs (weft::after): every element visited exactly once over
// vectors, deques and integer ranges (empty, negative, one index, huge and unit grains, chunk bodies), the
// concurrency limit honoured, dependencies respected.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "tests/scope/scope_test_support.hpp"

namespace {

using namespace weft::test;

// Runs one scope.parallel_for over [first, last) with `grain` and checks each index ran exactly once.
template <class I>
void check_index_range(weft::Pool& pool, I first, I last, std::size_t grain, weft::LoopOptions options = {}) {
  INFO("range [" << first << ", " << last << "), grain " << grain);
  const std::size_t n = first < last ? static_cast<std::size_t>(last - first) : 0;
  RunCounts runs(n);
  weft::TaskScope scope{pool};
  options.grain = grain;
  auto job = scope.parallel_for(
      first, last, [&](I i) { runs.ran(static_cast<std::size_t>(i - first)); }, std::move(options));
  scope.run_and_wait();
  job.get();
  check_exactly_once(runs);
}

TEST_CASE("integer ranges: every index exactly once, any grain") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("integer ranges", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1} << 40}) {
      check_index_range(pool, 0, 0, grain);       // empty
      check_index_range(pool, 5, 3, grain);       // last < first: empty
      check_index_range(pool, 9, 10, grain);      // one index
      check_index_range(pool, -500, 500, grain);  // negative
      check_index_range(pool, 0, 10007, grain);   // prime size
      check_index_range<std::int64_t>(pool, -3, 4, grain);
      check_index_range<std::uint8_t>(pool, 0, 255, grain);
    }
    check_index_range(pool, 0, static_cast<int>(stress_count(200000)), 0);
  });
}

TEST_CASE("the extremes of an integer type do not overflow") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("extremes", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    check_index_range(pool, kMax - 1000, kMax, 0);
    check_index_range(pool, kMin, kMin + 1000, 3);
    std::atomic<std::uint64_t> count{0};
    weft::TaskScope scope{pool};
    // A chunk body over 2^64 - 1 indices: chunks must cover [min, max) without overflow, and no index is run.
    std::atomic<std::uint64_t> covered{0};
    scope.parallel_for(kMin, kMax, [&](std::int64_t lo, std::int64_t hi) {
      covered.fetch_add(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo));
      count.fetch_add(1);
    });
    scope.run_and_wait();
    CHECK(covered.load() == std::numeric_limits<std::uint64_t>::max());
    CHECK(count.load() >= 1);
  });
}

TEST_CASE("random-access containers: vector, deque, raw pointers; chunk bodies over iterators") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("containers", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<int> v(50000, 1);
    std::deque<int> d(30001, 5);
    std::vector<long> raw(777, 2);
    std::vector<int> chunked(12345, 0);
    weft::TaskScope scope{pool};
    scope.parallel_for(v.begin(), v.end(), [](int& x) { x += 1; });
    scope.parallel_for(d.begin(), d.end(), [](int& x) { x *= 3; }, {.grain = 64});
    scope.parallel_for(raw.data(), raw.data() + raw.size(), [](long& x) { x = x * x; }, {.grain = 1});
    scope.parallel_for(chunked.begin(), chunked.end(), [](auto b, auto e) {
      for (; b != e; ++b) *b += 1;
    });
    std::vector<int> empty;
    scope.parallel_for(empty.begin(), empty.end(), [](int&) { FAIL("no element"); });
    scope.run_and_wait();
    CHECK(std::count(v.begin(), v.end(), 2) == 50000);
    CHECK(std::count(d.begin(), d.end(), 15) == 30001);
    CHECK(std::count(raw.begin(), raw.end(), 4) == 777);
    CHECK(std::count(chunked.begin(), chunked.end(), 1) == 12345);
  });
}

TEST_CASE("LoopOptions::concurrency bounds the chunks executing at once") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("concurrency", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const unsigned limit : {1u, 2u, 3u}) {
      for (const std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{16}}) {
        INFO("limit " << limit << ", grain " << grain);
        InFlight in_flight;
        RunCounts runs(400);
        weft::TaskScope scope{pool};
        scope.parallel_for(
            0, 400,
            [&](int i) {
              in_flight.enter();
              // Stays inside long enough that a broken limit shows (checked: ignoring the limit fails this test).
              std::this_thread::sleep_for(std::chrono::microseconds(20));
              runs.ran(static_cast<std::size_t>(i));
              in_flight.leave();
            },
            weft::LoopOptions{.concurrency = limit, .grain = grain});
        scope.run_and_wait();
        CHECK(in_flight.max() <= limit);
        CHECK(in_flight.max() >= 1);
        check_exactly_once(runs);
      }
    }
  });
}

TEST_CASE("parallel_for(weft::after(...)) starts after its dependencies; jobs after it see all elements done") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("parallel_for after", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<int> v;
    weft::TaskScope scope{pool};
    auto fill = scope.submit([&] { v.assign(40000, 1); });
    auto size = scope.submit([] { return std::size_t{40000}; });
    auto twice = scope.parallel_for(weft::after(fill, size), std::size_t{0}, std::size_t{40000},
                                    [&](std::size_t i) { v[i] *= 2; });
    std::vector<weft::AnyJob> deps{twice};
    auto plus = scope.parallel_for(weft::after(deps), 0, 40000, [&](int i) { v[static_cast<std::size_t>(i)] += 1; });
    auto total = scope.then(plus, [&] { return std::count(v.begin(), v.end(), 3); });
    scope.run_and_wait();
    CHECK(total.get() == 40000);
  });
}

TEST_CASE("random ranges, grains and limits against a sequential count") {
  const std::uint64_t seed = seed_for("scope parallel_for random");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("random ranges", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const auto rounds = stress_count(40);
    for (std::uint64_t round = 0; round < rounds; ++round) {
      const int first = static_cast<int>(random() % 2000) - 1000;
      const int last = first + static_cast<int>(random() % 5000);
      const std::size_t grain = random() % 3 == 0 ? 0 : random() % 300 + 1;
      weft::LoopOptions options;
      if (random() % 3 == 0) options.concurrency = static_cast<unsigned>(random() % 4 + 1);
      check_index_range(pool, first, last, grain, options);
    }
  });
}

}  // namespace
