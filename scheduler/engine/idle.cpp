// Idle detection: finished against submitted counts (idle.hpp), and the wait for it.
#include "scheduler/engine/idle.hpp"

#include "scheduler/engine/engine.hpp"
#include "src/process_barrier.hpp"

namespace weft::engine {

IdleCount::IdleCount(Engine& engine) noexcept
    : inline_runs_{{0}, {0}, &engine},
      // Notified whenever a worker runs dry or an outside thread ran tasks itself; waited on only by wait_idle
      // and shutdown: the fence moves to the waiter, whatever the CPU count.
      changed_(os::process_barrier_available()) {}

bool IdleCount::idle(std::span<const std::unique_ptr<Worker>> workers, const SlotTable& slots) const noexcept {
  // Finished first, then submitted. Every task counted in `finished` was submitted before, and so is counted in
  // `submitted` when that is read later; so finished == submitted means no accepted task is unfinished.
  // Inline runs (a waiter running a task itself) count on both sides: started before the claim, finished after
  // the result, so one still running keeps finished < submitted.
  std::uint64_t finished = abandoned_.load(std::memory_order_acquire);
  finished += inline_runs_.finished.load(std::memory_order_acquire);
  for (const auto& worker : workers) finished += worker->counters.finished.read();
  // A slot made after this read only adds to `submitted` below (its owner's runs are of its own submissions),
  // which errs towards "not idle".
  const unsigned slots_seen = slots.count();
  for (unsigned i = 0; i < slots_seen; ++i) finished += slots.at(i).finished.read();
  std::uint64_t submitted = outside_submitted_.load(std::memory_order_acquire);
  submitted += inline_runs_.started.load(std::memory_order_acquire);
  for (const auto& worker : workers) submitted += worker->counters.spawned.read();
  const unsigned slots_now = slots.count();
  for (unsigned i = 0; i < slots_now; ++i) submitted += slots.at(i).submitted.read();
  return finished == submitted;
}

void Engine::wait_idle() {
  refuse_on_own_worker("wait_idle");
  idle_.wait([this] { return idle(); });
}

}  // namespace weft::engine
