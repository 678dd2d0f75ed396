// weft::TaskGroup under load: every child runs exactly once when children are run into one group from several
// threads at once and from the children themselves, and in recursive trees of groups; on 1, 2, 4 and 8 workers,
// with and without fibers. Built under ThreadSanitizer as well (-Db_sanitize=thread): the counts and the children's
// writes must be ordered before the wait returns.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/pool.hpp"
#include "weft/task_group.hpp"

namespace {

using weft::test::check_exactly_once;
using weft::test::kThreadSanitizer;
using weft::test::named;
using weft::test::patience;
using weft::test::RunCounts;
using weft::test::stress_count;
using weft::test::Watchdog;

std::vector<bool> stress_fiber_modes() {
  if (weft::fibers_available()) return {true, false};
  return {false};
}

// Children [lo, hi) of a tree: each node splits its range in a group of its own, one half run, the other
// run_and_wait; a leaf counts itself and writes a plain value the root reads after its wait.
void stress_tree(RunCounts& runs, std::vector<std::uint32_t>& plain, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) {
    runs.ran(lo);
    plain[lo] = static_cast<std::uint32_t>(lo) + 1;  // plain write: the waits must order it before the check
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  weft::TaskGroup g;
  g.run([&runs, &plain, lo, mid] { stress_tree(runs, plain, lo, mid); });
  g.run_and_wait([&runs, &plain, mid, hi] { stress_tree(runs, plain, mid, hi); });
}

}  // namespace

TEST_CASE("TaskGroup stress: every child exactly once, run from several threads and from children") {
  const std::size_t per_thread = stress_count(weft::test::reduced_runs() ? 2'000 : 20'000);
  constexpr unsigned kThreads = 4;
  for (const bool fibers : stress_fiber_modes()) {
    for (const unsigned workers : std::array<unsigned, 4>{1, 2, 4, 8}) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named("group stress", workers), patience(300));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      // Each thread's children each run one sibling more into the same group: 2 * per_thread per thread.
      RunCounts runs(kThreads * per_thread * 2);
      std::vector<std::uint32_t> plain(runs.size(), 0);
      weft::TaskGroup g{pool};
      {
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < kThreads; ++t) {
          threads.emplace_back([&, t] {
            for (std::size_t i = 0; i < per_thread; ++i) {
              const std::size_t index = (t * per_thread + i) * 2;
              g.run([&, index] {
                runs.ran(index);
                plain[index] = 1;
                g.run([&, index] {
                  runs.ran(index + 1);
                  plain[index + 1] = 1;
                });
              });
            }
          });
        }
        for (auto& thread : threads) thread.join();
      }
      CHECK(g.wait() == weft::TaskGroupStatus::complete);
      check_exactly_once(runs);
      std::size_t written = 0;
      for (const std::uint32_t value : plain) written += value;
      CHECK(written == plain.size());
    }
  }
}

TEST_CASE("TaskGroup stress: recursive trees of groups, each leaf exactly once") {
  const std::size_t leaves = stress_count(weft::test::reduced_runs() ? 20'000 : 200'000);
  for (const bool fibers : stress_fiber_modes()) {
    for (const unsigned workers : std::array<unsigned, 4>{1, 2, 4, 8}) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named("group trees", workers), patience(300));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      RunCounts runs(leaves);
      std::vector<std::uint32_t> plain(leaves, 0);
      // From inside a task, and from this thread.
      pool.submit([&] { stress_tree(runs, plain, 0, leaves / 2); }).get();
      {
        weft::TaskGroup top{pool};
        top.run_and_wait([&] {
          weft::TaskGroup g{pool};
          g.run([&] { stress_tree(runs, plain, leaves / 2, leaves); });
          g.wait();
        });
      }
      check_exactly_once(runs);
      bool all = true;
      for (std::size_t i = 0; i < leaves; ++i) all = all && plain[i] == i + 1;
      CHECK(all);
    }
  }
}
