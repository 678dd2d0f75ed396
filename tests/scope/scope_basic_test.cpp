// TaskScope basics: typed values through submit/then/when_all chains, every overload, Subflow jobs, names,
// get() before and after the run, results outliving the scope.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tests/scope/scope_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("the issue's spellings compile and run") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("spellings", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::vector<int> v(100, 1);
    std::atomic<int> all_ran{0};
    weft::TaskScope scope{pool};
    auto a = scope.submit([] { return 21; });
    auto b = scope.then(a, [](int x) { return x * 2; });
    auto c = scope.when_all({a, b}, [&] { all_ran.fetch_add(1); });
    auto d = scope.parallel_for(v.begin(), v.end(), [](int& x) { x *= 2; });
    std::vector<int> squares(1000);
    auto e = scope.parallel_for(0, 1000, [&](int i) { squares[static_cast<std::size_t>(i)] = i * i; });
    scope.run_and_wait();
    CHECK(a.get() == 21);
    CHECK(b.get() == 42);
    c.get();
    d.get();
    e.get();
    CHECK(all_ran.load() == 1);
    CHECK(std::count(v.begin(), v.end(), 2) == 100);
    CHECK(squares[999] == 999 * 999);
  });
}

TEST_CASE("values flow through a chain of then and when_all, in dependency order") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("chain", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskScope scope{pool};
    weft::Job<int> first = scope.submit([] { return 1; });
    std::vector<weft::Job<int>> layer;
    for (int i = 0; i < 16; ++i) layer.push_back(scope.then(first, [i](int x) { return x + i; }));
    weft::Job<int> sum = scope.when_all(layer, [](std::vector<int> values) {
      return std::accumulate(values.begin(), values.end(), 0);
    });
    weft::Job<std::string> text = scope.then(sum, [](const int& s) { return "sum=" + std::to_string(s); });
    weft::Job<void> after = scope.then(text, [] {});                                         // f() ignoring the value
    weft::Job<std::size_t> size = scope.then(after, [&text] { return text.get().size(); });  // get() inside a successor
    CHECK(scope.run_and_wait() == weft::RunStatus::Completed);
    CHECK(sum.get() == 16 + 120);  // 16 * 1 + (0 + ... + 15)
    CHECK(text.get() == "sum=136");
    CHECK(size.get() == 7);
    after.get();
  });
}

TEST_CASE("when_all: typed list, vector, any-typed list and heterogeneous tuple") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("when_all overloads", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskScope scope{pool};
    auto a = scope.submit([] { return 2; });
    auto b = scope.submit([] { return 3; });
    auto s = scope.submit([] { return std::string("x"); });
    std::atomic<int> touched{0};
    auto d = scope.parallel_for(0, 10, [&](int) { touched.fetch_add(1); });
    auto v = scope.submit([] {});

    auto list = scope.when_all({a, b}, [](const std::vector<int>& values) { return values[0] * values[1]; });
    auto list_no_args = scope.when_all({a, b}, [] { return 7; });
    auto mixed = scope.when_all({a, s, d, v}, [&] { return touched.load(); });  // any types, f()
    std::vector<weft::AnyJob> any{a, s};
    auto any_vector = scope.when_all(any, [] { return 'k'; });
    auto tuple = scope.when_all(std::tuple{a, s, v}, [](int x, const std::string& y) { return y + std::to_string(x); });
    auto tuple_no_args = scope.when_all(std::tuple{a, s}, [] { return 1.5; });
    auto empty = scope.when_all({}, [] { return 9; });  // no dependencies at all

    scope.run_and_wait();
    CHECK(list.get() == 6);
    CHECK(list_no_args.get() == 7);
    CHECK(mixed.get() == 10);  // the parallel_for finished before
    CHECK(any_vector.get() == 'k');
    CHECK(tuple.get() == "x2");
    CHECK(tuple_no_args.get() == 1.5);
    CHECK(empty.get() == 9);
  });
}

TEST_CASE("a job taking Subflow& spawns child work its completion waits for") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("subflow job", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskScope scope{pool};
    std::atomic<int> children{0};
    auto parent = scope.submit([&](weft::Subflow& sf) {
      for (int i = 0; i < 64; ++i) sf.spawn([&] { children.fetch_add(1); });
      return 5;
    });
    auto after = scope.then(parent, [&](int x) { return x + children.load(); });
    scope.run_and_wait();
    CHECK(after.get() == 69);
  });
}

TEST_CASE("move-only and non-default-constructible results") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("move-only", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    struct NoDefault {
      explicit NoDefault(int v) : value(v) {}
      int value;
    };
    weft::TaskScope scope{pool};
    auto p = scope.submit([] { return std::make_unique<int>(4); });
    auto q = scope.then(p, [](const std::unique_ptr<int>& x) { return NoDefault(*x + 1); });
    scope.run_and_wait();
    CHECK(*p.get() == 4);
    CHECK(q.get().value == 5);
  });
}

TEST_CASE("names: NodeOptions::name or 'job <index>'") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskScope scope{pool};
  auto a = scope.submit([] {});
  auto b = scope.submit([] {}, weft::NodeOptions{.name = "loader"});
  CHECK(a.name() == "job 0");
  CHECK(b.name() == "loader");
  CHECK(scope.size() == 2);
  scope.run_and_wait();
}

TEST_CASE("get() before the run, on an empty Job, and while running") {
  const Watchdog watchdog("get too early", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskScope scope{pool};
  Gate gate;
  auto a = scope.submit([] { return 1; });
  auto held = scope.submit([&] { gate.enter(); });
  auto b = scope.then(held, [] { return 2; });
  CHECK_THROWS_AS(a.get(), std::logic_error);
  CHECK_FALSE(a.ready());
  weft::Job<int> empty;
  CHECK_FALSE(empty.valid());
  CHECK_THROWS_AS(empty.get(), std::logic_error);
  CHECK_THROWS_AS(weft::AnyJob().get(), std::logic_error);
  scope.run();
  gate.await_entered(1);
  CHECK_THROWS_AS(b.get(), std::logic_error);  // still running, b waits behind the gate
  gate.open();
  scope.wait();
  CHECK(b.get() == 2);
  CHECK(a.ready());
  weft::AnyJob any = a;
  any.get();  // finished: returns
}

TEST_CASE("results stay valid after the scope is destroyed") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("outlive scope", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Job<std::vector<int>> kept;
    {
      weft::TaskScope scope{pool};
      kept = scope.submit([] { return std::vector<int>(1000, 3); });
      scope.run_and_wait();
    }
    CHECK(kept.get().size() == 1000);
    CHECK(kept.get()[999] == 3);
  });
}

TEST_CASE("an empty scope runs and waits") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskScope scope{pool};
  CHECK(scope.run_and_wait() == weft::RunStatus::Completed);
}

TEST_CASE("a scope nested inside a job of another scope") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("nested scope", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskScope outer{pool};
    auto total = outer.submit([&pool] {
      weft::TaskScope inner{pool};
      auto x = inner.submit([] { return 20; });
      auto y = inner.then(x, [](int v) { return v + 1; });
      inner.run_and_wait();
      return y.get();
    });
    auto twice = outer.then(total, [](int v) { return 2 * v; });
    outer.run_and_wait();
    CHECK(twice.get() == 42);
  });
}

}  // namespace
