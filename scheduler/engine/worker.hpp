// One worker thread's state: its deque, its mailbox, its counters. Owned by the Engine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/engine/task.hpp"
#include "scheduler/lockfree/chase_lev_deque.hpp"
#include "scheduler/lockfree/hazard_pointers.hpp"
#include "scheduler/lockfree/ms_queue.hpp"

namespace weft::engine {

class Engine;
class FiberWorker;

using TaskDomain = lockfree::HazardPointerDomain<>;
using TaskQueue = lockfree::MSQueue<Task*, TaskDomain>;

// A counter with one writer (its worker) and any number of readers. The writer's plain increment
// (load + store) avoids a locked instruction; release makes everything the worker did before an increment
// visible to a reader that acquires the new value (the idle check relies on it for `finished`).
class OwnedCounter {
 public:
  void bump(std::uint64_t by = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + by, std::memory_order_release);
  }
  [[nodiscard]] std::uint64_t read() const noexcept { return value_.load(std::memory_order_acquire); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

struct WorkerCounters {
  OwnedCounter executed;
  OwnedCounter stolen;
  OwnedCounter steal_attempts;
  OwnedCounter parks;
  OwnedCounter wakeups;
  OwnedCounter outside_batched;  // outside tasks moved into from_outside (PoolStats)
  OwnedCounter spawned;          // tasks this worker accepted from its own tasks (for the idle check)
  OwnedCounter taken_injected;   // tasks taken from the shared queues (for PoolStats::queued)
  OwnedCounter finished;         // tasks this worker ran or dropped to completion (for the idle check)
};

class Worker {
 public:
  Worker(Engine& engine, unsigned index, TaskDomain& domain)
      : engine(engine), index(index), mailbox(domain), random_state(0x9E3779B97F4A7C15ULL * (index + 1)) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Engine& engine;
  const unsigned index;
  lockfree::ChaseLevDeque<Task*> deque;
  // Outside tasks this worker took from a slot in a batch and has not started (Engine::steal_from_slots).
  // Apart from `deque`, so that they keep their place: every worker takes outside work before other
  // workers' spawns, and a waiter past Engine::kMaxWaitDepth, which runs only its own `deque`, never nests
  // these unrelated tasks. Owner: push and pop; anyone: steal.
  lockfree::ChaseLevDeque<Task*> from_outside{16};
  // Tasks sent to this worker by affinity. Others may take them after PoolOptions::affinity_patience.
  TaskQueue mailbox;
  // Pending mailbox tasks: lets the worker and thieves skip an empty mailbox without touching the queue.
  std::atomic<std::int64_t> mailbox_pending{0};

  // Takes a task from this worker's mailbox through `ref` (the owner's, or a thief's), skipping an empty mailbox
  // by its pending count without touching the queue. The count is a hint only: relaxed.
  [[nodiscard]] std::optional<Task*> take_from_mailbox(TaskDomain::ThreadRef ref) {
    if (mailbox_pending.load(std::memory_order_relaxed) <= 0) return std::nullopt;
    auto task = mailbox.try_pop(ref);
    if (task) mailbox_pending.fetch_sub(1, std::memory_order_relaxed);
    return task;
  }
  WorkerCounters counters;

  // Owner-only state below: touched by the worker thread alone.
  std::optional<TaskDomain::Handle> registration;
  std::uint64_t random_state;
  unsigned wait_depth = 0;  // nested waits (Future::get inside a task) on this worker's stack
  // Waits on this thread that run other tasks on their stack (Engine::wait_on_worker without suspending): a task
  // run inside one must not suspend, or the wait's frames would move to another worker with the fiber.
  unsigned no_suspend = 0;
  // This worker's fibers (scheduler/engine/fiber_worker.hpp), or null when the pool does not use them.
  FiberWorker* fibers = nullptr;
  // When this worker next looks for timed waits that expired (Engine::expire_timed_waits).
  std::chrono::steady_clock::time_point next_timer_look{};
  // Per victim: the victim's `executed` count when this worker last looked, and when it first saw that
  // value. A victim whose count has not moved for affinity_patience is busy with one long task.
  struct MailboxWatch {
    std::uint64_t executed = ~std::uint64_t{0};
    std::chrono::steady_clock::time_point since{};
  };
  std::vector<MailboxWatch> watches;

  std::thread thread;

  [[nodiscard]] std::uint64_t next_random() noexcept {
    // xorshift64*: cheap, good enough to pick steal victims.
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return random_state * 0x2545F4914F6CDD1DULL;
  }
  [[nodiscard]] TaskDomain::ThreadRef ref() const noexcept { return registration->ref(); }
};

}  // namespace weft::engine
