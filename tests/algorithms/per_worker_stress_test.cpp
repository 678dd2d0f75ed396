// weft::PerWorker under contention: outside threads run loops on the pool (their share runs on them, with an
// outside slot's index, or on the workers), post tasks that run loops nested on the workers, and add to their
// own outside values between the loops, all at once. Every increment is counted once: the combined sum is exact
// (no lost update, no value shared by two threads at once: ThreadSanitizer would see the plain writes race) and
// every index ran exactly once.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "tests/algorithms/algorithms_test_support.hpp"
#include "weft/per_worker.hpp"

namespace {

using namespace weft::test;

TEST_CASE("PerWorker: no lost update from workers, waiting outside threads and plain outside threads") {
  const std::size_t per_thread = stress_count(weft::test::reduced_runs() ? 10'000
                                              : kAddressSanitizer        ? 50'000
                                                                         : 200'000);
  constexpr unsigned kOutside = 4;
  constexpr int kRounds = 3;
  // What an outside thread adds outside any task: more than all the loops' increments together.
  constexpr std::uint64_t kOutsideMark = std::uint64_t{1} << 40;
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("per worker stress", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::PerWorker<std::uint64_t> sums(pool);
    RunCounts runs(kOutside * per_thread * 2);
    for (int round = 0; round < kRounds; ++round) {
      sums.clear();
      std::vector<std::thread> threads;
      std::atomic<std::size_t> posted_done{0};
      for (unsigned t = 0; t < kOutside; ++t) {
        threads.emplace_back([&, t] {
          const std::size_t base = t * per_thread * 2;
          // A loop run from this thread: its start on this thread (an outside slot's index), the rest anywhere.
          weft::parallel_for(pool, std::size_t{0}, per_thread, [&](std::size_t i) {
            sums.local() += 1;
            if (round == 0) runs.ran(base + i);
          });
          sums.local() += kOutsideMark;  // outside any task: this thread's own value
          // A task that runs a nested loop on the workers.
          pool.post([&, base] {
            weft::parallel_for(
                pool, per_thread, 2 * per_thread,
                [&](std::size_t i) {
                  sums.local() += 1;
                  if (round == 0) runs.ran(base + i);
                },
                std::size_t{64});
            posted_done.fetch_add(1);
          });
        });
      }
      for (std::thread& t : threads) t.join();
      pool.wait_idle();
      CHECK(posted_done.load() == kOutside);
      CHECK(sums.combine(std::plus<>()) == kOutside * (2 * per_thread + kOutsideMark));
      std::uint64_t outside_values = 0;
      sums.combine_each([&](std::uint64_t v) { outside_values += v >= kOutsideMark ? 1 : 0; });
      CHECK(outside_values == kOutside);  // one value per outside thread, never merged with a slot's
    }
    check_exactly_once(runs);
  }
}

}  // namespace
