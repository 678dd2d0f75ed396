// A multi-token node's token flow (graph/inbox/token_flow.hpp) on real threads, outside any graph or Pool: an inbox,
// its execution slots and its producer's park, with several executors popping at once. Thousands of random
// activations (capacity, concurrency, overflow, tokens, workers; some cancelled part-way, some with executor
// tasks lost as a shut-down pool loses them), each counted: every token ran at most once, and ran, was dropped
// or was skipped exactly once in all; a concurrency limit was never exceeded; the node finished exactly once
// unless a task was lost; afterwards no slot is held, no token queued, no producer parked.
// The Relacy model (producer_park_model.cpp) checks the park with one executor on a tiny inbox; this checks
// the whole flow with many, at scale.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "graph/inbox/limiter.hpp"
#include "graph/inbox/token_flow.hpp"
#include "tests/bounded_queue/bounded_queue_test_support.hpp"
#include "tests/support/stress.hpp"
#include "weft/node_options.hpp"

namespace {

using weft::inbox::Limiter;

// The test's scheduler: threads that run posted tasks, taken from either end of one locked deque at random so
// that executors start in varied orders. The flow under test never waits; only this harness does.
class Workers {
 public:
  Workers(unsigned count, std::uint64_t seed) {
    for (unsigned i = 0; i < count; ++i) threads_.emplace_back([this, seed, i] { loop(seed + i); });
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  ~Workers() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void post(std::function<void()> task) {
    {
      const std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
      ++unfinished_;
    }
    work_.notify_one();
  }

  // Blocks until every posted task, and every task they posted, has returned.
  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return unfinished_ == 0; });
  }

 private:
  void loop(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::unique_lock lock(mutex_);
    for (;;) {
      // Spin a little before sleeping: executors then start while others still run, as on a busy pool.
      for (int spins = 0; tasks_.empty() && !stopping_ && spins < 64; ++spins) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      }
      work_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      std::function<void()> task;
      if ((rng() & 1) == 0) {
        task = std::move(tasks_.front());
        tasks_.pop_front();
      } else {
        task = std::move(tasks_.back());
        tasks_.pop_back();
      }
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
      if (--unfinished_ == 0) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> tasks_;
  std::uint64_t unfinished_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct Case {
  weft::NodeOptions options;
  unsigned workers = 1;
  std::uint64_t cancel_after = ~std::uint64_t{0};  // cancel once this many tokens have started
  unsigned lose_one_in = 0;                        // lose about one executor task in this many (0: none)

  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "tokens " << options.tokens << ", capacity "
        << (options.capacity == weft::kUnbounded ? std::string("unbounded") : std::to_string(options.capacity))
        << ", concurrency "
        << (options.concurrency == weft::kUnlimited ? std::string("unlimited") : std::to_string(options.concurrency))
        << ", overflow "
        << (options.overflow == weft::Overflow::Block  ? "Block"
            : options.overflow == weft::Overflow::Drop ? "Drop"
                                                       : "Fail")
        << ", workers " << workers << ", cancel after "
        << (cancel_after == ~std::uint64_t{0} ? std::string("never") : std::to_string(cancel_after))
        << ", lose one executor in " << lose_one_in;
    return out.str();
  }
};

// One node's side of a run, as the flow asks for it (inbox::TokenRun), counting everything it is told.
class CountingRun {
 public:
  CountingRun(Limiter& limiter, Workers& workers, const Case& c, std::uint64_t seed)
      : limiter_(limiter),
        workers_(workers),
        case_(c),
        seed_(seed),
        ran_(new std::atomic<std::uint32_t>[c.options.tokens]) {
    for (std::uint64_t i = 0; i < c.options.tokens; ++i) ran_[i].store(0, std::memory_order_relaxed);
  }

  [[nodiscard]] bool cancelled() const noexcept { return cancelled_.load(std::memory_order_acquire); }

  void post_executor() noexcept {
    const std::uint64_t n = posted_.fetch_add(1, std::memory_order_relaxed);
    const bool lose = case_.lose_one_in != 0 && mix(seed_ + n) % case_.lose_one_in == 0;
    workers_.post([this, lose] {
      if (lose) {
        // As RunState::task_dropped does: fail the run first, then drain what the executor would have run.
        lost_.fetch_add(1, std::memory_order_relaxed);
        cancelled_.store(true, std::memory_order_seq_cst);
        weft::inbox::drain_lost_executor(limiter_, *this);
      } else {
        weft::inbox::run_executor(limiter_, *this);
      }
    });
  }

  void execute(std::uint64_t token) noexcept {
    const unsigned now = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
    unsigned seen = max_in_flight_.load(std::memory_order_relaxed);
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    if (token >= case_.options.tokens) {
      bad_tokens_.fetch_add(1, std::memory_order_relaxed);
    } else {
      ran_[token].fetch_add(1, std::memory_order_relaxed);
    }
    const std::uint64_t started = started_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (started == case_.cancel_after) cancelled_.store(true, std::memory_order_seq_cst);
    if (mix(seed_ ^ token) % 64 == 0) std::this_thread::yield();  // a slow token now and then
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    finished_.fetch_add(1, std::memory_order_relaxed);
  }

  void skipped(std::uint64_t count) noexcept { skipped_.fetch_add(count, std::memory_order_relaxed); }
  void dropped() noexcept { dropped_.fetch_add(1, std::memory_order_relaxed); }
  void inbox_full() noexcept {
    full_.fetch_add(1, std::memory_order_relaxed);
    cancelled_.store(true, std::memory_order_seq_cst);
  }
  // Only after every token finished, was skipped or dropped (what each did was counted before the flow's
  // acq_rel count of remaining tokens, whose last decrement calls this).
  void node_done() noexcept {
    const std::uint64_t accounted = finished_.load(std::memory_order_relaxed) +
                                    skipped_.load(std::memory_order_relaxed) + dropped_.load(std::memory_order_relaxed);
    if (accounted != case_.options.tokens) early_done_.fetch_add(1, std::memory_order_relaxed);
    node_done_.fetch_add(1, std::memory_order_relaxed);
  }

  // After Workers::wait_idle(): every task of the activation has returned, and its lock ordered their writes.
  void check() const {
    const std::uint64_t tokens = case_.options.tokens;
    std::uint64_t ran = 0;
    std::uint64_t first_twice = tokens;
    for (std::uint64_t i = 0; i < tokens; ++i) {
      const std::uint32_t n = ran_[i].load(std::memory_order_relaxed);
      ran += n;
      if (n > 1 && first_twice == tokens) first_twice = i;
    }
    const std::uint64_t skipped = skipped_.load();
    const std::uint64_t dropped = dropped_.load();
    INFO("ran " << ran << ", skipped " << skipped << ", dropped " << dropped << ", inbox_full " << full_.load()
                << ", node_done " << node_done_.load() << ", executors lost " << lost_.load());
    CHECK(bad_tokens_.load() == 0);
    CHECK_MESSAGE(early_done_.load() == 0, "the node finished before all its tokens were accounted for");
    CHECK_MESSAGE(first_twice == tokens, "token " << first_twice << " ran more than once");
    CHECK(ran + skipped + dropped == tokens);
    CHECK(dropped == limiter_.dropped.load());
    if (case_.options.concurrency != weft::kUnlimited) CHECK(max_in_flight_.load() <= case_.options.concurrency);
    if (lost_.load() == 0) {
      CHECK(node_done_.load() == 1);
      CHECK(limiter_.remaining.load() == 0);
    } else {
      CHECK(node_done_.load() <= 1);
    }
    // Only a bounded inbox smaller than the activation ever overflows; an unbounded one parks as under Block.
    const bool may_overflow = case_.options.capacity != weft::kUnbounded && case_.options.capacity < tokens;
    if (case_.options.overflow != weft::Overflow::Drop || !may_overflow) CHECK(dropped == 0);
    if (case_.options.overflow != weft::Overflow::Fail || !may_overflow) CHECK(full_.load() == 0);
    CHECK(full_.load() <= 1);  // the producer stops at its first full inbox under Fail
    if (!cancelled() && (case_.options.overflow == weft::Overflow::Block || !may_overflow)) CHECK(ran == tokens);
    // Nothing left behind for the node's next activation.
    CHECK(limiter_.slots.running() == 0);
    CHECK(limiter_.inbox.empty_hint());
    CHECK_FALSE(limiter_.park.parked());
  }

 private:
  static std::uint64_t mix(std::uint64_t x) noexcept {  // splitmix64's finaliser: a cheap per-value coin
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  Limiter& limiter_;
  Workers& workers_;
  const Case& case_;
  const std::uint64_t seed_;
  std::unique_ptr<std::atomic<std::uint32_t>[]> ran_;
  std::atomic<bool> cancelled_{false};
  std::atomic<std::uint64_t> posted_{0};
  std::atomic<std::uint64_t> started_{0};
  std::atomic<std::uint64_t> finished_{0};
  std::atomic<std::uint64_t> early_done_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> full_{0};
  std::atomic<std::uint64_t> node_done_{0};
  std::atomic<std::uint64_t> lost_{0};
  std::atomic<std::uint64_t> bad_tokens_{0};
  std::atomic<unsigned> in_flight_{0};
  std::atomic<unsigned> max_in_flight_{0};
};

static_assert(weft::inbox::TokenRun<CountingRun>);

Case random_case(std::mt19937_64& rng, bool with_failures) {
  constexpr std::size_t kCapacities[] = {1, 2, 3, 7, 64, weft::kUnbounded};
  constexpr unsigned kConcurrencies[] = {1, 2, 3, 8, weft::kUnlimited};
  constexpr std::size_t kTokens[] = {1, 2, 5, 100, 1000, 5000};  // 5000 > the unbounded inbox's 4096 slots
  constexpr unsigned kWorkers[] = {1, 2, 4, 8};
  auto pick = [&rng](const auto& from) { return from[rng() % std::size(from)]; };
  Case c;
  c.options.capacity = pick(kCapacities);
  c.options.concurrency = pick(kConcurrencies);
  c.options.tokens = pick(kTokens);
  c.workers = pick(kWorkers);
  const unsigned overflow = static_cast<unsigned>(rng() % 4);  // Block twice as often: it is the park's path
  c.options.overflow = overflow == 2   ? weft::Overflow::Drop
                       : overflow == 3 ? weft::Overflow::Fail
                                       : weft::Overflow::Block;
  if (with_failures) {
    if (rng() % 3 == 0) c.cancel_after = rng() % (c.options.tokens + 1) + 1;
    if (rng() % 3 == 0) c.lose_one_in = 1 + static_cast<unsigned>(rng() % 8);
  }
  return c;
}

// Runs `activations` random cases; each case's limiter runs several activations in a row, as a graph run again
// does, so state one activation leaves behind would show in the next.
void run_cases(const char* name, bool with_failures, std::uint64_t activations) {
  const std::uint64_t seed = weft::test::seed_for(name);
  std::mt19937_64 rng(seed);
  const std::uint64_t total = weft::test::stress_count(activations);
  std::uint64_t done = 0;
  while (done < total) {
    const Case c = random_case(rng, with_failures);
    const std::uint64_t case_seed = rng();
    INFO(c.describe() << ", case seed " << case_seed);
    // One watchdog per case (a few activations of at most 5,000 tokens, milliseconds each): a hang is named
    // with its case and seed, and a slow machine is not mistaken for one.
    const weft::test::Watchdog watchdog(std::string(name) + ": " + c.describe() + ", case seed " +
                                            std::to_string(case_seed),
                                        std::chrono::seconds(60) * weft::test::kSanitizerSlowdown);
    Limiter limiter(c.options);
    Workers workers(c.workers, case_seed);
    for (int again = 0; again < 3 && done < total; ++again, ++done) {
      CountingRun run(limiter, workers, c, case_seed + static_cast<std::uint64_t>(again));
      limiter.dropped.store(0);
      workers.post([&] { weft::inbox::start_activation(limiter, run); });
      workers.wait_idle();
      run.check();
    }
  }
}

// Tokens per activation average ~1,000, so each activation is some thousands of pushes and pops.
constexpr std::uint64_t kActivations = 3000 / static_cast<std::uint64_t>(weft::test::kSanitizerSlowdown);

TEST_CASE("every token exactly once: Block, Drop and Fail, random inboxes, limits and workers") {
  run_cases("token_flow stress", false, kActivations);
}

TEST_CASE("cancelled part-way and executor tasks lost: every token ran, dropped or skipped exactly once") {
  run_cases("token_flow stress with failures", true, kActivations);
}

}  // namespace
