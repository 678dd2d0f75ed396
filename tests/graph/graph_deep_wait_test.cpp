// Waits nested deeper than the scheduler's wait depth limit (Engine::kMaxWaitDepth) still reach every task they
// wait for, whatever its priority: past the limit a waiting worker runs only its own deque and mailbox, so what
// it spawns from there must land where it looks. Each case hung on one worker when High or Low children went to
// the shared priority queues.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tests/graph/graph_test_support.hpp"
#include "weft/pool.hpp"
#include "weft/subflow.hpp"
#include "weft/task_graph.hpp"
#include "weft/task_scope.hpp"

using weft::test::await_or_die;
using weft::test::named;
using weft::test::patience;
using weft::test::Watchdog;

namespace {

constexpr unsigned kDeepWaitWorkerCounts[] = {1, 2, 4};
constexpr weft::Priority kPriorities[] = {weft::Priority::High, weft::Priority::Low, weft::Priority::Normal};

std::string case_name(const char* what, unsigned workers, weft::Priority priority) {
  return named(what, workers) + " priority " + std::to_string(static_cast<int>(priority));
}

}  // namespace

TEST_CASE("a multi-token node whose tokens each spawn a child, past the wait depth limit, at every priority") {
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    for (const weft::Priority priority : kPriorities) {
      const std::string what = case_name("65+ tokens spawning", workers, priority);
      INFO(what);
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::atomic<std::size_t> children{0};
      weft::TaskGraph graph;
      constexpr std::size_t kTokens = 200;
      (void)graph.add_node([&](weft::Subflow& sf) { sf.spawn([&] { children.fetch_add(1); }); },
                           weft::NodeOptions{.priority = priority, .tokens = kTokens});
      weft::Run run = graph.run(pool);
      await_or_die(run, what, patience(30));
      run.wait();
      CHECK(children.load() == kTokens);
    }
  }
}

TEST_CASE("200 one-token nodes that each spawn a child and join it, at every priority") {
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    for (const weft::Priority priority : kPriorities) {
      const std::string what = case_name("200 spawning nodes", workers, priority);
      INFO(what);
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::atomic<int> children{0};
      weft::TaskGraph graph;
      for (int i = 0; i < 200; ++i) {
        (void)graph.add_node(
            [&](weft::Subflow& sf) {
              sf.spawn([&] { children.fetch_add(1); });
              sf.join();
            },
            weft::NodeOptions{.priority = priority});
      }
      weft::Run run = graph.run(pool);
      await_or_die(run, what, patience(30));
      run.wait();
      CHECK(children.load() == 200);
    }
  }
}

TEST_CASE("a TaskScope of 100 parallel_for jobs, at every priority") {
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    for (const weft::Priority priority : kPriorities) {
      const std::string what = case_name("100 parallel_for jobs", workers, priority);
      INFO(what);
      const Watchdog watchdog(what, patience(30));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::vector<std::atomic<int>> hits(100 * 64);
      weft::TaskScope scope{pool};
      for (int job = 0; job < 100; ++job) {
        (void)scope.parallel_for(
            0, 64, [&hits, job](int i) { hits[static_cast<std::size_t>(job * 64 + i)].fetch_add(1); },
            weft::LoopOptions{.priority = priority, .grain = 1});
      }
      scope.run_and_wait();
      int wrong = 0;
      for (const auto& hit : hits) wrong += hit.load() != 1;
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("Run::wait nested 100 deep inside nodes, each inner node at High, Low or Normal priority") {
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    for (const weft::Priority priority : kPriorities) {
      const std::string what = case_name("nested Run::wait", workers, priority);
      INFO(what);
      const Watchdog watchdog(what, patience(30));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::atomic<int> deepest{0};
      // Each level's node builds and waits for a graph of the next level, whose node runs at `priority`.
      std::function<void(int)> level = [&](int depth) {
        if (depth == 100) {
          deepest.fetch_add(1);
          return;
        }
        weft::TaskGraph inner;
        (void)inner.add_node([&level, depth] { level(depth + 1); }, weft::NodeOptions{.priority = priority});
        inner.run(pool).wait();
      };
      weft::TaskGraph outer;
      (void)outer.add_node([&] { level(0); });
      weft::Run run = outer.run(pool);
      await_or_die(run, what, patience(30));
      run.wait();
      CHECK(deepest.load() == 1);
    }
  }
}

// Recursion through waits grows the waiting thread's stack by a few frames per level: 10,000 levels overflowed
// an 8 MB stack (SIGSEGV). The call that would nest past the stack's reserve throws nesting_too_deep instead,
// and everything unwinds cleanly. 100,000 levels exceed the stacks of every thread involved together, however
// the levels spread over them. (The depth reached before the refusal depends on frame sizes: not checked.)
// Not under ThreadSanitizer: its stack depot holds at most 65,536 frames a stack (a deeper one aborts TSan
// itself), and its shadow of stacks this deep outgrows a test machine's memory; the release and ASan builds run
// both cases.
TEST_CASE("TaskScope::run_and_wait recursing 100,000 deep throws nesting_too_deep, on a worker and outside" *
          doctest::skip(weft::test::kThreadSanitizer)) {
  constexpr int kDepth = 100'000;
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    const Watchdog watchdog(named("recursive run_and_wait", workers), patience(60));
    // Without fibers: with them the waits suspend and the recursion is served (the case after the next).
    weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = false}};
    std::atomic<int> reached{0};
    std::function<void(int)> level = [&](int depth) {
      if (depth == kDepth) {
        reached.fetch_add(1);
        return;
      }
      weft::TaskScope scope{pool};
      (void)scope.submit([&level, depth] { level(depth + 1); });
      scope.run_and_wait();
    };
    // From this thread, which runs the roots itself while it waits.
    CHECK_THROWS_AS(level(0), weft::nesting_too_deep);
    // From a worker.
    std::atomic<int> caught{0};
    pool.post([&] {
      try {
        level(0);
      } catch (const weft::nesting_too_deep& e) {
        if (weft::test::contains(e.what(), "nested too deep")) caught.fetch_add(1);
      }
    });
    pool.wait_idle();
    CHECK(caught.load() == 1);
    CHECK(reached.load() == 0);
  }
}

TEST_CASE("Subflow children nested 100,000 deep fail the run with nesting_too_deep" *
          doctest::skip(weft::test::kThreadSanitizer)) {
  constexpr int kDepth = 100'000;
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    const std::string what = named("nested subflow children", workers);
    INFO(what);
    weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = false}};  // as above
    std::atomic<int> reached{0};
    std::function<void(weft::Subflow&, int)> grow = [&](weft::Subflow& sf, int depth) {
      if (depth == kDepth) {
        reached.fetch_add(1);
        return;
      }
      sf.spawn([&grow, depth](weft::Subflow& child) { grow(child, depth + 1); });
    };
    weft::TaskGraph graph;
    (void)graph.add_node([&](weft::Subflow& sf) { grow(sf, 0); });
    weft::Run run = graph.run(pool);
    await_or_die(run, what, patience(60));
    // The spawn refused (the implicit joins never do): it freed the child it was given, uncounted (ASan sees a
    // leak otherwise), and the run ended with its error.
    CHECK_THROWS_WITH_AS(run.wait(), doctest::Contains("weft::Subflow::spawn"), weft::nesting_too_deep);
    CHECK(reached.load() == 0);
  }
}

TEST_CASE("Pool::submit + Future::get recursing 100,000 deep on a worker throws nesting_too_deep" *
          doctest::skip(weft::test::kThreadSanitizer)) {
  // Under AddressSanitizer 20,000 levels: its frames are large enough that a worker's stack holds about 3,500, so
  // the refusal comes as surely, and the levels that go on from a fresh stack after it (each one's exception
  // rethrown through every level above) cost a fifth. Elsewhere a stack can hold nearly 20,000 (ARM64 at -Og).
  const int kDepth = weft::test::kAddressSanitizer ? 20'000 : 100'000;
  for (const unsigned workers : kDeepWaitWorkerCounts) {
    const Watchdog watchdog(named("recursive submit + get", workers), patience(60));
    // Without fibers: with them a wait short of stack suspends instead (the case below).
    weft::Pool pool{weft::PoolOptions{.threads = workers, .fibers = false}};
    std::atomic<int> reached{0};
    std::function<int(int)> level = [&](int depth) -> int {
      if (depth == kDepth) {
        reached.fetch_add(1);
        return depth;
      }
      return pool.submit([&level, depth] { return level(depth + 1); }).get();
    };
    std::atomic<int> caught{0};
    pool.post([&] {
      try {
        (void)level(0);
      } catch (const weft::nesting_too_deep& e) {
        if (weft::test::contains(e.what(), "weft::Future::get")) caught.fetch_add(1);
      }
    });
    pool.wait_idle();
    // The refusal is at get(): the task submitted just before it is not cancelled, so the recursion may go on
    // from there, on a fresh stack, and reach the bottom. Nothing crashed, and the pool went idle.
    CHECK(caught.load() == 1);
    CHECK(reached.load() <= 1);
  }
}

TEST_CASE("with fibers, Pool::submit + Future::get recursing 100,000 deep on a worker completes" *
          doctest::skip(weft::test::kThreadSanitizer || !weft::fibers_available())) {
  // A wait runs the awaited task on its own stack while the fiber's stack allows, and suspends past that: the
  // levels then wait on fibers of their own, and the recursion reaches the bottom without nesting_too_deep. On one
  // worker a fiber holds some hundreds of levels; with more, a level whose child was stolen suspends at once and
  // holds a fiber alone, so the depth there is what the stack bound (max_fibers) allows.
  for (const unsigned workers : {1u, 2u, 4u}) {
    const int depth = workers == 1 && !weft::test::kAddressSanitizer ? 100'000 : 10'000;
    const Watchdog watchdog(named("recursive submit + get on fibers", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_fibers = 30'000}};
    std::atomic<int> reached{0};
    std::function<int(int)> level = [&](int at) -> int {
      if (at == depth) {
        reached.fetch_add(1);
        return at;
      }
      return pool.submit([&level, at] { return level(at + 1); }).get();
    };
    std::atomic<int> result{-1};
    pool.post([&] { result.store(level(0)); });  // the root on a worker, so every wait is a worker's
    pool.wait_idle();
    for (const std::exception_ptr& error : pool.take_errors()) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        FAIL_CHECK("the root failed: " << std::string(e.what()));
      }
    }
    CHECK(result.load() == depth);
    CHECK(reached.load() == 1);
  }
}

// With fibers the same recursions are served: a wait runs the awaited work on its own stack while the fiber has
// twice its reserve left, then suspends, so the calls that nest further never reach the reserve; the levels
// spread over as many fibers as they need (max_fibers allowing).
TEST_CASE("with fibers, TaskScope::run_and_wait and Subflow children recursing deep on a worker complete" *
          doctest::skip(weft::test::kThreadSanitizer || !weft::fibers_available())) {
  const int depth = weft::test::kAddressSanitizer ? 2'000 : 10'000;
  for (const unsigned workers : {1u, 2u, 4u}) {
    const Watchdog watchdog(named("deep recursion on fibers", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .max_fibers = 30'000}};
    std::atomic<int> reached{0};
    std::function<void(int)> level = [&](int at) {
      if (at == depth) {
        reached.fetch_add(1);
        return;
      }
      weft::TaskScope scope{pool};
      (void)scope.submit([&level, at] { level(at + 1); });
      scope.run_and_wait();
    };
    pool.post([&] { level(0); });
    pool.wait_idle();
    CHECK(pool.take_errors().empty());
    std::function<void(weft::Subflow&, int)> grow = [&](weft::Subflow& sf, int at) {
      if (at == depth) {
        reached.fetch_add(1);
        return;
      }
      sf.spawn([&grow, at](weft::Subflow& child) { grow(child, at + 1); });
    };
    weft::TaskGraph graph;
    (void)graph.add_node([&](weft::Subflow& sf) { grow(sf, 0); });
    graph.run(pool).wait();
    CHECK(reached.load() == 2);
  }
}
