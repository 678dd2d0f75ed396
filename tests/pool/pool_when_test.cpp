// weft/when.hpp: when_any, when_all, when_all_settled over futures and vectors of futures: values, throwing
// members, losers that finish (or throw) later, ranges of 0 and 1, invalid members, waits from a worker.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "tests/pool/pool_test_support.hpp"
#include "weft/when.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// A task held until the gate opens (a loser that finishes after the winner).
struct Gate {
  std::atomic<bool> open{false};
  void wait() const {
    while (!open.load()) std::this_thread::sleep_for(50us);
  }
};

TEST_CASE("when_all gives every value in order; void members are std::monostate") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("when_all", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    auto a = pool.submit([] { return 1; });
    auto b = pool.submit([] { return std::string("two"); });
    auto c = pool.submit([] {});
    auto [one, two, none] = weft::when_all(std::move(a), std::move(b), std::move(c)).get();
    CHECK(one == 1);
    CHECK(two == "two");
    CHECK(none == std::monostate{});
    CHECK_FALSE(a.valid());  // consumed

    std::vector<weft::Future<int>> many;
    for (int i = 0; i < 100; ++i) many.push_back(pool.submit([i] { return i * i; }));
    const std::vector<int> squares = weft::when_all(std::move(many)).get();
    REQUIRE(squares.size() == 100);
    for (int i = 0; i < 100; ++i) CHECK(squares[static_cast<std::size_t>(i)] == i * i);
  });
}

TEST_CASE("when_all: the first exception wins at once, and a loser that throws later goes nowhere") {
  std::atomic<int> reported{0};
  weft::Pool pool{weft::PoolOptions{.threads = 2, .on_error = [&](std::exception_ptr) { reported.fetch_add(1); }}};
  const Watchdog watchdog("when_all exception", patience(30));
  Gate gate;
  auto slow_failure = pool.submit([&]() -> int {
    gate.wait();
    throw std::logic_error("later");
  });
  auto failure = pool.submit([]() -> int { throw std::runtime_error("first"); });
  auto combined = weft::when_all(std::move(slow_failure), std::move(failure));
  CHECK_THROWS_WITH_AS(combined.get(), "first", std::runtime_error);  // decided before the slow one finished
  gate.open.store(true);
  pool.wait_idle();
  CHECK(reported.load() == 0);  // the loser's exception was dropped, not reported
}

TEST_CASE("when_any gives the first to finish; losers keep running and their results are dropped") {
  for_each_worker_count([](unsigned workers) {
    if (workers < 2) return;  // the held loser occupies a worker: the winner needs another
    const Watchdog watchdog(named("when_any", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    auto token = std::make_shared<int>(0);
    std::atomic<bool> loser_ran{false};
    auto slow = pool.submit([&, token] {
      gate.wait();
      loser_ran.store(true);
      return std::string("slow");
    });
    auto fast = pool.submit([] { return 7; });
    auto first = weft::when_any(std::move(slow), std::move(fast)).get();
    CHECK(first.index == 1);
    CHECK(std::get<1>(first.value) == 7);
    gate.open.store(true);
    pool.wait_idle();
    CHECK(loser_ran.load());
    pool.shutdown();
    CHECK(token.use_count() == 1);  // the loser's task and state are gone: nothing leaked
  });
}

TEST_CASE("when_any over a vector: a throwing first member decides; an empty vector is refused") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("when_any range", patience(30));
  Gate gate;
  std::vector<weft::Future<int>> futures;
  futures.push_back(pool.submit([&] {
    gate.wait();
    return 1;
  }));
  futures.push_back(pool.submit([]() -> int { throw std::runtime_error("boom"); }));
  auto any = weft::when_any(std::move(futures));
  CHECK_THROWS_WITH_AS(any.get(), "boom", std::runtime_error);
  gate.open.store(true);

  std::vector<weft::Future<int>> one;
  one.push_back(pool.submit([] { return 5; }));
  auto single = weft::when_any(std::move(one)).get();
  CHECK(single.index == 0);
  CHECK(single.value == 5);

  CHECK_THROWS_AS((void)weft::when_any(std::vector<weft::Future<int>>{}), std::invalid_argument);
  std::vector<weft::Future<int>> with_invalid(2);
  with_invalid[0] = pool.submit([] { return 1; });
  CHECK_THROWS_WITH_AS((void)weft::when_all(std::move(with_invalid)), doctest::Contains("index 1"),
                       std::invalid_argument);
  pool.wait_idle();
}

TEST_CASE("when_all_settled keeps every outcome and never throws; ranges of 0 and 1") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("when_all_settled", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<weft::Future<int>> futures;
    for (int i = 0; i < 10; ++i) {
      futures.push_back(pool.submit([i]() -> int {
        if (i % 3 == 0) throw std::runtime_error("member " + std::to_string(i));
        return i;
      }));
    }
    std::vector<weft::Settled<int>> all = weft::when_all_settled(std::move(futures)).get();
    REQUIRE(all.size() == 10);
    for (int i = 0; i < 10; ++i) {
      auto& s = all[static_cast<std::size_t>(i)];
      if (i % 3 == 0) {
        CHECK_FALSE(s.has_value());
        CHECK_THROWS_WITH_AS(std::move(s).get(), ("member " + std::to_string(i)).c_str(), std::runtime_error);
      } else {
        CHECK(std::move(s).get() == i);
      }
    }
    auto v = pool.submit([] {});
    auto e = pool.submit([]() -> double { throw std::logic_error("x"); });
    auto [sv, se] = weft::when_all_settled(std::move(v), std::move(e)).get();
    CHECK(sv.has_value());
    CHECK(se.error != nullptr);

    CHECK(weft::when_all_settled(std::vector<weft::Future<int>>{}).get().empty());
    auto empty = weft::when_all(std::vector<weft::Future<int>>{});
    CHECK(empty.ready());
    CHECK_THROWS_AS((void)std::move(empty).then([](std::vector<int>) {}), std::invalid_argument);
    std::vector<weft::Future<void>> one;
    one.push_back(pool.submit([] {}));
    CHECK(weft::when_all(std::move(one)).get().size() == 1);
  });
}

TEST_CASE("combinators chain with then, wait inside a task, and count a dropped member as task_dropped") {
  const Watchdog watchdog("when chains", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  // Waited from inside a task on the only worker: the members' continuations still run (the wait runs tasks).
  auto outer = pool.submit([&pool] {
    auto a = pool.submit([] { return 2; });
    auto b = pool.submit([] { return 3; });
    return std::move(weft::when_all(std::move(a), std::move(b)))
        .then([](std::tuple<int, int> t) { return std::get<0>(t) * std::get<1>(t); })
        .get();
  });
  CHECK(outer.get() == 6);

  weft::Pool dropping{weft::PoolOptions{.threads = 1}};
  Gate gate;
  dropping.post([&] { gate.wait(); });  // holds the only worker
  auto never = dropping.submit([] { return 1; });
  auto settled = weft::when_all_settled(std::move(never));
  // The gate opens once the shutdown has begun (closed() is true once the DropPending state is up), so `never`
  // cannot start whatever the threads' timing: a fixed delay let a shutdown that began late find it run.
  std::thread opener([&] {
    (void)eventually([&] { return dropping.closed(); }, patience(30));
    gate.open.store(true);
  });
  (void)dropping.shutdown(weft::Shutdown::DropPending);
  opener.join();
  auto [s] = settled.get();
  REQUIRE_FALSE(s.has_value());
  CHECK_THROWS_AS(std::rethrow_exception(s.error), weft::task_dropped);
}

}  // namespace
