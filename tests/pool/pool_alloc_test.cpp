// The steady state of posting and running tasks does not call malloc: tasks, queue nodes and deque slots are
// recycled. Counted with a replaced global operator new (counting_new.cpp) across all threads.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/counting_new.hpp"

namespace {

using namespace weft::test;

// Blocks freed by a worker stay in its cache (fewer than 128 freed plus at most one taken batch of 128 per size
// class: at most 255) until it hands its freed list to the shared pool, and an outside submitter, which never frees,
// always draws from the shared pool: the memory in circulation is the backlog plus what the caches hold. Steady state
// therefore means a bounded backlog (batches of kBatch tasks, each batch waited for). Even then, when the work shifts
// between workers, blocks pile up in caches that held fewer before, the shared pool runs dry and the submitter takes
// fresh blocks from malloc, until every cache has reached its high-water mark. Those late warm-up allocations are
// bounded by the caches' capacity: (threads) x (size classes in use: tasks, queue nodes) x 255 blocks.
[[nodiscard]] std::uint64_t cache_capacity(unsigned workers) { return (workers + 1) * 2 * 255; }
constexpr std::uint64_t kBatch = 1000;
constexpr int kBatchesPerRound = kThreadSanitizer ? 5 : 20;  // TSan: the same pattern, a quarter of it
constexpr std::uint64_t kTasksPerRound = kBatchesPerRound * (kBatch + kBatch / 2);

// Per batch, kBatch posts from outside (Normal, High, Low, with and without affinity) and, from every other
// task, a child posted on its worker (into the worker's deque).
void post_round(weft::Pool& pool, std::atomic<std::uint64_t>& ran) {
  for (int batch = 0; batch < kBatchesPerRound; ++batch) {
    for (std::uint64_t i = 0; i < kBatch; ++i) {
      weft::TaskOptions options;
      options.priority = static_cast<weft::Priority>(i % 3);
      if (i % 5 == 0) options.affinity = static_cast<unsigned>(i % pool.size());
      pool.post(
          [&pool, &ran, i] {
            ran.fetch_add(1, std::memory_order_relaxed);
            if (i % 2 == 0) pool.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
          },
          options);
    }
    pool.wait_idle();
  }
}

TEST_CASE("posting and running tasks in the steady state does not allocate (beyond cache warm-up)") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("no malloc", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = std::chrono::microseconds(50)}};
    std::atomic<std::uint64_t> ran{0};
    constexpr int kWarmUp = kThreadSanitizer ? 4 : 10;
    for (int round = 0; round < kWarmUp; ++round) post_round(pool, ran);

    reset_allocation_count();
    count_allocations(true);
    post_round(pool, ran);
    count_allocations(false);
    const std::uint64_t allocations = allocations_counted();
    CHECK(ran.load() == (kWarmUp + 1) * kTasksPerRound);
    MESSAGE("allocations while posting and running " << kTasksPerRound << " tasks: " << allocations);
    // Zero in most runs; see cache_capacity() for the allocations that may still appear.
    CHECK(allocations <= cache_capacity(workers));
  });
}

TEST_CASE("submit + get in the steady state does not allocate (beyond cache warm-up)") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("submit allocations", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::uint64_t kSubmits = kThreadSanitizer ? 1000 : 5000;
    std::atomic<std::uint64_t> sum{0};
    const auto round = [&] {
      // From a worker, so that get() helps on the worker, and from outside (then get() normally runs the task
      // itself, from this thread's slot).
      pool.post([&] {
        for (std::uint64_t i = 0; i < kSubmits; ++i) sum.fetch_add(pool.submit([i] { return i; }).get());
      });
      for (std::uint64_t i = 0; i < kSubmits; ++i) sum.fetch_add(pool.submit([i] { return i; }).get());
      pool.wait_idle();
    };
    for (int warm_up = 0; warm_up < (kThreadSanitizer ? 4 : 10); ++warm_up) round();
    sum.store(0);
    reset_allocation_count();
    count_allocations(true);
    round();
    count_allocations(false);
    const std::uint64_t allocations = allocations_counted();
    MESSAGE("allocations for " << 2 * kSubmits << " submit + get: " << allocations);
    // Future states come from a per-thread cache (scheduler/engine/future_alloc.cpp), freed mostly by the thread
    // that waited, so they recycle on the spot. A state or task block released on another thread (a worker
    // that stole the task) sits in that thread's cache until it spills, as in the post test above: the same
    // bound, two size classes per thread (task blocks, future states). Zero in most runs.
    CHECK(allocations <= cache_capacity(workers));
    CHECK(sum.load() == 2 * (kSubmits * (kSubmits - 1) / 2));
  });
}

}  // namespace
