// weft's side of the pool workloads (pool_workloads.hpp): one weft::Pool, created once, and the workloads
// written as a user of the public API would write them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>

#include "bench/common/pool_workloads.hpp"
#include "weft/pool.hpp"
#include "weft/subflow.hpp"
#include "weft/task_scope.hpp"  // Pool::submit of a callable taking Subflow&
#include "weft/trace.hpp"

namespace weft::bench {

class WeftSide {
 public:
  static constexpr std::string_view kName = "weft";

  // A pool of `threads` workers (0: one per usable CPU), recording into `trace` if one is given.
  explicit WeftSide(unsigned threads, std::shared_ptr<Trace> trace = nullptr)
      : pool_(options_with(threads, std::move(trace))) {}

  // post() from this (outside) thread, then wait_idle().
  void noop_burst(std::size_t tasks) {
    for (std::size_t i = 0; i < tasks; ++i) pool_.post([] {});
    pool_.wait_idle();
  }

  // The root is posted so that the whole recursion runs on the workers; wait_idle() makes `result` visible
  // (it returns only after the root task finished).
  std::uint64_t fib(int n) {
    std::uint64_t result = 0;
    pool_.post([this, n, &result] { result = fib_on_worker(n); });
    pool_.wait_idle();
    return result;
  }

  // fib(n) through Subflow: the root is one Pool::submit of a callable taking Subflow&, waited for from this
  // thread; every call of fib_in_subflow spawns fib(n-1) and fib(n-2) as children (each with its own Subflow)
  // and joins them, the way a Subflow user writes a recursive split (and Taskflow's fib). Same cut-off (n < 2)
  // as fib(), so it spawns twice as many tasks: one per call, where fib() spawns one per call that splits.
  std::uint64_t fib_subflow(int n) {
    return pool_.submit([n](Subflow& sf) { return fib_in_subflow(sf, n); }).get();
  }

  // fib(n) through Subflow with the spawns of fib() and oneTBB's fib: every call spawns fib(n-1) as a child
  // and computes fib(n-2) itself, spawning into the same Subflow, then joins (the shape of weft's own Subflow
  // tests). A join there also waits for the children an enclosing call of the same Subflow spawned.
  std::uint64_t fib_subflow_inline(int n) {
    return pool_.submit([n](Subflow& sf) { return fib_in_subflow_inline(sf, n); }).get();
  }

  // submit() + Future::get() from this thread; get() runs the task inline if no worker has claimed it yet,
  // as oneTBB's task_group::wait does.
  std::uint64_t round_trips(int count) {
    std::uint64_t sum = 0;
    for (int i = 0; i < count; ++i) sum += pool_.submit([i] { return static_cast<std::uint64_t>(i); }).get();
    return sum;
  }

  std::chrono::nanoseconds wake_latency() {
    return probe_.measure([this](auto task) { pool_.post(std::move(task)); });
  }

  [[nodiscard]] Pool& pool() noexcept { return pool_; }

 private:
  // Not `PoolOptions{.threads = n}`: g++ -Wextra flags every member a designated initializer leaves out.
  static PoolOptions options_with(unsigned threads, std::shared_ptr<Trace> trace) {
    PoolOptions options;
    options.threads = threads;
    options.trace = std::move(trace);
    return options;
  }

  // Spawns fib(n-1) to this worker's deque, computes fib(n-2) itself, then waits (helping) for the spawn.
  std::uint64_t fib_on_worker(int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    Future<std::uint64_t> left = pool_.submit([this, n] { return fib_on_worker(n - 1); });
    const std::uint64_t right = fib_on_worker(n - 2);
    return left.get() + right;
  }

  static std::uint64_t fib_in_subflow(Subflow& sf, int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    std::uint64_t left = 0;
    std::uint64_t right = 0;
    sf.spawn([&left, n](Subflow& child) { left = fib_in_subflow(child, n - 1); });
    sf.spawn([&right, n](Subflow& child) { right = fib_in_subflow(child, n - 2); });
    sf.join();
    return left + right;
  }

  static std::uint64_t fib_in_subflow_inline(Subflow& sf, int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    std::uint64_t left = 0;
    sf.spawn([&left, n](Subflow& child) { left = fib_in_subflow_inline(child, n - 1); });
    const std::uint64_t right = fib_in_subflow_inline(sf, n - 2);
    sf.join();
    return left + right;
  }

  WakeProbe probe_;  // declared first: it must outlive the pool's last task, which the pool's destructor drains
  Pool pool_;
};

static_assert(PoolSide<WeftSide>);

}  // namespace weft::bench
