// Pool::submit of a callable taking weft::Subflow& (defined by the graph layer, weft/task_scope.hpp): the
// future is ready only after the body and every child; children's exceptions reach the future; recursive
// spawning; one worker; nesting; options and bad input.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/graph/graph_test_support.hpp"
#include "weft/task_scope.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

std::uint64_t submitted_fib(weft::Subflow& sf, unsigned n) {
  if (n < 2) return n;
  if (n < 12) return submitted_fib(sf, n - 1) + submitted_fib(sf, n - 2);  // small cases serially, as real code would
  std::uint64_t a = 0;
  sf.spawn([&a, n](weft::Subflow& child) { a = submitted_fib(child, n - 1); });
  const std::uint64_t b = submitted_fib(sf, n - 2);
  sf.join();
  return a + b;
}

TEST_CASE("recursive fib through Subflow::spawn inside a submitted task") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit fib", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Future<std::uint64_t> f = pool.submit([](weft::Subflow& sf) { return submitted_fib(sf, 24); });
    CHECK(f.get() == 46368);
  });
}

TEST_CASE("the future is ready only after every child (and grandchild) finished: implicit join") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit implicit join", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kChildren = 64;
    std::vector<std::uint64_t> slots(kChildren * 2, 0);  // plain: ordered only by the join and the future
    weft::Future<void> f = pool.submit([&slots](weft::Subflow& sf) {
      for (std::size_t i = 0; i < kChildren; ++i) {
        sf.spawn([&slots, i](weft::Subflow& child) {
          busy_work(100);
          slots[2 * i] = i + 1;
          child.spawn([&slots, i] {
            busy_work(100);
            slots[2 * i + 1] = i + 1;
          });
        });
      }
      // No join: the end of the body joins.
    });
    f.get();
    std::uint64_t sum = 0;
    for (const std::uint64_t v : slots) sum += v;
    CHECK(sum == kChildren * (kChildren + 1));
  });
}

TEST_CASE("a child's exception reaches the submitted task's future") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit child exception", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> finished{0};
    auto f = pool.submit([&finished](weft::Subflow& sf) {
      sf.spawn([&finished](weft::Subflow& child) {
        child.spawn([] { throw std::runtime_error("grandchild failed"); });
        finished.fetch_add(1);
      });
      for (int i = 0; i < 8; ++i) sf.spawn([&finished] { finished.fetch_add(1); });
      return 7;  // the value is lost: the run failed
    });
    CHECK_THROWS_WITH_AS((void)f.get(), "grandchild failed", std::runtime_error);

    // The body's own exception too, after its children finished.
    std::atomic<int> children{0};
    auto g = pool.submit([&children](weft::Subflow& sf) {
      for (int i = 0; i < 8; ++i) sf.spawn([&children] { children.fetch_add(1); });
      throw std::logic_error("body failed");
    });
    CHECK_THROWS_WITH_AS(g.get(), "body failed", std::logic_error);
    CHECK(children.load() <= 8);  // read after the future: no child still running (TSan checks the order)
  });
}

TEST_CASE("one worker: the submitted task, its children and their joins do not deadlock") {
  const Watchdog watchdog("submit subflow, one worker", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  // Submitted from the worker itself too: the outer task waits for the inner one's future.
  auto outer = pool.submit([&pool](weft::Subflow& sf) {
    std::uint64_t a = 0;
    sf.spawn([&a](weft::Subflow& child) { a = submitted_fib(child, 16); });
    sf.join();
    auto inner = pool.submit([](weft::Subflow& child) { return submitted_fib(child, 15); });
    return a + inner.get();
  });
  CHECK(outer.get() == 987 + 610);
}

TEST_CASE("nested: a child submits another subflow task and waits for it; move-only results; options") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit nested", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
    weft::TaskOptions options;
    options.affinity = workers - 1;
    options.priority = weft::Priority::High;
    auto f = pool.submit_with(options, [&pool, workers](weft::Subflow& sf) {
      auto where = pool.current_worker();
      std::vector<std::uint64_t> parts(4, 0);
      for (unsigned i = 0; i < 4; ++i) {
        sf.spawn([&pool, &parts, i] {
          auto nested = pool.submit([i](weft::Subflow& inner) {
            std::uint64_t x = 0;
            inner.spawn([&x, i] { x = i + 1; });
            inner.join();
            return std::make_unique<std::uint64_t>(x * 10);
          });
          parts[i] = *nested.get();
        });
      }
      sf.join();
      auto sum = std::make_unique<std::uint64_t>(0);
      for (const auto p : parts) *sum += p;
      // The body ran where its affinity said (a waiter never runs an affine task inline).
      if (where != std::optional<unsigned>(workers - 1)) *sum += 1'000'000;
      return sum;
    });
    std::unique_ptr<std::uint64_t> sum = f.get();
    REQUIRE(sum != nullptr);
    CHECK(*sum == 100);
  });
}

TEST_CASE("submit(f(Subflow&)) refuses an empty callable and reports a shut-down pool like submit") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  CHECK_THROWS_WITH_AS((void)pool.submit(std::function<int(weft::Subflow&)>{}), doctest::Contains("weft::Pool::submit"),
                       std::invalid_argument);
  (void)pool.shutdown();
  CHECK_THROWS_AS((void)pool.submit([](weft::Subflow&) { return 1; }), weft::pool_closed);
}

}  // namespace
