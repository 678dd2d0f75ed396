// FiberStackPool (scheduler/fiber/fiber_stack.hpp): stacks are reused, the bound gives an empty stack instead of a
// crash, unused stacks are unmapped past keep_free and by trim(), bad options name the field and value, and
// under concurrent acquire/release every stack is held by one owner at a time.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/fiber/fiber_stack.hpp"
#include "tests/fiber/fiber_test_support.hpp"
#include "tests/support/platform.hpp"
#include "weft/errors.hpp"

namespace {

using weft::fiber::FiberStack;
using weft::fiber::FiberStackOptions;
using weft::fiber::FiberStackPool;
using namespace weft::test;

std::string invalid_message(const FiberStackOptions& options) {
  try {
    const FiberStackPool pool(options);
  } catch (const weft::invalid_option& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST_CASE("a released stack is reused, not mapped again") {
  FiberStackPool pool(FiberStackOptions{.stack_size = 64 * 1024, .max_stacks = 4, .keep_free = 4});
  void* first = nullptr;
  {
    FiberStack stack = pool.acquire();
    REQUIRE(stack);
    first = stack.bottom();
    // The whole usable range is writable.
    std::memset(stack.bottom(), 0xab, stack.size());
  }
  for (int i = 0; i < 100; ++i) {
    FiberStack stack = pool.acquire();
    REQUIRE(stack);
    CHECK(stack.bottom() == first);
  }
  const auto stats = pool.stats();
  CHECK(stats.mapped == 1);
  CHECK(stats.live == 1);
  CHECK(stats.free == 1);
  CHECK(stats.unmapped == 0);
}

// The guard: one page on Linux; on Windows a page never committed, 64 KiB of room for a stack overflow's handlers
// and a guard page (src/windows/stack_memory.cpp).
TEST_CASE("sizes are rounded up to whole pages, with the guard below each stack") {
  const std::size_t page = weft::test::page_size();
#if defined(_WIN32)
  const std::size_t guard = page + 64 * 1024 + page;
#else
  const std::size_t guard = page;
#endif
  FiberStackPool pool(FiberStackOptions{.stack_size = 20'000, .max_stacks = 2, .keep_free = 0});
  CHECK(pool.stack_size() % page == 0);
  CHECK(pool.stack_size() >= 20'000);
  CHECK(pool.stack_size() < 20'000 + page);
  const FiberStack stack = pool.acquire();
  REQUIRE(stack);
  CHECK(stack.size() == pool.stack_size());
  CHECK(static_cast<char*>(stack.top()) - static_cast<char*>(stack.bottom()) ==
        static_cast<std::ptrdiff_t>(pool.stack_size()));
  CHECK(static_cast<char*>(stack.bottom()) - static_cast<char*>(stack.guard()) == static_cast<std::ptrdiff_t>(guard));
  CHECK(stack.guard_size() == guard);
  CHECK(reinterpret_cast<std::uintptr_t>(stack.bottom()) % page == 0);
}

TEST_CASE("at the bound acquire returns an empty stack, and a release makes room again") {
  FiberStackPool pool(FiberStackOptions{.stack_size = 16 * 1024, .max_stacks = 3, .keep_free = 1});
  std::vector<FiberStack> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(pool.acquire());
    REQUIRE(held.back());
  }
  for (int i = 0; i < 5; ++i) CHECK_FALSE(pool.acquire());  // the caller falls back; nothing crashes
  CHECK(pool.stats().live == 3);
  CHECK(pool.stats().peak == 3);
  held.pop_back();
  FiberStack again = pool.acquire();
  CHECK(again);
  CHECK_FALSE(pool.acquire());
}

TEST_CASE("acquire_past_bound goes past max_stacks up to the ceiling, counts it, and releases shrink back") {
  FiberStackPool pool(FiberStackOptions{.stack_size = 16 * 1024, .max_stacks = 2, .ceiling = 5, .keep_free = 2});
  std::vector<FiberStack> held;
  for (int i = 0; i < 2; ++i) held.push_back(pool.acquire());
  CHECK_FALSE(pool.acquire());  // acquire keeps to the bound
  CHECK_FALSE(pool.past_bound());
  for (int i = 0; i < 3; ++i) {
    held.push_back(pool.acquire_past_bound());
    REQUIRE(held.back());
  }
  CHECK_FALSE(pool.acquire_past_bound());  // the ceiling
  CHECK(pool.past_bound());
  auto stats = pool.stats();
  CHECK(stats.live == 5);
  CHECK(stats.peak == 5);
  CHECK(stats.overshoot == 3);
  // Released while past the bound: unmapped, not kept, until the pool is back at max_stacks.
  held.pop_back();
  held.pop_back();
  held.pop_back();
  stats = pool.stats();
  CHECK(stats.live == 2);
  CHECK(stats.free == 0);
  CHECK(stats.unmapped == 3);
  CHECK_FALSE(pool.past_bound());
  held.pop_back();  // within the bound again: kept for reuse
  CHECK(pool.stats().free == 1);
  CHECK(invalid_message({.max_stacks = 4, .ceiling = 3}) ==
        "weft::fiber::FiberStackOptions::ceiling = 3: must be in [max_stacks = 4, 30000]");
}

TEST_CASE("releases past keep_free unmap, and trim unmaps the rest") {
  FiberStackPool pool(FiberStackOptions{.stack_size = 16 * 1024, .max_stacks = 10, .keep_free = 2});
  {
    std::vector<FiberStack> burst;
    for (int i = 0; i < 10; ++i) burst.push_back(pool.acquire());
    CHECK(pool.stats().live == 10);
  }
  auto stats = pool.stats();
  CHECK(stats.live == 2);  // a burst does not pin its peak
  CHECK(stats.free == 2);
  CHECK(stats.peak == 10);
  CHECK(stats.mapped == 10);
  CHECK(stats.unmapped == 8);
  pool.trim(1);
  CHECK(pool.stats().free == 1);
  pool.trim();
  stats = pool.stats();
  CHECK(stats.live == 0);
  CHECK(stats.free == 0);
  CHECK(stats.unmapped == 10);
  // Still usable after a trim.
  const FiberStack stack = pool.acquire();
  CHECK(stack);
  CHECK(pool.stats().mapped == 11);
}

TEST_CASE("bad options are refused, naming the field and the value") {
  CHECK(invalid_message({.stack_size = 0}) ==
        "weft::fiber::FiberStackOptions::stack_size = 0 bytes: must be in [16384, 1073741824]");
  CHECK(invalid_message({.stack_size = 16383}).find("stack_size = 16383 bytes") != std::string::npos);
  CHECK(invalid_message({.stack_size = (std::size_t{1} << 30) + 1}).find("stack_size = 1073741825 bytes") !=
        std::string::npos);
  CHECK(invalid_message({.max_stacks = 0}) ==
        "weft::fiber::FiberStackOptions::max_stacks = 0: must be in [1, 30000] (each stack is two memory mappings)");
  CHECK(invalid_message({.max_stacks = 30'001}).find("max_stacks = 30001") != std::string::npos);
  CHECK(invalid_message({.max_stacks = 4, .keep_free = 5}) ==
        "weft::fiber::FiberStackOptions::keep_free = 5: must be at most max_stacks = 4");
  // The limits themselves are accepted.
  CHECK(invalid_message({.stack_size = 16 * 1024, .max_stacks = 1, .keep_free = 1}) == "(no exception)");
}

TEST_CASE("under concurrent acquire and release every stack has one owner at a time") {
  const Watchdog watchdog("concurrent acquire/release", patience(60));
  constexpr unsigned kThreads = 4;
  FiberStackPool pool(FiberStackOptions{.stack_size = 16 * 1024, .max_stacks = 3, .keep_free = 2});
  const std::uint64_t rounds = weft::test::stress_count(weft::test::reduced_runs() ? 5'000 : 50'000);
  std::atomic<std::uint64_t> acquired{0};
  std::atomic<std::uint64_t> refused{0};
  std::atomic<std::uint64_t> clobbered{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < rounds; ++i) {
        FiberStack stack = pool.acquire();
        if (!stack) {
          refused.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        acquired.fetch_add(1, std::memory_order_relaxed);
        // Owned: a mark written at both ends survives until the release (a stack handed out twice would see
        // another owner's mark).
        const std::uint64_t mark = (std::uint64_t{t} << 32) | (i & 0xffffffffu);
        auto* low = static_cast<volatile std::uint64_t*>(stack.bottom());
        auto* high = static_cast<volatile std::uint64_t*>(stack.top()) - 1;
        *low = mark;
        *high = mark;
        for (int spin = 0; spin < 16; ++spin) std::atomic_signal_fence(std::memory_order_seq_cst);
        if (*low != mark || *high != mark) clobbered.fetch_add(1, std::memory_order_relaxed);
        const auto live = pool.stats().live;
        if (live > 3) clobbered.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(clobbered.load() == 0);
  CHECK(acquired.load() + refused.load() == kThreads * rounds);
  CHECK(acquired.load() > 0);
  const auto stats = pool.stats();
  CHECK(stats.live == stats.free);  // all returned
  CHECK(stats.peak <= 3);
  CHECK(stats.live <= 2);
}

}  // namespace
