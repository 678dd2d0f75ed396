// A graph run, a TaskScope run or a pipeline in flight meets shutdown(Drain): Drain runs every task the pool
// accepted, and an accepted run's later nodes are such work, so the run finishes whole; except what an outside
// waiter that runs the graph in place posts after the gate closed, which is refused (docs/graph.md). Under
// DropPending the run fails with task_dropped, whose message names the policy in force and what was dropped (a
// TaskGraph node, a TaskScope job).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/graph/graph_test_support.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"
#include "weft/task_scope.hpp"

using weft::test::await_or_die;
using weft::test::contains;
using weft::test::for_each_graph_worker_count;
using weft::test::named;
using weft::test::patience;
using weft::test::Watchdog;
using namespace std::chrono_literals;

namespace {

constexpr unsigned kChain = 2'001;
constexpr unsigned kRounds = 5;

// About 2 µs of work, the optimiser cannot remove.
void two_microseconds() {
  const auto until = std::chrono::steady_clock::now() + 2us;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// "n<i>" (built with +=: g++ 12 warns falsely on "n" + std::string at -O3).
std::string node_name(unsigned i) {
  std::string name = "n";
  name += std::to_string(i);
  return name;
}

// How a test waits for a run while the pool shuts down: the test thread waits after the shutdown, or another
// thread waits (and helps) all along.
enum class Waiter { after_shutdown, outside_thread };

}  // namespace

TEST_CASE("shutdown(Drain) lets a TaskGraph chain in flight finish: no node is dropped") {
  for (const Waiter waiter : {Waiter::after_shutdown, Waiter::outside_thread}) {
    for_each_graph_worker_count([waiter](unsigned workers) {
      INFO("waiter on another thread: " << (waiter == Waiter::outside_thread));
      for (unsigned round = 0; round < kRounds; ++round) {
        const Watchdog watchdog(named("Drain with a graph chain in flight", workers), patience(120));
        std::atomic<unsigned> ran{0};
        weft::TaskGraph graph;
        weft::Node previous = graph.add_node([&ran] {
          two_microseconds();
          ran.fetch_add(1, std::memory_order_relaxed);
        });
        for (unsigned i = 1; i < kChain; ++i) {
          const weft::Node next = graph.add_node(
              [&ran] {
                two_microseconds();
                ran.fetch_add(1, std::memory_order_relaxed);
              },
              weft::NodeOptions{.name = node_name(i)});
          graph.add_edge(previous, next);
          previous = next;
        }
        weft::Pool pool{weft::PoolOptions{.threads = workers}};
        // With a waiter on another thread, every worker is held first: the waiter then takes the roots over and
        // runs the chain in place on its own thread, outside the workers, until the shutdown.
        std::atomic<bool> release{false};
        std::atomic<unsigned> held{0};
        if (waiter == Waiter::outside_thread) {
          for (unsigned w = 0; w < workers; ++w) {
            pool.post([&] {
              held.fetch_add(1);
              while (!release.load()) std::this_thread::yield();
            });
          }
          while (held.load() < workers) std::this_thread::yield();
        }
        weft::Run run = graph.run(pool);
        std::optional<std::string> failure;
        std::thread waiting;
        if (waiter == Waiter::outside_thread) {
          waiting = std::thread([&] {
            try {
              (void)run.wait();
            } catch (const std::exception& e) {
              failure = e.what();
            }
          });
        }
        while (ran.load(std::memory_order_relaxed) < 20) std::this_thread::yield();
        release.store(true);
        const std::uint64_t dropped = pool.shutdown(weft::Shutdown::Drain);
        CHECK(dropped == 0);
        if (waiting.joinable()) {
          waiting.join();
        } else {
          try {
            (void)run.wait();
          } catch (const std::exception& e) {
            failure = e.what();
          }
        }
        CHECK_MESSAGE(!failure, failure.value_or(""));
        CHECK(ran.load() == kChain);
        CHECK(run.stats().skipped == 0);
        CHECK(pool.stats().dropped == 0);
      }
    });
  }
}

TEST_CASE("shutdown(Drain) lets a TaskScope then-chain in flight finish: no job is dropped") {
  for (const Waiter waiter : {Waiter::after_shutdown, Waiter::outside_thread}) {
    for_each_graph_worker_count([waiter](unsigned workers) {
      INFO("waiter on another thread: " << (waiter == Waiter::outside_thread));
      for (unsigned round = 0; round < kRounds; ++round) {
        const Watchdog watchdog(named("Drain with a scope chain in flight", workers), patience(120));
        std::atomic<unsigned> ran{0};
        weft::Pool pool{weft::PoolOptions{.threads = workers}};
        std::atomic<bool> release{false};
        std::atomic<unsigned> held{0};
        if (waiter == Waiter::outside_thread) {  // as for the graph above: the waiter runs the chain itself
          for (unsigned w = 0; w < workers; ++w) {
            pool.post([&] {
              held.fetch_add(1);
              while (!release.load()) std::this_thread::yield();
            });
          }
          while (held.load() < workers) std::this_thread::yield();
        }
        std::optional<std::string> failure;
        {
          weft::TaskScope scope{pool};
          weft::Job<unsigned> last = scope.submit([&ran] {
            ran.fetch_add(1, std::memory_order_relaxed);
            return 1U;
          });
          for (unsigned i = 1; i < kChain; ++i) {
            last = scope.then(last, [&ran](unsigned value) {
              two_microseconds();
              ran.fetch_add(1, std::memory_order_relaxed);
              return value + 1;
            });
          }
          scope.run();
          const auto wait = [&] {
            try {
              (void)scope.wait();
              CHECK(last.get() == kChain);
            } catch (const std::exception& e) {
              failure = e.what();
            }
          };
          std::thread waiting;
          if (waiter == Waiter::outside_thread) waiting = std::thread(wait);
          while (ran.load(std::memory_order_relaxed) < 20) std::this_thread::yield();
          release.store(true);
          CHECK(pool.shutdown(weft::Shutdown::Drain) == 0);
          if (waiting.joinable()) {
            waiting.join();
          } else {
            wait();
          }
        }
        CHECK_MESSAGE(!failure, failure.value_or(""));
        CHECK(ran.load() == kChain);
        CHECK(pool.stats().dropped == 0);
      }
    });
  }
}

TEST_CASE("shutdown(Drain) lets a pipeline in flight finish: every item reaches the sink") {
  for_each_graph_worker_count([](unsigned workers) {
    for (unsigned round = 0; round < kRounds; ++round) {
      const Watchdog watchdog(named("Drain with a pipeline in flight", workers), patience(120));
      constexpr std::uint64_t kItems = 20'000;
      std::atomic<std::uint64_t> consumed{0};
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::optional<std::string> failure;
      {
        weft::TaskScope scope{pool};
        std::uint64_t next = 0;
        auto items = scope.source([&]() -> std::optional<std::uint64_t> {
          if (next == kItems) return std::nullopt;
          return next++;
        });
        auto passed = scope.stage(items, [](std::uint64_t v) { return v; }, {.concurrency = 2});
        (void)scope.sink(passed, [&](std::uint64_t) { consumed.fetch_add(1, std::memory_order_relaxed); });
        scope.run();
        while (consumed.load(std::memory_order_relaxed) < 100) std::this_thread::yield();
        CHECK(pool.shutdown(weft::Shutdown::Drain) == 0);
        try {
          (void)scope.wait();
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
      CHECK_MESSAGE(!failure, failure.value_or(""));
      CHECK(consumed.load() == kItems);
    }
  });
}

namespace {

// Shuts `pool` down with DropPending, or with shutdown_for's deadline passing.
void shut_down_dropping(weft::Pool& pool, bool deadline) {
  if (deadline) {
    CHECK_FALSE(pool.shutdown_for(1ms).drained);
  } else {
    (void)pool.shutdown(weft::Shutdown::DropPending);
  }
}

// Long enough that a chain does not finish before the shutdown: a node or job sleeps 1 ms, so even the shorter
// chain takes 10 s, while the shutdown follows its third node. The shorter where building and tearing down each
// node costs many times more (reduced_runs(): under ThreadSanitizer the 100,000-node chains took 23 s a run).
const unsigned kLong = weft::test::reduced_runs() ? 10'000 : 100'000;

}  // namespace

TEST_CASE("a DropPending shutdown cuts a graph chain in flight with a message naming the policy and the node") {
  for_each_graph_worker_count([](unsigned workers) {
    for (const bool deadline : {false, true}) {
      INFO("shutdown_for's deadline: " << deadline);
      const Watchdog watchdog(named("DropPending with a graph chain in flight", workers), patience(120));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::atomic<unsigned> ran{0};
      weft::TaskGraph graph;
      weft::Node previous = graph.add_node([] {});
      for (unsigned i = 1; i < kLong; ++i) {
        const weft::Node next = graph.add_node(
            [&ran] {
              std::this_thread::sleep_for(1ms);
              ran.fetch_add(1, std::memory_order_relaxed);
            },
            weft::NodeOptions{.name = node_name(i)});
        graph.add_edge(previous, next);
        previous = next;
      }
      weft::Run run = graph.run(pool);
      while (ran.load() < 3) std::this_thread::yield();
      shut_down_dropping(pool, deadline);
      std::string error;
      try {
        (void)run.wait();
      } catch (const weft::task_dropped& e) {
        error = e.what();
      }
      INFO("error: " << error);
      CHECK(ran.load() < kLong - 1);
      CHECK(contains(error, "weft::TaskGraph: node 'n"));
      CHECK(contains(error, deadline ? "shutdown_for" : "Shutdown::DropPending"));
    }
  });
}

TEST_CASE("a DropPending shutdown cuts a TaskScope chain in flight with a message naming the policy and the job") {
  for_each_graph_worker_count([](unsigned workers) {
    for (const bool deadline : {false, true}) {
      INFO("shutdown_for's deadline: " << deadline);
      const Watchdog watchdog(named("DropPending with a scope chain in flight", workers), patience(120));
      weft::Pool pool{weft::PoolOptions{.threads = workers}};
      std::atomic<unsigned> ran{0};
      std::string error;
      {
        weft::TaskScope scope{pool};
        weft::Job<void> last = scope.submit([] {});
        for (unsigned i = 1; i < kLong; ++i) {
          last = scope.then(last, [&ran] {
            std::this_thread::sleep_for(1ms);
            ran.fetch_add(1, std::memory_order_relaxed);
          });
        }
        scope.run();
        while (ran.load() < 3) std::this_thread::yield();
        shut_down_dropping(pool, deadline);
        try {
          (void)scope.wait();
        } catch (const weft::task_dropped& e) {
          error = e.what();
        }
      }
      INFO("error: " << error);
      CHECK(ran.load() < kLong - 1);
      CHECK(contains(error, "weft::TaskScope: job '"));
      CHECK_FALSE(contains(error, "TaskGraph"));
      CHECK(contains(error, deadline ? "shutdown_for" : "Shutdown::DropPending"));
    }
  });
}

namespace {

// Takes every one of the pool's `workers` with a task that spins until `release`: the thread waiting for a run then
// takes its roots over and runs the graph in place.
void hold_every_worker(weft::Pool& pool, unsigned workers, std::atomic<unsigned>& held, std::atomic<bool>& release) {
  for (unsigned w = 0; w < workers; ++w) {
    pool.post([&held, &release] {
      held.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (held.load() < workers) std::this_thread::yield();
}

// A thread outside the pool that waits for `run` (helping it), keeping a task_dropped's message in `failure`.
std::thread wait_on_a_thread(weft::Run& run, std::optional<std::string>& failure) {
  return std::thread([&run, &failure] {
    try {
      (void)run.wait();
    } catch (const weft::task_dropped& e) {
      failure = e.what();
    }
  });
}

// A graph an outside waiter runs while shutdown(Drain) closes the pool: a chain whose every node also has a leaf
// (fan-out: the leaf is posted to the pool), or a one-node graph run run_n times (each pass posts its roots).
enum class Shape { fan_out, run_n };

struct DrainFigures {
  unsigned rounds = 0;
  unsigned completed = 0;
  unsigned cut = 0;  // failed with task_dropped: a post of the waiter refused by the closed pool
};

DrainFigures drain_with_outside_waiter(Shape shape, unsigned workers) {
  DrainFigures figures;
  for (unsigned round = 0; round < kRounds; ++round) {
    const Watchdog watchdog(named("Drain with an outside waiter", workers), patience(120));
    std::atomic<unsigned> ran{0};
    weft::TaskGraph graph;
    unsigned expected = 0;
    if (shape == Shape::fan_out) {
      weft::Node previous = graph.add_node([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
      for (unsigned i = 1; i < kChain; ++i) {
        const weft::Node next = graph.add_node(
            [&ran] {
              two_microseconds();
              ran.fetch_add(1, std::memory_order_relaxed);
            },
            weft::NodeOptions{.name = node_name(i)});
        const weft::Node leaf = graph.add_node([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
        graph.add_edge(previous, next);
        graph.add_edge(previous, leaf);
        previous = next;
      }
      expected = 2 * kChain - 1;
    } else {
      (void)graph.add_node([&ran] {
        two_microseconds();
        ran.fetch_add(1, std::memory_order_relaxed);
      });
      expected = kChain;
    }
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    // Every worker held first, as above: the waiter takes the roots over and runs the graph in place.
    std::atomic<bool> release{false};
    std::atomic<unsigned> held{0};
    hold_every_worker(pool, workers, held, release);
    weft::Run run = shape == Shape::fan_out ? graph.run(pool) : graph.run_n(pool, kChain);
    std::optional<std::string> failure;
    std::thread waiting = wait_on_a_thread(run, failure);
    // run_n: the waiter runs the first pass and posts the next one to the held workers.
    const unsigned started = shape == Shape::fan_out ? 20 : 1;
    while (ran.load(std::memory_order_relaxed) < started) std::this_thread::yield();
    release.store(true);
    (void)pool.shutdown(weft::Shutdown::Drain);
    waiting.join();
    ++figures.rounds;
    if (failure) {
      ++figures.cut;
      INFO("error: " << *failure);
      CHECK(contains(*failure, "refused"));
      CHECK(ran.load() < expected);
    } else {
      ++figures.completed;
      CHECK(ran.load() == expected);
    }
  }
  return figures;
}

}  // namespace

// An outside waiter that took a run's roots over runs chains in place, and posts the rest (a fan-out successor,
// the next pass of run_n) while Drain has closed the pool's gate: the gate admits it, since that is work of a run
// the pool accepted (Lifecycle::admits_own_work_while_closed), and the run completes. Before, the post was refused and
// the run failed with task_dropped in every fan-out round.
TEST_CASE("shutdown(Drain) with an outside waiter running a fan-out or run_n graph: the run completes") {
  for (const Shape shape : {Shape::fan_out, Shape::run_n}) {
    for_each_graph_worker_count([shape](unsigned workers) {
      const DrainFigures figures = drain_with_outside_waiter(shape, workers);
      const std::string what = shape == Shape::fan_out ? "fan-out" : "run_n";
      MESSAGE(what << ", " << workers << " workers: " << figures.cut << " of " << figures.rounds << " rounds cut");
      CHECK(figures.completed == figures.rounds);
      CHECK(figures.cut == 0);
    });
  }
}

// The waiter of a run_n run ends a pass itself while a Drain has closed the gate: the pass's first node (which the
// waiter runs, the workers being held) returns only once an outside post is refused, and after the worker's roots
// task has had time to give its unit back, so the waiter's own unit is the pass's last and the waiter posts the
// next pass. That post is work of a run the pool accepted: admitted, and the run completes. (Before, the waiter
// gave its unit back outside the frame that marks it as running the pool's work, and the run failed with
// task_dropped whenever its unit was the last; a race the test above met about once in forty rounds.)
TEST_CASE("shutdown(Drain) while an outside waiter ends a run_n pass: the next pass is admitted") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("Drain while the waiter ends a pass", workers), patience(120));
    constexpr unsigned kPasses = 3;
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<bool> release{false};
    std::atomic<bool> closed{false};
    std::atomic<unsigned> held{0};
    std::atomic<unsigned> ran{0};
    weft::TaskGraph graph;
    (void)graph.add_node([&] {
      if (ran.fetch_add(1) != 0) return;
      while (!closed.load()) std::this_thread::yield();
      std::this_thread::sleep_for(20ms);  // the released workers run the roots task meanwhile
    });
    hold_every_worker(pool, workers, held, release);
    weft::Run run = graph.run_n(pool, kPasses);
    std::optional<std::string> failure;
    std::thread waiting = wait_on_a_thread(run, failure);
    while (ran.load() == 0) std::this_thread::yield();
    // A thread outside the pool learns when the gate closes: its post is refused from then on.
    std::thread probe([&] {
      for (;;) {
        try {
          pool.post([] {});
        } catch (const weft::pool_closed&) {
          closed.store(true);
          return;
        }
        std::this_thread::yield();
      }
    });
    release.store(true);
    (void)pool.shutdown(weft::Shutdown::Drain);
    probe.join();
    waiting.join();
    INFO("error: " << failure.value_or("none"));
    CHECK_FALSE(failure.has_value());
    CHECK(ran.load() == kPasses);
  });
}
