// BoundedQueue under P producers x C consumers: every item delivered exactly once (counted per item), each
// producer's items in order at each consumer, every object destroyed once. One test case per capacity
// (1, 2, 7, 1024) so meson runs them side by side; each covers several producer/consumer mixes.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "graph/inbox/bounded_queue.hpp"
#include "tests/bounded_queue/bounded_queue_test_support.hpp"
#include "tests/support/stress.hpp"

namespace {

using weft::inbox::BoundedQueue;
using weft::test::Counted;

constexpr int kSeqBits = 40;
// Items per run (each of the five mixes). Sanitizers slow every operation down (TSan ~20x), so they get fewer.
constexpr std::uint64_t kItems = 400'000 / static_cast<std::uint64_t>(weft::test::kSanitizerSlowdown);

struct Mix {
  unsigned producers;
  unsigned consumers;
};
constexpr Mix kMixes[] = {{1, 1}, {2, 2}, {4, 4}, {3, 1}, {1, 3}};

void run(std::size_t capacity, Mix mix, std::uint64_t seed) {
  const std::uint64_t per_producer = weft::test::stress_count(kItems) / mix.producers + 1;
  const std::uint64_t total = per_producer * mix.producers;
  INFO("capacity = " << capacity << ", producers = " << mix.producers << ", consumers = " << mix.consumers
                     << ", items = " << total << ", seed = " << seed);
  std::string name = "bounded_queue stress capacity ";
  name += std::to_string(capacity);
  const weft::test::Watchdog watchdog(name, std::chrono::seconds(120) * weft::test::kSanitizerSlowdown);
  Counted::reset();
  {
    BoundedQueue<Counted> q(capacity);
    auto received = std::make_unique<std::atomic<std::uint8_t>[]>(total);
    std::atomic<std::uint64_t> popped{0};
    std::atomic<std::uint64_t> bad_items{0};
    std::atomic<std::uint64_t> order_violations{0};

    std::vector<std::thread> threads;
    for (unsigned p = 0; p < mix.producers; ++p) {
      threads.emplace_back([&, p] {
        std::mt19937_64 rng(seed + p);
        for (std::uint64_t i = 0; i < per_producer; ++i) {
          Counted item(std::uint64_t{p} << kSeqBits | i);
          while (!q.try_push(std::move(item))) {
            if ((rng() & 3) == 0) std::this_thread::yield();  // full: let a consumer run (2 cores)
          }
          if ((rng() & 1023) == 0) std::this_thread::yield();
        }
      });
    }
    for (unsigned c = 0; c < mix.consumers; ++c) {
      threads.emplace_back([&, c] {
        std::mt19937_64 rng(seed + 1000 + c);
        std::vector<std::uint64_t> next_seq(mix.producers, 0);  // per producer: smallest sequence still allowed
        // relaxed: only counts; the joins order everything before the checks.
        while (popped.load(std::memory_order_relaxed) < total) {
          auto v = q.try_pop();
          if (!v) {
            if ((rng() & 3) == 0) std::this_thread::yield();
            continue;
          }
          popped.fetch_add(1, std::memory_order_relaxed);
          const std::uint64_t p = v->value >> kSeqBits;
          const std::uint64_t s = v->value & ((std::uint64_t{1} << kSeqBits) - 1);
          if (p >= mix.producers || s >= per_producer) {
            bad_items.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          if (s < next_seq[p]) order_violations.fetch_add(1, std::memory_order_relaxed);
          next_seq[p] = s + 1;
          received[p * per_producer + s].fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (auto& t : threads) t.join();

    CHECK(bad_items.load() == 0);
    CHECK(order_violations.load() == 0);
    CHECK(popped.load() == total);
    CHECK_FALSE(q.try_pop().has_value());
    std::uint64_t once = 0;
    std::uint64_t first_wrong = total;
    for (std::uint64_t i = 0; i < total; ++i) {
      if (received[i].load(std::memory_order_relaxed) == 1) {
        ++once;
      } else if (first_wrong == total) {
        first_wrong = i;
      }
    }
    INFO("first item not received exactly once: #" << first_wrong << " (count "
                                                   << (first_wrong < total ? received[first_wrong].load() : 1) << ")");
    CHECK(once == total);
  }
  CHECK(Counted::live() == 0);
}

void run_all_mixes(std::size_t capacity) {
  std::string name = "bounded_queue stress capacity ";
  name += std::to_string(capacity);
  const std::uint64_t seed = weft::test::seed_for(name);
  for (const Mix mix : kMixes) run(capacity, mix, seed);
}

TEST_CASE("stress capacity 1") { run_all_mixes(1); }
TEST_CASE("stress capacity 2") { run_all_mixes(2); }
TEST_CASE("stress capacity 7") { run_all_mixes(7); }
TEST_CASE("stress capacity 1024") { run_all_mixes(1024); }

}  // namespace
