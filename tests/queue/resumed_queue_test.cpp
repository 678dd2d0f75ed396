// The resumed queue (scheduler/engine/resumed_queue.hpp): first in, first out from one producer, and every entry taken
// exactly once when producers and takers race, entries reused as a suspended task's would be.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "scheduler/engine/resumed_queue.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"

namespace {

using weft::engine::ResumedEntry;
using weft::engine::ResumedQueue;
using weft::engine::Task;

TEST_CASE("the resumed queue hands entries out in the order they came, and is empty after") {
  ResumedQueue queue;
  CHECK(queue.empty_hint());
  CHECK(queue.try_take() == nullptr);
  std::vector<Task> tasks(5);
  std::vector<ResumedEntry> entries(5);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].task = &tasks[i];
    queue.push(entries[i]);
  }
  CHECK_FALSE(queue.empty_hint());
  for (std::size_t i = 0; i < 3; ++i) CHECK(queue.try_take() == &tasks[i]);
  queue.push(entries[0]);  // an entry taken may be queued again (a task that suspends a second time)
  CHECK(queue.try_take() == &tasks[3]);
  CHECK(queue.try_take() == &tasks[4]);
  CHECK(queue.try_take() == &tasks[0]);
  CHECK(queue.try_take() == nullptr);
  CHECK(queue.empty_hint());
}

TEST_CASE("stress: producers and takers race; every push is taken exactly once") {
  // Each producer owns a few entries and pushes one again only after a taker has taken it (its task "resumed"),
  // as a suspended task's entry is queued once per wake-up. Takers count what they take per task. A lost entry
  // would leave the takers waiting: the watchdog fails the test then.
  const weft::test::Watchdog watchdog("resumed queue stress", weft::test::patience(60));
  constexpr unsigned kProducers = 2;
  constexpr unsigned kTakers = 2;
  constexpr std::size_t kEntriesEach = 4;
  const std::uint64_t pushes_each = weft::test::stress_count(weft::test::reduced_runs() ? 20'000 : 200'000);
  struct Slot {
    Task task;
    ResumedEntry entry;
    std::atomic<bool> queued{false};
    std::atomic<std::uint64_t> taken{0};
  };
  std::vector<Slot> slots(kProducers * kEntriesEach);
  for (Slot& slot : slots) slot.entry.task = &slot.task;
  ResumedQueue queue;
  std::atomic<std::uint64_t> taken_total{0};
  std::atomic<bool> wrong{false};
  const std::uint64_t total = kProducers * pushes_each;
  std::vector<std::thread> threads;
  for (unsigned p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      std::uint64_t pushed = 0;
      std::size_t next = 0;
      while (pushed < pushes_each) {
        Slot& slot = slots[p * kEntriesEach + next];
        next = (next + 1) % kEntriesEach;
        // acquire: the taker's use of the entry is over before we queue it again.
        if (slot.queued.load(std::memory_order_acquire)) {
          std::this_thread::yield();
          continue;
        }
        slot.queued.store(true, std::memory_order_relaxed);
        queue.push(slot.entry);
        ++pushed;
      }
    });
  }
  for (unsigned t = 0; t < kTakers; ++t) {
    threads.emplace_back([&] {
      while (taken_total.load(std::memory_order_relaxed) < total) {
        Task* const task = queue.try_take();
        if (task == nullptr) {
          std::this_thread::yield();
          continue;
        }
        Slot* const slot = reinterpret_cast<Slot*>(task);                      // the task is the slot's first member
        if (!slot->queued.load(std::memory_order_relaxed)) wrong.store(true);  // taken twice, or never pushed
        slot->taken.fetch_add(1, std::memory_order_relaxed);
        taken_total.fetch_add(1, std::memory_order_relaxed);
        slot->queued.store(false, std::memory_order_release);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK_FALSE(wrong.load());
  CHECK(taken_total.load() == total);
  std::uint64_t sum = 0;
  for (const Slot& slot : slots) sum += slot.taken.load();
  CHECK(sum == total);
  CHECK(queue.try_take() == nullptr);
  CHECK(queue.empty_hint());
}

}  // namespace
