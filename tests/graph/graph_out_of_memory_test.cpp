// Out of memory inside a run: the allocations a run's own posts make (task blocks, deque growth) are failed
// in turn, from inside a node, with a replaced global operator new (tests/support/counting_new.cpp). A post
// that cannot allocate fails the run with weft::task_dropped, nothing runs twice or out of order, the run
// ends, and the graph runs again whole on the same pool.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "tests/graph/graph_test_support.hpp"
#include "tests/support/counting_new.hpp"

namespace {

using namespace weft::test;

// r -> s[0..kFan) -> j. r arms the failure of its thread's skip-th allocation from now on; finishing r posts
// s[1..] and then runs s[0] in place on the same thread, so s[0] learns whether the failure fired.
constexpr std::size_t kFan = 64;

struct FanGraph {
  weft::TaskGraph graph;
  std::atomic<std::size_t> skip{0};
  std::atomic<bool> arm{false};
  std::atomic<bool> still_armed{false};  // s[0] ran and took back a failure that never fired
  std::atomic<std::size_t> fan_ran{0};
  std::atomic<std::size_t> join_ran{0};
  std::atomic<std::size_t> join_saw{0};  // fan_ran when the join last started: every s[i] of its run is in it
  std::vector<std::atomic<int>> runs_of = std::vector<std::atomic<int>>(kFan);

  FanGraph() {
    const weft::Node r = graph.add_node([this] {
      if (arm.load()) fail_allocation_after_on_this_thread(skip.load());
    });
    const weft::Node j = graph.add_node([this] {
      join_saw.store(fan_ran.load());
      join_ran.fetch_add(1);
    });
    for (std::size_t i = 0; i < kFan; ++i) {
      const weft::Node s = graph.add_node([this, i] {
        if (i == 0 && arm.load()) still_armed.store(cancel_allocation_failure_on_this_thread());
        runs_of[i].fetch_add(1);
        fan_ran.fetch_add(1);
      });
      graph.add_edge(r, s);
      graph.add_edge(s, j);
    }
  }
};

TEST_CASE("an allocation failure in a run's own posts fails the run with task_dropped; the graph runs again") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("out of memory inside a run", workers), patience(120));
    std::size_t fired = 0;
    for (std::size_t skip = 0;; ++skip) {
      INFO("skip " << skip);
      // A fresh pool each time: its deques start small, so the posts grow them as well as take task blocks.
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      FanGraph fan;
      fan.skip.store(skip);
      fan.arm.store(true);
      weft::Run run = fan.graph.run(pool);
      await_or_die(run, named("out of memory inside a run", workers), patience(30));
      bool failed = false;
      try {
        const weft::RunStatus status = run.wait();
        CHECK(status == weft::RunStatus::completed);
      } catch (const weft::task_dropped& e) {
        failed = true;
        CHECK(contains(e.what(), "out of memory"));
      }
      fan.arm.store(false);
      // Whatever ran, ran once.
      for (std::size_t i = 0; i < kFan; ++i) CHECK(fan.runs_of[i].load() <= 1);
      if (failed) {
        ++fired;
        CHECK(fan.join_ran.load() == 0);
        CHECK_FALSE(fan.still_armed.load());  // s[0] did not run, or ran after the failure fired
      } else {
        CHECK(fan.fan_ran.load() == kFan);
        CHECK(fan.join_ran.load() == 1);
        CHECK(fan.join_saw.load() == kFan);
      }
      // The same graph on the same pool: whole and in order.
      const std::size_t fan_before = fan.fan_ran.load();
      const std::size_t join_before = fan.join_ran.load();
      CHECK(fan.graph.run(pool).wait() == weft::RunStatus::completed);
      CHECK(fan.fan_ran.load() == fan_before + kFan);
      CHECK(fan.join_ran.load() == join_before + 1);
      CHECK(fan.join_saw.load() == fan_before + kFan);  // not before the whole fan of this run
      // Done once the run made fewer than skip + 1 allocations on r's thread after r: the failure never fired.
      if (!failed && fan.still_armed.load()) break;
      REQUIRE(skip < 10'000);
    }
    MESSAGE("workers " << workers << ": " << fired << " runs failed by an allocation failure");
    CHECK(fired > 0);  // the posts did allocate: the failure path was taken
  });
}

}  // namespace
