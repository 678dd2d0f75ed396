// Outside threads' slots (scheduler/engine/outside_slot.hpp): exactly-once delivery when the submitting threads come
// and go (tasks left in the slot of a thread that exited, slots adopted by new threads, more threads than
// slots), when the pool dies before the thread that used it, under a DropPending shutdown, and when workers
// take a slot's tasks in batches.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;

// More than Engine::kMaxSlots (64) threads submit at once in the second wave, so some use the shared queues.
const unsigned kWaves = reduced_runs() ? 3 : 8;
constexpr unsigned kThreadsPerWave = 80;
const std::uint64_t kTasksPerThread = reduced_runs() ? 100 : 400;

TEST_CASE("a slot's backlog is taken in batches and runs exactly once") {
  // Every worker is held while 2,000 tasks pile up in this thread's slot, so the first look of the first free
  // worker sees them all and takes a full batch: 8, of which 7 go to its from_outside deque, where it and any
  // other worker take them. Without batching the count stays 0.
  static constexpr std::uint64_t kTasks = 2000;
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("slot batches", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    occupy_all_workers(pool, gate);
    std::uint64_t batched_before = 0;
    for (const auto& w : pool.stats().workers) batched_before += w.outside_batched;
    RunCounts runs(kTasks);
    for (std::uint64_t i = 0; i < kTasks; ++i) pool.post([&runs, i] { runs.ran(i); });
    CHECK(pool.stats().queued == kTasks);
    gate.open();
    pool.wait_idle();
    check_exactly_once(runs);
    std::uint64_t batched = 0;
    for (const auto& w : pool.stats().workers) batched += w.outside_batched;
    MESSAGE("tasks set aside in batches: " << batched - batched_before << " of " << kTasks);
    CHECK(batched - batched_before >= 7);
    CHECK(batched - batched_before < kTasks);  // the first task of each batch runs at once
    const auto stats = pool.stats();
    CHECK(stats.queued == 0);
    CHECK(stats.in_flight == 0);
  });
}

TEST_CASE("tasks left in the slot of an exited thread run exactly once, also after the slot is adopted") {
  for_each_worker_count([](unsigned workers) {
    const std::uint64_t per_thread = stress_count(kTasksPerThread);
    const std::uint64_t tasks = kWaves * kThreadsPerWave * per_thread;
    RunCounts runs(tasks);
    const Watchdog watchdog(named("slots of exiting threads", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<std::uint64_t> submitted_sum{0};
    std::uint64_t expected_sum = 0;
    for (unsigned wave = 0; wave < kWaves; ++wave) {
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < kThreadsPerWave; ++t) {
        const std::uint64_t first = (wave * kThreadsPerWave + t) * per_thread;
        for (std::uint64_t i = 0; i < per_thread; i += 3) expected_sum += first + i;
        threads.emplace_back([&, first, wave, t] {
          for (std::uint64_t i = 0; i < per_thread; ++i) {
            const std::uint64_t id = first + i;
            if (i % 3 == 0) {
              // Every third is a submit: some are waited for right away (run inline from the slot), others only
              // at the end, and in odd waves the thread exits with its futures dropped unwaited.
              auto f = pool.submit([&runs, id] {
                runs.ran(id);
                return id;
              });
              if ((i / 3) % 2 == 0 || (wave + t) % 2 == 0)
                submitted_sum.fetch_add(f.get());
              else
                submitted_sum.fetch_add(id);  // its value would be id; the task still runs exactly once
            } else {
              pool.post([&runs, id] { runs.ran(id); });
            }
          }
          // Exit at once: whatever is still in this thread's slot must be stolen by the workers.
        });
      }
      for (auto& thread : threads) thread.join();
      if (wave % 2 == 1) pool.wait_idle();  // even waves leave tasks behind for the next wave's adopters
    }
    pool.wait_idle();
    check_exactly_once(runs);
    CHECK(submitted_sum.load() == expected_sum);
    const auto stats = pool.stats();
    CHECK(stats.queued == 0);
    CHECK(stats.in_flight == 0);
  });
}

TEST_CASE("a pool destroyed before the thread that submitted to it exits") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("pool dies first", workers), patience(60));
    constexpr int kPools = 20;
    std::atomic<std::uint64_t> ran{0};
    std::uint64_t posted = 0;
    // One thread posts to a series of pools, each destroyed (drained) while the thread lives on and keeps
    // its (dead) leases; a new pool may reuse the old one's address.
    std::thread user([&] {
      for (int p = 0; p < kPools; ++p) {
        auto pool = std::make_unique<weft::Pool>(weft::PoolOptions{.threads = workers});
        for (int i = 0; i < 100; ++i) {
          pool->post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
          ++posted;
        }
        CHECK(pool->submit([] { return 7; }).get() == 7);
        pool.reset();
      }
    });
    user.join();
    CHECK(ran.load() == posted);
  });
}

TEST_CASE("DropPending while outside threads submit accounts for every accepted task") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("DropPending with slots", workers), patience(120));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    // Workers stay busy until the shutdown begins, so the submitted tasks pile up in the submitters' slots and
    // the shutdown must find and drop them there.
    Probes probes;
    hold_workers_until_dropping(pool, probes);
    constexpr unsigned kSubmitters = 4;
    std::atomic<std::uint64_t> accepted{0};
    std::atomic<std::uint64_t> ran{0};
    std::atomic<std::uint64_t> futures_ran{0};
    std::atomic<std::uint64_t> futures_dropped{0};
    std::atomic<bool> stop{false};
    std::atomic<bool> shut_down{false};
    std::atomic<unsigned> started{0};
    std::vector<std::thread> submitters;
    for (unsigned s = 0; s < kSubmitters; ++s) {
      submitters.emplace_back([&, s] {
        std::vector<weft::Future<int>> pending;
        std::uint64_t mine = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          try {
            if (s % 2 == 0) {
              pool.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
            } else {
              pending.push_back(pool.submit([&ran] {
                ran.fetch_add(1, std::memory_order_relaxed);
                return 1;
              }));
            }
            accepted.fetch_add(1, std::memory_order_relaxed);
            if (++mine == 100) started.fetch_add(1);
          } catch (const weft::pool_closed&) {
            break;
          }
        }
        // Only once the shutdown has returned: a get() before it could still run its task inline (legitimately),
        // and this test wants the futures of tasks dropped from the slot.
        while (!shut_down.load()) std::this_thread::yield();
        for (auto& f : pending) {
          try {
            futures_ran.fetch_add(static_cast<std::uint64_t>(f.get()));
          } catch (const weft::task_dropped&) {
            futures_dropped.fetch_add(1);
          }
        }
      });
    }
    // Each submitter has some tasks queued (the first to start could otherwise fill the quota alone).
    while (accepted.load() < 4000 || started.load() < kSubmitters) std::this_thread::yield();
    const std::uint64_t dropped = pool.shutdown(weft::Shutdown::DropPending);
    stop.store(true);
    shut_down.store(true);
    for (auto& thread : submitters) thread.join();
    // Every accepted task either ran (once) or was dropped (and counted), never both, never neither.
    CHECK(ran.load() + probes.ran.load() + dropped == accepted.load() + probes.accepted.load());
    INFO("accepted " << accepted.load() << " ran " << ran.load() << " dropped " << dropped << " futures_ran "
                     << futures_ran.load() << " futures_dropped " << futures_dropped.load());
    CHECK(futures_dropped.load() > 0);
    CHECK(futures_dropped.load() <= dropped);
    CHECK(pool.stats().dropped == dropped);
  });
}

}  // namespace
