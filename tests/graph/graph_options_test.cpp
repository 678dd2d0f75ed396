// Each NodeOptions member on its own: concurrency, tokens, capacity with Overflow::Block / Drop / Fail,
// priority and affinity.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/graph/graph_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

// One counter per token index: each must end at exactly one (Block) or at most one (Drop).
struct TokenCounts {
  explicit TokenCounts(std::size_t n) : size(n), counts(std::make_unique<std::atomic<unsigned>[]>(n)) {}
  void ran(std::size_t token) {
    REQUIRE(token < size);  // the contract: indices 0 .. tokens-1
    counts[token].fetch_add(1, std::memory_order_relaxed);
  }
  [[nodiscard]] std::size_t with(unsigned times) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < size; ++i) n += counts[i].load(std::memory_order_relaxed) == times ? 1 : 0;
    return n;
  }
  std::size_t size;
  std::unique_ptr<std::atomic<unsigned>[]> counts;
};

TEST_CASE("tokens: indices 0..n-1, each exactly once, every run") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("tokens", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kTokens = 1000;
    weft::TaskGraph g;
    auto counts = std::make_unique<TokenCounts>(kTokens);
    (void)g.add_node([&](std::size_t t) { counts->ran(t); }, weft::NodeOptions{.tokens = kTokens});
    for (int round = 0; round < 3; ++round) {
      counts = std::make_unique<TokenCounts>(kTokens);
      weft::Run run = g.run(pool);
      await_or_die(run, named("tokens", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(counts->with(1) == kTokens);
    }
  });
}

TEST_CASE("concurrency 1 serialises the tokens of a node; concurrency c caps them at c") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("concurrency", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const unsigned limit : {1U, 2U, 3U}) {
      INFO("concurrency = " << limit);
      weft::TaskGraph g;
      InFlight flight;
      std::size_t plain_sum = 0;  // plain: with concurrency 1 the executions must be ordered (TSan checks)
      constexpr std::size_t kTokens = 64;
      (void)g.add_node(
          [&](std::size_t t) {
            flight.enter();
            // Lingers until `limit` executions overlap (or briefly), so a broken limit shows up as > limit.
            (void)spin_until([&] { return flight.now.load() >= limit; }, 2ms);
            if (limit == 1) plain_sum += t;
            busy_work(200);
            flight.leave();
          },
          weft::NodeOptions{.concurrency = limit, .tokens = kTokens});
      weft::Run run = g.run(pool);
      await_or_die(run, named("concurrency", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(flight.max.load() <= limit);
      CHECK(flight.max.load() >= 1);
      if (limit == 1) CHECK(plain_sum == kTokens * (kTokens - 1) / 2);
      if (workers >= limit + 1 && flight.max.load() < limit) MESSAGE("never saw " << limit << " overlap");
    }
  });
}

TEST_CASE("capacity + Overflow::Block with a slow consumer loses nothing, even on one worker") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("Block", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    for (const std::size_t capacity : {std::size_t{1}, std::size_t{2}, std::size_t{8}}) {
      for (const unsigned concurrency : {1U, 3U, weft::kUnlimited}) {
        INFO("capacity = " << capacity << ", concurrency = " << concurrency);
        constexpr std::size_t kTokens = 200;
        weft::TaskGraph g;
        TokenCounts counts(kTokens);
        std::atomic<std::size_t> finished{0};
        std::size_t seen_by_successor = 0;
        auto sink = g.add_node(
            [&](std::size_t t) {
              busy_work(2000);  // slower than the producer, so the inbox fills and the producer must wait
              counts.ran(t);
              finished.fetch_add(1);
            },
            weft::NodeOptions{.name = "slow-sink",
                              .concurrency = concurrency,
                              .capacity = capacity,
                              .overflow = weft::Overflow::Block,
                              .tokens = kTokens});
        auto after = g.add_node([&] { seen_by_successor = finished.load(); });
        g.add_edge(sink, after);
        for (int round = 0; round < 2; ++round) {
          counts.counts = std::make_unique<std::atomic<unsigned>[]>(kTokens);
          finished.store(0);
          weft::Run run = g.run(pool);
          await_or_die(run, named("Block", workers), patience(30));
          CHECK(run.wait() == weft::RunStatus::Completed);
          CHECK(counts.with(1) == kTokens);
          CHECK(seen_by_successor == kTokens);  // the successor waited for every token
          const weft::RunStats stats = run.stats();
          CHECK(stats.dropped == 0);
          REQUIRE(stats.dropped_by_node.size() == 2);
          CHECK(stats.dropped_by_node[0] == 0);
        }
      }
    }
  });
}

TEST_CASE("an unbounded inbox with more tokens than its buffer: every token once, none dropped under any overflow") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("unbounded", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    // Past the 4096 slots an unbounded inbox is given: the producer must wait for room several times.
    constexpr std::size_t kTokens = 3 * 4096 + 17;
    const std::pair<weft::Overflow, unsigned> cases[] = {{weft::Overflow::Block, 1U},
                                                         {weft::Overflow::Drop, 3U},
                                                         {weft::Overflow::Fail, weft::kUnlimited}};
    for (const auto& [overflow, concurrency] : cases) {
      INFO("overflow = " << static_cast<int>(overflow) << ", concurrency = " << concurrency);
      weft::TaskGraph g;
      TokenCounts counts(kTokens);
      std::atomic<std::size_t> finished{0};
      std::size_t seen_by_successor = 0;
      auto flood = g.add_node(
          [&](std::size_t t) {
            counts.ran(t);
            finished.fetch_add(1, std::memory_order_relaxed);
          },
          weft::NodeOptions{.name = "flood", .concurrency = concurrency, .overflow = overflow, .tokens = kTokens});
      auto after = g.add_node([&] { seen_by_successor = finished.load(std::memory_order_relaxed); });
      g.add_edge(flood, after);
      weft::Run run = g.run(pool);
      await_or_die(run, named("unbounded", workers), patience(30));
      CHECK(run.wait() == weft::RunStatus::Completed);
      CHECK(counts.with(1) == kTokens);
      CHECK(seen_by_successor == kTokens);
      CHECK(run.stats().dropped == 0);
      // Again through wait(), where this thread helps: it may run the producer itself and sleep for room while
      // workers take the executors from its slot (the watchdog catches a hang).
      counts.counts = std::make_unique<std::atomic<unsigned>[]>(kTokens);
      finished.store(0);
      CHECK(g.run(pool).wait() == weft::RunStatus::Completed);
      CHECK(counts.with(1) == kTokens);
      CHECK(seen_by_successor == kTokens);
    }
  });
}

TEST_CASE("a node of 2^64 - 1 tokens with an unbounded inbox is accepted, runs, and cancels cleanly") {
  const Watchdog watchdog("endless tokens", patience(60));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph g;
  constexpr std::size_t kTokens = std::numeric_limits<std::size_t>::max();
  std::atomic<std::uint64_t> ran{0};
  std::atomic<bool> after_ran{false};
  // Allocating a slot per token would be 2^68 bytes (bad_alloc at compile); the buffer is 4096 slots.
  auto endless = g.add_node([&](std::size_t) { ran.fetch_add(1, std::memory_order_relaxed); },
                            weft::NodeOptions{.name = "endless", .tokens = kTokens});
  auto after = g.add_node([&] { after_ran.store(true); });
  g.add_edge(endless, after);
  weft::Run run = g.run(pool);
  CHECK(spin_until([&] { return ran.load(std::memory_order_relaxed) >= 20000; }, 30s));
  run.cancel();
  await_or_die(run, "endless tokens", patience(30));
  CHECK(run.wait() == weft::RunStatus::Cancelled);
  const weft::RunStats stats = run.stats();
  CHECK(stats.dropped == 0);
  CHECK(stats.skipped > 0);
  CHECK_FALSE(after_ran.load());
}

TEST_CASE("capacity + Overflow::Drop counts exactly what it dropped") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("Drop", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    constexpr std::size_t kTokens = 100;
    constexpr std::size_t kCapacity = 3;
    weft::TaskGraph g;
    TokenCounts counts(kTokens);
    std::atomic<weft::Run*> current{nullptr};
    std::atomic<std::size_t> executed{0};
    std::atomic<int> gate_timed_out{0};
    std::size_t seen_by_successor = 0;
    auto noise = g.add_node([] {}, weft::NodeOptions{.name = "noise"});  // index 0: dropped_by_node must say 0
    auto lossy = g.add_node(
        [&](std::size_t t) {
          // Holds the one running token until the producer has dropped all it must (at most 1 running + 3
          // waiting are kept). The fallback only keeps an implementation that serialises the producer with
          // its tokens from hanging; the exact accounting below is checked either way.
          weft::Run* run = nullptr;
          while ((run = current.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
          if (!spin_until([&] { return run->stats().dropped >= kTokens - 1 - kCapacity; }, 2000ms)) {
            gate_timed_out.fetch_add(1);
          }
          counts.ran(t);
          executed.fetch_add(1);
        },
        weft::NodeOptions{.name = "lossy",
                          .concurrency = 1,
                          .capacity = kCapacity,
                          .overflow = weft::Overflow::Drop,
                          .tokens = kTokens});
    auto after = g.add_node([&] { seen_by_successor = executed.load(); });
    g.add_edge(lossy, after);
    g.add_edge(noise, after);
    for (int round = 0; round < 3; ++round) {
      counts.counts = std::make_unique<std::atomic<unsigned>[]>(kTokens);
      executed.store(0);
      current.store(nullptr);
      gate_timed_out.store(0);
      weft::Run run = g.run(pool);
      current.store(&run, std::memory_order_release);
      await_or_die(run, named("Drop", workers), patience(60));
      CHECK(run.wait() == weft::RunStatus::Completed);
      const weft::RunStats stats = run.stats();
      REQUIRE(stats.dropped_by_node.size() == 3);
      CHECK(stats.dropped_by_node[0] == 0);
      CHECK(stats.dropped_by_node[2] == 0);
      CHECK(stats.dropped_by_node[1] == stats.dropped);
      CHECK(executed.load() + stats.dropped == kTokens);
      CHECK(counts.with(1) == executed.load());  // distinct tokens ran
      CHECK(counts.with(0) == stats.dropped);
      CHECK(seen_by_successor == executed.load());
      CHECK(stats.skipped == 0);
      if (gate_timed_out.load() == 0) {
        CHECK(stats.dropped >= kTokens - 1 - kCapacity);  // at most 1 running + capacity waiting were kept
      } else {
        MESSAGE("round " << round << ": Drop dropped only " << stats.dropped << " while a token was held");
      }
      CHECK(stats.dropped <= kTokens - kCapacity);  // the first `capacity` tokens find room in an empty inbox
    }
  });
}

TEST_CASE("Overflow::Fail cancels the run with inbox_full naming the node; without overflow it completes") {
  for_each_graph_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("Fail", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskGraph g;
    std::atomic<int> after_ran{0};
    std::atomic<int> held_in_vain{0};
    auto fragile = g.add_node(
        [&](weft::Subflow& sf) {
          // The one running token waits for the cancellation the overflow must cause.
          if (!spin_until([&] { return sf.cancelled(); }, 5000ms)) held_in_vain.fetch_add(1);
        },
        weft::NodeOptions{
            .name = "fragile-sink", .concurrency = 1, .capacity = 1, .overflow = weft::Overflow::Fail, .tokens = 50});
    auto after = g.add_node([&] { after_ran.fetch_add(1); });
    g.add_edge(fragile, after);
    for (int round = 0; round < 2; ++round) {
      weft::Run run = g.run(pool);
      await_or_die(run, named("Fail", workers), patience(60));
      std::string first;
      try {
        (void)run.wait();
        FAIL("wait() returned although the Fail inbox overflowed");
      } catch (const weft::inbox_full& e) {
        first = e.what();
        CHECK(contains(first, "fragile-sink"));
        CHECK(contains(first, "1"));  // the capacity
      }
      CHECK_THROWS_AS(run.wait(), weft::inbox_full);  // every wait() rethrows it
      try {
        (void)run.wait();
      } catch (const weft::inbox_full& e) {
        CHECK(std::string(e.what()) == first);
      }
      CHECK(after_ran.load() == 0);
      CHECK(held_in_vain.load() == 0);
      CHECK(run.stats().skipped >= 1);  // at least the successor never started
      CHECK_FALSE(g.running());
    }

    weft::TaskGraph roomy;
    std::atomic<int> ran{0};
    (void)roomy.add_node([&] { ran.fetch_add(1); }, weft::NodeOptions{.name = "roomy",
                                                                      .concurrency = 1,
                                                                      .capacity = 16,
                                                                      .overflow = weft::Overflow::Fail,
                                                                      .tokens = 16});
    CHECK(roomy.run(pool).wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == 16);
  });
}

TEST_CASE("an inbox given fewer slots than its capacity only parks: every token runs once, none dropped") {
  // Capacity 2^40 and 20,000 tokens: the inbox takes 4096 slots (graph/inbox/limiter.hpp), and the producer parks
  // past them whatever `overflow` says, since an inbox that holds a whole activation can never overflow.
  const Watchdog watchdog("inbox smaller than its capacity", patience(120));
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const std::size_t tokens = 20'000;
  for (const weft::Overflow overflow : {weft::Overflow::Block, weft::Overflow::Drop, weft::Overflow::Fail}) {
    INFO("overflow " << static_cast<int>(overflow));
    weft::TaskGraph g;
    TokenCounts counts(tokens);
    (void)g.add_node([&](std::size_t token) { counts.ran(token); }, weft::NodeOptions{.name = "vast",
                                                                                      .capacity = std::size_t{1} << 40,
                                                                                      .overflow = overflow,
                                                                                      .tokens = tokens});
    weft::Run run = g.run(pool);
    await_or_die(run, "inbox smaller than its capacity", patience(120));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(counts.with(1) == tokens);
    CHECK(run.stats().dropped == 0);
  }
}

TEST_CASE("priority: on one busy worker, every High node starts before any Low node") {
  const Watchdog watchdog("priority", patience(30));
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  for (int round = 0; round < 5; ++round) {
    weft::TaskGraph g;
    std::atomic<std::uint64_t> seq{0};
    std::vector<std::uint64_t> high, low;  // written by the single worker only
    std::mutex mutex;
    for (int i = 0; i < 20; ++i) {
      (void)g.add_node(
          [&] {
            const std::lock_guard lock(mutex);
            low.push_back(seq.fetch_add(1));
          },
          weft::NodeOptions{.priority = weft::Priority::Low});
      (void)g.add_node(
          [&] {
            const std::lock_guard lock(mutex);
            high.push_back(seq.fetch_add(1));
          },
          weft::NodeOptions{.priority = weft::Priority::High});
      (void)g.add_node([] {});  // Normal
    }
    Gate gate;
    occupy_all_workers(pool, gate);  // so every root is queued before the worker picks any
    weft::Run run = g.run(pool);
    gate.open();
    await_or_die(run, "priority", patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    REQUIRE(high.size() == 20);
    REQUIRE(low.size() == 20);
    CHECK(*std::max_element(high.begin(), high.end()) < *std::min_element(low.begin(), low.end()));
  }
}

TEST_CASE("affinity: a node's executions run on its worker (mostly: another may take them if it is busy)") {
  for (const unsigned workers : {2U, 4U, 8U}) {
    INFO("workers = " << workers);
    const Watchdog watchdog(named("affinity", workers), patience(30));
    // A long patience: another worker may take an affine task only if its worker makes no progress for 2 s,
    // which a loaded machine (or TSan) can still cause, but not for most of the executions.
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = std::chrono::seconds(2)}};
    const unsigned target = workers - 1;
    weft::TaskGraph g;
    std::atomic<int> on_target{0}, total{0}, off_pool{0};
    auto body_for = [&](unsigned wanted) {
      return [&, wanted] {
        const std::optional<unsigned> me = pool.current_worker();
        if (!me) off_pool.fetch_add(1);
        if (me == wanted) on_target.fetch_add(1);
        total.fetch_add(1);
      };
    };
    auto a = g.add_node(body_for(target), weft::NodeOptions{.affinity = target, .tokens = 40});
    auto b = g.add_node(body_for(0), weft::NodeOptions{.affinity = 0U, .concurrency = 1, .tokens = 10});
    auto c = g.add_node(body_for(target), weft::NodeOptions{.affinity = target});
    g.add_edge(a, b);
    g.add_edge(b, c);
    weft::Run run = g.run(pool);
    await_or_die(run, named("affinity", workers), patience(30));
    CHECK(run.wait() == weft::RunStatus::Completed);
    CHECK(total.load() == 51);
    CHECK(off_pool.load() == 0);  // an affinity node never runs inline on an outside thread
    MESSAGE("workers " << workers << ": " << on_target.load() << " of 51 executions on their affine worker");
    CHECK(on_target.load() * 2 >= 51);
  }
}

}  // namespace
