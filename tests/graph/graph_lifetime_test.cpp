// Lifetimes: a graph destroyed while its run is in flight (waits), a Run destroyed unwaited (waits, never
// throws), runs waited on from inside pool tasks and nodes (nested waits on a worker), a pool shut down during a
// run (Drain completes it; DropPending ends it with task_dropped / pool_closed, never a hang, and destroys each
// refused or dropped child's callable once), captured state.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// A chain of `length` nodes, then `width` nodes after it, then one join: every node counts into `ran`. The join
// also stores into `ran_before_join` (if given) how many had run when it started: all the others, if in order.
void build_chain_fan(weft::TaskGraph& g, std::atomic<std::size_t>& ran, std::size_t length, std::size_t width,
                     std::atomic<std::size_t>* ran_before_join = nullptr) {
  weft::Node last = g.add_node([&ran] { ran.fetch_add(1); });
  for (std::size_t i = 1; i < length; ++i) {
    weft::Node next = g.add_node([&ran] { ran.fetch_add(1); });
    g.add_edge(last, next);
    last = next;
  }
  weft::Node join = g.add_node([&ran, ran_before_join] {
    if (ran_before_join != nullptr) ran_before_join->store(ran.load());
    ran.fetch_add(1);
  });
  for (std::size_t i = 0; i < width; ++i) {
    weft::Node leaf = g.add_node([&ran] { ran.fetch_add(1); });
    g.add_edge(last, leaf);
    g.add_edge(leaf, join);
  }
}

TEST_CASE("destroying a graph while its run is in flight waits for the run") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("graph destructor", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (int round = 0; round < 5; ++round) {
      std::atomic<bool> finished{false};
      std::atomic<std::size_t> ran{0};
      Gate gate;
      weft::Run run;
      std::thread opener;
      {
        weft::TaskGraph g;
        auto held = g.add_node([&] {
          gate.enter();
          std::this_thread::sleep_for(5ms);  // still inside when ~TaskGraph starts, most of the time
          finished.store(true);
        });
        build_chain_fan(g, ran, 200, 50);
        auto tail = g.add_node([&] { ran.fetch_add(1); });
        g.add_edge(held, tail);
        run = g.run(pool);
        gate.await_entered(1);
        opener = std::thread([&] {
          std::this_thread::sleep_for(2ms);
          gate.open();
        });
      }  // ~TaskGraph: must wait, or the node bodies (and ASan) see freed memory
      CHECK(finished.load());
      CHECK(ran.load() == 200 + 1 + 50 + 1);
      opener.join();
      CHECK(run.done());
      CHECK(run.wait() == weft::RunStatus::Completed);  // the Run outlives its graph
      CHECK(run.stats().dropped_by_node.size() == 200 + 1 + 50 + 2);
    }
  });
}

TEST_CASE("destroying a graph whose in-flight run fails does not throw") {
  const Watchdog watchdog("graph destructor with exception", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::Run run;
  {
    weft::TaskGraph g;
    (void)g.add_node([] {
      std::this_thread::sleep_for(2ms);
      throw std::runtime_error("late");
    });
    run = g.run(pool);
  }
  CHECK_THROWS_AS(run.wait(), std::runtime_error);
}

TEST_CASE("a Run destroyed without wait() waits for the run; an unwaited exception is not thrown") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run destructor", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<bool> finished{false};
    std::atomic<bool> fail{false};
    std::atomic<std::size_t> ran{0};
    auto first = g.add_node([&] {
      std::this_thread::sleep_for(2ms);
      finished.store(true);
      if (fail.load()) throw std::runtime_error("nobody waits for me");
    });
    auto second = g.add_node([&] { ran.fetch_add(1); });
    g.add_edge(first, second);
    for (int round = 0; round < 4; ++round) {
      finished.store(false);
      fail.store(round % 2 == 1);
      ran.store(0);
      { weft::Run run = g.run(pool); }  // NOLINT: dropped on purpose
      CHECK(finished.load());
      CHECK_FALSE(g.running());
      CHECK(ran.load() == (round % 2 == 1 ? 0U : 1U));
    }
    // Moving a Run over another one: the old run still finishes, the graph is free afterwards.
    finished.store(false);
    fail.store(false);
    weft::TaskGraph other;
    (void)other.add_node([] {});
    weft::Run run = g.run(pool);
    run = other.run(pool);
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(eventually([&] { return !g.running(); }, 10000ms));  // the abandoned run still ends
    CHECK(finished.load());
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
  });
}

TEST_CASE("a finished Run outlives its pool: wait, destruction and assignment touch no freed pool") {
  // A handle may be kept past its pool (the pool's destruction drains the run first); waiting on it afterwards,
  // destroying it or assigning over it must not reach the pool's engine, which is gone (ASan: heap-use-after-free).
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("run outlives pool", workers), patience(30));
    std::atomic<std::size_t> ran{0};
    weft::TaskGraph g;
    build_chain_fan(g, ran, 3, 4);
    weft::TaskGraph n_times;
    (void)n_times.add_node([&ran] { ran.fetch_add(1); });
    weft::Run waited;
    weft::Run destroyed;
    weft::Run assigned;
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      waited = g.run(pool);
      destroyed = n_times.run_n(pool, 3);
      weft::TaskGraph other;
      (void)other.add_node([&ran] { ran.fetch_add(1); });
      assigned = other.run(pool);
      CHECK(assigned.wait() == weft::RunStatus::Completed);
    }  // the pool's destruction lets every accepted run finish
    CHECK(waited.done());
    CHECK(waited.wait() == weft::RunStatus::Completed);
    CHECK(waited.wait() == weft::RunStatus::Completed);
    CHECK(waited.stats().skipped == 0);
    CHECK(destroyed.done());
    { weft::Run gone = std::move(destroyed); }  // NOLINT: destroyed on purpose
    assigned = weft::Run{};
    CHECK(ran.load() == 3 + 4 + 1 + 3 + 1);
  });
}

TEST_CASE("a run waited on from a pool task and from inside a node (nested waits on a worker)") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested run", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<std::size_t> ran{0};
    weft::TaskGraph inner;
    build_chain_fan(inner, ran, 30, 20);
    // From a pool task (affinity: it must run on a worker, never inline in the test thread's get()).
    for (int round = 0; round < 3; ++round) {
      ran.store(0);
      auto outer = pool.submit_with(weft::TaskOptions{.affinity = 0U}, [&] {
        REQUIRE(pool.current_worker().has_value());
        return inner.run(pool).wait();
      });
      CHECK(outer.get() == weft::RunStatus::Completed);
      CHECK(ran.load() == 51);
    }
    // From a node of another graph, three levels deep.
    weft::TaskGraph middle;
    (void)middle.add_node([&] { CHECK(inner.run(pool).wait() == weft::RunStatus::Completed); });
    weft::TaskGraph outer;
    std::atomic<int> outer_ran{0};
    auto o1 = outer.add_node([&] { CHECK(middle.run(pool).wait() == weft::RunStatus::Completed); });
    auto o2 = outer.add_node([&] { outer_ran.fetch_add(1); });
    outer.add_edge(o1, o2);
    ran.store(0);
    weft::Run run = outer.run(pool);
    await_or_die(run, named("nested run", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == 51);
    CHECK(outer_ran.load() == 1);
    // Many graphs, each waited on by its own pool task, all at once.
    constexpr int kGraphs = 16;
    std::vector<std::unique_ptr<weft::TaskGraph>> graphs;
    std::atomic<std::size_t> many{0};
    for (int i = 0; i < kGraphs; ++i) {
      graphs.push_back(std::make_unique<weft::TaskGraph>());
      build_chain_fan(*graphs.back(), many, 10, 10);
    }
    std::vector<weft::Future<weft::RunStatus>> futures;
    for (int i = 0; i < kGraphs; ++i) {
      futures.push_back(pool.submit_with(weft::TaskOptions{.affinity = static_cast<unsigned>(i) % workers},
                                         [&, i] { return graphs[i]->run(pool).wait(); }));
    }
    for (auto& f : futures) CHECK(f.get() == weft::RunStatus::Completed);
    CHECK(many.load() == kGraphs * 21U);
  });
}

TEST_CASE("shutdown(Drain) during a run lets it complete") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("Drain during run", workers), patience(60));
    for (int round = 0; round < 5; ++round) {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      weft::TaskGraph g;
      std::atomic<std::size_t> ran{0};
      build_chain_fan(g, ran, 300, 100);
      weft::Run run = g.run(pool);
      while (ran.load() < static_cast<std::size_t>(round) * 50) std::this_thread::yield();
      (void)pool.shutdown(weft::Shutdown::Drain);
      await_or_die(run, named("Drain during run", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(ran.load() == 401);
      CHECK_FALSE(g.running());
    }
  });
}

TEST_CASE("run() on a shut-down pool throws pool_closed and leaves the graph free") {
  const Watchdog watchdog("run on closed pool", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  std::atomic<int> ran{0};
  (void)g.add_node([&] { ran.fetch_add(1); });
  (void)pool.shutdown();
  try {
    weft::Run run = g.run(pool);
    try {
      (void)run.wait();
      FAIL_CHECK("run() on a shut-down pool neither threw nor failed the run");
    } catch (const std::exception& e) {
      FAIL_CHECK("run() on a shut-down pool did not throw pool_closed; wait() threw: " << std::string(e.what()));
    }
  } catch (const weft::pool_closed&) {
  }
  CHECK(ran.load() == 0);
  CHECK_FALSE(g.running());
  weft::Pool fresh{weft::PoolOptions{.threads = 2}};
  CHECK(g.run(fresh).wait() == weft::RunStatus::Completed);
  CHECK(ran.load() == 1);
}

TEST_CASE("shutdown(DropPending) during a run ends it with task_dropped or pool_closed, never a hang") {
  const std::uint64_t seed = seed_for("graph_lifetime: DropPending");
  for_each_graph_worker_count([seed](unsigned workers) {
    std::mt19937_64 rng(seed + workers);
    int completed = 0, dropped = 0, closed = 0;
    for (int round = 0; round < 30; ++round) {
      INFO("round " << round);
      // One per round, declared before the pool: a hang in shutdown() or in the pool's destructor names it.
      std::string what = named("DropPending during run", workers);
      what += ", round ";
      what += std::to_string(round);
      what += ", WEFT_SEED=";
      what += std::to_string(seed);
      const Watchdog watchdog(what, patience(20));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      weft::TaskGraph g;
      std::atomic<std::size_t> ran{0};
      std::atomic<std::size_t> children{0};
      std::atomic<std::size_t> ran_before_join{0};
      build_chain_fan(g, ran, 100, 100, &ran_before_join);
      // Nodes that spawn children, and a Block inbox whose producer waits, while the pool goes away.
      auto spawner = g.add_node([&](weft::Subflow& sf) {
        for (int i = 0; i < 50; ++i) sf.spawn([&] { children.fetch_add(1); });
      });
      auto blocked = g.add_node([&] { busy_work(500); },
                                weft::NodeOptions{.concurrency = 1, .capacity = 1, .tokens = 100});
      g.add_edge(spawner, blocked);
      weft::Run run = g.run(pool);
      const std::size_t wait_for_ran = rng() % 150;
      (void)spin_until([&] { return ran.load() >= wait_for_ran; }, 100ms);
      (void)pool.shutdown(weft::Shutdown::DropPending);
      await_or_die(run, what, patience(20));
      try {
        const weft::RunStatus status = run.wait();
        CHECK(status == weft::RunStatus::Completed);  // nobody cancelled it: it must have finished in time
        CHECK(ran.load() == 201);
        CHECK(children.load() == 50);
        ++completed;
      } catch (const weft::task_dropped&) {
        ++dropped;
      } catch (const weft::pool_closed&) {
        ++closed;
      }
      CHECK(run.done());
      CHECK_FALSE(g.running());
      // Whatever the shutdown cut short, the graph runs again, whole and in order, on another pool.
      weft::Pool fresh{weft::PoolOptions{.threads = workers}};
      ran.store(0);
      children.store(0);
      CHECK(g.run(fresh).wait() == weft::RunStatus::Completed);
      CHECK(ran.load() == 201);
      CHECK(ran_before_join.load() == 200);
      CHECK(children.load() == 50);
    }
    MESSAGE("workers " << workers << ": completed " << completed << ", task_dropped " << dropped << ", pool_closed "
                       << closed);
  });
}

TEST_CASE("shutdown(DropPending) while a Block producer waits for room or a node joins its children") {
  // The producer and the joiner wait on a worker for tasks they posted to that worker's own deque: the
  // shutdown must drop (or run) those tasks so that the waits end.
  for (const unsigned workers : {1U, 2U}) {
    INFO("workers = " << workers);
    for (int round = 0; round < 60; ++round) {
      INFO("round " << round);
      std::string what = named("DropPending vs waiting producer/joiner", workers);
      what += ", round ";
      what += std::to_string(round);
      const Watchdog watchdog(what, patience(10));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      weft::TaskGraph g;
      if (round % 2 == 0) {
        (void)g.add_node([] {}, weft::NodeOptions{.concurrency = 1, .capacity = 1, .tokens = 100'000});
      } else {
        (void)g.add_node([](weft::Subflow& sf) {
          for (int i = 0; i < 100'000; ++i) {
            try {
              sf.spawn([] {});
            } catch (const weft::pool_closed&) {
              break;
            }
          }
          sf.join();
        });
      }
      weft::Run run = g.run(pool);
      std::this_thread::sleep_for(std::chrono::microseconds(round * 37 % 500));
      (void)pool.shutdown(weft::Shutdown::DropPending);
      await_or_die(run, what, patience(10));
      try {
        (void)run.wait();
      } catch (const weft::task_dropped&) {
      } catch (const weft::pool_closed&) {
      }
    }
  }
}

TEST_CASE("children refused or dropped by a DropPending shutdown: each callable destroyed once, never run twice") {
  // A child the closing pool refuses (spawn throws pool_closed) and one it drops unrun are destroyed by weft, once
  // each, and the run reports the loss; the children that ran, ran once.
  for (const unsigned workers : {1U, 2U}) {
    INFO("workers = " << workers);
    for (int round = 0; round < 20; ++round) {
      INFO("round " << round);
      std::string what = named("DropPending vs spawned callables", workers);
      what += ", round ";
      what += std::to_string(round);
      const Watchdog watchdog(what, patience(10));
      std::atomic<int> destroyed{0};
      std::atomic<int> ran{0};
      std::atomic<int> accepted{0};
      std::atomic<int> refused{0};
      {
        weft::Pool pool{weft::PoolOptions{.threads = workers}};
        weft::TaskGraph g;
        (void)g.add_node([&](weft::Subflow& sf) {
          for (int i = 0; i < 100'000; ++i) {
            try {
              sf.spawn([&ran, capture = CountsDestruction(destroyed)] { ran.fetch_add(1); });
              accepted.fetch_add(1);
            } catch (const weft::pool_closed&) {
              refused.fetch_add(1);
              break;
            }
          }
        });
        weft::Run run = g.run(pool);
        std::this_thread::sleep_for(std::chrono::microseconds(round * 53 % 700));
        (void)pool.shutdown(weft::Shutdown::DropPending);
        await_or_die(run, what, patience(10));
        bool lost = false;
        try {
          (void)run.wait();
        } catch (const weft::task_dropped&) {
          lost = true;
        } catch (const weft::pool_closed&) {
          lost = true;
        }
        if (ran.load() < accepted.load() || refused.load() != 0) CHECK(lost);
      }
      CHECK(destroyed.load() == accepted.load() + refused.load());
      CHECK(ran.load() <= accepted.load());
    }
  }
}

TEST_CASE("a run that lost a task to DropPending leaves the graph ready to run again, in order") {
  // r -> {a, b} -> {c, d} on one worker. r finishes only once the pool is closing: a runs in place (skipped,
  // the run having failed), b's post (its task, or its activation when it has tokens) is refused or dropped. c
  // and d then saw one of their two predecessors finish and never ran; the next runs on another pool must still
  // wait for both before c and d. c and d have the same predecessors, so they share one join counter (a join
  // group): the one set back after the lost run.
  for (const std::uint64_t b_tokens : {std::uint64_t{1}, std::uint64_t{3}}) {
    INFO("b has " << b_tokens << " tokens");
    const Watchdog watchdog("rerun after DropPending", patience(30));
    weft::TaskGraph g;
    std::atomic<int> a_ran{0}, b_ran{0}, c_ran{0}, d_ran{0}, c_early{0};
    std::atomic<bool> r_inside{false};
    std::atomic<weft::Pool*> closing_pool{nullptr};
    auto r = g.add_node([&] {
      r_inside.store(true);
      weft::Pool* pool = closing_pool.load();
      if (pool == nullptr) return;  // later runs
      // Accepted probes go to this worker's deque and are dropped with the rest.
      while (pool->try_post([] {}) == weft::SubmitStatus::Accepted) std::this_thread::sleep_for(1ms);
    });
    auto a = g.add_node([&] { a_ran.fetch_add(1); });
    auto b = g.add_node(
        [&] {
          std::this_thread::sleep_for(10ms);  // c must not start before this ends
          b_ran.fetch_add(1);
        },
        weft::NodeOptions{.concurrency = 1, .tokens = b_tokens});
    const int b_per_run = static_cast<int>(b_tokens);
    const auto join_body = [&](std::atomic<int>& ran) {
      return [&] {
        const int runs = ran.load() + 1;
        if (a_ran.load() != runs || b_ran.load() != runs * b_per_run) c_early.fetch_add(1);
        ran.fetch_add(1);
      };
    };
    auto c = g.add_node(join_body(c_ran));
    auto d = g.add_node(join_body(d_ran));
    g.add_edges(r, {a, b});
    for (const weft::Node joined : {c, d}) {
      g.add_edge(a, joined);
      g.add_edge(b, joined);
    }
    {
      weft::Pool pool{weft::PoolOptions{.threads = 1}};
      closing_pool.store(&pool);
      weft::Run run = g.run(pool);
      while (!r_inside.load()) std::this_thread::yield();
      (void)pool.shutdown(weft::Shutdown::DropPending);
      await_or_die(run, "rerun after DropPending: first run", patience(10));
      CHECK_THROWS_AS((void)run.wait(), weft::task_dropped);
      closing_pool.store(nullptr);
    }
    REQUIRE(b_ran.load() == 0);  // else the scenario did not happen (b ran after all)
    CHECK(c_ran.load() == 0);
    CHECK(d_ran.load() == 0);
    a_ran.store(0);
    weft::Pool fresh{weft::PoolOptions{.threads = 2}};
    for (int round = 1; round <= 3; ++round) {
      INFO("rerun " << round);
      CHECK(g.run(fresh).wait() == weft::RunStatus::Completed);
      CHECK(a_ran.load() == round);
      CHECK(b_ran.load() == round * b_per_run);
      CHECK(c_ran.load() == round);
      CHECK(d_ran.load() == round);
      CHECK(c_early.load() == 0);
    }
  }
}

TEST_CASE("a join group whose members' task is refused at shutdown counts every member skipped, and runs again") {
  // r -> {p1, p2} -> {m0..m5} on one worker; m3 has a priority, so it is posted on its own, the other members
  // but m0 (run in place) as one task. p2 finishes only once the pool is closing: the members' task and m3's
  // are refused, m0 is skipped in place. Every member is then counted skipped exactly once, and reruns on
  // another pool run each member once, after both predecessors.
  const Watchdog watchdog("a refused members task", patience(30));
  constexpr std::size_t kMembers = 6;
  weft::TaskGraph g;
  std::atomic<int> p_ran{0}, early{0};
  std::array<std::atomic<int>, kMembers> member_ran{};
  std::atomic<bool> p2_inside{false};
  std::atomic<weft::Pool*> closing_pool{nullptr};
  const weft::Node r = g.add_node([] {});
  const weft::Node p1 = g.add_node([&] { p_ran.fetch_add(1); });
  const weft::Node p2 = g.add_node([&] {
    p2_inside.store(true);
    if (weft::Pool* pool = closing_pool.load()) {
      while (pool->try_post([] {}) == weft::SubmitStatus::Accepted) std::this_thread::sleep_for(1ms);
    }
    p_ran.fetch_add(1);
  });
  g.add_edges(r, {p1, p2});
  for (std::size_t i = 0; i < kMembers; ++i) {
    const auto body = [&, i] {
      const int runs = member_ran[i].load() + 1;
      if (p_ran.load() != 2 * runs) early.fetch_add(1);
      member_ran[i].fetch_add(1);
    };
    const weft::Node member = i == 3 ? g.add_node(body, weft::NodeOptions{.priority = weft::Priority::High})
                                     : g.add_node(body);
    g.add_edge(p1, member);
    g.add_edge(p2, member);
  }
  {
    weft::Pool pool{weft::PoolOptions{.threads = 1}};
    closing_pool.store(&pool);
    weft::Run run = g.run(pool);
    while (!p2_inside.load()) std::this_thread::yield();
    (void)pool.shutdown(weft::Shutdown::DropPending);
    await_or_die(run, "a refused members task: first run", patience(10));
    CHECK_THROWS_AS((void)run.wait(), weft::task_dropped);
    REQUIRE(p_ran.load() == 2);  // else the scenario did not happen
    CHECK(run.stats().skipped == kMembers);
    for (const auto& ran : member_ran) CHECK(ran.load() == 0);
    closing_pool.store(nullptr);
  }
  p_ran.store(0);
  weft::Pool fresh{weft::PoolOptions{.threads = 2}};
  for (int round = 1; round <= 3; ++round) {
    INFO("rerun " << round);
    CHECK(g.run(fresh).wait() == weft::RunStatus::Completed);
    for (const auto& ran : member_ran) CHECK(ran.load() == round);
    CHECK(early.load() == 0);
  }
}

TEST_CASE("a graph keeps its bodies across runs and releases them when destroyed") {
  const Watchdog watchdog("captures", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  auto token = std::make_shared<int>(5);
  {
    weft::TaskGraph g;
    (void)g.add_node([token] { CHECK(*token == 5); });
    (void)g.add_node([token](std::size_t) {}, weft::NodeOptions{.tokens = 3});
    CHECK(token.use_count() == 3);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(token.use_count() == 3);
  }
  CHECK(token.use_count() == 1);
}

}  // namespace
