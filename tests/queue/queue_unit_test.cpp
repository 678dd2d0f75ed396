// Quick single-threaded and small multi-threaded checks of MSQueue with both reclamation domains.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "tests/queue/queue_test_support.hpp"
#include "tests/support/platform.hpp"

// Replaced for this executable only, to prove a warmed-up push/pop stream never allocates.
void* operator new(std::size_t n) {
  weft::test::AllocationCounter::news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = weft::test::allocate_memory(n, alignof(std::max_align_t))) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  weft::test::AllocationCounter::deletes.fetch_add(1, std::memory_order_relaxed);
  weft::test::free_memory(p);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
// Pooled node blocks are cache-line aligned (scheduler/lockfree/node_pool.hpp): they come through these.
void* operator new(std::size_t n, std::align_val_t align) {
  weft::test::AllocationCounter::news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = weft::test::allocate_memory(n, static_cast<std::size_t>(align))) return p;
  throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { operator delete(p); }

namespace {

using weft::lockfree::MSQueue;
using weft::test::AllocationCounter;
using weft::test::Counted;

TEST_CASE_TEMPLATE("MSQueue is FIFO and reports empty", Domain, weft::test::HpDomain, weft::test::QsbrDomain) {
  Domain domain;
  MSQueue<int, Domain> q(domain);
  CHECK_FALSE(q.try_pop().has_value());
  for (int i = 0; i < 1000; ++i) q.push(i);
  for (int i = 0; i < 1000; ++i) {
    auto v = q.try_pop();
    REQUIRE(v.has_value());
    CHECK(*v == i);
  }
  CHECK_FALSE(q.try_pop().has_value());
  domain.unregister_current_thread();
}

TEST_CASE_TEMPLATE("MSQueue moves move-only items", Domain, weft::test::HpDomain, weft::test::QsbrDomain) {
  Domain domain;
  auto handle = domain.register_thread();
  MSQueue<std::unique_ptr<int>, Domain> q(domain);
  q.push(handle.ref(), std::make_unique<int>(7));
  q.push(handle.ref(), std::make_unique<int>(8));
  auto a = q.try_pop(handle.ref());
  REQUIRE(a.has_value());
  CHECK(**a == 7);
  // The second item is left in the queue: the destructor must free it (ASan checks the leak).
}

TEST_CASE_TEMPLATE("a warmed-up push/pop stream allocates nothing", Domain, weft::test::HpDomain,
                   weft::test::QsbrDomain) {
  Domain domain;
  MSQueue<void*, Domain> q(domain);
  auto handle = domain.register_thread();
  const auto t = handle.ref();
  int dummy = 0;
  auto round = [&](int depth) {
    for (int i = 0; i < depth; ++i) q.push(t, &dummy);
    for (int i = 0; i < depth; ++i) REQUIRE(q.try_pop(t).has_value());
    if constexpr (requires { t.quiescent(); }) t.quiescent();
  };
  for (int i = 0; i < 200; ++i) round(64);  // warm-up: fills the retired list, the cache and the pool
  const auto system_before = domain.stats().system_allocations;
  const auto news_before = AllocationCounter::news.load();
  constexpr int kRounds = 20000;  // 20000 x 64 = 1.28M push/pop pairs
  for (int i = 0; i < kRounds; ++i) round(64);
  const auto news_after = AllocationCounter::news.load();
  CHECK(news_after - news_before == 0);
  CHECK(domain.stats().system_allocations == system_before);
  MESSAGE("node blocks from the system: ", domain.stats().system_allocations, " for ", kRounds * 64,
          " push/pop pairs after warm-up");
}

TEST_CASE_TEMPLATE("constructions equal destructions and every block is returned", Domain, weft::test::HpDomain,
                   weft::test::QsbrDomain) {
  {
    Domain warm;
    (void)warm.current();
    warm.unregister_current_thread();
  }  // sizes this thread's record table
  const auto live_before = AllocationCounter::live();
  Counted::constructed = 0;
  Counted::destroyed = 0;
  {
    Domain domain;
    {
      MSQueue<Counted, Domain> q(domain);
      std::vector<std::thread> threads;
      for (int p = 0; p < 3; ++p) {
        threads.emplace_back([&q, p] {
          for (std::uint64_t i = 0; i < 20000; ++i) {
            q.push(Counted(static_cast<std::uint64_t>(p) << 32 | i));
            if (i % 2 == 0) (void)q.try_pop();
          }
        });
      }
      for (auto& th : threads) th.join();
      // About 30000 items are left in the queue for its destructor.
    }
    domain.unregister_current_thread();
  }
  CHECK(Counted::constructed.load() > 0);
  CHECK(Counted::constructed.load() == Counted::destroyed.load());
  CHECK(AllocationCounter::live() == live_before);
}

}  // namespace
