// The blocking parallel algorithms (weft/algorithms.hpp), each checked against the sequential standard algorithm
// on random inputs of many sizes and grains, with 1, 2, 4 and 8 workers; non-commutative operations for reduce
// and scan; exceptions; nested calls inside tasks.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/algorithms/algorithms_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("parallel_reduce and parallel_transform_reduce give std::reduce's result") {
  const std::uint64_t seed = seed_for("parallel_reduce");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("reduce", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t n : sizes_for(workers)) {
      INFO("n = " << n);
      const auto ints = random_ints(random, n);
      const auto mats = random_mats(random, n);
      for (const std::size_t grain : kGrains) {
        if (!grain_fits(grain, n)) continue;
        INFO("grain = " << grain);
        CHECK(weft::parallel_reduce(pool, ints.begin(), ints.end(), std::int64_t{7}, std::plus<>(), grain) ==
              std::accumulate(ints.begin(), ints.end(), std::int64_t{7}));
        // Not commutative: a wrong order of partials gives another product.
        CHECK(weft::parallel_reduce(pool, mats.begin(), mats.end(), Mat{}, kMatMul, grain) ==
              std::accumulate(mats.begin(), mats.end(), Mat{}, kMatMul));
        CHECK(weft::parallel_transform_reduce(
                  pool, ints.begin(), ints.end(), std::int64_t{0}, std::plus<>(),
                  [](std::int64_t x) { return x * x % 1000; },
                  grain) == std::transform_reduce(ints.begin(), ints.end(), std::int64_t{0}, std::plus<>(),
                                                  [](std::int64_t x) { return x * x % 1000; }));
      }
      CHECK(weft::parallel_reduce(pool, ints.begin(), ints.end(), std::int64_t{0}) ==
            std::reduce(ints.begin(), ints.end(), std::int64_t{0}));
      // Strings: quadratic nowhere, but kept to the smaller sizes.
      if (n <= 5000) {
        const auto words = random_words(random, n);
        CHECK(weft::parallel_reduce(pool, words.begin(), words.end(), std::string(">"), kConcat) ==
              std::accumulate(words.begin(), words.end(), std::string(">"), kConcat));
        // transform_reduce into another type than the elements', over a deque (random access, not contiguous).
        const std::deque<std::string> d(words.begin(), words.end());
        CHECK(weft::parallel_transform_reduce(pool, d.begin(), d.end(), std::string(), kConcat,
                                              [](const std::string& w) { return w.substr(0, 1); }) ==
              std::transform_reduce(d.begin(), d.end(), std::string(), kConcat,
                                    [](const std::string& w) { return w.substr(0, 1); }));
      }
    }
  });
}

TEST_CASE("parallel_inclusive_scan and parallel_exclusive_scan give std's scans, in place too") {
  const std::uint64_t seed = seed_for("parallel_scan");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("scan", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t n : sizes_for(workers)) {
      INFO("n = " << n);
      const auto ints = random_ints(random, n);
      const auto mats = random_mats(random, n);
      std::vector<std::int64_t> expected(n), got(n, -1);
      std::vector<Mat> expected_m(n), got_m(n);
      for (const std::size_t grain : kGrains) {
        if (!grain_fits(grain, n)) continue;
        INFO("grain = " << grain);
        std::inclusive_scan(ints.begin(), ints.end(), expected.begin());
        CHECK(weft::parallel_inclusive_scan(pool, ints.begin(), ints.end(), got.begin(), std::plus<>(), grain) ==
              got.end());
        CHECK(got == expected);
        std::exclusive_scan(ints.begin(), ints.end(), expected.begin(), std::int64_t{-3});
        CHECK(weft::parallel_exclusive_scan(pool, ints.begin(), ints.end(), got.begin(), std::int64_t{-3},
                                            std::plus<>(), grain) == got.end());
        CHECK(got == expected);
        // Not commutative.
        std::inclusive_scan(mats.begin(), mats.end(), expected_m.begin(), kMatMul);
        weft::parallel_inclusive_scan(pool, mats.begin(), mats.end(), got_m.begin(), kMatMul, grain);
        CHECK(got_m == expected_m);
        const Mat init{2, 1, 1, 1};
        std::exclusive_scan(mats.begin(), mats.end(), expected_m.begin(), init, kMatMul);
        weft::parallel_exclusive_scan(pool, mats.begin(), mats.end(), got_m.begin(), init, kMatMul, grain);
        CHECK(got_m == expected_m);
        // In place (out == first), both kinds.
        std::vector<std::int64_t> inplace = ints;
        std::inclusive_scan(ints.begin(), ints.end(), expected.begin());
        weft::parallel_inclusive_scan(pool, inplace.begin(), inplace.end(), inplace.begin(), std::plus<>(), grain);
        CHECK(inplace == expected);
        inplace = ints;
        std::exclusive_scan(ints.begin(), ints.end(), expected.begin(), std::int64_t{5});
        weft::parallel_exclusive_scan(pool, inplace.begin(), inplace.end(), inplace.begin(), std::int64_t{5},
                                      std::plus<>(), grain);
        CHECK(inplace == expected);
      }
      if (n <= 5000) {
        const auto words = random_words(random, n);
        std::vector<std::string> want(n), have(n);
        std::exclusive_scan(words.begin(), words.end(), want.begin(), std::string("^"), kConcat);
        weft::parallel_exclusive_scan(pool, words.begin(), words.end(), have.begin(), std::string("^"), kConcat);
        CHECK(have == want);
        std::inclusive_scan(words.begin(), words.end(), want.begin(), kConcat);
        weft::parallel_inclusive_scan(pool, words.begin(), words.end(), have.begin(), kConcat);
        CHECK(have == want);
      }
    }
  });
}

struct Keyed {
  int key;
  int tag;
};

TEST_CASE("parallel_sort gives std::sort's order: random, few distinct keys, sorted, reversed, comparators") {
  const std::uint64_t seed = seed_for("parallel_sort");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("sort", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<std::size_t> sizes = sizes_for(workers);
    sizes.push_back(3 * weft::detail::kSortCutoff + 17);
    for (const std::size_t n : sizes) {
      INFO("n = " << n);
      for (const std::int64_t range : {std::int64_t{1'000'000'000}, std::int64_t{3}, std::int64_t{1}}) {
        INFO("keys in a range of " << range);
        auto v = random_ints(random, n, range);
        auto expected = v;
        std::sort(expected.begin(), expected.end());
        weft::parallel_sort(pool, v.begin(), v.end());
        CHECK(v == expected);
        // Sorted already, and reversed.
        weft::parallel_sort(pool, v.begin(), v.end());
        CHECK(v == expected);
        std::reverse(v.begin(), v.end());
        weft::parallel_sort(pool, v.begin(), v.end());
        CHECK(v == expected);
        weft::parallel_sort(pool, v.begin(), v.end(), std::greater<>());
        CHECK(std::equal(v.begin(), v.end(), expected.rbegin(), expected.rend()));
      }
      // A comparator on a key only: equivalent elements may come in any order (not stable), the rest is
      // std::sort's order, and no element is lost or doubled.
      std::vector<Keyed> items(n);
      for (std::size_t i = 0; i < n; ++i) items[i] = Keyed{static_cast<int>(random() % 50), static_cast<int>(i)};
      const auto by_key = [](const Keyed& x, const Keyed& y) { return x.key < y.key; };
      weft::parallel_sort(pool, items.begin(), items.end(), by_key);
      CHECK(std::is_sorted(items.begin(), items.end(), by_key));
      std::vector<int> tags(n);
      std::transform(items.begin(), items.end(), tags.begin(), [](const Keyed& k) { return k.tag; });
      std::sort(tags.begin(), tags.end());
      for (std::size_t i = 0; i < n; ++i) REQUIRE(tags[i] == static_cast<int>(i));
      // Strings over a deque.
      if (n <= 5000) {
        const auto words = random_words(random, n);
        std::deque<std::string> d(words.begin(), words.end());
        std::vector<std::string> want = words;
        std::sort(want.begin(), want.end());
        weft::parallel_sort(pool, d.begin(), d.end());
        CHECK(std::equal(d.begin(), d.end(), want.begin(), want.end()));
      }
    }
  });
}

TEST_CASE("parallel_invoke calls each callable exactly once, from 1 to 8 of them") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("invoke", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> calls[8] = {};
    const auto f = [&](int i) { return [&calls, i] { calls[i].fetch_add(1); }; };
    weft::parallel_invoke(pool, f(0));
    weft::parallel_invoke(pool, f(0), f(1));
    weft::parallel_invoke(pool, f(0), f(1), f(2));
    weft::parallel_invoke(pool, f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7));
    const int expected[8] = {4, 3, 2, 1, 1, 1, 1, 1};
    for (int i = 0; i < 8; ++i) CHECK(calls[i].load() == expected[i]);
    // Callables are called in place, never copied: a move-only one and a function pointer work.
    auto owned = std::make_unique<int>(5);
    int seen = 0;
    weft::parallel_invoke(
        pool, [&seen, p = std::move(owned)] { seen = *p; }, +[] {});
    CHECK(seen == 5);
  });
}

TEST_CASE("exceptions: the first is rethrown, the pool stays usable") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("exceptions", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<std::int64_t> v(50'000);
    std::iota(v.begin(), v.end(), 0);
    const auto throws_at = [](std::int64_t bad) {
      // Either side: the first element of a block starts its partial and is never op's right-hand side.
      return [bad](std::int64_t acc, std::int64_t x) {
        if (x == bad || acc == bad) throw Thrown("op at " + std::to_string(bad));
        return acc + x;
      };
    };
    for (const std::int64_t bad : {std::int64_t{0}, std::int64_t{25'000}, std::int64_t{49'999}}) {
      INFO("bad = " << bad);
      CHECK_THROWS_AS(static_cast<void>(
                          weft::parallel_reduce(pool, v.begin(), v.end(), std::int64_t{0}, throws_at(bad))),
                      Thrown);
      std::vector<std::int64_t> out(v.size());
      CHECK_THROWS_AS(weft::parallel_inclusive_scan(pool, v.begin(), v.end(), out.begin(), throws_at(bad)), Thrown);
      CHECK_THROWS_AS(weft::parallel_exclusive_scan(pool, v.begin(), v.end(), out.begin(), std::int64_t{0},
                                                    throws_at(bad)),
                      Thrown);
      std::vector<std::int64_t> w(v.rbegin(), v.rend());
      CHECK_THROWS_AS(weft::parallel_sort(pool, w.begin(), w.end(),
                                          [bad](std::int64_t x, std::int64_t y) {
                                            if (x == bad || y == bad) throw Thrown("comp");
                                            return x < y;
                                          }),
                      Thrown);
      std::sort(w.begin(), w.end());  // the order is unspecified after a throw, but every element is there
      CHECK(w == v);
    }
    // Every piece throws: exactly one exception comes out.
    CHECK_THROWS_AS(static_cast<void>(
                        weft::parallel_transform_reduce(pool, v.begin(), v.end(), 0, std::plus<>(),
                                                        [](std::int64_t) -> int { throw Thrown("all"); })),
                    Thrown);
    CHECK_THROWS_WITH_AS(weft::parallel_invoke(
                             pool, [] {}, [] { throw Thrown("second"); }, [] {}),
                         "second", Thrown);
    CHECK_THROWS_AS(weft::parallel_invoke(
                        pool, [] { throw Thrown("a"); }, [] { throw Thrown("b"); }),
                    Thrown);
    // Still usable.
    CHECK(weft::parallel_reduce(pool, v.begin(), v.end(), std::int64_t{0}) == 49'999LL * 50'000 / 2);
    // A reversed range is refused, naming the call.
    CHECK_THROWS_WITH_AS(static_cast<void>(weft::parallel_reduce(pool, v.end(), v.begin(), 0)),
                         doctest::Contains("weft::parallel_reduce: the iterator range is reversed"),
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(weft::parallel_sort(pool, v.end(), v.begin()), doctest::Contains("weft::parallel_sort"),
                         std::invalid_argument);
    // An empty std::function is refused at the call.
    CHECK_THROWS_WITH_AS(weft::parallel_invoke(pool, std::function<void()>(), [] {}),
                         doctest::Contains("weft::parallel_invoke: the callable is empty"), std::invalid_argument);
  });
}

TEST_CASE("nested: inside pool tasks, inside parallel_for, inside each other") {
  const std::uint64_t seed = seed_for("algorithms nested");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("nested", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kRows = 12;
    const std::size_t n = std::max<std::size_t>(large_size() / kRows, 3000);
    std::vector<std::vector<std::int64_t>> rows(kRows);
    for (auto& row : rows) row = random_ints(random, n);
    std::vector<std::int64_t> sums(kRows), want(kRows);
    for (int r = 0; r < kRows; ++r) want[r] = std::accumulate(rows[r].begin(), rows[r].end(), std::int64_t{0});
    // Every worker may be inside a blocking algorithm at once.
    for (int r = 0; r < kRows; ++r) {
      pool.post([&, r] {
        auto& row = rows[static_cast<std::size_t>(r)];
        sums[static_cast<std::size_t>(r)] = weft::parallel_reduce(pool, row.begin(), row.end(), std::int64_t{0});
        std::vector<std::int64_t> scanned(row.size());
        weft::parallel_inclusive_scan(pool, row.begin(), row.end(), scanned.begin());
        CHECK(scanned.back() == sums[static_cast<std::size_t>(r)]);
        weft::parallel_sort(pool, row.begin(), row.end());
      });
    }
    pool.wait_idle();
    CHECK(sums == want);
    for (const auto& row : rows) CHECK(std::is_sorted(row.begin(), row.end()));
    // Inside parallel_for and parallel_invoke.
    std::vector<std::int64_t> totals(kRows);
    weft::parallel_for(pool, 0, kRows, [&](int r) {
      weft::parallel_invoke(
          pool, [&] { totals[r] = weft::parallel_reduce(pool, rows[r].begin(), rows[r].end(), std::int64_t{0}); },
          [&] { CHECK(std::is_sorted(rows[r].begin(), rows[r].end())); });
    });
    CHECK(totals == want);
  });
}

// Every algorithm (blocking and TaskScope forms) on a pool whose fibers have the smallest stack PoolOptions
// accepts, called from inside tasks (so their waits suspend there) and from outside: weft's own algorithms must
// fit the documented minimum in every build, ASan's included (its frames are several times larger).
TEST_CASE("every algorithm fits in the smallest fiber stack a pool accepts") {
  const std::uint64_t seed = seed_for("algorithms smallest stack");
  std::mt19937_64 random(seed);
  for (const unsigned workers : {1u, 2u}) {
    const Watchdog watchdog(named("smallest stack", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .fiber_stack_size = weft::PoolOptions::min_fiber_stack_size}};
    const std::size_t n = large_size();
    // Counts what went wrong rather than CHECKing inside tasks: the test framework's own frames are not what is
    // measured here.
    std::atomic<int> wrong{0};
    const auto expect = [&wrong](bool ok) {
      if (!ok) wrong.fetch_add(1);
    };
    const auto run_all = [&pool, &expect, n](std::uint64_t task_seed) {
      std::mt19937_64 rng(task_seed);
      auto ints = random_ints(rng, n);
      auto want = ints;
      std::sort(want.begin(), want.end());
      const std::int64_t sum = std::accumulate(ints.begin(), ints.end(), std::int64_t{0});
      expect(weft::parallel_reduce(pool, ints.begin(), ints.end(), std::int64_t{0}) == sum);
      expect(weft::parallel_transform_reduce(pool, ints.begin(), ints.end(), std::int64_t{0}, std::plus<>(),
                                             [](std::int64_t x) { return x; }) == sum);
      std::vector<std::int64_t> scanned(n);
      weft::parallel_inclusive_scan(pool, ints.begin(), ints.end(), scanned.begin());
      expect((n == 0 || scanned.back() == sum));
      weft::parallel_exclusive_scan(pool, ints.begin(), ints.end(), scanned.begin(), std::int64_t{0});
      weft::parallel_sort(pool, ints.begin(), ints.end());
      expect(ints == want);
      weft::parallel_sort(pool, ints.begin(), ints.end(), std::greater<>());
      expect(std::equal(ints.begin(), ints.end(), want.rbegin(), want.rend()));
      const auto words = random_words(rng, 5000);
      std::deque<std::string> d(words.begin(), words.end());
      weft::parallel_sort(pool, d.begin(), d.end());
      expect(std::is_sorted(d.begin(), d.end()));
      std::atomic<int> calls{0};
      weft::parallel_invoke(
          pool, [&] { ++calls; }, [&] { ++calls; }, [&] { ++calls; });
      expect(calls.load() == 3);
      std::vector<std::int64_t> doubled(n);
      weft::parallel_for(pool, std::size_t{0}, n, [&](std::size_t i) { doubled[i] = 2 * ints[i]; });
      expect((n == 0 || doubled.front() == 2 * ints.front()));
      // The TaskScope forms, as jobs of one graph.
      weft::TaskScope scope{pool};
      auto to_sort = random_ints(rng, n);
      const auto to_read = to_sort;  // read by two jobs while a third sorts the other copy
      std::vector<std::int64_t> inclusive(n);
      weft::Job<std::int64_t> total = scope.parallel_reduce(to_read.begin(), to_read.end(), std::int64_t{0});
      weft::Job<void> inc = scope.parallel_inclusive_scan(to_read.begin(), to_read.end(), inclusive.begin());
      weft::Job<void> sorted = scope.parallel_sort(to_sort.begin(), to_sort.end());
      scope.run_and_wait();
      expect(std::is_sorted(to_sort.begin(), to_sort.end()));
      expect((n == 0 || inclusive.back() == total.get()));
      (void)inc;
      (void)sorted;
    };
    run_all(seed);                                                                                 // from outside
    for (std::uint64_t t = 0; t < 2 * workers; ++t) pool.post([&, t] { run_all(seed + 1 + t); });  // on fibers
    pool.wait_idle();
    CHECK(wrong.load() == 0);
    CHECK(pool.stats().errors == 0);
  }
}

}  // namespace
