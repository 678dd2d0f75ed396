// Out of memory inside a run: the allocations a run's own posts make (task blocks, deque growth) are failed
// in turn, from inside a node, with a replaced global operator new (tests/support/counting_new.cpp). A post
// that cannot allocate fails the run with weft::task_dropped, nothing runs twice or out of order, the run
// ends, and the graph runs again whole on the same pool. Compiling: a node's inbox takes memory for at most
// 4096 tokens unless it can overflow, and never for more than its tokens (measured as the largest allocation);
// an allocation failure while compiling throws weft::out_of_memory naming the call and, for an inbox, the node.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <new>
#include <string>
#include <string_view>
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
        CHECK(status == weft::RunStatus::Completed);
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
      CHECK(fan.graph.run(pool).wait() == weft::RunStatus::Completed);
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

// A graph whose node "wide" has 1000 tokens through an inbox of 1000, between two plain nodes.
struct InboxGraph {
  weft::TaskGraph graph;
  std::atomic<std::size_t> tokens_ran{0};
  InboxGraph() {
    const weft::Node a = graph.add_node([] {});
    const weft::Node wide = graph.add_node([this](std::size_t) { tokens_ran.fetch_add(1); },
                                           weft::NodeOptions{.name = "wide", .capacity = 1000, .tokens = 1000});
    const weft::Node c = graph.add_node([] {});
    graph.add_edge(a, wide);
    graph.add_edge(wide, c);
    graph.add_edge(a, c);
  }
};

constexpr std::string_view kWideInbox =
    "out of memory allocating the inbox of node 'wide' (1000 slots of 16 bytes, "
    "for capacity 1000 and tokens 1000)";

TEST_CASE("an allocation failure in compile() throws weft::out_of_memory naming the call, and the node") {
  InboxGraph g;
  bool named_node = false;
  std::size_t failures = 0;
  for (std::size_t skip = 0;; ++skip) {
    INFO("skip " << skip);
    REQUIRE(skip < 1000);
    fail_allocation_after_on_this_thread(skip);
    bool threw = false;
    try {
      g.graph.compile();
    } catch (const weft::out_of_memory& e) {
      threw = true;
      ++failures;
      INFO(e.what());
      CHECK(contains(e.what(), "weft::TaskGraph::compile: out of memory"));
      named_node |= contains(e.what(), kWideInbox);
    } catch (const std::bad_alloc&) {
      threw = true;
      FAIL_CHECK("compile() threw a bare std::bad_alloc, naming neither the call nor the node");
    }
    (void)cancel_allocation_failure_on_this_thread();
    if (!threw) break;  // compiled with the failure never reached: every allocation of compile was tried
  }
  CHECK(failures > 1);
  CHECK(named_node);
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  CHECK(g.graph.run(pool).wait() == weft::RunStatus::Completed);
  CHECK(g.tokens_ran.load() == 1000);
}

TEST_CASE("an allocation failure in the first run()'s compile names weft::TaskGraph::run, and the node") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("out of memory in run's compile", patience(60));
  bool named_node = false;
  for (std::size_t skip = 0;; ++skip) {
    INFO("skip " << skip);
    REQUIRE(skip < 1000);
    InboxGraph g;  // uncompiled each time, so run() compiles
    fail_allocation_after_on_this_thread(skip);
    bool refused = false;
    try {
      weft::Run run = g.graph.run(pool);
      (void)cancel_allocation_failure_on_this_thread();
      try {
        (void)run.wait();
      } catch (const weft::task_dropped&) {  // a post of the run's own failed: fine, and tested above
      }
    } catch (const weft::out_of_memory& e) {
      refused = true;
      INFO(e.what());
      CHECK(contains(e.what(), "weft::TaskGraph::run: out of memory"));
      named_node |= contains(e.what(), kWideInbox);
    } catch (const std::bad_alloc&) {
      refused = true;  // past the compile (the run's own state): not named, and not the compile's
    }
    const bool fired = !cancel_allocation_failure_on_this_thread() || refused;
    if (!refused && !fired) break;
    if (named_node && skip > 64) break;  // the inbox is allocated early on: no need to go through every post
  }
  CHECK(named_node);
}

TEST_CASE("compiling allocates at most 4096 inbox slots for an inbox that cannot overflow, whatever it says") {
  struct Shape {
    const char* what;
    std::size_t capacity;
    weft::Overflow overflow;
    std::size_t tokens;
    std::size_t at_most;  // bytes of the largest allocation compile() may make
  };
  constexpr std::size_t kSome = std::size_t{1} << 17;  // 4096 slots, the Limiter and the layout's vectors
  const Shape shapes[] = {
      {"capacity 2^32, tokens 2^32 (took 64 GiB)", std::size_t{1} << 32, weft::Overflow::Block, std::size_t{1} << 32,
       kSome},
      {"capacity 2^24, tokens 2^24 (took 256 MiB)", std::size_t{1} << 24, weft::Overflow::Block, std::size_t{1} << 24,
       kSome},
      {"Drop, capacity 2^24 = tokens: never overflows", std::size_t{1} << 24, weft::Overflow::Drop,
       std::size_t{1} << 24, kSome},
      {"Fail, capacity 2^30 > tokens 2^24: never overflows", std::size_t{1} << 30, weft::Overflow::Fail,
       std::size_t{1} << 24, kSome},
      {"Block, capacity 2^24 < tokens 2^30", std::size_t{1} << 24, weft::Overflow::Block, std::size_t{1} << 30, kSome},
      {"Block, capacity 5000 < tokens 2^30", 5000, weft::Overflow::Block, std::size_t{1} << 30, kSome},
      {"unbounded, 2^40 tokens", weft::kUnbounded, weft::Overflow::Drop, std::size_t{1} << 40, kSome},
      {"capacity 2^40, 3 tokens", std::size_t{1} << 40, weft::Overflow::Block, 3, 1024},
  };
  for (const Shape& shape : shapes) {
    INFO(shape.what);
    weft::TaskGraph g;
    (void)g.add_node([](std::size_t) {}, weft::NodeOptions{.name = "wide",
                                                           .capacity = shape.capacity,
                                                           .overflow = shape.overflow,
                                                           .tokens = shape.tokens});
    reset_largest_allocation_on_this_thread();
    g.compile();
    CHECK(largest_allocation_on_this_thread() <= shape.at_most);
  }
  // An inbox that can overflow really holds its capacity: when it overflows is what Drop and Fail act on.
  weft::TaskGraph g;
  (void)g.add_node([](std::size_t) {}, weft::NodeOptions{.capacity = 100'000,
                                                         .overflow = weft::Overflow::Drop,
                                                         .tokens = std::size_t{1} << 30});
  reset_largest_allocation_on_this_thread();
  g.compile();
  CHECK(largest_allocation_on_this_thread() >= 100'000 * 16);
}

}  // namespace
