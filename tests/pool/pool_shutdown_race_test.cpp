// Submitters racing a shutdown: every submission, from outside or from a worker, is either refused, or
// accepted and then run exactly once or dropped (and reported) — under each way a pool can end.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

enum class Ending { drain, drop_pending, deadline };

constexpr unsigned kSubmitters = 3;
// Submissions each outside thread may make before the shutdown must have stopped it.
constexpr std::uint64_t kCap = kThreadSanitizer ? 200'000 : 1'000'000;

// One slot per possible submission: outside thread s owns [s * kCap, (s + 1) * kCap); the child that task i
// posts from its worker owns i + kSubmitters * kCap. Each flag has one writer: whoever submitted.
struct Ledger {
  static constexpr std::uint64_t kHalf = kSubmitters * kCap;
  std::unique_ptr<std::atomic<std::uint8_t>[]> accepted = std::make_unique<std::atomic<std::uint8_t>[]>(2 * kHalf);
  RunCounts runs{2 * kHalf};
  std::atomic<std::uint64_t> accepted_so_far{0};
};

struct Task {
  weft::Pool* pool;
  Ledger* ledger;
  std::uint64_t index;
  std::uint64_t operator()() const {
    ledger->runs.ran(index);
    // Slower than the submitters, so that a backlog builds up for the shutdown to drop.
    if (index % 8 == 0) std::this_thread::sleep_for(20us);
    if (index < Ledger::kHalf) {
      const std::uint64_t child = index + Ledger::kHalf;
      Ledger* l = ledger;
      if (pool->try_post([l, child] { l->runs.ran(child); }) == weft::SubmitStatus::Accepted) {
        l->accepted[child].store(1, std::memory_order_relaxed);
      }
    }
    return index;
  }
};

// Submits until refused; returns whether it was refused (rather than running out of slots).
bool submit_until_refused(weft::Pool& pool, Ledger& ledger, unsigned s,
                          std::vector<std::pair<std::uint64_t, weft::Future<std::uint64_t>>>& futures) {
  for (std::uint64_t k = 0; k < kCap; ++k) {
    const std::uint64_t index = s * kCap + k;
    const Task task{&pool, &ledger, index};
    bool accepted = true;
    switch (k % 4) {
      case 0:
        accepted = pool.try_post(task) == weft::SubmitStatus::Accepted;
        break;
      case 1: {
        auto tried = pool.try_submit(task);
        accepted = tried.status == weft::SubmitStatus::Accepted;
        if (accepted) futures.emplace_back(index, std::move(tried.future));
        break;
      }
      default:
        try {
          pool.post(task);
        } catch (const weft::pool_closed&) {
          accepted = false;
        }
    }
    if (!accepted) return true;
    ledger.accepted[index].store(1, std::memory_order_relaxed);
    ledger.accepted_so_far.fetch_add(1, std::memory_order_relaxed);
  }
  return false;
}

void race(unsigned workers, Ending ending) {
  const Watchdog watchdog(named("shutdown race", workers), patience(60));
  Ledger ledger;
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  std::vector<std::vector<std::pair<std::uint64_t, weft::Future<std::uint64_t>>>> futures(kSubmitters);
  std::atomic<unsigned> refused{0};
  std::vector<std::thread> submitters;
  for (unsigned s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&, s] {
      if (submit_until_refused(pool, ledger, s, futures[s])) refused.fetch_add(1);
    });
  }
  while (ledger.accepted_so_far.load(std::memory_order_relaxed) < 20000) std::this_thread::yield();
  std::uint64_t dropped = 0;
  switch (ending) {
    case Ending::drain:
      dropped = pool.shutdown(weft::Shutdown::Drain);
      break;
    case Ending::drop_pending:
      dropped = pool.shutdown(weft::Shutdown::DropPending);
      break;
    case Ending::deadline:
      dropped = pool.shutdown_for(1ms).dropped;
      break;
  }
  for (auto& t : submitters) t.join();
  CHECK(refused.load() == kSubmitters);  // the shutdown, not the slot supply, stopped every submitter

  std::uint64_t accepted = 0;
  std::uint64_t ran = 0;
  std::uint64_t ran_unaccepted = 0;
  std::uint64_t ran_twice = 0;
  for (std::uint64_t i = 0; i < 2 * Ledger::kHalf; ++i) {
    const bool was_accepted = ledger.accepted[i].load(std::memory_order_relaxed) != 0;
    const unsigned runs = ledger.runs.count(i);
    accepted += was_accepted ? 1 : 0;
    ran += runs == 1 && was_accepted ? 1 : 0;
    ran_unaccepted += runs != 0 && !was_accepted ? 1 : 0;
    ran_twice += runs > 1 ? 1 : 0;
  }
  std::uint64_t futures_dropped = 0;
  std::uint64_t futures_inconsistent = 0;
  for (auto& list : futures) {
    for (auto& [index, future] : list) {
      try {
        if (future.get() != index || ledger.runs.count(index) != 1) ++futures_inconsistent;
      } catch (const weft::task_dropped&) {
        ++futures_dropped;
        if (ledger.runs.count(index) != 0) ++futures_inconsistent;
      }
    }
  }
  INFO("accepted = " << accepted << ", ran = " << ran << ", dropped = " << dropped);
  CHECK(ran_unaccepted == 0);
  CHECK(ran_twice == 0);
  CHECK(futures_inconsistent == 0);
  CHECK(ran + dropped == accepted);
  CHECK(futures_dropped <= dropped);
  CHECK(pool.stats().dropped == dropped);
  if (ending == Ending::drain) CHECK(dropped == 0);
}

TEST_CASE("submitters racing shutdown(Drain)") {
  for_each_worker_count([](unsigned workers) { race(workers, Ending::drain); });
}

TEST_CASE("submitters racing shutdown(DropPending)") {
  for_each_worker_count([](unsigned workers) { race(workers, Ending::drop_pending); });
}

TEST_CASE("submitters racing shutdown_for with a deadline") {
  for_each_worker_count([](unsigned workers) { race(workers, Ending::deadline); });
}

}  // namespace
