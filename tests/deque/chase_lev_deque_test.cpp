// Quick tests of ChaseLevDeque: single-threaded behaviour against a std::deque oracle, bad input, the
// StealResult contract, and reclamation of arrays retired by growth under concurrent stealing.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "scheduler/lockfree/chase_lev_deque.hpp"
#include "tests/support/stress.hpp"

namespace {

using weft::lockfree::ChaseLevDeque;
using weft::lockfree::StealStatus;
using Item = std::uintptr_t;

struct Task {
  int id;
};

static_assert(weft::lockfree::DequeItem<Task*>);
static_assert(weft::lockfree::DequeItem<std::uintptr_t>);
static_assert(!weft::lockfree::DequeItem<std::array<void*, 2>>, "wider than a pointer: would tear");
static_assert(!weft::lockfree::DequeItem<std::vector<int>>, "not trivially copyable");

struct OracleOutcome {
  std::uint64_t mismatches = 0;
  std::size_t largest = 0;
  std::uint64_t batches_over_one = 0;  // steals that took more than one item
  std::uint64_t short_pops = 0;        // pops with fewer than Batch items present (the put-back path)
};

// Random single-threaded push/pop/steal on a ChaseLevDeque<Item, M, Batch> and a std::deque side by side, in
// phases of `phase` operations biased towards pushing or taking, so the deque both grows large and empties
// often. Batch 1 steals with steal(); larger batches with steal_batch() into spans of 1..12.
template <std::size_t Batch>
OracleOutcome run_against_oracle(const char* seed_name, std::uint64_t phase) {
  std::mt19937_64 rng(weft::test::seed_for(seed_name));
  const std::uint64_t operations = weft::test::stress_count(1'000'000);
  ChaseLevDeque<Item, weft::atomics::StdMemoryModel, Batch> deque(1 + rng() % 4);
  std::deque<Item> oracle;
  Item next = 1;
  OracleOutcome out;
  for (std::uint64_t op = 0; op != operations; ++op) {
    const bool push_phase = (op / phase) % 2 == 0;
    const unsigned roll = static_cast<unsigned>(rng() % 100);
    if (roll < (push_phase ? 60u : 30u)) {
      deque.push(next);
      oracle.push_back(next++);
    } else if (roll % 2 == 0) {
      if (!oracle.empty() && oracle.size() < Batch) ++out.short_pops;
      const std::optional<Item> got = deque.pop();
      std::optional<Item> want;
      if (!oracle.empty()) {
        want = oracle.back();
        oracle.pop_back();
      }
      if (got != want) ++out.mismatches;
    } else {
      std::array<Item, 12> taken{};
      std::size_t asked = 1;
      weft::lockfree::BatchStealResult got{};
      if constexpr (Batch == 1) {
        const auto single = deque.steal();
        got = {single.status, single.stolen() ? std::size_t{1} : 0};
        taken[0] = single.item;
      } else {
        asked = 1 + rng() % taken.size();
        got = deque.steal_batch(std::span<Item>(taken.data(), asked));
      }
      const std::size_t want = std::min({asked, Batch, (oracle.size() + 1) / 2});
      if (got.count != want || (want == 0) != (got.status == StealStatus::empty)) ++out.mismatches;
      for (std::size_t i = 0; i != got.count && !oracle.empty(); ++i) {
        if (taken[i] != oracle.front()) ++out.mismatches;
        oracle.pop_front();
      }
      if (got.count > 1) ++out.batches_over_one;
    }
    if (deque.size_hint() != oracle.size() || deque.empty() != oracle.empty()) ++out.mismatches;
    if (deque.retired_slots() >= deque.capacity()) ++out.mismatches;  // the memory bound
    // room(): exactly the free slots (the test "room() pushes never grow the array" checks the promise).
    if (op % 64 == 0 && deque.room() != deque.capacity() - oracle.size()) ++out.mismatches;
    out.largest = std::max(out.largest, oracle.size());
  }
  return out;
}

TEST_SUITE("unit") {
  TEST_CASE("owner pops newest first, thieves steal oldest first") {
    ChaseLevDeque<Item> deque(4);
    for (Item i = 1; i <= 5; ++i) deque.push(i);  // grows 4 -> 8
    CHECK(deque.size_hint() == 5);
    CHECK(deque.pop() == Item{5});
    CHECK(deque.pop() == Item{4});
    const auto stolen = deque.steal();
    CHECK(stolen.status == StealStatus::success);
    CHECK(stolen.item == 1);
    CHECK(deque.steal().item == 2);
    CHECK(deque.pop() == Item{3});
    CHECK(deque.empty());
    CHECK_FALSE(deque.pop().has_value());
    const auto nothing = deque.steal();
    CHECK(nothing.status == StealStatus::empty);
    CHECK_FALSE(nothing);
  }

  TEST_CASE("stores task pointers") {
    std::array<Task, 3> tasks{{{0}, {1}, {2}}};
    ChaseLevDeque<Task*> deque(1);
    for (Task& task : tasks) deque.push(&task);
    CHECK(deque.steal().item == &tasks[0]);
    CHECK(*deque.pop() == &tasks[2]);
    CHECK(*deque.pop() == &tasks[1]);
  }

  TEST_CASE("capacity is rounded up to a power of two and bad capacities are rejected") {
    CHECK(ChaseLevDeque<Item>(3).capacity() == 4);
    CHECK(ChaseLevDeque<Item>(1).capacity() == 1);
    CHECK_THROWS_AS(ChaseLevDeque<Item>(0), std::invalid_argument);
    CHECK_THROWS_AS(ChaseLevDeque<Item>(std::size_t{1} << 41), std::length_error);
  }

  TEST_CASE("random single-threaded push/pop/steal match a std::deque oracle") {
    const OracleOutcome out = run_against_oracle<1>("chase_lev_deque oracle", 4096);
    CHECK(out.mismatches == 0);
    CHECK(out.largest > 64);  // the deque really grew
  }

  TEST_CASE("batch steals and the owner's put-back match a std::deque oracle") {
    // MaxBatch 8: a steal takes min(requested, 8, half of what is there rounded up) of the oldest items; a pop
    // with fewer than 8 items left goes through the claim-and-put-back path and must still be LIFO.
    const OracleOutcome out = run_against_oracle<8>("chase_lev_deque batch oracle", 512);
    CHECK(out.mismatches == 0);
    CHECK(out.largest > 16);  // short phases: the deque often holds fewer than 8, and grows past its start
    CHECK(out.batches_over_one > 1000);
    CHECK(out.short_pops > 1000);  // the put-back path ran
  }

  TEST_CASE("steal_batch into an empty span takes nothing") {
    ChaseLevDeque<Item, weft::atomics::StdMemoryModel, 8> deque(4);
    deque.push(1);
    const auto result = deque.steal_batch(std::span<Item>());
    CHECK(result.status == StealStatus::empty);
    CHECK(result.count == 0);
    CHECK(deque.size_hint() == 1);
  }

  TEST_CASE("room() pushes never grow the array") {
    ChaseLevDeque<Item> deque(8);
    for (Item i = 1; i <= 3; ++i) deque.push(i);
    CHECK(deque.steal().item == 1);
    const std::size_t room = deque.room();
    CHECK(room == 6);
    for (std::size_t i = 0; i != room; ++i) deque.push(100 + i);
    CHECK(deque.capacity() == 8);
    CHECK(deque.room() == 0);
    deque.push(200);
    CHECK(deque.capacity() == 16);
  }

  TEST_CASE("an array retired by growth is freed by the owner's next operation when no thief is active") {
    ChaseLevDeque<Item> deque(2);
    deque.push(1);
    deque.push(2);
    CHECK(deque.retired_arrays() == 0);
    deque.push(3);  // grows 2 -> 4; the old array cannot be freed inside the growing push
    CHECK(deque.capacity() == 4);
    CHECK(deque.retired_arrays() == 1);
    CHECK(deque.retired_slots() == 2);
    CHECK(deque.pop() == Item{3});  // no thief announced: frees it
    CHECK(deque.retired_arrays() == 0);
    CHECK(deque.retired_slots() == 0);
  }

  TEST_CASE("arrays retired while thieves steal stay bounded and are freed once the thieves stop") {
    ChaseLevDeque<Item> deque(2);
    const std::uint64_t pushes = weft::test::stress_count(200'000);
    // Ids beyond `pushes` are for the final growing push; the owner outpaces the yielding thieves.
    const Item id_limit = 8 * pushes;
    std::vector<std::atomic<std::uint32_t>> taken(id_limit + 1);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> stolen{0};
    std::atomic<int> running{0};
    std::vector<std::thread> thieves;
    for (int i = 0; i != 2; ++i) {
      thieves.emplace_back([&] {
        running.fetch_add(1, std::memory_order_relaxed);
        while (!stop.load(std::memory_order_acquire)) {
          if (const auto got = deque.steal()) {
            taken[got.item].fetch_add(1, std::memory_order_relaxed);
            stolen.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::yield();  // keeps the thieves slower than the owner, so the array keeps growing
          }
        }
      });
    }
    std::size_t max_retired = 0;
    bool bound_held = true;
    Item next = 1;
    const auto push = [&] {
      deque.push(next++);
      if (deque.retired_slots() >= deque.capacity()) bound_held = false;
      if (deque.retired_arrays() > max_retired) max_retired = deque.retired_arrays();
    };
    while (running.load(std::memory_order_relaxed) != 2) std::this_thread::yield();  // thieves are stealing
    while (next <= pushes) push();
    // End on a growing push, so that an array is certainly retired when the thieves stop.
    for (const std::size_t capacity = deque.capacity(); deque.capacity() == capacity && next <= id_limit;) push();
    stop.store(true, std::memory_order_release);
    for (std::thread& thief : thieves) thief.join();
    CHECK(bound_held);
    CHECK(max_retired >= 1);
    REQUIRE(deque.retired_arrays() >= 1);  // retired by the last, growing push
    while (const auto item = deque.pop()) taken[*item].fetch_add(1, std::memory_order_relaxed);
    CHECK(deque.retired_arrays() == 0);  // the first owner operation after the thieves stopped freed them
    std::uint64_t wrong = 0;
    for (Item i = 1; i != next; ++i) wrong += taken[i].load(std::memory_order_relaxed) != 1;
    CHECK(wrong == 0);
    CHECK(stolen.load() > 0);
    MESSAGE("stolen " << stolen.load() << " of " << next - 1 << ", capacity " << deque.capacity()
                      << ", most arrays retired at once " << max_retired);
  }
}

}  // namespace
