// NodePool and NodeCache (scheduler/lockfree/node_pool.hpp): blocks are recycled instead of malloc'd, never handed out
// twice while live, cache-line aligned, and given back whole when a thread's cache drains; a refill takes one
// batch, so the blocks from the system stay bounded by the peak in use while threads come and go.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "scheduler/lockfree/node_pool.hpp"
#include "tests/support/rendezvous.hpp"
#include "tests/support/stress.hpp"

namespace {

using Pool = weft::lockfree::NodePool<weft::atomics::StdMemoryModel>;
using Cache = weft::lockfree::NodeCache<weft::atomics::StdMemoryModel>;
constexpr std::size_t kBlock = 152;  // a Task's size class (192 bytes)

TEST_CASE("a freed block is reused by the next allocation of its class, and pooled blocks are line-aligned") {
  Pool pool(true);
  Cache cache(pool);
  std::vector<void*> first;
  for (int i = 0; i < 1000; ++i) {
    first.push_back(cache.allocate(kBlock, 8));
    CHECK(reinterpret_cast<std::uintptr_t>(first.back()) % weft::lockfree::kPoolGranule == 0);
  }
  CHECK(pool.system_allocations() == 1000);
  for (void* p : first) cache.deallocate(p, kBlock, 8);
  std::vector<void*> second;
  for (int i = 0; i < 1000; ++i) second.push_back(cache.allocate(kBlock, 8));
  CHECK(pool.system_allocations() == 1000);  // every one came back from the cache or the shared pool
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  CHECK(first == second);
  for (void* p : second) cache.deallocate(p, kBlock, 8);
}

TEST_CASE("blocks freed by one thread are allocated by another without the system") {
  Pool pool(true);
  Cache producer(pool);
  std::vector<void*> blocks;
  for (int i = 0; i < 4096; ++i) blocks.push_back(producer.allocate(kBlock, 8));
  std::thread consumer([&] {
    Cache cache(pool);
    for (void* p : blocks) cache.deallocate(p, kBlock, 8);
    cache.drain();  // what a thread leaving the domain does: the part-filled list goes back too
  });
  consumer.join();
  const auto before = pool.system_allocations();
  std::set<void*> again;
  for (int i = 0; i < 4096; ++i) again.insert(producer.allocate(kBlock, 8));
  CHECK(pool.system_allocations() == before);
  CHECK(again.size() == 4096);
  for (void* p : again) producer.deallocate(p, kBlock, 8);
}

TEST_CASE("a cache that took a large refill still frees without losing or duplicating blocks") {
  // The case that made every free walk 128 cold blocks before: a huge `taken` list, then frees.
  Pool pool(true);
  Cache a(pool);
  Cache b(pool);
  std::vector<void*> blocks;
  for (int i = 0; i < 20000; ++i) blocks.push_back(a.allocate(kBlock, 8));
  for (void* p : blocks) b.deallocate(p, kBlock, 8);
  b.drain();
  const auto system = pool.system_allocations();
  std::set<void*> live;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 300; ++i) REQUIRE(live.insert(a.allocate(kBlock, 8)).second);
    for (int i = 0; i < 300; ++i) {
      a.deallocate(*live.begin(), kBlock, 8);
      live.erase(live.begin());
    }
  }
  CHECK(pool.system_allocations() == system);
}

TEST_CASE("a refill takes one batch, so a second cache still finds the shared pool's other blocks") {
  // A refill used to take the whole shared stack: the first cache to refill kept every free block, and the
  // next one went to the system although the pool held ten batches.
  constexpr std::size_t kBatches = 10;
  Pool pool(true);
  Cache a(pool);
  Cache b(pool);
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < kBatches * Cache::kCapacity; ++i) blocks.push_back(a.allocate(kBlock, 8));
  {
    Cache freer(pool);
    for (void* p : blocks) freer.deallocate(p, kBlock, 8);
    freer.drain();
  }
  const auto system = pool.system_allocations();
  std::set<void*> live;
  live.insert(a.allocate(kBlock, 8));  // a takes one batch
  for (std::size_t i = 0; i < (kBatches - 1) * Cache::kCapacity; ++i) {
    REQUIRE(live.insert(b.allocate(kBlock, 8)).second);
  }
  CHECK(pool.system_allocations() == system);
  CHECK(live.size() == (kBatches - 1) * Cache::kCapacity + 1);
  for (void* p : live) b.deallocate(p, kBlock, 8);
}

TEST_CASE("rounds of new threads: blocks from the system stay bounded by the peak in use") {
  // Each round, new threads each allocate kPerThread blocks and exit once all have; a long-lived thread (here: this
  // one, as a worker that runs the tasks would) frees them all. At most kThreads * kPerThread blocks are in use at
  // once, and each cache holds at most two batches per class, so the pool never needs more than that from the system,
  // however many rounds run. With whole-stack refills, the first thread of a round kept every free block and the
  // others took (kThreads - 1) * kPerThread new ones from the system, every round.
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kPerThread = 2000;
  const auto rounds = static_cast<int>(weft::test::stress_count(30));
  Pool pool(true);
  Cache runner(pool);
  const std::uint64_t bound = kThreads * kPerThread + (kThreads + 1) * 2 * Cache::kCapacity;
  std::uint64_t most = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::vector<void*>> made(kThreads);
    std::vector<std::thread> threads;
    weft::test::Latch allocated(kThreads);  // all of a round's threads hold their caches at once, whatever the timing
    for (std::size_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&pool, &allocated, &mine = made[t]] {
        Cache cache(pool);
        for (std::size_t i = 0; i < kPerThread; ++i) mine.push_back(cache.allocate(kBlock, 8));
        allocated.arrive_and_wait();
        cache.drain();  // what a thread leaving the domain does
      });
    }
    for (auto& thread : threads) thread.join();
    std::set<void*> distinct;
    for (const auto& mine : made) distinct.insert(mine.begin(), mine.end());
    REQUIRE(distinct.size() == kThreads * kPerThread);  // never one block handed out twice
    for (void* p : distinct) runner.deallocate(p, kBlock, 8);
    most = std::max(most, pool.system_allocations());
    INFO("round " << round);
    REQUIRE(pool.system_allocations() <= bound);
  }
  MESSAGE("system blocks after " << rounds << " rounds: " << most << " (peak in use " << kThreads * kPerThread
                                 << ", bound " << bound << ")");
}

TEST_CASE("stress: blocks passed between threads are never handed out twice while live") {
  Pool pool(true);
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  std::mutex mutex;
  std::vector<void*> in_transit;  // allocated by one thread, to be freed by another
  std::set<void*> live;
  std::vector<std::thread> threads;
  std::atomic<bool> duplicate{false};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      Cache cache(pool);
      for (int i = 0; i < kRounds; ++i) {
        void* p = cache.allocate(kBlock, 8);
        void* to_free = nullptr;
        {
          const std::lock_guard lock(mutex);
          if (!live.insert(p).second) duplicate = true;
          in_transit.push_back(p);
          if (in_transit.size() > 64) {
            to_free = in_transit.front();
            in_transit.erase(in_transit.begin());
            live.erase(to_free);
          }
        }
        if (to_free != nullptr) cache.deallocate(to_free, kBlock, 8);
      }
      cache.drain();
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK_FALSE(duplicate.load());
  Cache last(pool);
  for (void* p : in_transit) last.deallocate(p, kBlock, 8);
  // Recycling bounded the memory: far fewer system blocks than allocations.
  CHECK(pool.system_allocations() < kThreads * kRounds / 10);
  MESSAGE("system blocks: ", pool.system_allocations(), " for ", kThreads * kRounds, " allocations");
}

TEST_CASE("without recycling every block goes back to the system at once") {
  Pool pool(false);
  Cache cache(pool);
  void* p = cache.allocate(kBlock, 8);
  cache.deallocate(p, kBlock, 8);
  CHECK(pool.system_allocations() == 1);
  CHECK(pool.system_frees() == 1);
}

}  // namespace
