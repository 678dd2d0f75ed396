// Exactly-once execution at volume: a million tasks from outside the pool, a million spawned on its workers,
// and a randomised mix of priorities, affinities, posts and submits, with every worker count.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;

// A million. Under ThreadSanitizer every task costs ~20x more, and the five worker counts would take minutes: there
// (and under AddressSanitizer and emulation, reduced_runs()) a tenth of it runs (the interleavings TSan checks are the
// same at either size; a memory error shows at the first task that makes it).
const std::uint64_t kMillion = reduced_runs() ? 100'000 : 1'000'000;

TEST_CASE("1,000,000 tasks posted from outside run exactly once") {
  for_each_worker_count([](unsigned workers) {
    const std::uint64_t tasks = stress_count(kMillion);
    RunCounts runs(tasks);
    const Watchdog watchdog(named("1M external posts", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    // Two submitter threads and this one: the injection queue takes concurrent producers.
    constexpr unsigned kSubmitters = 3;
    std::vector<std::thread> submitters;
    auto submit_share = [&](unsigned s) {
      for (std::uint64_t i = s; i < tasks; i += kSubmitters) pool.post([&runs, i] { runs.ran(i); });
    };
    for (unsigned s = 1; s < kSubmitters; ++s) submitters.emplace_back(submit_share, s);
    submit_share(0);
    for (auto& t : submitters) t.join();
    pool.wait_idle();
    check_exactly_once(runs);
    const auto stats = pool.stats();
    CHECK(total_executed(stats) == tasks);
    CHECK(stats.queued == 0);
    CHECK(stats.in_flight == 0);
  });
}

// Task i posts tasks 2i+1 and 2i+2 from its worker: a binary tree whose root alone comes from outside, so
// every other task enters through a worker's deque and spreads by stealing.
struct TreeTask {
  weft::Pool* pool;
  RunCounts* runs;
  std::uint64_t index;
  void operator()() const {
    runs->ran(index);
    for (std::uint64_t child = 2 * index + 1; child <= 2 * index + 2; ++child) {
      if (child < runs->size()) pool->post(TreeTask{pool, runs, child});
    }
  }
};

TEST_CASE("1,000,000 tasks posted from workers run exactly once") {
  for_each_worker_count([](unsigned workers) {
    const std::uint64_t tasks = stress_count(kMillion);
    RunCounts runs(tasks);
    const Watchdog watchdog(named("1M worker posts", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    pool.post(TreeTask{&pool, &runs, 0});
    pool.wait_idle();  // must count the tasks the tree spawns while it waits
    check_exactly_once(runs);
    const auto stats = pool.stats();
    CHECK(total_executed(stats) == tasks);
    std::uint64_t stolen = 0;
    for (const auto& w : stats.workers) stolen += w.stolen;
    if (workers == 1) CHECK(stolen == 0);
  });
}

// Random priorities, affinities, post vs submit, from outside and from workers at once.
TEST_CASE("a random mix of priorities, affinities, posts and submits runs every task exactly once") {
  const std::uint64_t seed = seed_for("pool random mix");
  for_each_worker_count([seed](unsigned workers) {
    const std::uint64_t outer = stress_count(kMillion / 20);  // each outer task spawns one inner task
    RunCounts runs(2 * outer);
    const Watchdog watchdog(named("random mix", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = std::chrono::microseconds(50)}};
    std::mt19937_64 rng(seed + workers);
    std::vector<std::pair<std::uint64_t, weft::Future<std::uint64_t>>> futures;  // (task, its future)
    const auto random_options = [&rng, workers] {
      weft::TaskOptions options;
      options.priority = static_cast<weft::Priority>(rng() % 3);
      if (rng() % 4 == 0) options.affinity = static_cast<unsigned>(rng() % workers);
      return options;
    };
    for (std::uint64_t i = 0; i < outer; ++i) {
      const weft::TaskOptions inner_options = random_options();
      auto body = [&pool, &runs, i, outer, inner_options] {
        runs.ran(i);
        pool.post([&runs, i, outer] { runs.ran(outer + i); }, inner_options);  // from a worker
        return i;
      };
      if (rng() % 8 == 0) {
        futures.emplace_back(i, pool.submit_with(random_options(), body));
      } else {
        pool.post([body] { (void)body(); }, random_options());
      }
    }
    std::uint64_t wrong_values = 0;
    for (auto& [task, future] : futures) {
      if (future.get() != task) ++wrong_values;
    }
    pool.wait_idle();
    CHECK(wrong_values == 0);
    check_exactly_once(runs);
    // A submitted task whose waiter ran it inline (on this thread) is not executed by a worker.
    const auto executed = total_executed(pool.stats());
    CHECK(executed <= 2 * outer);
    CHECK(executed >= 2 * outer - futures.size());
  });
}

}  // namespace
