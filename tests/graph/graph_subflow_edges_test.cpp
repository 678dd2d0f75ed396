// Subflow::spawn_after: edges between the children of one Subflow. B1, B2 -> B3 in order; a random DAG of
// children, each started after its predecessors finished, each exactly once, and the join waiting for all of them;
// a predecessor that finished already; a predecessor with children of its own; a failed predecessor skipping its
// descendants (a long chain without nesting on the stack); empty handles and handles of another Subflow refused.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("spawn_after: B3 starts after B1 and B2 finished; the body's join waits for B3") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("subflow B1, B2 -> B3", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (int round = 0; round < 50; ++round) {
      int x = 0, y = 0, z = 0;  // plain: ordered only by the edges and the join
      weft::TaskGraph g;
      (void)g.add_node([&](weft::Subflow& sf) {
        weft::SubflowChild b1 = sf.spawn_after({}, [&] {
          busy_work(200);
          x = 1;
        });
        weft::SubflowChild b2 = sf.spawn_after({}, [&] { y = 2; });
        (void)sf.spawn_after({b1, b2}, [&] { z = x + y; });
        sf.join();
        CHECK(z == 3);
      });
      weft::Run run = g.run(pool);
      await_or_die(run, named("subflow B1, B2 -> B3", workers), patience(30));
      run.wait();
    }
  });
}

TEST_CASE("spawn_after: a random DAG of children, each after its predecessors, each once, all joined") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("subflow DAG", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChildren = 400;
    const std::uint32_t seed = std::random_device{}();
    INFO("seed " << seed);
    std::mt19937 random(seed);
    std::vector<std::vector<std::size_t>> preds(kChildren);
    for (std::size_t i = 1; i < kChildren; ++i) {
      const std::size_t count = random() % 4;  // 0..3 predecessors among the earlier children
      for (std::size_t k = 0; k < count; ++k) preds[i].push_back(random() % i);
    }
    for (int round = 0; round < 4; ++round) {
      std::vector<std::atomic<int>> runs(kChildren), finished(kChildren);
      std::atomic<std::uint64_t> violations{0};
      std::size_t after_join = 0;
      weft::TaskGraph g;
      (void)g.add_node([&](weft::Subflow& sf) {
        std::vector<weft::SubflowChild> handles(kChildren);
        for (std::size_t i = 0; i < kChildren; ++i) {
          std::vector<weft::SubflowChild> after;
          for (std::size_t p : preds[i]) after.push_back(handles[p]);
          auto body = [&, i] {
            for (std::size_t p : preds[i])
              if (finished[p].load(std::memory_order_acquire) == 0) violations.fetch_add(1);
            runs[i].fetch_add(1);
            if (i % 7 == 0) busy_work(100);
            finished[i].store(1, std::memory_order_release);
          };
          if (i % 3 == 0) {  // some take their own Subflow: finished only once their grandchild (the body) ran
            handles[i] = sf.spawn_after(after, [body](weft::Subflow& child) { child.spawn([body] { body(); }); });
          } else {
            handles[i] = sf.spawn_after(after, body);
          }
        }
        sf.join();
        for (std::size_t i = 0; i < kChildren; ++i) after_join += static_cast<std::size_t>(runs[i].load());
      });
      weft::Run run = g.run(pool);
      await_or_die(run, named("subflow DAG", workers), patience(60));
      run.wait();
      CHECK(violations.load() == 0);
      CHECK(after_join == kChildren);
      for (std::size_t i = 0; i < kChildren; ++i) CHECK(runs[i].load() == 1);
    }
  });
}

TEST_CASE("spawn_after: a predecessor finished already, and one whose own children finish later") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("subflow finished predecessor", patience(30));
  std::atomic<int> grandchildren{0};
  int seen = -1, later = 0;
  weft::TaskGraph g;
  (void)g.add_node([&](weft::Subflow& sf) {
    weft::SubflowChild first = sf.spawn_after({}, [&](weft::Subflow& child) {
      for (int i = 0; i < 50; ++i)
        child.spawn([&] {
          busy_work(100);
          grandchildren.fetch_add(1);
        });
    });
    (void)sf.spawn_after({first}, [&] { seen = grandchildren.load(); });
    sf.join();
    (void)sf.spawn_after({first}, [&] { later = 1; });  // finished: costs a lock, not an edge
  });
  weft::Run run = g.run(pool);
  await_or_die(run, "subflow finished predecessor", patience(30));
  run.wait();
  CHECK(seen == 50);
  CHECK(later == 1);
}

TEST_CASE("spawn_after: a failed predecessor skips its descendants; the others run") {
  for (const weft::ErrorPolicy policy : {weft::ErrorPolicy::CancelRun, weft::ErrorPolicy::KeepGoing}) {
    weft::Pool pool{weft::PoolOptions{.threads = 2}};
    const Watchdog watchdog("subflow failed predecessor", patience(30));
    constexpr int kChain = 10000;  // skipped link by link without nesting on the stack
    std::atomic<int> chain_ran{0}, independent{0};
    std::atomic<int> destroyed{0};
    weft::TaskGraph g;
    (void)g.add_node([&](weft::Subflow& sf) {
      weft::SubflowChild bad = sf.spawn_after({}, [] { throw std::runtime_error("predecessor failed"); });
      weft::SubflowChild link = bad;
      for (int i = 0; i < kChain; ++i)
        link = sf.spawn_after({link}, [&, c = CountsDestruction(destroyed)] { chain_ran.fetch_add(1); });
      if (policy == weft::ErrorPolicy::KeepGoing) {
        weft::SubflowChild good = sf.spawn_after({}, [&] { independent.fetch_add(1); });
        (void)sf.spawn_after({good}, [&] { independent.fetch_add(1); });
      }
    });
    weft::Run run = g.run(pool, weft::RunOptions{.on_error = policy});
    await_or_die(run, "subflow failed predecessor", patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), "predecessor failed", std::runtime_error);
    CHECK(chain_ran.load() == 0);
    CHECK(destroyed.load() == kChain);  // every skipped callable freed
    CHECK(run.stats().skipped >= static_cast<std::uint64_t>(kChain));
    if (policy == weft::ErrorPolicy::KeepGoing) CHECK(independent.load() == 2);
  }
}

TEST_CASE("spawn_after: an empty handle or a child of another Subflow is refused, nothing spawned") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("subflow refused handles", patience(30));
  std::atomic<int> ran{0};
  weft::SubflowChild foreign;
  weft::TaskGraph g;
  (void)g.add_node([&](weft::Subflow& sf) {
    weft::SubflowChild a = sf.spawn_after({}, [&] { ran.fetch_add(1); });
    const weft::SubflowChild empty;
    CHECK_THROWS_WITH_AS((void)sf.spawn_after({a, empty}, [&] { ran.fetch_add(100); }),
                         doctest::Contains("after[1] is an empty SubflowChild"), std::invalid_argument);
    sf.spawn([&, a](weft::Subflow& child) {
      CHECK_THROWS_WITH_AS((void)child.spawn_after({a}, [&] { ran.fetch_add(100); }),
                           doctest::Contains("after[0] is a child of another Subflow"), std::invalid_argument);
    });
  });
  weft::Run run = g.run(pool);
  await_or_die(run, "subflow refused handles", patience(30));
  run.wait();
  CHECK(ran.load() == 1);
}

}  // namespace
