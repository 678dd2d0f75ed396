// TaskGraph::run, run_n and run_until of a graph that is running: the run is queued, and the queued runs start
// one after another in the order submitted, each with its own Run. RunOptions::on_done: called once, on a worker,
// after the run's last node and before its wait() returns; its exception goes to the pool's error handler.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// a -> b: a finds the phase even and makes it odd, b the reverse, so two runs that overlapped would be seen.
struct Chain {
  weft::TaskGraph graph;
  std::atomic<std::uint64_t> phase{0};
  std::atomic<std::uint64_t> a_ran{0};
  std::atomic<std::uint64_t> overlapped{0};
  Chain() {
    auto a = graph.add_node([this] {
      if (phase.fetch_add(1) % 2 != 0) overlapped.fetch_add(1);
      a_ran.fetch_add(1);
    });
    auto b = graph.add_node([this] {
      if (phase.fetch_add(1) % 2 != 1) overlapped.fetch_add(1);
    });
    graph.add_edge(a, b);
  }
};

TEST_CASE("runs queued from several threads all run exactly once, in the order submitted, never overlapping") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("queued runs in order", workers);
    const Watchdog watchdog(what, patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Chain chain;
    constexpr std::size_t kThreads = 4, kPerThread = 25, kRuns = kThreads * kPerThread;
    // Submission under a lock gives the runs one total order; their callbacks must come in that order.
    std::mutex submit_lock;
    std::size_t submitted = 0;
    std::vector<weft::Run> runs(kRuns);
    std::mutex done_lock;
    std::vector<std::size_t> done_order;
    std::atomic<std::uint64_t> off_worker{0};
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (std::size_t k = 0; k < kPerThread; ++k) {
          const std::lock_guard<std::mutex> hold(submit_lock);
          const std::size_t id = submitted++;
          auto on_done = [&, id] {
            if (!pool.current_worker()) off_worker.fetch_add(1);
            const std::lock_guard<std::mutex> hold_done(done_lock);
            done_order.push_back(id);
          };
          // One thread in three asks for run_n(1) or run_until: the three calls share one queue.
          if (t % 3 == 0) {
            runs[id] = chain.graph.run(pool, weft::RunOptions{.on_done = on_done});
          } else if (t % 3 == 1) {
            runs[id] = chain.graph.run_n(pool, 1, weft::RunOptions{.on_done = on_done});
          } else {
            runs[id] = chain.graph.run_until(
                pool, [n = 0]() mutable { return n++ == 1; }, weft::RunOptions{.on_done = on_done});
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (weft::Run& run : runs) {
      await_or_die(run, what, patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(run.stats().passes == 1);
    }
    CHECK(chain.a_ran.load() == kRuns);
    CHECK(chain.phase.load() == 2 * kRuns);
    CHECK(chain.overlapped.load() == 0);
    CHECK(off_worker.load() == 0);
    const std::lock_guard<std::mutex> hold_done(done_lock);  // every callback ran before its wait() returned
    REQUIRE(done_order.size() == kRuns);
    for (std::size_t i = 0; i < kRuns; ++i) CHECK(done_order[i] == i);
    CHECK_FALSE(chain.graph.running());
  });
}

TEST_CASE("on_done: once, on a worker, after the last node and before wait() returns; completed, failed, cancelled") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("on_done", workers);
    const Watchdog watchdog(what, patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const int kind : {0, 1, 2}) {  // completed, failed, cancelled
      INFO("kind = " << kind);
      weft::TaskGraph g;
      Gate gate;
      std::atomic<int> last_ran{0};
      std::atomic<int> calls{0};
      std::atomic<int> seen_last{-1};
      std::atomic<bool> on_worker{false};
      auto first = g.add_node([&] {
        gate.enter();
        if (kind == 1) throw Boom("first");
      });
      auto last = g.add_node([&] { last_ran.fetch_add(1); });
      g.add_edge(first, last);
      weft::Run run = g.run(pool, weft::RunOptions{.on_done = [&] {
                              seen_last.store(last_ran.load());
                              on_worker.store(pool.current_worker().has_value());
                              calls.fetch_add(1);
                            }});
      gate.await_entered(1);
      if (kind == 2) run.cancel();
      gate.open();
      await_or_die(run, what, patience(30));
      if (kind == 1) {
        CHECK_THROWS_AS(run.wait(), Boom);
      } else {
        CHECK(run.wait() == (kind == 0 ? weft::RunStatus::Completed : weft::RunStatus::Cancelled));
      }
      CHECK(calls.load() == 1);  // before wait() returned
      CHECK(on_worker.load());
      CHECK(seen_last.load() == (kind == 0 ? 1 : 0));  // after the last node (which ran only if completed)
      CHECK(last_ran.load() == seen_last.load());
    }
  });
}

TEST_CASE("an exception from on_done goes to the pool's on_error, not to wait()") {
  std::atomic<int> errors{0};
  std::string message;
  weft::Pool pool{weft::PoolOptions{.threads = 2, .on_error = [&](std::exception_ptr error) {
                                      message = what_of(error);
                                      errors.fetch_add(1);
                                    }}};
  weft::TaskGraph g;
  (void)g.add_node([] {});
  weft::Run run = g.run_n(pool, 3, weft::RunOptions{.on_done = [] { throw Boom("from on_done"); }});
  CHECK(run.wait() == weft::RunStatus::Completed);
  CHECK(errors.load() == 1);  // reported before the run was over
  CHECK(message == "from on_done");
  CHECK(run.stats().passes == 3);
}

TEST_CASE("a queued run that is cancelled never starts a node; runs queued behind it still run") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("queued run cancelled", workers);
    const Watchdog watchdog(what, patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    Gate gate;
    std::atomic<int> ran{0};
    (void)g.add_node([&] {
      if (ran.fetch_add(1) == 0) gate.enter();
    });
    std::atomic<int> callbacks{0};
    const weft::RunOptions counted{.on_done = [&] { callbacks.fetch_add(1); }};
    weft::Run first = g.run(pool);
    gate.await_entered(1);
    // Many cancelled runs end inside their own start, each handing the graph on: a loop, not a deep recursion.
    std::vector<weft::Run> cancelled;
    for (int i = 0; i < 200; ++i) {
      cancelled.push_back(i % 2 == 0 ? g.run(pool, counted) : g.run_n(pool, 5, counted));
      cancelled.back().cancel();
    }
    weft::Run after = g.run(pool);
    CHECK_FALSE(cancelled.front().done());  // its turn has not come
    gate.open();
    await_or_die(after, what, patience(30));
    CHECK(after.wait() == weft::RunStatus::Completed);
    for (weft::Run& run : cancelled) {
      CHECK(run.done());
      CHECK(run.wait() == weft::RunStatus::Cancelled);
      CHECK(run.stats().passes == 0);
    }
    CHECK(first.wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == 2);
    CHECK(callbacks.load() == 200);
  });
}

TEST_CASE("a shutdown with runs queued: each queued run reports task_dropped, its callback still runs once") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("shutdown with runs queued", workers);
    const Watchdog watchdog(what, patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<bool> started{false};
    std::atomic<int> ran{0};
    (void)g.add_node([&] {
      if (ran.fetch_add(1) != 0) return;
      started.store(true);
      // Returns once the pool refuses work from its worker: the DropPending shutdown has begun.
      while (pool.try_post([] {}) != weft::SubmitStatus::Closed) std::this_thread::sleep_for(1ms);
    });
    std::atomic<int> callbacks{0};
    weft::Run first = g.run(pool);
    std::vector<weft::Run> queued;
    for (int i = 0; i < 3; ++i) queued.push_back(g.run(pool, {.on_done = [&] { callbacks.fetch_add(1); }}));
    while (!started.load()) std::this_thread::yield();
    (void)pool.shutdown(weft::Shutdown::DropPending);
    await_or_die(first, what, patience(30));
    CHECK(first.wait() == weft::RunStatus::Completed);
    for (weft::Run& run : queued) {
      await_or_die(run, what, patience(30));
      CHECK_THROWS_AS(run.wait(), weft::task_dropped);
    }
    CHECK(ran.load() == 1);
    CHECK(callbacks.load() == 3);
    CHECK_FALSE(g.running());
    CHECK_THROWS_AS((void)g.run(pool), weft::pool_closed);  // idle graph, closed pool: refused at once
  });
}

TEST_CASE("the graph's destructor waits for its queued runs; run() from inside its own node is graph_busy") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  std::atomic<int> ran{0};
  std::atomic<bool> refused{false};
  Gate gate;
  std::vector<weft::Run> runs;  // outlive the graph, as Runs may
  std::thread opener([&] {
    gate.await_entered(1);
    gate.open();
  });
  {
    weft::TaskGraph g;
    (void)g.add_node([&] {
      if (ran.fetch_add(1) == 0) {
        try {
          (void)g.run(pool);
        } catch (const weft::graph_busy& e) {
          refused.store(contains(e.what(), "from inside a node of this graph's own run"));
        }
        gate.enter();
      }
    });
    for (int i = 0; i < 3; ++i) runs.push_back(g.run(pool));
  }  // waits for all three (the first until the opener opens the gate)
  CHECK(ran.load() == 3);
  for (weft::Run& run : runs) CHECK(run.done());
  opener.join();
  CHECK(refused.load());
}

}  // namespace

// The hang found under qemu: an outside thread runs a graph (its roots task in the thread's own slot), queues a
// second run and waits for it. The wait takes the first run's task out of the slot, may not run it, and puts it
// back; a worker that searched meanwhile found the slot empty and parked. Every round must end, each run's nodes
// once. A fresh pool each round: the hang came on a pool's first post, its workers still starting to search.
TEST_CASE("stress: waiting for a queued run while the run ahead's task sits in the waiter's slot, exactly once") {
  for_each_graph_worker_count([](unsigned workers) {
    const std::string what = named("queued run waited behind its slot's task", workers);
    const Watchdog watchdog(what, patience(120));
    Chain chain;
    const auto rounds = static_cast<std::size_t>(stress_count(reduced_runs() ? 100 : 500));
    for (std::size_t round = 0; round < rounds; ++round) {
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      weft::Run first = chain.graph.run(pool);
      weft::Run second = chain.graph.run(pool);  // queued behind `first`
      CHECK(second.wait() == weft::RunStatus::Completed);
      CHECK(first.done());
    }
    CHECK(chain.a_ran.load() == 2 * rounds);
    CHECK(chain.phase.load() == 4 * rounds);
    CHECK(chain.overlapped.load() == 0);
  });
}
