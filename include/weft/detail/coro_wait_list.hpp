// The list of coroutines suspended on something that completes once (a TaskScope job, a TaskGraph run): pushed by
// their awaiters (weft/task.hpp), closed by whatever completes it, which wakes each. Public only because job
// states (weft/detail/job_state.hpp) hold one; users never name anything here.
#pragma once

#include <atomic>

namespace weft::detail {

// One suspended awaiter's entry. Owned by the awaiter; the list writes `next` only, and calls wake() once, after
// which it touches the entry no more (wake may free it).
struct CoroWaiter {
  CoroWaiter* next = nullptr;
  void (*wake)(CoroWaiter& self) noexcept = nullptr;
};

// A Treiber stack of waiters that is closed once, when the awaited thing completes: a push after the close fails
// (the awaiter does not suspend), and the close wakes every waiter pushed before it. Exactly once: each entry is
// either refused by push() or taken by the one close() that swaps the closed mark in.
class CoroWaitList {
 public:
  CoroWaitList() noexcept = default;
  CoroWaitList(const CoroWaitList&) = delete;
  CoroWaitList& operator=(const CoroWaitList&) = delete;
  ~CoroWaitList() = default;

  // Adds `waiter`; false if the list is closed already (the awaited thing completed: do not suspend). Once it
  // returned true, close() may wake the waiter at any time, on any thread.
  [[nodiscard]] bool push(CoroWaiter& waiter) noexcept {
    // acquire, on the load and on a failed exchange: a push that finds the list closed sees what the closer did
    // before close() (the result the awaiter reads next).
    CoroWaiter* head = head_.load(std::memory_order_acquire);
    do {
      if (head == closed_mark()) return false;
      waiter.next = head;
      // release: the entry's fields (next, wake, and what the awaiter stored beside them) are visible to the
      // close() that acquires the head. acq_rel rather than release only so that the failure order (acquire) is
      // no stronger than the success order, as the standard asks; on x86 the same instruction.
    } while (!head_.compare_exchange_weak(head, &waiter, std::memory_order_acq_rel, std::memory_order_acquire));
    return true;
  }

  // Closes the list and wakes every waiter on it, in no particular order. Later calls do nothing.
  void close() noexcept {
    // acq_rel: acquire takes the pushed entries' fields; release hands what the caller did before (the result)
    // to a push that finds the list closed.
    CoroWaiter* waiter = head_.exchange(closed_mark(), std::memory_order_acq_rel);
    if (waiter == closed_mark()) return;
    while (waiter != nullptr) {
      CoroWaiter* const next = waiter->next;  // read first: wake() may free the entry
      waiter->wake(*waiter);
      waiter = next;
    }
  }

  // close(), for the list's owner once nothing can push any more (its destructor: every awaiter holds a share of
  // what owns the list, so none is left): no read-modify-write when the list is closed already, as it is once the
  // awaited thing completed, or empty. acquire: the entries of waiters pushed since, if any, as in close().
  void close_unshared() noexcept {
    CoroWaiter* const head = head_.load(std::memory_order_acquire);
    if (head != nullptr && head != closed_mark()) close();
  }

  // True once close() was called (acquire: then what the closer did before is visible).
  [[nodiscard]] bool closed() const noexcept { return head_.load(std::memory_order_acquire) == closed_mark(); }

 private:
  // The closed list's head: the address of a waiter nobody pushes (constant-initialized: no guard).
  [[nodiscard]] static CoroWaiter* closed_mark() noexcept {
    static CoroWaiter mark;
    return &mark;
  }

  std::atomic<CoroWaiter*> head_{nullptr};
};

}  // namespace weft::detail
