// Bounded submission (PoolOptions::max_queued): the bound holds under load, try_/_for report full, blocked
// submitters proceed when room appears or fail when the pool shuts down, and workers never deadlock on it.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "scheduler/engine/engine.hpp"
#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

constexpr std::size_t kLimit = 8;

// Tasks accepted and not started yet, as the test sees them: +1 once a submission returned accepted, -1 when
// the task's body starts. It never exceeds the true count by more than the tasks whose slot the engine has
// released but whose body has not begun: at most one per worker.
struct QueuedCounter {
  std::atomic<std::int64_t> now{0};
  std::atomic<std::int64_t> most{0};
  void accepted() {
    const std::int64_t value = now.fetch_add(1) + 1;
    std::int64_t seen = most.load();
    while (value > seen && !most.compare_exchange_weak(seen, value)) {
    }
  }
  void started() { now.fetch_sub(1); }
};

TEST_CASE("max_queued bounds the tasks waiting to start, with submitters outside and on workers") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("max_queued bound", workers), patience(60));
    const std::uint64_t per_submitter = stress_count(weft::test::reduced_runs() ? 2'000 : 10'000);
    constexpr unsigned kSubmitters = 3;
    const std::uint64_t outer = kSubmitters * per_submitter;
    RunCounts runs(2 * outer);  // second half: children posted from workers
    QueuedCounter queued;
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_queued = kLimit}};
    auto submit_share = [&](unsigned s) {
      for (std::uint64_t k = 0; k < per_submitter; ++k) {
        const std::uint64_t i = s * per_submitter + k;
        pool.post([&pool, &runs, &queued, i, outer] {
          queued.started();
          runs.ran(i);
          if (i % 2 == 1) {
            pool.post([&runs, &queued, child = outer + i] {  // blocks on a worker while the pool is full
              queued.started();
              runs.ran(child);
            });
            queued.accepted();
          }
        });
        queued.accepted();
      }
    };
    std::vector<std::thread> submitters;
    for (unsigned s = 1; s < kSubmitters; ++s) submitters.emplace_back(submit_share, s);
    submit_share(0);
    for (auto& t : submitters) t.join();
    pool.wait_idle();
    const auto s = runs.summary();
    CHECK(s.repeated == 0);
    CHECK(s.once == outer + outer / 2);  // every outer task, and the odd ones' children
    // Posts from a worker deep in nested waits or short of stack are the only ones admitted over the limit; the
    // pool counts them.
    const auto over = static_cast<std::int64_t>(pool.stats().admitted_over_limit);
    MESSAGE("most queued seen: " << queued.most.load() << " (limit " << kLimit << "), admitted over it: " << over);
    CHECK(queued.most.load() <= static_cast<std::int64_t>(kLimit + workers) + over);
    CHECK(queued.most.load() >= 1);
  });
}

TEST_CASE("max_queued is a strict bound for submitters outside the pool") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("max_queued bound outside", workers), patience(60));
    const std::uint64_t per_submitter = stress_count(weft::test::reduced_runs() ? 2'000 : 10'000);
    constexpr unsigned kSubmitters = 3;
    RunCounts runs(kSubmitters * per_submitter);
    QueuedCounter queued;
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_queued = kLimit}};
    auto submit_share = [&](unsigned s) {
      for (std::uint64_t k = 0; k < per_submitter; ++k) {
        const std::uint64_t i = s * per_submitter + k;
        pool.post([&runs, &queued, i] {
          queued.started();
          runs.ran(i);
        });
        queued.accepted();
      }
    };
    std::vector<std::thread> submitters;
    for (unsigned s = 1; s < kSubmitters; ++s) submitters.emplace_back(submit_share, s);
    submit_share(0);
    for (auto& t : submitters) t.join();
    pool.wait_idle();
    check_exactly_once(runs);
    CHECK(queued.most.load() <= static_cast<std::int64_t>(kLimit + workers));
  });
}

TEST_CASE("try_post, try_submit and submit_for report full while max_queued tasks wait") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("full", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_queued = kLimit}};
    Gate gate;
    occupy_all_workers(pool, gate);
    std::atomic<int> ran{0};
    for (std::size_t i = 0; i < kLimit; ++i)
      CHECK(pool.try_post([&ran] { ran.fetch_add(1); }) == weft::SubmitStatus::Accepted);
    CHECK(pool.stats().queued == kLimit);
    CHECK(pool.try_post([&ran] { ran.fetch_add(1); }) == weft::SubmitStatus::Full);
    auto tried = pool.try_submit([] { return 1; });
    CHECK(tried.status == weft::SubmitStatus::Full);
    CHECK_FALSE(tried.future.valid());
    const auto before = std::chrono::steady_clock::now();
    auto timed = pool.submit_for(20ms, [] { return 1; });
    CHECK(std::chrono::steady_clock::now() - before >= 20ms);
    CHECK(timed.status == weft::SubmitStatus::Full);
    CHECK_FALSE(timed.future.valid());

    // With room appearing before the timeout, submit_for is accepted.
    std::thread opener([&gate] {
      std::this_thread::sleep_for(10ms);
      gate.open();
    });
    auto later = pool.submit_for(patience(30), [] { return 2; });
    opener.join();
    REQUIRE(later.status == weft::SubmitStatus::Accepted);
    CHECK(later.future.get() == 2);
    pool.wait_idle();
    CHECK(ran.load() == static_cast<int>(kLimit));  // refused tasks never ran
    CHECK(pool.try_post([] {}) == weft::SubmitStatus::Accepted);
  });
}

TEST_CASE("a blocking post waits for room, and proceeds once a task starts") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("blocking post", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_queued = kLimit}};
    Gate gate;
    occupy_all_workers(pool, gate);
    for (std::size_t i = 0; i < kLimit; ++i) pool.post([] {});
    std::atomic<bool> returned{false};
    int value = 0;
    std::thread submitter([&] {
      pool.post([] {});
      auto f = pool.submit([] { return 3; });
      returned.store(true);
      value = f.get();
    });
    std::this_thread::sleep_for(30ms);
    CHECK_FALSE(returned.load());  // no room: still blocked
    gate.open();
    submitter.join();
    CHECK(returned.load());
    CHECK(value == 3);
  });
}

TEST_CASE("workers that submit into a full pool run other work instead of deadlocking") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("workers submit into a full pool", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_queued = 1}};
    constexpr std::uint64_t kChildren = 1000;
    RunCounts runs(workers * kChildren);
    // Every worker posts (blocking) and submits + gets into a pool with room for one task.
    for (unsigned w = 0; w < workers; ++w) {
      pool.post([&pool, &runs, w] {
        for (std::uint64_t c = 0; c < kChildren; ++c) {
          const std::uint64_t i = w * kChildren + c;
          if (c % 2 == 0) {
            pool.post([&runs, i] { runs.ran(i); });
          } else {
            pool.submit([&runs, i] { runs.ran(i); }).get();
          }
        }
      });
    }
    pool.wait_idle();
    check_exactly_once(runs);
  });
}

TEST_CASE("shutdown refuses submitters blocked on a full pool") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("shutdown vs blocked submitter", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_queued = kLimit}};
    Probes probes;
    hold_workers_until_dropping(pool, probes);
    std::atomic<int> ran{0};
    while (pool.try_post([&ran] { ran.fetch_add(1); }) == weft::SubmitStatus::Accepted) {
    }
    std::atomic<bool> refused{false};
    std::thread submitter([&] {
      try {
        pool.post([&ran] { ran.fetch_add(1); });
      } catch (const weft::pool_closed&) {
        refused.store(true);
      }
    });
    std::this_thread::sleep_for(20ms);  // most likely blocked by now; refused either way
    const std::uint64_t dropped = pool.shutdown(weft::Shutdown::DropPending);
    submitter.join();
    CHECK(refused.load());
    CHECK(ran.load() == 0);
    CHECK(dropped == kLimit);  // the queue was full (of our tasks and probes) and nothing started since
  });
}

}  // namespace
