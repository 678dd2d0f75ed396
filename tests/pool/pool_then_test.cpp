// Future::then: continuations run as pool tasks once the value is set; values, void, exceptions, futures already
// ready, long chains (no recursion), then() racing with the setter (exactly once), shutdown (task_dropped), bad
// input.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

TEST_CASE("then passes the value on, and runs the continuation on one of the pool's workers") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then value", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Future<int> a = pool.submit([] { return 20; });
    std::atomic<bool> on_worker{false};
    weft::Future<std::string> b = std::move(a).then([&](int v) {
      on_worker.store(pool.current_worker().has_value());
      return std::to_string(v + 1);
    });
    CHECK_FALSE(a.valid());  // consumed
    REQUIRE(b.valid());
    CHECK(b.get() == "21");  // this thread waits: it must not run the continuation itself
    CHECK(on_worker.load());
  });
}

TEST_CASE("then on Future<void> takes nothing, and a continuation may return void") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then void", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> seen{0};
    weft::Future<void> a = pool.submit([&] { seen.fetch_add(1); });
    weft::Future<int> b = std::move(a).then([&] { return seen.load() + 41; });
    weft::Future<void> c = std::move(b).then([&](int v) { seen.store(v); });
    c.get();
    CHECK(seen.load() == 42);
  });
}

TEST_CASE("an exception skips the continuations down the chain and reaches the last future") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then exception", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> called{0};
    auto a = pool.submit([]() -> int { throw std::runtime_error("antecedent failed"); });
    auto b = std::move(a).then([&](int v) {
      called.fetch_add(1);
      return v;
    });
    auto c = std::move(b).then([&](int) { called.fetch_add(1); });
    CHECK_THROWS_WITH_AS(c.get(), "antecedent failed", std::runtime_error);
    CHECK(called.load() == 0);

    // A continuation's own exception goes on the same way.
    auto d = pool.submit([] { return 1; }).then([](int) -> int { throw std::logic_error("continuation failed"); });
    auto e = std::move(d).then([&](int) { called.fetch_add(1); });
    CHECK_THROWS_WITH_AS(e.get(), "continuation failed", std::logic_error);
    CHECK(called.load() == 0);
  });
}

TEST_CASE("then on a future that is already ready queues the continuation at once, on the pool") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then ready", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    auto a = pool.submit([] { return 5; });
    a.wait();
    REQUIRE(a.ready());
    std::atomic<bool> on_worker{false};
    auto b = std::move(a).then([&](int v) {
      on_worker.store(pool.current_worker().has_value());
      return v * 3;
    });
    CHECK(b.get() == 15);
    CHECK(on_worker.load());
  });
}

TEST_CASE("then carries move-only values and honours TaskOptions") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then move-only", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
    auto a = pool.submit([] { return std::make_unique<int>(6); });
    auto b = std::move(a).then([](std::unique_ptr<int> p) {
      *p *= 7;
      return p;
    });
    weft::TaskOptions options;
    options.affinity = workers - 1;
    options.priority = weft::Priority::High;
    auto c = std::move(b).then([&pool](std::unique_ptr<int> p) { return std::make_pair(*p, pool.current_worker()); },
                               options);
    const auto [value, where] = c.get();
    CHECK(value == 42);
    CHECK(where == std::optional<unsigned>(workers - 1));
  });
}

TEST_CASE("a chain of a million thens runs without recursing, and is freed without recursing") {
  // Deep enough that a recursion through the chain (one frame per link) would overflow any thread's stack.
  const std::uint64_t links = stress_count(weft::test::reduced_runs() ? 100'000
                                           : kAddressSanitizer        ? 300'000
                                                                      : 1'000'000);
  for (const unsigned workers : {1u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("then chain", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    // The root waits at the gate, so the whole chain is attached before anything settles: settling then
    // walks it link by link, each one queued by the previous one's worker.
    weft::Future<std::uint64_t> f = pool.submit([&gate] {
      gate.enter();
      return std::uint64_t{0};
    });
    for (std::uint64_t i = 0; i < links; ++i) f = std::move(f).then([](std::uint64_t v) { return v + 1; });
    gate.open();
    CHECK(f.get() == links);

    // A chain on a future already ready: each link is queued as it is attached.
    weft::Future<std::uint64_t> g = pool.submit([] { return std::uint64_t{0}; });
    g.wait();
    for (std::uint64_t i = 0; i < links; ++i) g = std::move(g).then([](std::uint64_t v) { return v + 1; });
    CHECK(g.get() == links);
  }
}

TEST_CASE("then racing with the setter runs each continuation exactly once") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then race", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr unsigned kThreads = 3;
    const std::uint64_t per_thread = stress_count(weft::test::reduced_runs() ? 2'000 : 20'000);
    RunCounts runs(kThreads * per_thread * 2);
    std::atomic<std::uint64_t> wrong{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<weft::Future<std::uint64_t>> futures;
        futures.reserve(per_thread);
        for (std::uint64_t i = 0; i < per_thread; ++i) {
          const std::uint64_t id = (t * per_thread + i) * 2;
          // The task is short, so then() lands before, during or after it settles.
          auto a = pool.submit([id] { return id; });
          futures.push_back(std::move(a).then([&runs, &wrong, id](std::uint64_t v) {
            runs.ran(id);
            if (v != id) wrong.fetch_add(1);
            return v + 1;
          }));
        }
        // And continuations attached from workers, to futures of tasks on the same worker's deque.
        for (std::uint64_t i = 0; i < per_thread; i += 64) {
          pool.post([&, t, i] {
            for (std::uint64_t k = i; k < std::min(per_thread, i + 64); ++k) {
              const std::uint64_t id = (t * per_thread + k) * 2 + 1;
              (void)pool.submit([id] { return id; }).then([&runs, &wrong, id](std::uint64_t v) {
                runs.ran(id);
                if (v != id) wrong.fetch_add(1);
              });
            }
          });
        }
        for (std::uint64_t i = 0; i < per_thread; ++i) {
          if (futures[i].get() != (t * per_thread + i) * 2 + 1) wrong.fetch_add(1);
        }
      });
    }
    for (auto& thread : threads) thread.join();
    pool.wait_idle();
    check_exactly_once(runs);
    CHECK(wrong.load() == 0);
  });
}

TEST_CASE("continuations pending at a DropPending shutdown are not called and report task_dropped") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("then dropped", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Probes probes;
    hold_workers_until_dropping(pool, probes);
    constexpr int kTasks = 1000;
    std::atomic<int> called{0};
    std::vector<weft::Future<int>> futures;
    for (int i = 0; i < kTasks; ++i) {
      futures.push_back(pool.submit([i] { return i; }).then([&called](int v) {
        called.fetch_add(1);
        return v;
      }));
    }
    // A long chain on one dropped task: settled link by link, never recursively.
    weft::Future<int> chain = pool.submit([] { return 0; });
    for (int i = 0; i < 100'000; ++i) chain = std::move(chain).then([](int v) { return v + 1; });
    (void)pool.shutdown(weft::Shutdown::DropPending);
    int reported_dropped = 0;
    for (auto& f : futures) {
      CHECK(f.ready());
      try {
        (void)f.get();
      } catch (const weft::task_dropped&) {
        ++reported_dropped;
      }
    }
    CHECK(reported_dropped == kTasks);
    CHECK(called.load() == 0);
    CHECK_THROWS_AS(chain.get(), weft::task_dropped);

    // then() after the shutdown: the pool refuses the continuation, the future says so.
    auto late = pool.submit_for(0s, [] { return 1; });
    CHECK(late.status == weft::SubmitStatus::Closed);
  });
}

TEST_CASE("then on a future whose pool is shut down reports task_dropped, not a lost continuation") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  auto a = pool.submit([] { return 1; });
  a.wait();
  (void)pool.shutdown();
  std::atomic<bool> called{false};
  auto b = std::move(a).then([&](int v) {
    called.store(true);
    return v;
  });
  CHECK_THROWS_WITH_AS(b.get(), doctest::Contains("shut down"), weft::task_dropped);
  CHECK_FALSE(called.load());
}

TEST_CASE("then refuses bad input at the call and leaves the future usable") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  auto a = pool.submit([] { return 3; });
  CHECK_THROWS_WITH_AS((void)std::move(a).then(std::function<int(int)>{}), doctest::Contains("weft::Future::then"),
                       std::invalid_argument);
  REQUIRE(a.valid());
  weft::TaskOptions options;
  options.affinity = 2;
  CHECK_THROWS_WITH_AS((void)std::move(a).then([](int v) { return v; }, options),
                       doctest::Contains("weft::Future::then: TaskOptions::affinity = 2"), weft::invalid_option);
  REQUIRE(a.valid());
  options.affinity.reset();
  options.priority = static_cast<weft::Priority>(7);
  CHECK_THROWS_WITH_AS((void)std::move(a).then([](int v) { return v; }, options),
                       doctest::Contains("TaskOptions::priority = 7"), weft::invalid_option);
  REQUIRE(a.valid());
  auto b = std::move(a).then([](int v) { return v + 1; });
  CHECK(b.get() == 4);
  weft::Future<int> invalid;
  CHECK_THROWS_WITH_AS((void)std::move(invalid).then([](int v) { return v; }), doctest::Contains("then"),
                       std::logic_error);
}

}  // namespace
