// graph::ClaimCursor (graph/claim_cursor.hpp) on real threads, outside any graph: every item is claimed exactly
// once whatever mix of guided shares, single items and "the rest" the claimers take; no claim reaches past the
// range; a cursor reset for the next range starts clean; and the queued-task count that keep_one_queued keeps
// returns to none once every task it asked for has started.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "graph/claim_cursor.hpp"
#include "tests/pool/pool_test_support.hpp"
#include "tests/support/stress.hpp"

namespace {

using weft::graph::ClaimCursor;

TEST_CASE("every item of a claimed range is claimed exactly once, by any mix of claims") {
  const std::uint64_t seed = weft::test::seed_for("claim_cursor: exactly once");
  std::mt19937_64 rng(seed);
  const int rounds = static_cast<int>(weft::test::stress_count(weft::test::reduced_runs() ? 60 : 400));
  auto cursor = std::make_unique<ClaimCursor>();
  for (int round = 0; round < rounds; ++round) {
    const unsigned threads = 1 + static_cast<unsigned>(rng() % 8);
    const std::uint32_t first = static_cast<std::uint32_t>(rng() % 1000);
    const std::uint32_t count = static_cast<std::uint32_t>(rng() % (round % 4 == 0 ? 50'000 : 200));
    const std::uint32_t end = first + count;
    INFO("round " << round << ": [" << first << ", " << end << ") on " << threads << " threads, WEFT_SEED=" << seed);
    cursor->reset(first, end);
    std::vector<std::atomic<int>> claimed(end);
    std::atomic<int> out_of_range{0};
    std::atomic<std::uint32_t> tasks_asked{0};
    const unsigned rest_taker = static_cast<unsigned>(rng() % (threads + 1));  // == threads: nobody takes the rest
    const std::uint64_t round_seed = rng();
    std::vector<std::thread> claimers;
    for (unsigned t = 0; t < threads; ++t) {
      claimers.emplace_back([&, t] {
        std::mt19937_64 local(round_seed + t);
        for (;;) {
          cursor->keep_one_queued([&] {
            tasks_asked.fetch_add(1);
            cursor->task_started();  // as if the task ran at once: the count must come back to none
          });
          const unsigned pick = static_cast<unsigned>(local() % 16);
          const ClaimCursor::Claim claim = t == rest_taker && pick == 0 ? cursor->claim_rest()
                                           : pick < 5                   ? cursor->claim_one()
                                                                        : cursor->claim(threads);
          if (claim.lo == claim.hi) return;
          if (claim.lo < first || claim.hi > end || claim.lo > claim.hi) out_of_range.fetch_add(1);
          for (std::uint32_t i = claim.lo; i < claim.hi && i < end; ++i) claimed[i].fetch_add(1);
        }
      });
    }
    for (std::thread& claimer : claimers) claimer.join();
    CHECK(out_of_range.load() == 0);
    int wrong = 0;
    for (std::uint32_t i = first; i < end; ++i) wrong += claimed[i].load() != 1;
    CHECK(wrong == 0);
    CHECK_FALSE(cursor->has_left());
    // Nothing left: a look must not ask for another task, whatever the count says.
    bool asked = false;
    cursor->keep_one_queued([&] { asked = true; });
    CHECK_FALSE(asked);
  }
}

TEST_CASE("a guided claim takes about 1/(2 * threads) of what is left, and at least one item") {
  ClaimCursor cursor;
  cursor.reset(0, 1000);
  ClaimCursor::Claim claim = cursor.claim(2);
  CHECK(claim.lo == 0);
  CHECK(claim.hi == 250);
  claim = cursor.claim(2);
  CHECK(claim.lo == 250);
  CHECK(claim.hi == 250 + 750 / 4);
  claim = cursor.claim_one();
  CHECK(claim.hi - claim.lo == 1);
  claim = cursor.claim_rest();
  CHECK(claim.hi == 1000);
  claim = cursor.claim(2);
  CHECK(claim.lo == claim.hi);
  cursor.reset(5, 7);
  claim = cursor.claim(64);  // fewer items than 2 * threads: still one
  CHECK(claim.lo == 5);
  CHECK(claim.hi == 6);
  // One queued task at a time: a second look while the first is counted asks for nothing.
  int asked = 0;
  cursor.keep_one_queued([&] { ++asked; });
  cursor.keep_one_queued([&] { ++asked; });
  CHECK(asked == 1);
  cursor.task_started();
  cursor.keep_one_queued([&] { ++asked; });
  CHECK(asked == 2);
}

}  // namespace
