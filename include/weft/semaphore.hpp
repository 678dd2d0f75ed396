// weft::Semaphore: a count of units that TaskGraph nodes and TaskScope jobs take before they start and give back
// when they end, so that at most `count` of them (or fewer, for nodes taking several units) run at once.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>

namespace weft {

namespace graph {        // graph/: the TaskGraph executor behind the public classes
struct SemaphoreWaiter;  // graph/run_state.hpp: a node parked for units
}  // namespace graph
namespace detail {
class SemaphoreAccess;  // graph/semaphore.cpp: the executor's access to the lock and the waiters
}  // namespace detail

// A count of units shared by any number of nodes, of any number of graphs, scopes and runs (Taskflow's
// tf::Semaphore, oneTBB's limiter_node). A node names it in NodeOptions::semaphores, once per unit it takes.
//
// Contract:
// - Constructed with count >= 1; count 0 throws weft::invalid_option naming the value.
// - A node takes every unit it lists before its body starts, all of them or none (all-or-nothing), and gives
//   them back when its execution ends: after its subflow joined, before its successors start; also when its
//   body throws, and when the run is cancelled. So at any time the units taken never exceed count().
// - A node that cannot take its units waits without holding a worker: it is parked in the semaphore's FIFO of
//   waiters, and whoever gives units back re-posts it to its run's pool, where it tries again (docs/graph.md,
//   "Semaphores": fairness, and why all-or-nothing). Cancelling a run re-posts its parked nodes at once.
// - Not copyable or movable: nodes refer to it by address. It must outlive every run that uses it; destroying
//   it while a unit is taken or a node waits is a bug, which the destructor reports (std::abort).
// - count(), available() and waiting() may be called from any thread; the last two are snapshots.
//
// Example:
//   weft::Semaphore db{1};  // one connection: at most one query at a time
//   weft::TaskGraph g;
//   for (int q = 0; q < 8; ++q) g.add_node([] { /* query */ }, weft::NodeOptions{.semaphores = {&db}});
//   g.run(pool).wait();     // never two queries at once; db.available() == 1 again
class Semaphore {
 public:
  // count: the units there are (>= 1). Throws weft::invalid_option for 0.
  explicit Semaphore(std::size_t count);
  // Aborts with a message if a unit is still taken or a node still waits (the semaphore outlived no run).
  ~Semaphore();
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;
  Semaphore(Semaphore&&) = delete;
  Semaphore& operator=(Semaphore&&) = delete;

  // The units there are, as constructed.
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  // The units not taken at this moment (count() when no node holds any).
  [[nodiscard]] std::size_t available() const noexcept { return available_.load(std::memory_order_acquire); }
  // The nodes parked at this moment, waiting for units of this semaphore.
  [[nodiscard]] std::size_t waiting() const noexcept { return waiting_.load(std::memory_order_acquire); }

 private:
  friend class detail::SemaphoreAccess;

  const std::size_t count_;
  // Written only under lock_; atomic so that the queries above may read it without the lock.
  std::atomic<std::size_t> available_;
  std::atomic<std::size_t> waiting_{0};
  std::mutex lock_;
  // The parked nodes, first parked first (an intrusive list: parking allocates nothing).
  graph::SemaphoreWaiter* head_ = nullptr;
  graph::SemaphoreWaiter* tail_ = nullptr;
};

}  // namespace weft
