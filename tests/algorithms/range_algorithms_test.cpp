// The range forms: parallel_reduce with a body over [lo, hi) and a join, parallel_for with a step, weft::Range2d
// under parallel_for and parallel_reduce, and weft::PerWorker; each against a sequential loop on random sizes
// (0, 1, around the automatic block count, grain edges), with 1, 2, 4 and 8 workers; exceptions; bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/algorithms/algorithms_test_support.hpp"
#include "weft/per_worker.hpp"
#include "weft/range2d.hpp"

namespace {

using namespace weft::test;

TEST_CASE("range-body parallel_reduce: body over chunks, join in range order") {
  const std::uint64_t seed = seed_for("range parallel_reduce");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("range reduce", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t n : sizes_for(workers)) {
      INFO("n = " << n);
      const auto ints = random_ints(random, n);
      const auto mats = random_mats(random, n);
      for (const std::size_t grain : kGrains) {
        if (!grain_fits(grain, n)) continue;
        INFO("grain = " << grain);
        std::atomic<std::size_t> covered{0};
        std::atomic<bool> too_big{false};
        const std::int64_t sum = weft::parallel_reduce(
            pool, std::size_t{0}, n, std::int64_t{0},
            [&](std::size_t lo, std::size_t hi, std::int64_t acc) {
              covered.fetch_add(hi - lo);
              if (lo >= hi || hi > n) too_big.store(true);
              for (std::size_t i = lo; i < hi; ++i) acc += ints[i];
              return acc;
            },
            std::plus<>(), grain);
        CHECK(sum == std::accumulate(ints.begin(), ints.end(), std::int64_t{0}));
        CHECK(covered.load() == n);
        CHECK_FALSE(too_big.load());
        // Not commutative, neither inside a chunk nor in the join: any index twice, missed or out of order
        // gives another product.
        const Mat product = weft::parallel_reduce(
            pool, 0, n, Mat{},
            [&](std::size_t lo, std::size_t hi, Mat acc) {
              for (std::size_t i = lo; i < hi; ++i) acc = acc * mats[i];
              return acc;
            },
            kMatMul, grain);
        CHECK(product == std::accumulate(mats.begin(), mats.end(), Mat{}, kMatMul));
      }
      // Signed indices across zero, and a body that returns another type than T (converted).
      const auto half = static_cast<std::int64_t>(n / 2);
      const std::int64_t from = -half, to = static_cast<std::int64_t>(n) - half;
      const long long expected = [&] {
        long long s = 0;
        for (std::int64_t i = from; i < to; ++i) s += i;
        return s;
      }();
      CHECK(weft::parallel_reduce(
                pool, from, to, 0LL,
                [](std::int64_t lo, std::int64_t hi, long long acc) -> int {
                  for (std::int64_t i = lo; i < hi; ++i) acc += i;
                  return static_cast<int>(acc);
                },
                std::plus<>()) == static_cast<int>(expected));
    }
    // Reversed integer bounds: empty, identity (as parallel_for's empty range).
    CHECK(weft::parallel_reduce(
              pool, 10, 3, 42, [](int, int, int) { return -1; }, std::plus<>()) == 42);
  });
}

TEST_CASE("parallel_for with a step: up, down, unsigned, mixed types, step 0 refused") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("step", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const auto check = [&](long long first, long long last, long long step, std::size_t grain) {
      INFO("first " << first << " last " << last << " step " << step << " grain " << grain);
      std::vector<long long> want;
      if (step > 0) {
        for (long long i = first; i < last; i += step) want.push_back(i);
      } else {
        for (long long i = first; i > last; i += step) want.push_back(i);
      }
      const long long base = std::min(first, last);
      const auto span = static_cast<std::size_t>(std::max(first, last) - base + 1);
      RunCounts runs(span);
      std::atomic<bool> off_stride{false};
      weft::parallel_for(
          pool, first, last, step,
          [&](long long i) {
            if (i < base || i - base >= static_cast<long long>(span) || (i - first) % step != 0) {
              off_stride.store(true);
              return;
            }
            runs.ran(static_cast<std::size_t>(i - base));
          },
          grain);
      CHECK_FALSE(off_stride.load());
      std::size_t ran = 0;
      for (const long long i : want) ran += runs.count(static_cast<std::size_t>(i - base)) == 1 ? 1 : 0;
      CHECK(ran == want.size());
      const RunCounts::Summary summary = runs.summary();
      CHECK(summary.once == want.size());
      CHECK(summary.repeated == 0);
    };
    for (const std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{7}}) {
      for (const long long step : {1LL, 2LL, 3LL, 64LL, 1000LL, 5000LL, -1LL, -3LL, -64LL}) {
        for (const long long n : {0LL, 1LL, 2LL, 63LL, 64LL, 65LL, 1000LL, 4099LL}) {
          if (step > 0) {
            check(-7, -7 + n, step, grain);
          } else {
            check(n - 7, -7, step, grain);
          }
        }
      }
    }
    check(5, 100, -1, 0);  // a negative step with last above first: empty
    check(100, 5, 2, 0);   // a positive step with last below first: empty
    // Unsigned indices counting down to 0, and the extreme values of a signed type without overflow.
    std::vector<int> hits(10, 0);
    weft::parallel_for(pool, 9u, 0u, -1, [&](unsigned i) { hits[i] += 1; });
    CHECK(std::count(hits.begin(), hits.end(), 1) == 9);  // 9 .. 1
    CHECK(hits[0] == 0);
    std::atomic<int> calls{0};
    std::atomic<long long> seen{0};
    weft::parallel_for(pool, INT_MIN, INT_MAX, INT_MAX, [&](int i) {
      calls.fetch_add(1);
      seen.fetch_add(i);
    });
    CHECK(calls.load() == 3);  // INT_MIN, -1, INT_MAX - 1
    CHECK(seen.load() == static_cast<long long>(INT_MIN) - 1 + (INT_MAX - 1));
    weft::parallel_for(pool, 0, 10, LLONG_MIN, [&](int) { calls.fetch_add(100); });  // empty: counts down from 0
    CHECK(calls.load() == 3);
    // A step of another type than the bounds (a size_t step over int bounds), and mixed bounds.
    std::vector<int> v(100, 0);
    weft::parallel_for(pool, 0, v.size(), std::size_t{10}, [&](std::size_t i) { v[i] = 1; });
    CHECK(std::count(v.begin(), v.end(), 1) == 10);
    CHECK_THROWS_WITH_AS(weft::parallel_for(pool, 0, 10, 0, [](int) {}),
                         doctest::Contains("weft::parallel_for: step = 0"), weft::invalid_option);
    CHECK_THROWS_AS(weft::parallel_for(pool, 0, 100000, 3,
                                       [](int i) {
                                         if (i == 3 * 20000) throw Thrown("at 60000");
                                       }),
                    Thrown);
  });
}

// Every cell of a rows x cols grid visited once by tiles within the grains (or automatic), none empty.
TEST_CASE("Range2d: parallel_for and parallel_reduce cover the rectangle once, tiles within the grains") {
  const std::uint64_t seed = seed_for("range2d");
  std::mt19937_64 random(seed);
  const std::size_t big = reduced_runs() ? 150 : 500;
  const std::vector<std::pair<std::size_t, std::size_t>> shapes = {{0, 0},     {0, 5},    {5, 0},        {1, 1},
                                                                   {1, 1000},  {1000, 1}, {2, 3},        {17, 129},
                                                                   {128, 128}, {129, 65}, {big, big / 3}};
  const std::vector<std::pair<std::size_t, std::size_t>> grains = {{0, 0}, {1, 1}, {3, 5}, {16, 0}, {0, 16}, {64, 64}};
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("range2d", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const auto& [rows, cols] : shapes) {
      std::vector<std::int64_t> cells(rows * cols);
      for (auto& c : cells) c = static_cast<std::int64_t>(random() % 1000);
      const std::int64_t total = std::accumulate(cells.begin(), cells.end(), std::int64_t{0});
      for (const auto& [gr, gc] : grains) {
        INFO("rows " << rows << " cols " << cols << " grains " << gr << " x " << gc);
        if ((gr == 1 || gc == 1) && rows * cols > 20'000) continue;  // a tile per cell: kept small
        // Offset indices (rows from 10, columns from -3) so a tile's position is checked, not only its size.
        const weft::Range2d<long> range(10, 10 + static_cast<long>(rows), gr, -3, -3 + static_cast<long>(cols), gc);
        std::vector<std::uint8_t> visits(rows * cols, 0);
        std::atomic<int> bad_tiles{0};
        std::atomic<int> tiles{0};
        weft::parallel_for(pool, range, [&](const weft::Range2d<long>& t) {
          tiles.fetch_add(1);
          if (t.empty() || (gr != 0 && t.rows().size() > gr) || (gc != 0 && t.cols().size() > gc) ||
              t.rows().begin() < 10 || t.cols().begin() < -3 || t.row_grain() != gr || t.col_grain() != gc) {
            bad_tiles.fetch_add(1);
          }
          for (long i = t.rows().begin(); i != t.rows().end(); ++i) {
            for (long j = t.cols().begin(); j != t.cols().end(); ++j) {
              ++visits[static_cast<std::size_t>(i - 10) * cols +
                       static_cast<std::size_t>(j + 3)];  // plain: TSan sees twice
            }
          }
        });
        CHECK(bad_tiles.load() == 0);
        CHECK(std::count(visits.begin(), visits.end(), std::uint8_t{1}) == static_cast<std::ptrdiff_t>(rows * cols));
        if (rows * cols == 0) CHECK(tiles.load() == 0);
        // The automatic tiling makes more than one tile of a large rectangle.
        if (gr == 0 && gc == 0 && rows * cols >= 10'000) CHECK(tiles.load() > 1);
        const std::int64_t sum = weft::parallel_reduce(
            pool, range, std::int64_t{0},
            [&](const weft::Range2d<long>& t, std::int64_t acc) {
              for (long i = t.rows().begin(); i != t.rows().end(); ++i) {
                for (long j = t.cols().begin(); j != t.cols().end(); ++j) {
                  acc += cells[static_cast<std::size_t>(i - 10) * cols + static_cast<std::size_t>(j + 3)];
                }
              }
              return acc;
            },
            std::plus<>());
        CHECK(sum == total);
      }
    }
    // The longer side is halved: a wide strip is cut across its columns only.
    std::atomic<int> full_height{0}, tiles{0};
    weft::parallel_for(pool, weft::Range2d<int>(0, 4, 0, 1 << 16), [&](const weft::Range2d<int>& t) {
      tiles.fetch_add(1);
      if (t.rows().size() == 4) full_height.fetch_add(1);
    });
    CHECK(full_height.load() == tiles.load());
    // Reversed sides are refused, naming the side and the values.
    CHECK_THROWS_WITH_AS(weft::Range2d<int>(5, 3, 0, 1),
                         doctest::Contains("weft::Range2d: the rows [5, 3) are reversed"), weft::invalid_option);
    CHECK_THROWS_WITH_AS(weft::Range2d<int>(0, 1, 2, 9, -1, 2),
                         doctest::Contains("weft::Range2d: the columns [9, -1) are reversed"), weft::invalid_option);
    // Exceptions from a tile body come out of both forms; the pool stays usable.
    const weft::Range2d<int> grid(0, 300, 0, 300);
    CHECK_THROWS_AS(weft::parallel_for(pool, grid,
                                       [](const weft::Range2d<int>& t) {
                                         if (t.rows().begin() <= 150 && 150 < t.rows().end()) throw Thrown("tile");
                                       }),
                    Thrown);
    CHECK_THROWS_AS(static_cast<void>(weft::parallel_reduce(
                        pool, grid, 0,
                        [](const weft::Range2d<int>& t, int acc) {
                          if (t.cols().begin() == 0) throw Thrown("tile");
                          return acc;
                        },
                        std::plus<>())),
                    Thrown);
    CHECK_THROWS_AS(static_cast<void>(weft::parallel_reduce(
                        pool, 0, 100000, 0, [](int, int, int acc) { return acc + 1; },
                        [](int a, int b) -> int {
                          if (a + b > 0) throw Thrown("join");
                          return a + b;
                        })),
                    Thrown);
    CHECK(weft::parallel_reduce(
              pool, grid, 0,
              [](const weft::Range2d<int>& t, int acc) { return acc + int(t.rows().size() * t.cols().size()); },
              std::plus<>()) == 90'000);
  });
}

TEST_CASE("PerWorker: one value per thread index and per outside thread, combined") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("per worker", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::PerWorker<std::int64_t> sums(pool);
    CHECK(sums.empty());
    CHECK(sums.combine(std::plus<>()) == 0);  // no value: a fresh one
    const std::size_t n = 100'000;
    weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { sums.local() += static_cast<std::int64_t>(i); });
    const std::int64_t want = static_cast<std::int64_t>(n * (n - 1) / 2);
    CHECK(sums.combine(std::plus<>()) == want);
    CHECK(sums.size() >= 1);
    CHECK(sums.size() <= pool.max_thread_index());
    std::int64_t each = 0;
    sums.combine_each([&](std::int64_t v) { each += v; });
    CHECK(each == want);
    std::int64_t iterated = 0;
    for (std::int64_t& v : sums) iterated += v;
    CHECK(iterated == want);
    // Cache-line padded: no two values within 128 bytes.
    std::vector<std::uintptr_t> addresses;
    for (const std::int64_t& v : std::as_const(sums)) addresses.push_back(reinterpret_cast<std::uintptr_t>(&v));
    std::sort(addresses.begin(), addresses.end());
    for (std::size_t k = 1; k < addresses.size(); ++k) CHECK(addresses[k] - addresses[k - 1] >= 128);
    // Outside threads (running no task of the pool): each its own value, from the initializer.
    sums.clear();
    CHECK(sums.empty());
    bool exists = true;
    sums.local(exists) = 5;  // this thread, outside any task
    CHECK_FALSE(exists);
    sums.local(exists) += 1;
    CHECK(exists);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&sums] {
        for (int k = 0; k < 1000; ++k) ++sums.local();
      });
    }
    for (std::thread& t : threads) t.join();
    CHECK(sums.size() == 4);
    CHECK(sums.combine(std::plus<>()) == 3006);
    // An initializer: a value per slot; an exception from it comes out of local() and leaves the slot empty.
    weft::PerWorker<std::vector<int>> bins(pool, [] { return std::vector<int>(4, 0); });
    weft::parallel_for(pool, 0, 4000, [&](int i) { ++bins.local()[static_cast<std::size_t>(i % 4)]; });
    std::vector<int> total(4, 0);
    bins.combine_each([&](const std::vector<int>& b) {
      for (std::size_t k = 0; k < 4; ++k) total[k] += b[k];
    });
    CHECK(total == std::vector<int>(4, 1000));
    weft::PerWorker<int> failing(pool, []() -> int { throw Thrown("init"); });
    CHECK_THROWS_AS(static_cast<void>(failing.local()), Thrown);
    CHECK(failing.empty());
    CHECK_THROWS_WITH_AS(weft::PerWorker<int>(pool, std::function<int()>()),
                         doctest::Contains("weft::PerWorker: the callable is empty"), std::invalid_argument);
    // A worker's value is cached per thread: clear() and a new PerWorker (maybe at the same address) start afresh.
    for (int round = 0; round < 3; ++round) {
      weft::PerWorker<int> counts(pool);
      weft::parallel_for(pool, 0, 20'000, [&](int) { ++counts.local(); });
      CHECK(counts.combine(std::plus<>()) == 20'000);
      counts.clear();
      weft::parallel_for(pool, 0, 3'000, [&](int) { ++counts.local(); });
      CHECK(counts.combine(std::plus<>()) == 3'000);
    }
    // Inside a range reduce's body and nested loops: the thread's value, whichever task runs there.
    weft::PerWorker<int> calls(pool);
    const int chunks = weft::parallel_reduce(
        pool, 0, 50'000, 0,
        [&](int, int, int acc) {
          ++calls.local();
          return acc + 1;
        },
        std::plus<>());
    CHECK(calls.combine(std::plus<>()) == chunks);
  });
}

}  // namespace
