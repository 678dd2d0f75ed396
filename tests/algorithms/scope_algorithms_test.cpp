// The TaskScope forms of the parallel algorithms: the same results as std's sequential algorithms, as jobs whose
// Job carries the result and composes with then() and when_all(); exceptions failing the job and the run;
// options; nested blocking algorithms inside scope jobs.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/algorithms/algorithms_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("scope jobs give std's results and compose with then() and when_all()") {
  const std::uint64_t seed = seed_for("scope algorithms");
  std::mt19937_64 random(seed);
  for_each_scope_worker_count([&](unsigned workers) {
    const Watchdog watchdog(named("scope algorithms", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t n : sizes_for(workers)) {
      INFO("n = " << n);
      const auto ints = random_ints(random, n);
      const auto mats = random_mats(random, n);
      auto to_sort = random_ints(random, n, 1000);
      std::vector<std::int64_t> inclusive(n), exclusive(n);
      std::vector<Mat> mat_scan(n);
      int left = 0, right = 0;

      weft::TaskScope scope{pool};
      weft::Job<std::int64_t> sum = scope.parallel_reduce(ints.begin(), ints.end(), std::int64_t{1});
      weft::Job<Mat> product = scope.parallel_reduce(mats.begin(), mats.end(), Mat{}, kMatMul, {.name = "product"});
      weft::Job<std::int64_t> squares = scope.parallel_transform_reduce(ints.begin(), ints.end(), std::int64_t{0},
                                                                        std::plus<>(),
                                                                        [](std::int64_t x) { return x * x % 1000; },
                                                                        {.grain = 7});
      weft::Job<void> inc = scope.parallel_inclusive_scan(ints.begin(), ints.end(), inclusive.begin());
      weft::Job<void> exc = scope.parallel_exclusive_scan(ints.begin(), ints.end(), exclusive.begin(), std::int64_t{-1},
                                                          std::plus<>(), {.concurrency = 2});
      weft::Job<void> mscan = scope.parallel_inclusive_scan(mats.begin(), mats.end(), mat_scan.begin(), kMatMul);
      weft::Job<void> sorted = scope.parallel_sort(to_sort.begin(), to_sort.end(), std::greater<>());
      weft::Job<void> both = scope.parallel_invoke([&] { left = 1; }, [&] { right = 2; });
      // Composition: then() on a reduce's value, then() after a sort, when_all over scans.
      weft::Job<std::int64_t> twice = scope.then(sum, [](std::int64_t s) { return 2 * s; });
      weft::Job<bool> checked_order = scope.then(sorted, [&] {
        return std::is_sorted(to_sort.begin(), to_sort.end(), std::greater<>());
      });
      weft::Job<std::int64_t> last_prefix = scope.when_all({inc, exc}, [&] { return n ? inclusive.back() : 0; });
      weft::Job<int> invoked = scope.then(both, [&] { return left + right; });
      scope.run_and_wait();

      const std::int64_t want = std::accumulate(ints.begin(), ints.end(), std::int64_t{1});
      CHECK(sum.get() == want);
      CHECK(twice.get() == 2 * want);
      CHECK(product.get() == std::accumulate(mats.begin(), mats.end(), Mat{}, kMatMul));
      CHECK(squares.get() == std::transform_reduce(ints.begin(), ints.end(), std::int64_t{0}, std::plus<>(),
                                                   [](std::int64_t x) { return x * x % 1000; }));
      std::vector<std::int64_t> want_scan(n);
      std::inclusive_scan(ints.begin(), ints.end(), want_scan.begin());
      CHECK(inclusive == want_scan);
      CHECK(last_prefix.get() == (n ? want_scan.back() : 0));
      std::exclusive_scan(ints.begin(), ints.end(), want_scan.begin(), std::int64_t{-1});
      CHECK(exclusive == want_scan);
      std::vector<Mat> want_mats(n);
      std::inclusive_scan(mats.begin(), mats.end(), want_mats.begin(), kMatMul);
      CHECK(mat_scan == want_mats);
      CHECK(checked_order.get());
      CHECK(invoked.get() == 3);
      CHECK(product.name() == "product");
      mscan.get();
    }
  });
}

TEST_CASE("scope jobs: a job may feed an algorithm through then(), and an algorithm run nested in a job") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("scope compose", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const std::size_t n = large_size();
    std::vector<std::int64_t> data;
    weft::TaskScope scope{pool};
    // A job fills the data; the next job runs blocking algorithms on it (nested in a job: waits run other tasks).
    auto filled = scope.submit([&] {
      data.resize(n);
      std::iota(data.rbegin(), data.rend(), std::int64_t{0});
      return n;
    });
    auto total = scope.then(filled, [&](std::size_t) {
      weft::parallel_sort(pool, data.begin(), data.end());
      return weft::parallel_reduce(pool, data.begin(), data.end(), std::int64_t{0});
    });
    scope.run_and_wait();
    CHECK(total.get() == static_cast<std::int64_t>(n) * static_cast<std::int64_t>(n - 1) / 2);
    CHECK(std::is_sorted(data.begin(), data.end()));
  });
}

TEST_CASE("weft::after: the algorithms start after their dependencies; a job fills the range, the algorithm uses it") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("scope after", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const std::size_t n = large_size();
    // The iterators are taken when the jobs are added: the fill job writes the elements, never reallocates.
    std::vector<std::int64_t> data(n), scanned(n), excl(n), sorted(n);
    std::vector<Mat> mats(n);
    int left = 0, right = 0;
    weft::TaskScope scope{pool};
    auto fill = scope.submit([&] {
      std::iota(data.rbegin(), data.rend(), std::int64_t{0});  // n-1, ..., 1, 0
      std::copy(data.begin(), data.end(), sorted.begin());
      std::fill(mats.begin(), mats.end(), Mat{1, 1, 0, 1});
    });
    auto other = scope.submit([] { return 1; });
    const std::vector<weft::AnyJob> deps{fill, other};
    auto total = scope.parallel_reduce(weft::after(fill), data.begin(), data.end(), std::int64_t{0});
    auto product = scope.parallel_reduce(weft::after(deps), mats.begin(), mats.end(), Mat{}, kMatMul);
    auto odd = scope.parallel_transform_reduce(weft::after(fill, other), data.begin(), data.end(), std::int64_t{0},
                                               std::plus<>(), [](std::int64_t x) { return x % 2; });
    scope.parallel_inclusive_scan(weft::after(fill), data.begin(), data.end(), scanned.begin());
    scope.parallel_exclusive_scan(weft::after(fill), data.begin(), data.end(), excl.begin(), std::int64_t{0},
                                  std::plus<>(), {.name = "offsets", .grain = 512});
    auto sort = scope.parallel_sort(weft::after(fill), sorted.begin(), sorted.end());
    auto pair = scope.parallel_invoke(
        weft::after(sort), {.name = "pair"}, [&] { left = sorted.front() == 0; },
        [&] { right = std::is_sorted(sorted.begin(), sorted.end()); });
    scope.run_and_wait();
    const auto m = static_cast<std::int64_t>(n);
    CHECK(total.get() == m * (m - 1) / 2);
    CHECK(product.get() == Mat{1, static_cast<std::uint64_t>(n), 0, 1});
    CHECK(odd.get() == m / 2);
    CHECK(scanned.back() == m * (m - 1) / 2);
    CHECK(excl.front() == 0);
    CHECK(excl.back() == m * (m - 1) / 2);  // the last element is 0
    CHECK(left == 1);
    CHECK(right == 1);
    pair.get();
    // A dependency of another scope is refused, naming the call.
    weft::TaskScope other_scope{pool};
    auto stranger = other_scope.submit([] {});
    CHECK_THROWS_WITH_AS(other_scope.parallel_sort(weft::after(fill), sorted.begin(), sorted.end()),
                         doctest::Contains("weft::TaskScope::parallel_sort: job"), weft::invalid_graph);
    other_scope.run_and_wait();
    stranger.get();
  });
}

TEST_CASE("scope jobs: a callable's exception fails the job and the run; later jobs are cancelled") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("scope errors", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<std::int64_t> v(20'000);
    std::iota(v.begin(), v.end(), 0);
    {
      weft::TaskScope scope{pool};
      auto bad = scope.parallel_reduce(v.begin(), v.end(), std::int64_t{0}, [](std::int64_t a, std::int64_t b) {
        if (b == 12'345 || a == 12'345) throw Thrown("reduce");
        return a + b;
      });
      auto after = scope.then(bad, [](std::int64_t s) { return s; });
      CHECK_THROWS_WITH_AS(scope.run_and_wait(), "reduce", Thrown);
      CHECK_THROWS_WITH_AS(static_cast<void>(bad.get()), "reduce", Thrown);
      CHECK_THROWS_AS(static_cast<void>(after.get()), weft::job_cancelled);
    }
    {
      weft::TaskScope scope{pool};
      std::vector<std::int64_t> out(v.size());
      auto scan = scope.parallel_exclusive_scan(v.begin(), v.end(), out.begin(), std::int64_t{0},
                                                [](std::int64_t a, std::int64_t b) {
                                                  if (b == 19'999) throw Thrown("scan");
                                                  return a + b;
                                                });
      CHECK_THROWS_WITH_AS(scope.run_and_wait(), "scan", Thrown);
      CHECK_THROWS_WITH_AS(scan.get(), "scan", Thrown);
    }
    {
      weft::TaskScope scope{pool};
      std::vector<std::int64_t> w(v.rbegin(), v.rend());
      auto sort = scope.parallel_sort(w.begin(), w.end(), [](std::int64_t x, std::int64_t y) {
        if (x == 7 || y == 7) throw Thrown("sort");
        return x < y;
      });
      CHECK_THROWS_WITH_AS(scope.run_and_wait(), "sort", Thrown);
      CHECK_THROWS_WITH_AS(sort.get(), "sort", Thrown);
    }
    {
      weft::TaskScope scope{pool};
      auto inv = scope.parallel_invoke(
          {.name = "pair"}, [] {}, [] { throw Thrown("invoke"); });
      CHECK_THROWS_WITH_AS(scope.run_and_wait(), "invoke", Thrown);
      CHECK_THROWS_WITH_AS(inv.get(), "invoke", Thrown);
      CHECK(inv.name() == "pair");
    }
    {
      // An earlier job fails: the algorithm job never runs and reads as cancelled.
      weft::TaskScope scope{pool};
      auto first = scope.submit([]() -> int { throw Thrown("first"); });
      auto gated = scope.then(first, [] {});
      static_cast<void>(gated);
      auto sum = scope.parallel_reduce(v.begin(), v.end(), std::int64_t{0});
      CHECK_THROWS_WITH_AS(scope.run_and_wait(), "first", Thrown);
      // sum may have run or been skipped (it does not depend on first); if it ran, it is right.
      if (sum.ready()) CHECK(sum.get() == 19'999LL * 20'000 / 2);
    }
  });
}

TEST_CASE("scope jobs: bad arguments are refused at the call, naming it") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskScope scope{pool};
  std::vector<int> v(100, 1);
  CHECK_THROWS_WITH_AS(scope.parallel_sort(v.begin(), v.end(), std::less<>(), {.concurrency = 2}),
                       doctest::Contains("weft::TaskScope::parallel_sort: job 'job 0': NodeOptions::concurrency = 2"),
                       weft::invalid_option);
  CHECK_THROWS_WITH_AS(scope.parallel_invoke(
                           {.concurrency = 1}, [] {}, [] {}),
                       doctest::Contains("weft::TaskScope::parallel_invoke"), weft::invalid_option);
  CHECK_THROWS_WITH_AS(scope.parallel_reduce(v.end(), v.begin(), 0),
                       doctest::Contains("weft::TaskScope::parallel_reduce: the iterator range is reversed"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(scope.parallel_invoke([] {}, std::function<void()>()),
                       doctest::Contains("weft::TaskScope::parallel_invoke: the callable is empty"),
                       std::invalid_argument);
  CHECK(scope.size() == 0);
  auto ok = scope.parallel_reduce(v.begin(), v.end(), 0, std::plus<>(), {.concurrency = 1});
  scope.run_and_wait();
  CHECK(ok.get() == 100);
  CHECK_THROWS_AS(scope.parallel_reduce(v.begin(), v.end(), 0), weft::graph_busy);
}

}  // namespace
