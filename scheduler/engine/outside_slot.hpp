// An outside thread's slot in one engine (oneTBB calls it an arena slot): an owner-only Chase–Lev deque that
// the thread's Normal submissions go into and that workers steal from. The owner pops it (LIFO) while it
// waits for a future or for idle, so a submit + get from outside runs inline without a dead queued copy and
// without the shared queue's CAS pair and hazard publish per task.
//
// Lifetime: the engine keeps every slot it ever made (at most Engine::kMaxSlots; further outside threads use
// the shared queues) in a shared_ptr, and so does the thread-local lease of the thread that owns it. A thread
// that exits gives up ownership (tasks still in its deque stay there, for workers to steal: each runs exactly
// once, as any Chase–Lev item) and a later outside thread may adopt the slot. An engine destroyed before the
// thread exits marks the slot dead; the lease then only keeps the (empty) memory until the thread exits or
// prunes it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/engine/task.hpp"
#include "scheduler/engine/worker.hpp"
#include "scheduler/lockfree/chase_lev_deque.hpp"

namespace weft::engine {

struct OutsideSlot {
  // The most tasks a worker takes from a slot at once (Engine::steal_from_slots). Batches pay the steal's
  // fence and CAS once for several tasks and fetch their cache lines together; the owner's pops, made only
  // while it waits, take the slower put-back path when fewer than this many tasks are left
  // (scheduler/lockfree/chase_lev_deque.hpp).
  static constexpr std::size_t kStealBatch = 8;

  // Owner: push (submissions) and pop (inline runs while waiting). Anyone: steal.
  lockfree::ChaseLevDeque<Task*, atomics::StdMemoryModel, kStealBatch> deque;
  // Written by the current owner only (plain increments, see OwnedCounter); ownership passes from one thread to
  // the next through `owned` (release on giving up, acquire on adoption), so the counts carry over intact.
  OwnedCounter submitted;  // tasks the owner pushed here (idle accounting)
  OwnedCounter finished;   // tasks the owner ran from here itself
  // True while a thread owns the slot. Adoption is a CAS false -> true (acquire: sees the previous owner's
  // deque and counter writes); giving up is a release store.
  alignas(atomics::kCacheLine) std::atomic<bool> owned{true};
  // Raised by the owner while inside Engine::enqueue: the slot's half of the shutdown gate (see there).
  std::atomic<bool> entering{false};
  // Cleared by ~Engine: a lease on a dead slot is pruned by its thread, never used.
  std::atomic<bool> engine_alive{true};
  // Its place in Engine::slots_, set before the slot is published and never changed: the owner's thread index
  // in the engine is Engine::size() + index (Pool::current_thread_index).
  unsigned index = 0;
};

}  // namespace weft::engine
