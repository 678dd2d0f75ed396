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

  WakeProbe probe_;  // declared first: it must outlive the pool's last task, which the pool's destructor drains
  Pool pool_;
};

static_assert(PoolSide<WeftSide>);

}  // namespace weft::bench
