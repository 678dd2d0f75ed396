// The standalone, blocking weft::parallel_for(pool, first, last, f, grain): from an outside thread, nested
// inside pool tasks and scope jobs, exceptions, mixed integer types, chunk bodies.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "weft/algorithms.hpp"

namespace {

using namespace weft::test;

struct LoopFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST_CASE("from an outside thread: every index and element exactly once") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("outside", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t grain : {std::size_t{0}, std::size_t{1}, std::size_t{100}, std::size_t{1} << 30}) {
      INFO("grain " << grain);
      RunCounts runs(20011);
      weft::parallel_for(
          pool, 0, 20011, [&](int i) { runs.ran(static_cast<std::size_t>(i)); }, grain);
      check_exactly_once(runs);
      std::deque<int> d(3001, 1);
      weft::parallel_for(
          pool, d.begin(), d.end(), [](int& x) { x += 1; }, grain);
      CHECK(std::count(d.begin(), d.end(), 2) == 3001);
    }
    int calls = 0;
    weft::parallel_for(pool, 3, 3, [&](int) { ++calls; });   // empty
    weft::parallel_for(pool, 3, -3, [&](int) { ++calls; });  // last < first: empty
    weft::parallel_for(pool, 7, 8, [&](int i) { calls += i; });
    CHECK(calls == 7);
  });
}

TEST_CASE("mixed integer types and chunk bodies") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("mixed", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<int> v(5000, 0);
    weft::parallel_for(pool, 0, v.size(), [&](std::size_t i) { v[i] = 1; });  // int and size_t
    CHECK(std::count(v.begin(), v.end(), 1) == 5000);
    std::atomic<std::int64_t> covered{0};
    weft::parallel_for(
        pool, std::int64_t{-100}, std::int64_t{100000},
        [&](std::int64_t lo, std::int64_t hi) {
          CHECK(lo < hi);
          covered.fetch_add(hi - lo);
        },
        333);
    CHECK(covered.load() == 100100);
  });
}

void add_to_element(int& x) { x += 1; }

TEST_CASE("over iterators f gets the elements: of their own type, generic, a function; integers of their type") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  std::vector<int> v(1000, 1);
  weft::parallel_for(pool, v.begin(), v.end(), add_to_element);
  weft::parallel_for(pool, v.begin(), v.end(), &add_to_element);
  weft::parallel_for(pool, v.begin(), v.end(), [](auto& x) { x += 1; });
  std::atomic<long> sum{0};
  weft::parallel_for(pool, v.begin(), v.end(), [&](int x) { sum.fetch_add(x); });           // by value
  weft::parallel_for(pool, v.cbegin(), v.cend(), [&](const int& x) { sum.fetch_add(x); });  // by const&
  CHECK(sum.load() == 2 * 4 * 1000);
  // Elements that are themselves std::size_t, taken as std::size_t: the elements, as the body says.
  std::vector<std::size_t> picks(100, 7);
  std::atomic<std::size_t> picked{0};
  weft::parallel_for(pool, picks.begin(), picks.end(), [&](std::size_t p) { picked.fetch_add(p); });
  CHECK(picked.load() == 700);
  // The same in a scope, and a body of another class type the elements convert to.
  weft::TaskScope scope{pool};
  std::vector<std::string> words(50, "weft");
  std::atomic<std::size_t> letters{0};
  scope.parallel_for(words.begin(), words.end(), [&](std::string_view w) { letters.fetch_add(w.size()); });
  scope.parallel_for(picks.begin(), picks.end(), [&](const std::size_t& p) { picked.fetch_add(p); });
  scope.run_and_wait();
  CHECK(letters.load() == 200);
  CHECK(picked.load() == 1400);
  CHECK(std::count(v.begin(), v.end(), 4) == 1000);
}

TEST_CASE("nested: inside pool tasks, inside scope jobs, and inside another parallel_for") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};

    // Inside tasks posted to the pool: every worker may be inside a blocking loop at once.
    constexpr int kOuter = 16;
    std::vector<std::vector<int>> rows(kOuter, std::vector<int>(2000, 0));
    for (int r = 0; r < kOuter; ++r) {
      pool.post([&pool, &rows, r] {
        weft::parallel_for(pool, rows[static_cast<std::size_t>(r)].begin(), rows[static_cast<std::size_t>(r)].end(),
                           [](int& x) { x += 1; });
      });
    }
    pool.wait_idle();
    for (const auto& row : rows) CHECK(std::count(row.begin(), row.end(), 1) == 2000);

    // Inside a parallel_for: a 64 x 500 grid, each cell once.
    RunCounts cells(64 * 500);
    weft::parallel_for(pool, 0, 64, [&](int i) {
      weft::parallel_for(pool, 0, 500, [&](int j) { cells.ran(static_cast<std::size_t>(i * 500 + j)); });
    });
    check_exactly_once(cells);

    // Inside scope jobs.
    weft::TaskScope scope{pool};
    std::vector<long> data(10000, 1);
    auto sum = scope.submit([&] {
      std::atomic<long> total{0};
      weft::parallel_for(pool, data.begin(), data.end(), [&](long& x) { total.fetch_add(x); });
      return total.load();
    });
    auto loop = scope.parallel_for(0, 8, [&](int) { weft::parallel_for(pool, 0, 100, [](int) {}); });
    scope.run_and_wait();
    CHECK(sum.get() == 10000);
    loop.get();
  });
}

TEST_CASE("an exception from f is rethrown; later chunks may be skipped") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("exception", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::exception_ptr error;
    try {
      weft::parallel_for(pool, 0, 100000, [](int i) {
        if (i == 77777) throw LoopFailure("at 77777");
      });
    } catch (...) {
      error = std::current_exception();
    }
    // The worker that ended the run may hold the run's last reference to the exception for a moment longer:
    // safe (exception_ptr is reference counted) but invisible to TSan, since libstdc++'s count is not
    // instrumented; reading what() only after the pool is idle keeps TSan from a false report.
    pool.wait_idle();
    REQUIRE(error != nullptr);
    CHECK_THROWS_WITH_AS(std::rethrow_exception(error), "at 77777", LoopFailure);
    // Inline path (one index) throws straight through too.
    CHECK_THROWS_AS(weft::parallel_for(pool, 0, 1, [](int) { throw LoopFailure("single"); }), LoopFailure);
    // The pool is fine afterwards.
    std::atomic<int> ran{0};
    weft::parallel_for(pool, 0, 1000, [&](int) { ran.fetch_add(1); });
    CHECK(ran.load() == 1000);
  });
}

// Automatic mode cuts the range into a few pieces up front; a piece already running must still share its
// rest with workers that ran dry, or a costly tail runs on one worker while the others wait (oneTBB's
// auto_partitioner shares it too). Here the last 128 of 4096 indices cost 1 ms each and the rest almost
// nothing: without lazy splitting the tail sits inside one piece and runs on one thread.
TEST_CASE("automatic grain: a piece that is running shares a costly tail with idle workers") {
  for (const unsigned workers : {2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("costly tail", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kCount = 4096;
    constexpr int kTail = 128;
    std::mutex mutex;
    std::set<std::thread::id> tail_threads;
    RunCounts runs(kCount);
    weft::parallel_for(pool, 0, kCount, [&](int i) {
      runs.ran(static_cast<std::size_t>(i));
      if (i < kCount - kTail) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const std::lock_guard lock(mutex);
      tail_threads.insert(std::this_thread::get_id());
    });
    check_exactly_once(runs);
    CHECK(tail_threads.size() >= 2);
  }
}

// The calling thread starts a loop itself and ends it there if it is predicted to take less than the inline
// budget (detail::kInlineBudget); the rest is split over the pool. A loop of 1 ms indices is never that small,
// so some of it runs on the pool's workers; every index runs once whichever side of the boundary it falls on.
TEST_CASE("the caller starts the loop; a loop too long for it alone is shared with the workers") {
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("inline prefix", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kCount = 32;
    RunCounts runs(kCount);
    std::atomic<int> on_workers{0};
    weft::parallel_for(pool, 0, kCount, [&](int i) {
      runs.ran(static_cast<std::size_t>(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (pool.current_worker()) on_workers.fetch_add(1);
    });
    check_exactly_once(runs);
    CHECK(on_workers.load() > 0);
    // Cheap first, costly from a point on (random): the boundary between what the caller ran and what it shared
    // falls anywhere; nothing is lost or run twice.
    std::mt19937_64 rng(seed_for("inline prefix boundary"));
    for (int round = 0; round < 20; ++round) {
      const auto n = static_cast<int>(1 + rng() % 5000);
      const auto costly_from = static_cast<int>(rng() % static_cast<std::uint64_t>(n));
      RunCounts each(static_cast<std::size_t>(n));
      weft::parallel_for(pool, 0, n, [&](int i) {
        each.ran(static_cast<std::size_t>(i));
        if (i >= costly_from) std::this_thread::sleep_for(std::chrono::microseconds(5));
      });
      check_exactly_once(each);
    }
    // What the caller runs itself runs as a task of the pool, as every chunk does: it has a thread index.
    std::atomic<int> without_index{0};
    for (const int n : {1, 2, 64, 1000}) {
      weft::parallel_for(pool, 0, n, [&](int) {
        if (!pool.current_thread_index()) without_index.fetch_add(1);
      });
    }
    CHECK(without_index.load() == 0);
    // An exception thrown by the caller's own first chunk comes straight through.
    CHECK_THROWS_WITH_AS(weft::parallel_for(pool, 0, 100,
                                            [](int i) {
                                              if (i == 0) throw LoopFailure("first");
                                            }),
                         "first", LoopFailure);
  }
}

// The caller reads the clock only every few blocks (detail::kMaxInlineStride, 8) while a loop looks small, so a
// costly tail after a prefix of almost free indices can run at most that many blocks here before the rest is
// shared. 2 workers: 128 blocks of 16 indices, small enough for the caller to start on it alone; the last 16
// blocks cost 100 us an index. What the caller runs of the loop it runs before the split (the split's join
// runs no piece on it), so at most half the tail. Were the looks to space out without bound, the caller would
// run 15 of the 16 costly blocks. Three rounds: the first may stop early on cold code.
TEST_CASE("a costly tail after an almost free prefix is shared, not run by the caller alone") {
  const Watchdog watchdog("tail after a free prefix", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  constexpr int kCount = 2048;
  constexpr int kTail = 16 * 16;
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    std::vector<std::uint8_t> hits(kCount, 0);  // each index written by the one thread that runs it
    std::atomic<int> tail_on_caller{0};
    std::mutex mutex;
    std::set<std::thread::id> tail_threads;
    weft::parallel_for(pool, 0, kCount, [&](int i) {
      ++hits[static_cast<std::size_t>(i)];
      if (i < kCount - kTail) return;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (std::this_thread::get_id() == caller) tail_on_caller.fetch_add(1);
      const std::lock_guard lock(mutex);
      tail_threads.insert(std::this_thread::get_id());
    });
    CHECK(std::count(hits.begin(), hits.end(), std::uint8_t{1}) == kCount);
    CHECK(tail_on_caller.load() <= kTail / 2);
    CHECK(tail_threads.size() >= 2);
  }
}

// A loop whose rest is predicted to take at least detail::kLongRest a worker, or a reduction or scan of at least
// detail::kLongShare elements a worker: an outside caller then sleeps at once in the join instead of looking for the
// end first. Random costs (so the pieces are stolen and split at random points), nesting, an exception and a
// cancelled scope loop: every index still runs exactly once, or the error comes back, and nothing hangs.
TEST_CASE("long loops and reductions from an outside thread: the caller sleeps at once, nothing is lost") {
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("long loops", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::mt19937_64 rng(seed_for("long loops"));
    for (int round = 0; round < 2; ++round) {
      const auto n = static_cast<int>(2000 + rng() % 3000);
      std::vector<unsigned> cost(static_cast<std::size_t>(n));
      for (auto& c : cost) c = static_cast<unsigned>(rng() % 2000);
      RunCounts runs(static_cast<std::size_t>(n));
      weft::parallel_for(pool, 0, n, [&](int i) {
        runs.ran(static_cast<std::size_t>(i));
        busy_work(cost[static_cast<std::size_t>(i)]);
      });
      check_exactly_once(runs);
    }
    // Nested: each outer index runs a long inner loop (the inner callers are workers, or the outside caller).
    RunCounts cells(8 * 600);
    weft::parallel_for(pool, 0, 8, [&](int i) {
      weft::parallel_for(pool, 0, 600, [&](int j) {
        cells.ran(static_cast<std::size_t>(i * 600 + j));
        busy_work(1000);
      });
    });
    check_exactly_once(cells);
    // An exception in the long rest comes back; the pool goes on.
    std::exception_ptr error;
    try {
      weft::parallel_for(pool, 0, 4000, [](int i) {
        busy_work(1000);
        if (i == 3333) throw LoopFailure("at 3333");
      });
    } catch (...) {
      error = std::current_exception();
    }
    pool.wait_idle();  // see "an exception from f is rethrown"
    REQUIRE(error != nullptr);
    CHECK_THROWS_WITH_AS(std::rethrow_exception(error), "at 3333", LoopFailure);
    // A cancelled scope loop ends, its job reporting that it did not complete.
    {
      weft::TaskScope scope{pool};
      std::atomic<int> ran{0};
      auto loop = scope.parallel_for(0, 4000, [&](int) {
        if (ran.fetch_add(1) == 100) scope.cancel();
        busy_work(1000);
      });
      CHECK(scope.run_and_wait() == weft::RunStatus::Cancelled);
      CHECK(ran.load() <= 4000);
      CHECK_THROWS(loop.get());  // cancelled before every index ran
    }
    // Reductions and scans long enough to count as long (kLongShare elements a worker and more).
    const std::size_t size = std::size_t{1} << 21;
    std::vector<std::int32_t> v(workers == 4 ? size * 2 : size);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(i % 7);
    const std::int64_t expected = std::accumulate(v.begin(), v.end(), std::int64_t{0});
    CHECK(weft::parallel_reduce(pool, v.begin(), v.end(), std::int64_t{0}) == expected);
    std::vector<std::int64_t> prefix(v.size());
    weft::parallel_inclusive_scan(pool, v.begin(), v.end(), prefix.begin(), std::plus<std::int64_t>());
    CHECK(prefix.back() == expected);
    CHECK(prefix[v.size() / 2] ==
          std::accumulate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2) + 1, std::int64_t{0}));
  }
}

TEST_CASE("stress: many small loops back to back") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("many loops", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const auto loops = stress_count(2000);
    std::atomic<std::uint64_t> total{0};
    for (std::uint64_t k = 0; k < loops; ++k) {
      weft::parallel_for(pool, 0, static_cast<int>(k % 64), [&](int) { total.fetch_add(1); });
    }
    std::uint64_t expected = 0;
    for (std::uint64_t k = 0; k < loops; ++k) expected += k % 64;
    CHECK(total.load() == expected);
  });
}

}  // namespace
