// weft::shared_function: copies share one callable (never copy it), move-only callables are accepted, the
// callable is destroyed exactly once with the last copy, and empty sources give an empty object.
#include <weft/shared_function.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/support/counting_new.hpp"
#include "weft/small_function.hpp"

namespace {

using weft::shared_function;

// Counts its own destructions; copying it is an error the test would see.
struct Tracked {
  int* destroyed;
  int* calls;
  explicit Tracked(int* d, int* c) : destroyed(d), calls(c) {}
  Tracked(Tracked&& other) noexcept : destroyed(std::exchange(other.destroyed, nullptr)), calls(other.calls) {}
  Tracked(const Tracked&) = delete;
  ~Tracked() {
    if (destroyed != nullptr) ++*destroyed;
  }
  int operator()(int v) { return ++*calls + v; }
};

static_assert(std::is_copy_constructible_v<shared_function<void()>>);
static_assert(std::is_nothrow_move_constructible_v<shared_function<void()>>);
static_assert(std::is_constructible_v<shared_function<int(int)>, Tracked>);      // move-only accepted
static_assert(!std::is_constructible_v<shared_function<int(int)>, int>);         // not callable
static_assert(!std::is_constructible_v<shared_function<int(int)>, void (*)()>);  // wrong signature

TEST_CASE("copies share one callable, which is destroyed exactly once with the last copy") {
  int destroyed = 0;
  int calls = 0;
  {
    shared_function<int(int)> first = Tracked(&destroyed, &calls);
    CHECK(destroyed == 0);  // the moved-from temporary held nothing
    shared_function<int(int)> second = first;
    CHECK(second.shares_with(first));
    CHECK(first(10) == 11);
    CHECK(second(10) == 12);  // the same object: its count goes on
    {
      const shared_function<int(int)> third = second;
      CHECK(third(0) == 3);
    }
    CHECK(destroyed == 0);
    first = nullptr;
    CHECK_FALSE(first);
    CHECK(destroyed == 0);  // second still holds it
    CHECK(second(0) == 4);
  }
  CHECK(destroyed == 1);
  CHECK(calls == 4);
}

TEST_CASE("copying never allocates; assigning rebinds one object only") {
  int calls_a = 0;
  int calls_b = 0;
  shared_function<void()> a = [&calls_a] { ++calls_a; };
  const weft::test::allocation_counter allocations;
  shared_function<void()> b = a;
  shared_function<void()> c;
  c = b;
  CHECK(allocations.count() == 0);
  b = [&calls_b] { ++calls_b; };
  a();
  b();
  c();
  CHECK(calls_a == 2);
  CHECK(calls_b == 1);
  CHECK(c.shares_with(a));
  CHECK_FALSE(b.shares_with(a));
}

TEST_CASE("moving leaves the source empty") {
  shared_function<int()> a = [] { return 5; };
  shared_function<int()> b = std::move(a);
  CHECK_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from state is part of the contract
  CHECK(b() == 5);
  a = std::move(b);
  CHECK(a() == 5);
}

TEST_CASE("empty sources give an empty object; calling an empty one throws bad_function_call") {
  int (*null_pointer)() = nullptr;
  const shared_function<int()> from_pointer = null_pointer;
  const shared_function<int()> from_std = std::function<int()>();
  const shared_function<int()> from_small = weft::small_function<int()>();
  const shared_function<int()> defaulted;
  for (const auto* f : {&from_pointer, &from_std, &from_small, &defaulted}) {
    CHECK_FALSE(*f);
    CHECK(*f == nullptr);
    CHECK_THROWS_AS((*f)(), std::bad_function_call);
  }
  auto unique = std::make_unique<int>(3);
  const shared_function<int()> from_move_only_small = weft::small_function<int()>(
      [p = std::move(unique)] { return *p; });
  CHECK(from_move_only_small() == 3);
}

TEST_CASE("an exception from the callable propagates and the callable stays") {
  int calls = 0;
  const shared_function<void()> f = [&calls] {
    if (++calls == 1) throw std::runtime_error("first");
  };
  CHECK_THROWS_AS(f(), std::runtime_error);
  f();
  CHECK(calls == 2);
}

TEST_CASE("copies made, called and destroyed from several threads destroy the callable once") {
  int destroyed = 0;
  std::atomic<int> total{0};
  {
    struct Adder {
      std::atomic<int>* total;
      int* destroyed;
      Adder(std::atomic<int>* t, int* d) : total(t), destroyed(d) {}
      Adder(Adder&& other) noexcept : total(other.total), destroyed(std::exchange(other.destroyed, nullptr)) {}
      ~Adder() {
        if (destroyed != nullptr) ++*destroyed;
      }
      void operator()() { total->fetch_add(1, std::memory_order_relaxed); }
    };
    const shared_function<void()> original = Adder(&total, &destroyed);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([original] {
        for (int i = 0; i < 1000; ++i) {
          const shared_function<void()> copy = original;
          copy();
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  CHECK(total.load() == 4000);
  CHECK(destroyed == 1);
}

}  // namespace
