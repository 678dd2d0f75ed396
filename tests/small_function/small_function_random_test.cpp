// weft::small_function under a random mix of operations on a few slots, checked against a model of what each
// slot should hold: every call returns the expected callable's id, an empty slot throws, and the number of live
// callables always equals the number of full slots (nothing leaked, nothing destroyed twice).
#include <weft/small_function.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <utility>

#include "probes.hpp"
#include "tests/support/stress.hpp"

namespace {

using weft::small_function;
using weft::test::lifetime_counts;
using weft::test::tracked;

constexpr std::size_t slot_count = 6;
constexpr int empty_slot = -1;

struct model_slots {
  std::array<small_function<int()>, slot_count> functions;
  std::array<int, slot_count> expected_ids{};
  [[nodiscard]] int full_slots() const {
    int full = 0;
    for (int id : expected_ids) full += id != empty_slot ? 1 : 0;
    return full;
  }
};

// Stores a new callable, chosen among an inline, a heap (too big) and a heap (throwing move) one.
void store_new(model_slots& slots, std::size_t slot, int id, unsigned kind, lifetime_counts& counts) {
  switch (kind % 3) {
    case 0:
      slots.functions[slot] = tracked<16>(counts, id);
      break;
    case 1:
      slots.functions[slot] = tracked<512>(counts, id);
      break;
    default:
      slots.functions[slot] = tracked<24, true>(counts, id);
      break;
  }
  slots.expected_ids[slot] = id;
}

TEST_CASE("random moves, swaps, assignments and calls agree with the model") {
  std::mt19937_64 random(weft::test::seed_for("small_function random operations"));
  const std::uint64_t steps = weft::test::stress_count(200'000);
  lifetime_counts counts;
  {
    model_slots slots;
    slots.expected_ids.fill(empty_slot);
    int next_id = 0;
    for (std::uint64_t step = 0; step < steps; ++step) {
      const auto operation = random() % 6;
      const std::size_t a = random() % slot_count;
      const std::size_t b = random() % slot_count;  // may equal a: self-move and self-swap are covered
      switch (operation) {
        case 0:
          store_new(slots, a, next_id++, static_cast<unsigned>(random()), counts);
          break;
        case 1:
          slots.functions[a] = std::move(slots.functions[b]);
          if (a != b) slots.expected_ids[a] = std::exchange(slots.expected_ids[b], empty_slot);
          break;
        case 2:
          slots.functions[a].swap(slots.functions[b]);
          std::swap(slots.expected_ids[a], slots.expected_ids[b]);
          break;
        case 3:
          slots.functions[a] = nullptr;
          slots.expected_ids[a] = empty_slot;
          break;
        default:
          if (slots.expected_ids[a] == empty_slot) {
            REQUIRE_THROWS_AS(slots.functions[a](), std::bad_function_call);
          } else {
            REQUIRE(slots.functions[a]() == slots.expected_ids[a]);
          }
          break;
      }
      REQUIRE(counts.live() == slots.full_slots());
    }
  }
  CHECK(counts.live() == 0);
  CHECK(counts.destroyed == counts.constructed);
}

}  // namespace
