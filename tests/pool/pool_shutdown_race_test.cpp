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

// One sweep over a ledger: tasks accepted, accepted and run once, run without being accepted, run more than once.
struct Tally {
  std::uint64_t accepted = 0;
  std::uint64_t ran = 0;
  std::uint64_t ran_unaccepted = 0;
  std::uint64_t ran_twice = 0;

  void add(bool was_accepted, unsigned runs) noexcept {
    accepted += was_accepted ? 1 : 0;
    ran += runs == 1 && was_accepted ? 1 : 0;
    ran_unaccepted += runs != 0 && !was_accepted ? 1 : 0;
    ran_twice += runs > 1 ? 1 : 0;
  }
  // The checks every ending shares, given what the shutdown reported dropped.
  void check(std::uint64_t dropped) const {
    INFO("accepted = " << accepted << ", ran = " << ran << ", dropped = " << dropped);
    CHECK(ran_unaccepted == 0);
    CHECK(ran_twice == 0);
    CHECK(ran + dropped == accepted);
  }
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

  Tally tally;
  for (std::uint64_t i = 0; i < 2 * Ledger::kHalf; ++i) {
    tally.add(ledger.accepted[i].load(std::memory_order_relaxed) != 0, ledger.runs.count(i));
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
  tally.check(dropped);
  CHECK(futures_inconsistent == 0);
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

// Tasks pushed while a get waits, racing shutdown(DropPending): parents submit children and get() them; each
// child, run by whichever thread takes it (often a parent's get, nested), posts a grandchild onto that worker's
// own deque, so tasks keep arriving at the waits while the shutdown begins. A wait that sees the shutdown drops
// its own pending tasks (drop_own_pending): every accepted task must still run exactly once or be counted as
// dropped exactly once, and every child's future must tell which.
namespace {

constexpr std::uint64_t kNestedSlots = kThreadSanitizer ? 200'000 : 1'000'000;
constexpr unsigned kNestedParents = 6;
constexpr unsigned kChildrenPerRound = 16;

struct NestedLedger {
  std::unique_ptr<std::atomic<std::uint8_t>[]> accepted = std::make_unique<std::atomic<std::uint8_t>[]>(kNestedSlots);
  // Set by the parent when the child's future threw task_dropped.
  std::unique_ptr<std::atomic<std::uint8_t>[]> future_dropped = std::make_unique<std::atomic<std::uint8_t>[]>(
      kNestedSlots);
  RunCounts runs{kNestedSlots};
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> grandchildren_accepted{0};
  std::atomic<std::uint64_t> futures_inconsistent{0};

  // A fresh slot, or kNestedSlots once they are used up.
  std::uint64_t take() noexcept {
    const std::uint64_t slot = next.fetch_add(1, std::memory_order_relaxed);
    return slot < kNestedSlots ? slot : kNestedSlots;
  }
};

void post_grandchild(weft::Pool& pool, NestedLedger& ledger) {
  const std::uint64_t slot = ledger.take();
  if (slot == kNestedSlots) return;
  NestedLedger* l = &ledger;
  if (pool.try_post([l, slot] { l->runs.ran(slot); }) == weft::SubmitStatus::Accepted) {
    ledger.accepted[slot].store(1, std::memory_order_relaxed);
    ledger.grandchildren_accepted.fetch_add(1, std::memory_order_relaxed);
  }
}

// Rounds of (submit children, get each) until the pool refuses a child or the slots run out.
void nested_parent(weft::Pool& pool, NestedLedger& ledger) {
  for (;;) {
    std::vector<std::pair<std::uint64_t, weft::Future<int>>> children;
    bool refused = false;
    for (unsigned c = 0; c < kChildrenPerRound && !refused; ++c) {
      const std::uint64_t slot = ledger.take();
      if (slot == kNestedSlots) {
        refused = true;
        break;
      }
      NestedLedger* l = &ledger;
      weft::Pool* p = &pool;
      auto tried = pool.try_submit([l, p, slot] {
        l->runs.ran(slot);
        post_grandchild(*p, *l);
        return 1;
      });
      if (tried.status != weft::SubmitStatus::Accepted) {
        refused = true;
        break;
      }
      ledger.accepted[slot].store(1, std::memory_order_relaxed);
      children.emplace_back(slot, std::move(tried.future));
    }
    for (auto& [slot, future] : children) {
      try {
        if (future.get() != 1) ledger.futures_inconsistent.fetch_add(1);
      } catch (const weft::task_dropped&) {
        ledger.future_dropped[slot].store(1, std::memory_order_relaxed);
      }
    }
    if (refused) return;
  }
}

// Returns how many children's futures reported task_dropped.
std::uint64_t nested_race(unsigned workers) {
  const Watchdog watchdog(named("DropPending racing nested waits", workers), patience(60));
  NestedLedger ledger;
  weft::Pool pool{weft::PoolOptions{.threads = workers}};
  for (unsigned p = 0; p < kNestedParents; ++p) {
    const std::uint64_t slot = ledger.take();
    NestedLedger* l = &ledger;
    weft::Pool* pp = &pool;
    pool.post([l, pp, slot] {
      l->runs.ran(slot);
      nested_parent(*pp, *l);
    });
    ledger.accepted[slot].store(1, std::memory_order_relaxed);
  }
  // Let the waits fill up with children and grandchildren, then shut down in the middle of them.
  while (ledger.grandchildren_accepted.load(std::memory_order_relaxed) < 2'000 &&
         ledger.next.load(std::memory_order_relaxed) < kNestedSlots / 8) {
    std::this_thread::yield();
  }
  const std::uint64_t dropped = pool.shutdown(weft::Shutdown::DropPending);

  Tally tally;
  std::uint64_t futures_dropped = 0;
  std::uint64_t futures_wrong = 0;
  for (std::uint64_t i = 0; i < kNestedSlots; ++i) {
    const unsigned runs = ledger.runs.count(i);
    tally.add(ledger.accepted[i].load(std::memory_order_relaxed) != 0, runs);
    if (ledger.future_dropped[i].load(std::memory_order_relaxed) != 0) {
      ++futures_dropped;
      futures_wrong += runs != 0 ? 1 : 0;  // a future that says dropped: its task never ran
    }
  }
  tally.check(dropped);
  CHECK(futures_wrong == 0);
  CHECK(ledger.futures_inconsistent.load() == 0);
  CHECK(futures_dropped <= dropped);
  CHECK(pool.stats().dropped == dropped);
  return futures_dropped;
}

}  // namespace

TEST_CASE("tasks pushed during nested waits, racing shutdown(DropPending), run once or are dropped once") {
  const std::uint64_t rounds = stress_count(3);
  std::uint64_t futures_dropped = 0;
  for (std::uint64_t round = 0; round < rounds; ++round) {
    for_each_worker_count([&](unsigned workers) { futures_dropped += nested_race(workers); });
  }
  // The race was met: shutdowns found children pending behind a parent's get and dropped them.
  CHECK(futures_dropped > 0);
}
