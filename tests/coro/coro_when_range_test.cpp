// weft::when_all, when_any and when_all_settled over a std::vector of Tasks (weft/task_when.hpp): values in the
// vector's order, every member run exactly once, the first failure in order rethrown after all ended, the first
// to end for when_any with the losers run to their ends, bad input refused with its index, and sync_wait over each.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/coro/coro_configs.hpp"
#include "weft/event.hpp"
#include "weft/pool.hpp"
#include "weft/sync_wait.hpp"
#include "weft/task.hpp"
#include "weft/task_when.hpp"

namespace coro_when_range_test {

using weft::Task;
using namespace weft::test::coro;

struct range_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool message_has(const std::exception& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

// A member that counts its run, then yields its index from a worker (so that members end on several threads).
Task<int> counted(weft::Pool& pool, std::vector<std::atomic<int>>& runs, int i) {
  co_await pool.schedule();
  runs[static_cast<std::size_t>(i)].fetch_add(1);
  co_return i;
}

TEST_CASE("when_all over a vector: values in order, each member once, the first failure in order rethrown") {
  on_each_pool([&](weft::Pool& pool) {
    constexpr int n = 200;
    std::vector<std::atomic<int>> runs(n);
    auto all = [&]() -> Task<long> {
      co_await pool.schedule();
      std::vector<Task<int>> members;
      for (int i = 0; i < n; ++i) members.push_back(counted(pool, runs, i));
      const std::vector<int> values = co_await weft::when_all(std::move(members));
      long in_order = 0;
      for (int i = 0; i < n; ++i) in_order += values[static_cast<std::size_t>(i)] == i ? 1 : 0;
      co_return in_order;
    };
    CHECK(weft::sync_wait(all()) == n);
    for (auto& r : runs) CHECK(r.load() == 1);

    // Task<void> members give std::monostate; an empty vector gives an empty vector at once.
    std::atomic<int> voids{0};
    auto void_member = [&]() -> Task<void> {
      co_await pool.schedule();
      voids.fetch_add(1);
    };
    std::vector<Task<void>> void_members;
    for (int i = 0; i < 5; ++i) void_members.push_back(void_member());
    CHECK(weft::sync_wait(weft::when_all(std::move(void_members))).size() == 5);
    CHECK(voids.load() == 5);
    CHECK(weft::sync_wait(weft::when_all(std::vector<Task<int>>{})).empty());

    // Members 3 and 7 throw: the co_await rethrows member 3's, after every member ended.
    std::atomic<int> ended{0};
    auto maybe_throw = [&](int i) -> Task<int> {
      co_await pool.schedule();
      ended.fetch_add(1);
      if (i == 3 || i == 7) throw range_error("member " + std::to_string(i));
      co_return i;
    };
    std::vector<Task<int>> failing;
    for (int i = 0; i < 10; ++i) failing.push_back(maybe_throw(i));
    CHECK_THROWS_WITH_AS(weft::sync_wait(weft::when_all(std::move(failing))), "member 3", range_error);
    CHECK(ended.load() == 10);
  });
}

TEST_CASE("when_any over a vector gives the first to end with its index; the losers run to their ends") {
  on_each_pool([&](weft::Pool& pool) {
    // Every member but one waits for an event signalled after the winner was taken; each loser then throws, and
    // its exception goes nowhere (its frame is freed at its end: ASan's leak check).
    weft::Event release;
    std::atomic<int> losers_ended{0};
    auto loser = [&]() -> Task<std::string> {
      co_await release;
      losers_ended.fetch_add(1);
      throw range_error("late");
      co_return std::string("never");
    };
    auto winner = []() -> Task<std::string> { co_return std::string("won"); };
    auto race = [&]() -> Task<std::size_t> {
      co_await pool.schedule();
      std::vector<Task<std::string>> members;
      for (int i = 0; i < 6; ++i) members.push_back(i == 4 ? winner() : loser());
      weft::WhenAnyResult<std::string> first = co_await weft::when_any(std::move(members));
      CHECK(first.value == "won");
      co_return first.index;
    };
    CHECK(weft::sync_wait(race()) == 4);
    release.signal();
    pool.wait_idle();
    CHECK(losers_ended.load() == 5);

    // The first to end threw: rethrown.
    auto bad = []() -> Task<int> {
      throw range_error("first");
      co_return 0;
    };
    std::vector<Task<int>> one_bad;
    one_bad.push_back(bad());
    CHECK_THROWS_WITH_AS(weft::sync_wait(weft::when_any(std::move(one_bad))), "first", range_error);

    // Exactly one member wins when all end at once on several workers.
    constexpr int n = 64;
    std::vector<std::atomic<int>> runs(n);
    std::vector<Task<int>> racers;
    for (int i = 0; i < n; ++i) racers.push_back(counted(pool, runs, i));
    auto raced = [&]() -> Task<int> {
      co_await pool.schedule();
      auto first = co_await weft::when_any(std::move(racers));
      co_return first.value == static_cast<int>(first.index) ? 1 : 0;
    };
    CHECK(weft::sync_wait(raced()) == 1);
    pool.wait_idle();
    for (auto& r : runs) CHECK(r.load() == 1);
  });
}

TEST_CASE("when_all_settled over a vector gives every outcome in order and never throws for a member") {
  on_each_pool([&](weft::Pool& pool) {
    auto member = [&pool](int i) -> Task<int> {
      co_await pool.schedule();
      if (i % 3 == 0) throw range_error("member " + std::to_string(i));
      co_return i;
    };
    auto settle = [&]() -> Task<int> {
      co_await pool.schedule();
      std::vector<Task<int>> members;
      for (int i = 0; i < 12; ++i) members.push_back(member(i));
      std::vector<weft::Settled<int>> outcomes = co_await weft::when_all_settled(std::move(members));
      int right = 0;
      for (int i = 0; i < 12; ++i) {
        const weft::Settled<int>& o = outcomes[static_cast<std::size_t>(i)];
        right += (i % 3 == 0) ? (!o.has_value() && o.error ? 1 : 0) : (o.has_value() && *o.value == i ? 1 : 0);
      }
      co_return right;
    };
    CHECK(weft::sync_wait(settle()) == 12);
    CHECK(weft::sync_wait(weft::when_all_settled(std::vector<Task<int>>{})).empty());
  });
}

TEST_CASE("the vector forms refuse an empty vector for when_any, and an empty or started Task by its index") {
  weft::Pool pool(weft::PoolOptions{.threads = 2});
  auto fast = []() -> Task<int> { co_return 1; };

  CHECK_THROWS_WITH_AS((void)weft::when_any(std::vector<Task<int>>{}),
                       "weft::when_any: the vector of Tasks is empty (no first to end)", std::invalid_argument);

  auto with_hole = [&fast] {
    std::vector<Task<int>> members;
    members.push_back(fast());
    members.emplace_back();  // empty
    members.push_back(fast());
    return members;
  };
  try {
    (void)weft::sync_wait(weft::when_all(with_hole()));
    FAIL("when_all over an empty Task");
  } catch (const std::logic_error& e) {
    CHECK(message_has(e, "weft::when_all: the weft::Task is empty"));
    CHECK(message_has(e, "(the Task at index 1)"));
  }
  try {
    (void)weft::sync_wait(weft::when_any(with_hole()));
    FAIL("when_any over an empty Task");
  } catch (const std::logic_error& e) {
    CHECK(message_has(
        e, "weft::when_any: the weft::Task is empty (default-constructed or moved from) (the Task at index 1)"));
  }
  CHECK_THROWS_WITH_AS((void)weft::when_all_settled(with_hole()),
                       "weft::when_all_settled: the weft::Task is empty (default-constructed or moved from) (the Task "
                       "at index 1)",
                       std::logic_error);

  // Awaited twice: refused, the members run once.
  auto twice = [&]() -> Task<int> {
    co_await pool.schedule();
    std::vector<Task<int>> members;
    members.push_back(fast());
    auto all = weft::when_all(std::move(members));
    const int first = (co_await all).front();
    try {
      (void)co_await all;
    } catch (const std::logic_error& e) {
      co_return message_has(e, "awaited already") ? first : -1;
    }
    co_return -2;
  };
  CHECK(weft::sync_wait(twice()) == 1);

  // A never-awaited range frees its Tasks unstarted (ASan's leak check).
  {
    std::vector<Task<int>> unused;
    for (int i = 0; i < 3; ++i) unused.push_back(fast());
    auto any = weft::when_any(std::move(unused));
    (void)any;
  }
}

}  // namespace coro_when_range_test
