// weft::TaskGroup (include/weft/task_group.hpp): nesting on 1, 2, 4 and 8 workers with and without fibers, waits on
// an outside thread and inside tasks, exceptions, cancel from another thread, a group destroyed without wait, the
// refusals, and a recursion 10,000 deep on one worker that finishes or throws nesting_too_deep.
#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/task_group.hpp"

namespace {

using weft::test::named;
using weft::test::patience;
using weft::test::Watchdog;

constexpr std::array<unsigned, 4> kGroupWorkers = {1, 2, 4, 8};

std::vector<bool> group_fiber_modes() {
  if (weft::fibers_available()) return {true, false};
  return {false};
}

// Runs body(pool) on pools of 1, 2, 4 and 8 workers, each with and without fibers.
template <class Body>
void for_each_group_pool(const char* what, Body&& body) {
  for (const bool fibers : group_fiber_modes()) {
    for (const unsigned workers : kGroupWorkers) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named(what, workers), patience(120));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      body(pool);
    }
  }
}

// fib(n) by groups opened inside the tasks (TaskGroup g; the pool of the running task), as oneTBB code writes it:
// one half run, the other run_and_wait. Nesting depth n.
long group_fib(int n) {
  if (n < 2) return n;
  long a = 0;
  long b = 0;
  weft::TaskGroup g;
  g.run([&] { a = group_fib(n - 1); });
  g.run_and_wait([&] { b = group_fib(n - 2); });
  return a + b;
}

// A chain `depth` deep, each level with `fan` leaf children beside the one that goes deeper; counts the leaves.
void group_chain(weft::Pool& pool, int depth, int fan, std::atomic<long>& leaves) {
  if (depth == 0) return;
  weft::TaskGroup g{pool};
  for (int i = 0; i < fan; ++i) g.run([&leaves] { leaves.fetch_add(1, std::memory_order_relaxed); });
  g.run([&pool, depth, fan, &leaves] { group_chain(pool, depth - 1, fan, leaves); });
  CHECK(g.wait() == weft::TaskGroupStatus::complete);
}

}  // namespace

TEST_CASE("TaskGroup: nested 20 deep, waited on an outside thread and inside tasks") {
  for_each_group_pool("nested", [](weft::Pool& pool) {
    // On this (outside) thread: a group on the pool, whose children open groups of their own inside tasks.
    long top = 0;
    {
      weft::TaskGroup g{pool};
      g.run([&] { top = group_fib(20); });
      CHECK(g.wait() == weft::TaskGroupStatus::complete);
    }
    CHECK(top == 6765);
    // Inside a task: the whole recursion, top group included, runs in the pool.
    CHECK(pool.submit([] { return group_fib(20); }).get() == 6765);
    // A chain 20 deep with siblings at every level, from the outside thread.
    std::atomic<long> leaves{0};
    group_chain(pool, 20, 5, leaves);
    CHECK(leaves.load() == 100);
  });
}

TEST_CASE("TaskGroup: the first exception of a child is rethrown by wait, and the group is usable again") {
  for_each_group_pool("throws", [](weft::Pool& pool) {
    std::atomic<int> ran{0};
    weft::TaskGroup g{pool};
    for (int i = 0; i < 64; ++i) {
      g.run([&ran, i] {
        ran.fetch_add(1, std::memory_order_relaxed);
        if (i == 7) throw std::runtime_error("child 7 failed");
      });
    }
    CHECK_THROWS_WITH_AS(g.wait(), "child 7 failed", std::runtime_error);
    CHECK(ran.load() >= 1);
    CHECK(ran.load() <= 64);
    CHECK_FALSE(g.is_cancelling());
    // Emptied by the wait: a new batch runs in full.
    ran.store(0);
    for (int i = 0; i < 10; ++i) g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    CHECK(g.wait() == weft::TaskGroupStatus::complete);
    CHECK(ran.load() == 10);
    // run_and_wait's own callable throws: the same.
    CHECK_THROWS_WITH_AS(g.run_and_wait([] { throw std::logic_error("caller failed"); }), "caller failed",
                         std::logic_error);
    // Inside a task, nested: the exception climbs through every wait.
    auto nested = pool.submit([] {
      weft::TaskGroup outer;
      outer.run([] {
        weft::TaskGroup inner;
        inner.run([] { throw std::runtime_error("deep failure"); });
        inner.wait();
      });
      outer.wait();
    });
    CHECK_THROWS_WITH_AS(nested.get(), "deep failure", std::runtime_error);
  });
}

TEST_CASE("TaskGroup: cancel from another thread skips the children not started") {
  for (const bool fibers : group_fiber_modes()) {
    for (const unsigned workers : kGroupWorkers) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named("cancel", workers), patience(120));
      weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = fibers}};
      weft::TaskGroup g{pool};
      std::atomic<unsigned> holding{0};
      std::atomic<int> ran{0};
      // One child per worker holds it until the group is cancelled: the children queued after them cannot start.
      for (unsigned i = 0; i < workers; ++i) {
        g.run([&] {
          holding.fetch_add(1);
          while (!g.is_cancelling()) std::this_thread::yield();
        });
      }
      while (holding.load() < workers) std::this_thread::yield();
      for (int i = 0; i < 100; ++i) g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      std::thread canceller([&g] { g.cancel(); });
      canceller.join();
      CHECK(g.wait() == weft::TaskGroupStatus::cancelled);
      CHECK(ran.load() == 0);
      CHECK_FALSE(g.is_cancelling());  // cleared by the wait
      g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      CHECK(g.wait() == weft::TaskGroupStatus::complete);
      CHECK(ran.load() == 1);
    }
  }
}

TEST_CASE("TaskGroup: cancel while the owner waits") {
  for_each_group_pool("cancel waiting", [](weft::Pool& pool) {
    weft::TaskGroup g{pool};
    std::atomic<bool> started{false};
    g.run([&] {
      started.store(true);
      while (!g.is_cancelling()) std::this_thread::yield();
    });
    std::thread canceller([&] {
      while (!started.load()) std::this_thread::yield();
      g.cancel();
    });
    CHECK(g.wait() == weft::TaskGroupStatus::cancelled);
    canceller.join();
  });
}

TEST_CASE("TaskGroup: destroyed without wait, it waits; an uncollected exception reaches on_error") {
  for (const bool fibers : group_fiber_modes()) {
    for (const unsigned workers : kGroupWorkers) {
      INFO("workers = " << workers << ", fibers = " << fibers);
      const Watchdog watchdog(named("destroyed", workers), patience(120));
      std::atomic<int> errors{0};
      weft::PoolOptions options{.threads = workers, .fibers = fibers};
      options.on_error = [&errors](const std::exception_ptr&) { errors.fetch_add(1); };
      weft::Pool pool{options};
      std::atomic<int> ran{0};
      {
        weft::TaskGroup g{pool};
        for (int i = 0; i < 200; ++i) g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      }  // no wait: the destructor waits, every child runs
      CHECK(ran.load() == 200);
      // Inside a task too.
      ran.store(0);
      pool.submit([&ran] {
            weft::TaskGroup g;
            for (int i = 0; i < 50; ++i) g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
          })
          .get();
      CHECK(ran.load() == 50);
      // A child's exception that no wait rethrew goes to the pool's error handler.
      {
        weft::TaskGroup g{pool};
        g.run([] { throw std::runtime_error("never waited for"); });
      }
      CHECK(errors.load() == 1);
      // Destroyed while an exception unwinds the stack: it cancels, waits for the running children, and the
      // exception goes on.
      ran.store(0);
      CHECK_THROWS_WITH_AS(
          [&] {
            weft::TaskGroup g{pool};
            for (int i = 0; i < 100; ++i) g.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
            throw std::runtime_error("unwinding");
          }(),
          "unwinding", std::runtime_error);
      CHECK(ran.load() <= 100);
      pool.wait_idle();
    }
  }
}

TEST_CASE("TaskGroup: refusals name the mistake") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  // No pool to take on a thread that runs no task.
  CHECK_THROWS_WITH_AS(weft::TaskGroup{}, doctest::Contains("weft::TaskGroup: made without a pool"), std::logic_error);
  // A child waiting for its own group would wait for itself.
  {
    weft::TaskGroup g{pool};
    std::atomic<bool> refused{false};
    g.run([&] {
      try {
        (void)g.wait();
      } catch (const std::logic_error&) {
        refused.store(true);  // would_deadlock nested on the owner's stack, logic_error on another one
      }
    });
    (void)g.wait();
    CHECK(refused.load());
  }
  // A grandchild waiting for its grandparent's group.
  {
    weft::TaskGroup g{pool};
    std::atomic<bool> refused{false};
    g.run([&] {
      weft::TaskGroup inner;
      inner.run([&] {
        try {
          (void)g.wait();
        } catch (const std::exception&) {
          refused.store(true);  // would_deadlock nested on the owner's stack, logic_error on another one
        }
      });
      inner.wait();
    });
    (void)g.wait();
    CHECK(refused.load());
  }
  // Waited on another thread than the one that made it.
  {
    weft::TaskGroup g{pool};
    bool refused = false;
    std::thread other([&] {
      try {
        (void)g.wait();
      } catch (const std::logic_error&) {
        refused = true;
      }
    });
    other.join();
    CHECK(refused);
  }
  // An empty callable.
  {
    weft::TaskGroup g{pool};
    CHECK_THROWS_AS(g.run(std::function<void()>()), std::invalid_argument);
  }
  // A closed pool refuses the child.
  {
    weft::Pool closed{weft::PoolOptions{.threads = 1}};
    closed.shutdown();
    weft::TaskGroup g{closed};
    CHECK_THROWS_WITH_AS(g.run([] {}), doctest::Contains("weft::TaskGroup::run"), weft::pool_closed);
    CHECK(g.wait() == weft::TaskGroupStatus::complete);
  }
}

TEST_CASE("TaskGroup: children run at the group's priority, inherited by nested groups") {
  std::atomic<int> high{0};
  std::atomic<int> other{0};
  weft::PoolOptions options{.threads = 2};
  options.on_task_start = [&](const weft::TaskEvent& event) {
    (event.priority == weft::Priority::High ? high : other).fetch_add(1);
  };
  weft::Pool pool{options};
  {
    weft::TaskGroup g{pool, weft::Priority::High};
    for (int i = 0; i < 4; ++i) {
      g.run([] {
        weft::TaskGroup nested;  // inherits High
        nested.run([] {});
        nested.wait();
      });
    }
    g.wait();
  }
  pool.wait_idle();
  CHECK(high.load() == 8);
  CHECK(other.load() == 0);
}

TEST_CASE("TaskGroup: a recursion 10,000 deep on one worker finishes or throws nesting_too_deep") {
  // 2,500 deep under ThreadSanitizer (and ASan, an emulator: reduced_runs()): TSan records the whole call stack at
  // every synchronisation, a cost that grows with the depth at each level (24 s at 10,000, nearly all of it copying
  // stacks into its depot).
  const int depth = weft::test::reduced_runs() ? 2'500 : 10'000;
  struct Deep {
    static void down(int depth) {
      if (depth == 0) return;
      weft::TaskGroup g;
      g.run([depth] { down(depth - 1); });
      g.wait();
    }
  };
  for (const bool fibers : group_fiber_modes()) {
    INFO("fibers = " << fibers);
    const Watchdog watchdog(named("deep", 1), patience(300));
    weft::Pool pool{weft::PoolOptions{.threads = 1, .fibers = fibers}};
    std::string outcome;
    try {
      pool.submit([depth] { Deep::down(depth); }).get();
      outcome = "finished";
    } catch (const weft::nesting_too_deep& e) {
      outcome = "nesting_too_deep";
      CHECK(std::string(e.what()).find("weft::TaskGroup") != std::string::npos);
    }
    MESSAGE(depth << " deep, fibers = " << fibers << ": " << outcome);
    CHECK((outcome == "finished" || outcome == "nesting_too_deep"));
    // The pool is still usable.
    CHECK(pool.submit([] { return 1; }).get() == 1);
  }
}
