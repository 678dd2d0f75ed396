// The Pool's everyday contract: post and submit run tasks, wait_idle waits for tasks that tasks post, the
// destructor drains, and the pool knows its size and which worker the caller is.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/platform.hpp"

namespace {

using namespace weft::test;

TEST_CASE("post runs the task and submit returns its value") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("post/submit", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> posted{0};
    pool.post([&posted] { posted.fetch_add(1, std::memory_order_relaxed); });

    weft::Future<int> doubled = pool.submit([](int a) { return a * 2; }, 21);
    CHECK(doubled.valid());
    CHECK(doubled.get() == 42);
    CHECK_FALSE(doubled.valid());

    // Move-only arguments and results travel through without copies.
    auto boxed = pool.submit([](std::unique_ptr<int> p) { return std::make_unique<int>(*p + 1); },
                             std::make_unique<int>(6));
    CHECK(*boxed.get() == 7);

    int side_effect = 0;
    weft::Future<void> done = pool.submit([&side_effect] { side_effect = 5; });
    done.get();
    CHECK(side_effect == 5);  // get() orders the task's writes before our read

    pool.wait_idle();
    CHECK(posted.load() == 1);
  });
}

TEST_CASE("wait_idle returns only after tasks posted by tasks have run") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("wait_idle chain", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kLinks = 2000;
    std::atomic<int> ran{0};
    // Each link posts the next from its worker: at any moment at most one task exists, so an idle check
    // that missed a task being spawned would return early.
    struct Link {
      weft::Pool* pool;
      std::atomic<int>* ran;
      int left;
      void operator()() const {
        if (left > 1) pool->post(Link{pool, ran, left - 1});
        ran->fetch_add(1, std::memory_order_relaxed);
      }
    };
    for (int round = 0; round < 5; ++round) {
      ran.store(0);
      pool.post(Link{&pool, &ran, kLinks});
      pool.wait_idle();
      CHECK(ran.load() == kLinks);
    }
    pool.wait_idle();  // idle already: returns at once
  });
}

TEST_CASE("the destructor drains every accepted task, including those posted while draining") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("draining destructor", workers), patience(30));
    constexpr std::size_t kTasks = 20000;
    RunCounts runs(2 * kTasks);
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      for (std::size_t i = 0; i < kTasks; ++i) {
        pool.post([&pool, &runs, i] {
          runs.ran(i);
          pool.post([&runs, i] { runs.ran(kTasks + i); });  // accepted during the drain
        });
      }
    }
    check_exactly_once(runs);
  });
}

TEST_CASE("size and current_worker") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("size/current_worker", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    CHECK(pool.size() == workers);
    CHECK_FALSE(pool.current_worker().has_value());  // this thread is not a worker

    weft::Pool other{weft::PoolOptions{.threads = 1}};
    std::vector<weft::Future<std::optional<unsigned>>> seen;
    std::vector<weft::Future<bool>> foreign;
    for (unsigned i = 0; i < 4 * workers; ++i) {
      seen.push_back(pool.submit([&pool] { return pool.current_worker(); }));
      // A worker of one pool is not a worker of another.
      foreign.push_back(pool.submit([&other] { return other.current_worker().has_value(); }));
    }
    for (auto& f : seen) {
      const auto index = f.get();
      // get() may run an unstarted task inline on this thread: then there is no worker index.
      if (index) CHECK(*index < workers);
    }
    for (auto& f : foreign) CHECK_FALSE(f.get());
  });
}

TEST_CASE("threads = 0 starts one worker per CPU this process may use") {
  const Watchdog watchdog("default thread count", patience(30));
  weft::Pool pool;
  CHECK(pool.size() == weft::test::thread_cpus().size());
  weft::Pool explicit_default{weft::PoolOptions{}};
  CHECK(explicit_default.size() == pool.size());
}

}  // namespace
