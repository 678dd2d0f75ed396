// Stress test of ChaseLevDeque: one owner pushing and popping, 1, 2 or 3 thieves stealing (one item at a time,
// or in batches of up to 8 from a MaxBatch = 8 deque, whose owner's pops take the put-back path whenever
// fewer than 8 items are left), every item counted
// (a per-item atomic counter that must end at exactly 1). Each round starts a fresh deque of capacity 2 and
// pushes in bursts, so growth (and reclamation of the retired arrays) happens again and again while the
// thieves steal. Per configuration: stress_count(5'000'000) pushes, each taken exactly once, so at least
// 10'000'000 push/pop/steal operations, plus the failed pops and steals.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "scheduler/lockfree/chase_lev_deque.hpp"
#include "tests/support/rendezvous.hpp"
#include "tests/support/stress.hpp"

namespace {

using weft::lockfree::ChaseLevDeque;
using weft::lockfree::StealStatus;
using Item = std::uintptr_t;  // item ids 1..n; 0 is the value of an empty slot and never pushed

constexpr std::uint64_t items_per_round = 4096;
constexpr unsigned max_burst = 256;  // each round grows 2 -> 256 or beyond while thieves steal

struct Outcome {
  std::uint64_t pushed = 0;
  std::uint64_t wrong_counts = 0;  // items not taken exactly once
  std::uint64_t first_wrong = 0;
  std::uint64_t popped = 0;
  std::uint64_t stolen = 0;
  std::uint64_t lost_races = 0;
  std::uint64_t growths = 0;
  std::uint64_t bound_violations = 0;    // retired slots not below capacity
  std::uint64_t unreclaimed_rounds = 0;  // retired arrays left after the thieves stopped and the owner ran
};

template <std::size_t Batch>
Outcome run(unsigned thief_count, std::uint64_t pushes, std::uint64_t seed) {
  using Deque = ChaseLevDeque<Item, weft::atomics::StdMemoryModel, Batch>;
  Outcome out;
  const std::uint64_t rounds = (pushes + items_per_round - 1) / items_per_round;
  out.pushed = rounds * items_per_round;
  std::vector<std::atomic<std::uint8_t>> taken(out.pushed + 1);
  std::atomic<Deque*> current{nullptr};
  std::atomic<bool> round_done{false};
  std::atomic<unsigned> thieves_running{0};
  std::atomic<std::uint64_t> stolen{0};
  std::atomic<std::uint64_t> lost_races{0};
  weft::test::Barrier sync(static_cast<std::size_t>(thief_count) + 1);

  const auto take = [&](Item item) { taken[item].fetch_add(1, std::memory_order_relaxed); };

  std::vector<std::thread> thieves;
  for (unsigned i = 0; i != thief_count; ++i) {
    thieves.emplace_back([&] {
      std::uint64_t mine = 0;
      std::uint64_t lost = 0;
      for (std::uint64_t r = 0; r != rounds; ++r) {
        sync.arrive_and_wait();  // the owner has published this round's deque
        Deque& deque = *current.load(std::memory_order_acquire);
        thieves_running.fetch_add(1, std::memory_order_relaxed);
        while (!round_done.load(std::memory_order_acquire)) {
          if constexpr (Batch == 1) {
            const auto got = deque.steal();
            if (got.stolen()) {
              take(got.item);
              ++mine;
            } else if (got.status == StealStatus::lost_race) {
              ++lost;
            } else {
              std::this_thread::yield();  // 2 cores: let the owner run
            }
          } else {
            Item batch[Batch] = {};
            const std::size_t got = deque.steal_batch(batch).count;
            for (std::size_t i = 0; i != got; ++i) take(batch[i]);
            mine += got;
            if (got == 0) std::this_thread::yield();  // empty or lost: let the owner run
          }
        }
        sync.arrive_and_wait();  // no thief touches the deque any more
      }
      stolen.fetch_add(mine, std::memory_order_relaxed);
      lost_races.fetch_add(lost, std::memory_order_relaxed);
    });
  }

  std::mt19937_64 rng(seed);
  Item next = 1;
  for (std::uint64_t r = 0; r != rounds; ++r) {
    auto deque = std::make_unique<Deque>(2);
    current.store(deque.get(), std::memory_order_release);
    round_done.store(false, std::memory_order_relaxed);  // ordered before the thieves' reads by the barrier
    thieves_running.store(0, std::memory_order_relaxed);
    sync.arrive_and_wait();
    // Start only once every thief is stealing: waking from the barrier takes longer than a whole round.
    while (thieves_running.load(std::memory_order_relaxed) != thief_count) std::this_thread::yield();
    const Item round_end = next + items_per_round;
    while (next != round_end) {
      const auto burst = static_cast<unsigned>(1 + rng() % max_burst);
      for (unsigned i = 0; i != burst && next != round_end; ++i) {
        const std::size_t capacity = deque->capacity();
        deque->push(next++);
        if (deque->capacity() != capacity) ++out.growths;
        if (deque->retired_slots() >= deque->capacity()) ++out.bound_violations;
      }
      for (auto pops = rng() % (burst + 1); pops != 0; --pops) {
        if (const auto item = deque->pop()) {
          take(*item);
          ++out.popped;
        }
      }
      if (burst % 16 == 0) std::this_thread::yield();  // 2 cores, up to 4 threads: let the thieves in
    }
    // No more pushes this round: once pop finds nothing the deque stays empty.
    while (const auto item = deque->pop()) {
      take(*item);
      ++out.popped;
    }
    round_done.store(true, std::memory_order_release);
    sync.arrive_and_wait();
    (void)deque->pop();  // an owner operation with no thief inside steal(): must free every retired array
    if (deque->retired_arrays() != 0) ++out.unreclaimed_rounds;
  }
  for (std::thread& thief : thieves) thief.join();

  for (Item item = 1; item <= out.pushed; ++item) {
    if (taken[item].load(std::memory_order_relaxed) != 1) {
      if (out.wrong_counts++ == 0) out.first_wrong = item;
    }
  }
  out.stolen = stolen.load();
  out.lost_races = lost_races.load();
  return out;
}

template <std::size_t Batch = 1>
void check_stress(unsigned thief_count) {
  char name[64];
  std::snprintf(name, sizeof name, "chase_lev_deque stress, %u thieves, batch %zu", thief_count, Batch);
  const Outcome out = run<Batch>(thief_count, weft::test::stress_count(5'000'000), weft::test::seed_for(name));
  MESSAGE(name << ": pushed " << out.pushed << ", popped " << out.popped << ", stolen " << out.stolen << ", lost races "
               << out.lost_races << ", growths " << out.growths);
  CHECK_MESSAGE(out.wrong_counts == 0, "first item not taken exactly once: " << out.first_wrong);
  CHECK(out.popped + out.stolen == out.pushed);
  CHECK(out.stolen > 0);
  CHECK(out.growths >= out.pushed / items_per_round);  // every round grew at least once
  CHECK(out.bound_violations == 0);
  CHECK(out.unreclaimed_rounds == 0);
}

TEST_SUITE("stress") {
  TEST_CASE("one owner and 1 thief: every item taken exactly once") { check_stress(1); }
  TEST_CASE("one owner and 2 thieves: every item taken exactly once") { check_stress(2); }
  TEST_CASE("one owner and 3 thieves: every item taken exactly once") { check_stress(3); }
  TEST_CASE("one owner and 1 batch thief: every item taken exactly once") { check_stress<8>(1); }
  TEST_CASE("one owner and 2 batch thieves: every item taken exactly once") { check_stress<8>(2); }
  TEST_CASE("one owner and 3 batch thieves: every item taken exactly once") { check_stress<8>(3); }
}

}  // namespace
