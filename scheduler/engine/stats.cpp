// PoolStats: a snapshot summed from the workers' and slots' counters, the shared queues' totals and the counts the
// engine's parts keep (idle.hpp, queue_bound.hpp, task_errors.hpp), and the fiber stacks'. Each counter is read
// once, without a lock: the figures are consistent only while no thread submits or runs tasks.
#include <algorithm>

#include "scheduler/engine/engine.hpp"
#if WEFT_FIBERS
#include "scheduler/fiber/fiber_stack.hpp"
#endif

namespace weft::engine {

PoolStats Engine::stats() const {
  PoolStats out;
  out.workers.reserve(workers_.size());
  std::uint64_t finished = idle_.abandoned_count();
  std::uint64_t submitted = idle_.outside_submitted_count();
  std::size_t queued = 0;
  for (const auto& worker : workers_) {
    const auto& c = worker->counters;
    out.workers.push_back({c.executed.read(), c.stolen.read(), c.steal_attempts.read(), c.parks.read(),
                           c.wakeups.read(), c.outside_batched.read()});
    finished += c.finished.read();
    submitted += c.spawned.read();
    queued += worker->deque.size_hint() + worker->from_outside.size_hint();
    queued += static_cast<std::size_t>(
        std::max<std::int64_t>(0, worker->mailbox_pending.load(std::memory_order_relaxed)));
  }
  const unsigned slots = slots_.count();
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = slots_.at(i);
    submitted += slot.submitted.read();
    finished += slot.finished.read();
    queued += slot.deque.size_hint();
  }
  // Shared queues: what submitters pushed less what workers (or the final drop) took. Read taken first:
  // both only grow, so a snapshot never comes out negative except by a concurrent take, which is clamped.
  std::uint64_t taken = injected_dropped_.load(std::memory_order_relaxed);
  for (const auto& worker : workers_) taken += worker->counters.taken_injected.read();
  std::uint64_t pushed = 0;
  for (const auto& total : injected_total_) pushed += total.value.load(std::memory_order_relaxed);
  queued += pushed > taken ? static_cast<std::size_t>(pushed - taken) : 0;
  out.queued = queued;
  out.in_flight = submitted >= finished ? static_cast<std::size_t>(submitted - finished) : 0;
  out.errors = errors_.count();
  out.dropped = dropped_.load(std::memory_order_relaxed);
  out.admitted_over_limit = bound_.admitted_over_limit();
  out.timers_fired = timers_.fired();
  out.timers_dropped = timers_.dropped();
  const std::int64_t suspended = suspended_tasks_.load(std::memory_order_relaxed);
  out.suspended = suspended > 0 ? static_cast<std::size_t>(suspended) : 0;
#if WEFT_FIBERS
  if (fiber_stacks_ != nullptr) {
    const fiber::FiberStackStats stacks = fiber_stacks_->stats();
    out.fiber_stacks = stacks.live;
    out.fiber_stacks_peak = stacks.peak;
    out.fiber_overshoot = stacks.overshoot;
  }
#endif
  out.fiber_waits_unsuspended = waits_unsuspended_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace weft::engine
