// Stealing: what a worker with nothing of its own takes from others, in the order find_task() asks for it:
// outside threads' slots (and what other workers took from them and have not started) before any spawn, then
// other workers' deques, then, after the affinity patience, tasks waiting in another worker's mailbox.
#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <span>

#include "scheduler/engine/engine.hpp"
#include "scheduler/engine/engine_internal.hpp"

namespace weft::engine {
using namespace engine_internal;

Task* Engine::try_steal_from(Worker& self, Worker& victim) {
  // The caller skipped an empty victim by its relaxed hint, as the flat sweep below does.
  self.counters.steal_attempts.bump();
  const auto result = victim.deque.steal();
  if (!result) return nullptr;
  self.counters.stolen.bump();
  if (hooks_.tracer() != nullptr) [[unlikely]]
    hooks_.steal(victim.index);
  return result.item;
}

Task* Engine::steal(Worker& self) {
  // steal_orders_ is written once, before the workers start: reading it writes no shared line. The sweep by
  // distance is a call of its own, so that the flat sweep below saves no registers for it (callgrind: the
  // frame it needed cost every flat steal 14 instructions, docs/perf-log.md).
  if (!steal_orders_.empty()) [[unlikely]]
    return steal_by_distance(self);
  const auto count = static_cast<unsigned>(workers_.size());
  if (count > 1) {
    // Two sweeps over the other workers from a random start: a victim that lost a race is likely to have
    // more, so it gets a second chance in the second sweep.
    const auto start = static_cast<unsigned>(self.next_random() % count);
    for (unsigned i = 0; i < 2 * count; ++i) {
      Worker& victim = *workers_[(start + i) % count];
      // The relaxed emptiness hint skips the steal's fence on an empty victim; a push it misses is found by
      // the next search, and a worker about to park re-checks after its fence (park()).
      if (&victim == &self || victim.deque.empty()) continue;
      self.counters.steal_attempts.bump();
      const auto result = victim.deque.steal();
      if (result) {
        self.counters.stolen.bump();
        if (hooks_.tracer() != nullptr) [[unlikely]]
          hooks_.steal(victim.index);
        return result.item;
      }
    }
  }
  return steal_from_mailboxes(self);
}

[[gnu::noinline]] Task* Engine::steal_by_distance(Worker& self) {
  const topology::StealOrder* order = &steal_orders_[self.index];
  // By distance: the workers on this core, then this node, then the other nodes nearest first. Each tier is
  // swept twice from a random start before the next (a victim that lost a race likely has more), so that work
  // within reach never loses to work across the machine.
  unsigned begin = 0;
  for (const unsigned end : order->tier_ends) {
    const unsigned size = end - begin;
    const auto start = static_cast<unsigned>(self.next_random() % size);
    for (unsigned i = 0; i < 2 * size; ++i) {
      Worker& victim = *workers_[order->victims[begin + (start + i) % size]];
      if (victim.deque.empty()) continue;
      if (Task* task = try_steal_from(self, victim)) return task;
    }
    begin = end;
  }
  return steal_from_mailboxes(self);
}

Task* Engine::steal_from_slots(Worker& self) {
  // acquire (SlotTable::count): every slot below the count is set.
  const unsigned count = slots_.count();
  if (count == 0) return nullptr;
  // First what this worker took from the slots earlier (a relaxed hint skips the pop's fence when empty).
  if (!self.from_outside.empty()) {
    if (auto task = self.from_outside.pop()) return *task;
  }
  const auto start = static_cast<unsigned>(self.next_random() % count);
  for (unsigned i = 0; i < count; ++i) {
    OutsideSlot& victim = slots_.at((start + i) % count);
    if (victim.deque.empty()) continue;  // a hint, as in steal()
    // Not counted in stolen/steal_attempts: those are about other workers; this is the outside threads'
    // work coming in, as from the shared queues.
    // Until it is empty, as a pop from the shared queue would: a lost race means another thread took an item,
    // so this stays lock-free, and outside work is never skipped for a worker's spawns while any is left.
    for (;;) {
      // A batch: this task and up to kStealBatch - 1 more (never more than half the slot), which go into our
      // from_outside deque, where other workers still find them before any spawn. Only as many as fit there
      // without growing, so the pushes cannot throw and nothing taken can be lost. One at a time while this
      // worker waits (inside wait_on_worker): it should get back to its waiting task, not gather more.
      // And one at a time from a short backlog: between the batch's CAS and the pushes below, the extras are
      // in no deque, and a worker that searched just then would find no outside work and take a spawn
      // instead, against the rule that outside work goes first. From a backlog of 2 * kStealBatch or more,
      // what our batch leaves behind is still in the slot for others. (This was first thought to cause
      // pool_shutdown's nested-waits hang; that was the test's own ordering assumption, fixed there.)
      std::array<Task*, OutsideSlot::kStealBatch> batch;
      const bool deep = victim.deque.size_hint() >= 2 * OutsideSlot::kStealBatch;
      const std::size_t limit = self.wait_depth == 0 && deep ? std::min(batch.size(), 1 + self.from_outside.room()) : 1;
      const auto result = victim.deque.steal_batch(std::span<Task*>(batch.data(), limit));
      if (result) {
        // Each task was written by its submitter on another core: start fetching them all now, together.
        for (std::size_t k = 1; k < result.count; ++k) __builtin_prefetch(batch[k]);
        // Newest first, so that our pops (newest first) run them in the order they were submitted.
        for (std::size_t k = result.count; k-- > 1;) self.from_outside.push(batch[k]);
        self.counters.outside_batched.bump(result.count - 1);
        // Work moved where sleepers have not been told about it: a sleeper may take some of it.
        if (result.count > 1) signal_work();
        return batch[0];
      }
      if (result.status == lockfree::StealStatus::empty) break;
    }
  }
  // Then what other workers took from the slots and have not started, still before any spawn.
  const auto workers = static_cast<unsigned>(workers_.size());
  const auto first = static_cast<unsigned>(self.next_random() % workers);
  for (unsigned i = 0; i < workers; ++i) {
    Worker& victim = *workers_[(first + i) % workers];
    if (&victim == &self || victim.from_outside.empty()) continue;  // a hint, as in steal()
    if (Task* task = steal_until_taken_or_empty(victim.from_outside)) return task;
  }
  return nullptr;
}

Task* Engine::steal_from_mailboxes(Worker& self) {
  std::optional<std::chrono::steady_clock::time_point> now;
  for (auto& victim_ptr : workers_) {
    Worker& victim = *victim_ptr;
    if (&victim == &self || victim.mailbox_pending.load(std::memory_order_relaxed) <= 0) continue;
    if (!now) now = std::chrono::steady_clock::now();
    const std::uint64_t executed = victim.counters.executed.read();
    auto& watch = self.watches[victim.index];
    if (watch.executed != executed) {
      watch = {executed, *now};  // the victim made progress since we last looked: give it more time
      continue;
    }
    if (*now - watch.since < options_.affinity_patience) continue;
    if (auto task = victim.mailbox.try_pop(self.ref())) {
      victim.mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // a hint only
      self.counters.stolen.bump();
      if (hooks_.tracer() != nullptr) [[unlikely]]
        hooks_.steal(victim.index);
      return *task;
    }
  }
  return nullptr;
}

}  // namespace weft::engine
