// A graph run in flight meets a DropPending shutdown (or shutdown_for's deadline). What the shutdown reports
// as dropped is user work only, never the run's own helper tasks that had nothing left to do; and work the run
// does in place (a chain inside one pool task) stops at its next node boundary, as queued tasks stop.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/graph/graph_test_support.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"

using weft::test::await_or_die;
using weft::test::for_each_graph_worker_count;
using weft::test::hold_workers_until_dropping;
using weft::test::named;
using weft::test::patience;
using weft::test::Probes;
using weft::test::Watchdog;

TEST_CASE("a DropPending shutdown does not count a run's helper task that had nothing left as dropped") {
  for_each_graph_worker_count([](unsigned workers) {
    for (const bool timed : {false, true}) {
      INFO("shutdown_for: " << timed);
      const Watchdog watchdog(named("helper task not counted", workers), patience(30));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      Probes probes;
      hold_workers_until_dropping(pool, probes);
      // The run's roots task waits in this thread's slot (every worker is held); another outside thread,
      // waiting for the run, takes the roots over and runs the one root. The task then has nothing left to do.
      std::atomic<int> ran{0};
      weft::TaskGraph graph;
      (void)graph.add_node([&ran] { ran.fetch_add(1); });
      weft::Run run = graph.run(pool);
      std::atomic<bool> waited{false};
      std::thread waiter([&] {
        run.wait();
        waited.store(true);
      });
      while (ran.load() < 1) std::this_thread::yield();
      std::uint64_t dropped = 0;
      if (timed) {
        const weft::ShutdownResult result = pool.shutdown_for(std::chrono::milliseconds(1));
        CHECK_FALSE(result.drained);
        dropped = result.dropped;
      } else {
        dropped = pool.shutdown(weft::Shutdown::DropPending);
      }
      waiter.join();
      CHECK(waited.load());  // the run completed: it lost nothing
      CHECK(run.stats().skipped == 0);
      // Only the holders' probes that never ran were user work dropped.
      CHECK(dropped == probes.accepted.load() - probes.ran.load());
      CHECK(pool.stats().dropped == dropped);
    }
  });
}

TEST_CASE("a DropPending shutdown stops a chain running in place at its next node boundary") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("chain stops at DropPending", workers);
    const Watchdog watchdog(what, patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    // 41 default nodes in a chain run in place inside one pool task. The first returns only once the pool
    // refuses work from its worker, which it does once the DropPending shutdown has begun.
    std::atomic<bool> first_started{false};
    std::atomic<int> later_ran{0};
    weft::TaskGraph graph;
    weft::Node previous = graph.add_node([&] {
      first_started.store(true);
      while (pool.try_post([] {}) != weft::SubmitStatus::Closed) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    for (int i = 0; i < 40; ++i) {
      const weft::Node next = graph.add_node([&later_ran] { later_ran.fetch_add(1); });
      graph.add_edge(previous, next);
      previous = next;
    }
    weft::Run run = graph.run(pool);
    while (!first_started.load()) std::this_thread::yield();
    (void)pool.shutdown(weft::Shutdown::DropPending);
    await_or_die(run, what, patience(30));
    CHECK_THROWS_AS(run.wait(), weft::task_dropped);
    try {
      run.wait();
    } catch (const weft::task_dropped& e) {
      CHECK(weft::test::contains(e.what(), "DropPending"));
    }
    CHECK(later_ran.load() == 0);
    CHECK(run.stats().skipped == 40);
  });
}
