// How a pool knows it is idle (wait_idle, a Drain, the destructor): every accepted task counted submitted before it
// can run and finished after it ran, and the event its waiters sleep on.
//
// Contract:
// - Each task is counted submitted once, before it can run (a worker's `spawned`, a slot's `submitted`, or
//   outside_submitted() here), and finished once, after everything it did (the counters of whoever ran it), or
//   counted abandoned here if it never runs (dropped, or never queued).
// - An inline run (a waiter running a task itself, or a thread running a graph's roots) counts on both sides of
//   inline_runs(): started before it claims the work, finished after the results are published.
// - idle() reads every finished count first, then every submitted count: a task counted finished was counted
//   submitted before, so equal sums mean no accepted task is unfinished (a snapshot: a task may be submitted
//   right after). Increments are releases and idle()'s reads acquires: a waiter that sees the pool idle sees
//   everything its tasks did.
// - Whoever may have made the pool idle calls notify() (a worker running dry, an outside thread done with its
//   runs, an abandoned task); wait() sleeps on that event, asymmetric where the OS allows: the notifies are
//   frequent, the waits rare, so the fence moves to the waiter.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include "scheduler/engine/event_count.hpp"
#include "scheduler/engine/slot_table.hpp"

namespace weft::engine {
class Engine;
class Worker;
}  // namespace weft::engine

namespace weft::detail {
// Tasks run inline by a waiter (Future::get) of this engine: started before the claim, finished after the
// result is published. idle() counts them, so wait_idle and Drain wait for an inline run still going.
struct InlineRunCounter {
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> finished{0};
  engine::Engine* engine = nullptr;
};
}  // namespace weft::detail

namespace weft::engine {

class IdleCount {
 public:
  // `engine`: the engine whose inline runs are counted (InlineRunCounter::engine, for the futures' waits).
  explicit IdleCount(Engine& engine) noexcept;
  IdleCount(const IdleCount&) = delete;
  IdleCount& operator=(const IdleCount&) = delete;

  // A task from a thread that has no slot for it counted submitted, before it can run. release: idle() acquires.
  void outside_submitted() noexcept { outside_submitted_.fetch_add(1, std::memory_order_release); }
  // A task counted submitted will never run: counted finished. Does not notify(). release: idle() acquires.
  void abandoned() noexcept { abandoned_.fetch_add(1, std::memory_order_release); }
  // The inline runs' counts (weft::Pool hands them to the futures it makes).
  [[nodiscard]] weft::detail::InlineRunCounter& inline_runs() noexcept { return inline_runs_; }

  // The counts kept here, for PoolStats (acquire, as idle()).
  [[nodiscard]] std::uint64_t outside_submitted_count() const noexcept {
    return outside_submitted_.load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t abandoned_count() const noexcept { return abandoned_.load(std::memory_order_acquire); }

  // Every accepted task has finished (see the contract); `workers` and `slots` are the engine's.
  [[nodiscard]] bool idle(std::span<const std::unique_ptr<Worker>> workers, const SlotTable& slots) const noexcept;

  // The pool may have become idle, or a waiter's other condition changed: whoever waits looks again.
  void notify() noexcept { changed_.notify_all(); }
  // Sleeps until done() holds, looking again at each notify().
  template <class Done>
  void wait(Done done) noexcept(noexcept(done())) {
    changed_.await(done);
  }
  // As wait(), until `deadline` at the latest; returns done().
  template <class Done>
  bool wait_until(Done done, std::chrono::steady_clock::time_point deadline) noexcept(noexcept(done())) {
    while (!done()) {
      const auto key = changed_.prepare_wait();
      if (done()) {
        changed_.cancel_wait();
        return true;
      }
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) {
        changed_.cancel_wait();
        return false;
      }
      (void)changed_.wait_for(key, left);
    }
    return true;
  }

 private:
  std::atomic<std::uint64_t> outside_submitted_{0};
  std::atomic<std::uint64_t> abandoned_{0};
  weft::detail::InlineRunCounter inline_runs_;
  EventCount changed_;
};

}  // namespace weft::engine
