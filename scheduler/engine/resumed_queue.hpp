// The tasks woken while suspended on a fiber, waiting for a worker to continue them
// (scheduler/engine/fiber_worker.hpp), first in, first out.
//
// Intrusive: each entry lives in the suspended task's Resumable, on the task's own fiber stack, so a wake-up never
// allocates. (A queue that allocated a node per wake-up could fail to queue a woken task, which would then stay
// suspended forever.) A spin lock guards the list: it is taken once per wake-up and once per take, for a few
// pointer writes, and never while the holder could block or switch.
//
// The count beside the list is a hint for the workers' loops, read without the lock. A worker that is about to
// park still sees every push that came before its look: the pusher raises the count, then notifies (Parking::notify:
// a seq_cst fence, or the light half of the asymmetric barriers); the parking worker announces itself and fences
// (or runs the heavy half) before it looks (Parking::prepare_park). Either the pusher sees the sleeper and wakes
// it, or the worker's look sees the count (the protocol of scheduler/engine/parking.hpp, with the count as the
// published work).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/spin_lock.hpp"
#include "scheduler/engine/task.hpp"

namespace weft::engine {

// A queued task's link, inside what it queues.
struct ResumedEntry {
  ResumedEntry* next = nullptr;
  Task* task = nullptr;  // what take() hands out
};

class ResumedQueue {
 public:
  // Queues `entry` (its task set) behind every entry queued before. `entry` must stay alive until taken.
  void push(ResumedEntry& entry) noexcept {
    entry.next = nullptr;
    const std::lock_guard lock(lock_);
    if (tail_ != nullptr) {
      tail_->next = &entry;
    } else {
      head_ = &entry;
    }
    tail_ = &entry;
    // relaxed: a hint (see above); the entry itself is read under the lock.
    count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // The oldest entry's task, or null if none is queued. Once taken, the entry is the taker's.
  [[nodiscard]] Task* try_take() noexcept {
    if (empty_hint()) return nullptr;
    const std::lock_guard lock(lock_);
    ResumedEntry* const first = head_;
    if (first == nullptr) return nullptr;
    head_ = first->next;
    if (head_ == nullptr) tail_ = nullptr;
    count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    return first->task;
  }

  // True if nothing seemed queued at the time of the look (a relaxed read; see the header comment).
  [[nodiscard]] bool empty_hint() const noexcept { return count_.load(std::memory_order_relaxed) == 0; }

 private:
  // Read by every worker's loop on each turn: alone on its line, which changes only on a wake-up or a take.
  alignas(atomics::kCacheLine) std::atomic<std::size_t> count_{0};
  alignas(atomics::kCacheLine) atomics::SpinLock lock_;
  ResumedEntry* head_ = nullptr;
  ResumedEntry* tail_ = nullptr;
};

}  // namespace weft::engine
