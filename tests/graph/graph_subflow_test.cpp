// Subflow: children the node's completion waits for, nested children with their own Subflow, join() in the
// middle of a body, children spawning into their parent's Subflow, 10,000 children, exceptions in children,
// cancellation seen by children, children of every token, children at their node's priority; a child takes no
// unit of its run; a join that ran children itself and then sleeps is woken, one that ran 10,000 counts each
// once; joiners that sleep are woken exactly once per join, every child run exactly once; a child's callable is
// gone before the join that waits for it returns.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graph/run_state.hpp"
#include "tests/graph/graph_test_support.hpp"
#include "weft/task_scope.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

TEST_CASE("a node completes only after its children: the successor sees every child's plain write") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("children before successor", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChildren = 200;
    std::vector<std::size_t> slots(kChildren, 0);  // plain: ordered only by the subflow join and the edge
    std::size_t sum = 0;
    weft::TaskGraph g;
    auto parent = g.add_node([&](weft::Subflow& sf) {
      CHECK(&sf.pool() == &pool);
      for (std::size_t i = 0; i < kChildren; ++i) {
        sf.spawn([&slots, i] {
          busy_work(200);
          slots[i] = i + 1;
        });
      }
    });
    auto successor = g.add_node([&] {
      sum = 0;
      for (const std::size_t v : slots) sum += v;
    });
    g.add_edge(parent, successor);
    for (int round = 0; round < 3; ++round) {
      slots.assign(kChildren, 0);
      CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
      CHECK(sum == kChildren * (kChildren + 1) / 2);
    }
  });
}

// fib(n) with a child per left branch, each child with its own Subflow: the recursive shape subflows exist for.
std::uint64_t fib(weft::Subflow& sf, unsigned n) {
  if (n < 2) return n;
  std::uint64_t left = 0;  // plain: written by the child, read after join()
  sf.spawn([&left, n](weft::Subflow& child) { left = fib(child, n - 1); });
  const std::uint64_t right = fib(sf, n - 2);
  sf.join();
  return left + right;
}

TEST_CASE("nested children with their own Subflow and join(): recursive fib") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("fib", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const unsigned n = reduced_runs() ? 16 : 21;
    const std::uint64_t expected = reduced_runs() ? 987 : 10946;
    std::uint64_t result = 0;
    weft::TaskGraph g;
    (void)g.add_node([&](weft::Subflow& sf) { result = fib(sf, n); });
    weft::Run run = g.run(pool);
    await_or_die(run, named("fib", workers), patience(60));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(result == expected);
  });
}

TEST_CASE("join() in the middle of a body waits for the children so far; the end joins the rest") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("join", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<int> first(50, 0), second(50, 0);  // plain
    int first_sum_at_join = -1, second_sum_after = -1;
    weft::TaskGraph g;
    auto a = g.add_node([&](weft::Subflow& sf) {
      for (std::size_t i = 0; i < first.size(); ++i) sf.spawn([&first, i] { first[i] = 1; });
      sf.join();
      first_sum_at_join = 0;
      for (const int v : first) first_sum_at_join += v;
      for (std::size_t i = 0; i < second.size(); ++i) sf.spawn([&second, i] { second[i] = 2; });
      sf.join();
      sf.join();  // nothing left: returns at once
    });
    auto b = g.add_node([&] {
      second_sum_after = 0;
      for (const int v : second) second_sum_after += v;
    });
    g.add_edge(a, b);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(first_sum_at_join == 50);
    CHECK(second_sum_after == 100);
  });
}

TEST_CASE("children spawn into their parent's Subflow while the body joins") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("spawn into parent", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<std::size_t> count{0};
    std::size_t seen = 0;
    weft::TaskGraph g;
    auto a = g.add_node([&](weft::Subflow& sf) {
      for (int i = 0; i < 100; ++i) {
        sf.spawn([&] {
          count.fetch_add(1);
          for (int j = 0; j < 10; ++j) sf.spawn([&] { count.fetch_add(1); });  // into the node's Subflow
        });
      }
    });
    auto b = g.add_node([&] { seen = count.load(); });
    g.add_edge(a, b);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(seen == 1100);
  });
}

TEST_CASE("10,000 children of one node, and children of every token") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("10000 children", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChildren = 10000;
    auto done = std::make_unique<std::atomic<std::uint8_t>[]>(kChildren);
    std::size_t seen = 0;
    std::atomic<std::size_t> per_token{0};
    weft::TaskGraph g;
    auto wide = g.add_node([&](weft::Subflow& sf) {
      for (std::size_t i = 0; i < kChildren; ++i) sf.spawn([&done, i] { done[i].fetch_add(1); });
    });
    auto tokens = g.add_node(
        [&](weft::Subflow& sf, std::size_t t) {
          for (std::size_t i = 0; i <= t; ++i) sf.spawn([&] { per_token.fetch_add(1); });
        },
        weft::NodeOptions{.concurrency = 2, .tokens = 8});
    auto check = g.add_node([&] {
      seen = 0;
      for (std::size_t i = 0; i < kChildren; ++i) seen += done[i].load() == 1 ? 1 : 0;
    });
    g.add_edge(wide, check);
    g.add_edge(tokens, check);
    weft::Run run = g.run(pool);
    await_or_die(run, named("10000 children", workers), patience(60));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(seen == kChildren);
    CHECK(per_token.load() == 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8);
  });
}

TEST_CASE("a chain of 200 nested children, each waiting for the next") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested depth", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr unsigned kDepth = 200;
    std::atomic<unsigned> deepest{0};
    struct Dive {
      std::atomic<unsigned>* deepest;
      unsigned level;
      void operator()(weft::Subflow& sf) const {
        raise(level);
        if (level < kDepth) sf.spawn(Dive{deepest, level + 1});
      }
      void raise(unsigned v) const {
        unsigned seen = deepest->load();
        while (seen < v && !deepest->compare_exchange_weak(seen, v)) {
        }
      }
    };
    std::atomic<unsigned> seen_after{0};
    weft::TaskGraph g;
    auto a = g.add_node([&](weft::Subflow& sf) { sf.spawn(Dive{&deepest, 1}); });
    auto b = g.add_node([&] { seen_after.store(deepest.load()); });
    g.add_edge(a, b);
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(seen_after.load() == kDepth);
  });
}

TEST_CASE("exceptions in children: the first rethrown, all counted, the successor never started") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("child exceptions", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChildren = 1000;
    std::atomic<std::uint64_t> thrown{0}, successor{0};
    std::atomic<bool> body_returned{false};
    weft::TaskGraph g;
    auto a = g.add_node([&](weft::Subflow& sf) {
      for (std::size_t i = 0; i < kChildren; ++i) {
        sf.spawn([&](weft::Subflow& child) {
          busy_work(300);
          if (thrown.load() % 3 == 2) child.spawn([] {});  // some grandchildren, skipped or not
          thrown.fetch_add(1);
          throw std::runtime_error("child failed");
        });
      }
      body_returned.store(true);
    });
    auto b = g.add_node([&] { successor.fetch_add(1); });
    g.add_edge(a, b);
    weft::Run run = g.run(pool);
    await_or_die(run, named("child exceptions", workers), patience(30));
    CHECK_THROWS_WITH_AS(run.wait(), "child failed", std::runtime_error);
    CHECK_THROWS_AS(run.wait(), std::runtime_error);
    const weft::RunStats stats = run.stats();
    CHECK(body_returned.load());  // the body itself did not fail
    CHECK(stats.exceptions == thrown.load());
    CHECK(successor.load() == 0);
    CHECK(thrown.load() >= 1);
    CHECK(thrown.load() <= kChildren);
    CHECK(stats.skipped >= kChildren - thrown.load() + 1);  // unstarted children (+ grandchildren) and b
  });
}

TEST_CASE("a cancelled run skips children not started; running ones see cancelled()") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("child cancel", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChildren = 2000;
    std::atomic<weft::Run*> current{nullptr};
    std::atomic<std::uint64_t> ran{0}, saw_cancel{0};
    std::atomic<bool> late_spawn_ran{false};
    weft::TaskGraph g;
    auto a = g.add_node([&](weft::Subflow& sf) {
      for (std::size_t i = 0; i < kChildren; ++i) {
        sf.spawn([&, i](weft::Subflow& child) {
          ran.fetch_add(1);
          if (i == 0) {
            weft::Run* run = nullptr;
            while ((run = current.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
            run->cancel();
            if (child.cancelled()) saw_cancel.fetch_add(1);
            child.spawn([&] { late_spawn_ran.store(true); });  // spawned after the cancel: skipped
          }
        });
      }
    });
    auto b = g.add_node([] {});
    g.add_edge(a, b);
    weft::Run run = g.run(pool);
    current.store(&run, std::memory_order_release);
    await_or_die(run, named("child cancel", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Cancelled);
    CHECK(saw_cancel.load() == 1);
    CHECK_FALSE(late_spawn_ran.load());
    const weft::RunStats stats = run.stats();
    INFO("children ran " << ran.load() << ", skipped " << stats.skipped);
    // Every child and the grandchild either ran or were skipped, and b was skipped.
    CHECK(ran.load() + stats.skipped == kChildren + 1 + 1);
  });
}

TEST_CASE("subflow children and grandchildren run at their node's priority, not its affinity") {
  for (const unsigned workers : {1U, 2U, 4U}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("subflow priority", workers), patience(60));
    // Counts the task starts of each priority; with hooks set, every task (graph tasks included) runs on a
    // worker and is seen here.
    std::array<std::atomic<int>, 3> started{};
    weft::PoolOptions options;
    options.threads = workers;
    options.on_task_start = [&started](const weft::TaskEvent& event) {
      started[static_cast<std::size_t>(event.priority)].fetch_add(1);
    };
    weft::Pool pool{std::move(options)};
    std::atomic<int> ran{0};
    auto spawner = [&ran](weft::Subflow& sf) {
      for (int i = 0; i < 10; ++i) {
        sf.spawn([&ran](weft::Subflow& child) {
          for (int j = 0; j < 2; ++j) child.spawn([&ran] { ran.fetch_add(1); });
          ran.fetch_add(1);
        });
      }
    };
    weft::TaskGraph g;
    const unsigned last = workers - 1;
    (void)g.add_node(spawner, weft::NodeOptions{.name = "high", .priority = weft::Priority::High});
    (void)g.add_node(spawner, weft::NodeOptions{.name = "low", .priority = weft::Priority::Low, .affinity = last});
    weft::Run run = g.run(pool);
    await_or_die(run, named("subflow priority", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == 2 * 30);
    pool.wait_idle();  // the hooks of the last tasks have run
    // Each node: itself, 10 children, 20 grandchildren.
    CHECK(started[static_cast<std::size_t>(weft::Priority::High)].load() == 31);
    CHECK(started[static_cast<std::size_t>(weft::Priority::Low)].load() == 31);
  }
}

// The children of an execution are covered by the unit of the run that execution holds (it cannot end before
// them): spawning takes no unit of the run, so children never write the run's one shared counter.
TEST_CASE("a child takes no unit of its run: the node's execution holds the one that covers them all") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("child units", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kChildren = 64;
    std::atomic<bool> release{false};
    std::atomic<int> ran{0};
    std::uint64_t before = 0;  // plain: written by the body, read after the run's wait()
    std::uint64_t after = 0;
    bool had_run = false;
    weft::TaskGraph g;
    (void)g.add_node([&](weft::Subflow& sf) {
      const weft::graph::RunState* run = weft::graph::RunState::current();
      had_run = run != nullptr;
      if (run == nullptr) return;
      before = run->units();
      for (int i = 0; i < kChildren; ++i) {
        sf.spawn([&] {
          // Held until the count is read, so that no child can finish (and give a unit back) before.
          (void)spin_until([&] { return release.load(std::memory_order_acquire); }, 20s);
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
      after = run->units();
      release.store(true, std::memory_order_release);
    });
    weft::Run run = g.run(pool);
    await_or_die(run, named("child units", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    REQUIRE(had_run);
    CHECK(ran.load() == kChildren);
    // Another unit of the run (the starter's) may end meanwhile; none may begin.
    CHECK(after <= before);
  });
}

// Children that outlast their joiner's look for work make it sleep (a worker after its fruitless spins, an outside
// thread after kOutsideSpin): the sleeper announces itself in the Subflow and the last child wakes it. Random
// child lengths put the announcement before, at and after the last child's decrement; nested joins, spawns into
// the parent's Subflow, graph nodes and Pool::submit(f(Subflow&)) waited for from this thread all take part.
// A lost wake-up hangs (the watchdog); a unit ended twice ends the run while children still run (their counts
// are short at wait(), and the sanitizers see the freed run); a unit never ended hangs the run's wait().
TEST_CASE("a join that ran children itself, then sleeps for one another worker runs, is woken") {
  // The children a child's join runs on its own stack are counted there without a locked instruction (Subflow's
  // local_done_); before that join sleeps it must fold them into the shared count, or the child the other worker
  // runs would not see itself as the last and would not wake it (the run would then never end).
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const int rounds = static_cast<int>(stress_count(20));
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> slow_started{false};
    std::atomic<int> ran{0};
    std::atomic<int> seen_after_join{-1};
    weft::TaskGraph g;
    (void)g.add_node([&](weft::Subflow& sf) {
      sf.spawn([&](weft::Subflow& own) {
        own.spawn([&] {
          slow_started.store(true);
          std::this_thread::sleep_for(20ms);  // past every spin: the join below sleeps
          ran.fetch_add(1);
        });
        // Another thread took it: the children below are left to this one's join.
        while (!slow_started.load()) std::this_thread::yield();
        for (int i = 0; i < 8; ++i) own.spawn([&] { ran.fetch_add(1); });
        own.join();
        seen_after_join.store(ran.load());
      });
    });
    weft::Run run = g.run(pool);
    await_or_die(run, "join that ran children itself, round " + std::to_string(round), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(seen_after_join.load() == 9);
  }
}

TEST_CASE("a child's join that runs 10,000 of its children itself counts each once") {
  // Children finished on the joiner's stack are counted in its plain field, which is folded into the shared count
  // when the joiner first sleeps mid-join: a fold that lost or doubled a child would end the join early or never.
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("10,000 children of a child", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kChildren = 10'000;
    std::atomic<int> ran{0};
    std::atomic<int> seen_after_join{-1};
    weft::TaskGraph g;
    (void)g.add_node([&](weft::Subflow& sf) {
      sf.spawn([&](weft::Subflow& own) {
        for (int i = 0; i < kChildren; ++i) own.spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
        own.join();
        seen_after_join.store(ran.load());
        for (int i = 0; i < kChildren; ++i) own.spawn([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      });  // the second batch: joined by the child's end
    });
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(seen_after_join.load() == kChildren);
    CHECK(ran.load() == 2 * kChildren);
  });
}

TEST_CASE("sleeping joiners: every child runs exactly once and every join ends (stress)") {
  const std::uint64_t seed = seed_for("graph_subflow: sleeping joiners");
  for_each_graph_worker_count([seed](unsigned workers) {
    const Watchdog watchdog(named("sleeping joiners", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const std::uint64_t rounds = stress_count(weft::test::reduced_runs() ? 12 : 60);
    constexpr std::size_t kNodes = 3;
    constexpr std::size_t kChildren = 12;
    constexpr std::size_t kGrandchildren = 4;
    // Per round: the submitted root's children and grandchildren, then each node's.
    constexpr std::size_t kPerRoot = kChildren * (1 + kGrandchildren);
    std::mt19937_64 rng(seed + workers);
    for (std::uint64_t round = 0; round < rounds; ++round) {
      RunCounts counts((kNodes + 1) * kPerRoot);
      // Lengths drawn here, so that the tasks share no generator: 0, a little work, or a sleep past the spins.
      std::vector<std::uint32_t> lengths(counts.size());
      for (auto& length : lengths) length = static_cast<std::uint32_t>(rng() % 300);
      auto work = [&lengths](std::size_t id) {
        const std::uint32_t length = lengths[id];
        if (length < 100) return;
        if (length < 200) {
          busy_work(length * 20);
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(length - 150));
        }
      };
      auto spawner = [&counts, &work](std::size_t root) {
        return [&counts, &work, root](weft::Subflow& sf) {
          for (std::size_t c = 0; c < kChildren; ++c) {
            const std::size_t child = root * kPerRoot + c * (1 + kGrandchildren);
            sf.spawn([&counts, &work, &sf, child](weft::Subflow& own) {
              for (std::size_t k = 1; k <= kGrandchildren; ++k) {
                const std::size_t grandchild = child + k;
                auto task = [&counts, &work, grandchild] {
                  work(grandchild);
                  counts.ran(grandchild);
                };
                // Odd ones into the parent's Subflow (which the parent's body is joining), the rest into own.
                if (k % 2 == 1) {
                  sf.spawn(task);
                } else {
                  own.spawn(task);
                }
              }
              work(child);
              own.join();
              counts.ran(child);
            });
          }
          sf.join();
        };
      };
      weft::TaskGraph g;
      for (std::size_t node = 0; node < kNodes; ++node) (void)g.add_node(spawner(node + 1));
      weft::Run run = g.run(pool);
      // This thread waits for a submitted root meanwhile: it may run the root itself and sleep in its join.
      pool.submit(spawner(0)).get();
      await_or_die(run, named("sleeping joiners", workers), patience(60));
      CHECK(run.wait() == weft::RunStatus::Completed);
      const RunCounts::Summary summary = counts.summary();
      INFO("round " << round << ", seed " << seed);
      CHECK(summary.never == 0);
      CHECK(summary.repeated == 0);
      CHECK(summary.once == counts.size());
    }
  });
}

}  // namespace

TEST_CASE("a child's callable is destroyed before the join that waits for the child returns") {
  // A capture may refer to the joiner's frame: it must be gone, on whichever worker the child ran, by the time the
  // join (explicit, or a child's implicit one) lets that frame go.
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("callable destroyed before join", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr int kChildren = 200;
    std::atomic<int> ran{0};
    std::atomic<int> early{0};        // joins that returned with a callable of theirs still alive
    std::atomic<int> child_early{0};  // the same for a child's join of its grandchild
    weft::TaskGraph g;
    (void)g.add_node([&](weft::Subflow& sf) {
      for (int round = 0; round < 20; ++round) {
        std::atomic<int> destroyed{0};  // this round's: destroyed after it ends
        for (int i = 0; i < kChildren; ++i) {
          sf.spawn([&ran, &child_early, capture = CountsDestruction(destroyed, true)](weft::Subflow& own) {
            std::atomic<int> grandchildren_destroyed{0};
            own.spawn([&ran, inner = CountsDestruction(grandchildren_destroyed, true)] {
              ran.fetch_add(1, std::memory_order_relaxed);
            });
            own.join();
            if (grandchildren_destroyed.load() != 1) child_early.fetch_add(1);
            ran.fetch_add(1, std::memory_order_relaxed);
          });
        }
        sf.join();
        if (destroyed.load() != kChildren) early.fetch_add(1);
      }
    });
    CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(early.load() == 0);
    CHECK(child_early.load() == 0);
    CHECK(ran.load() == 20 * kChildren * 2);
  });
}
