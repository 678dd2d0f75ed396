// The two baselines of the head-to-head suite, each the best simple version of its design, so that a reader sees
// what work stealing buys: a single-queue pool (one mutex, one condition variable, futures) and thread-per-task
// (std::async with std::launch::async). Both implement PoolSide (pool_workloads.hpp), so they run the pool rows
// through the very code that times weft and oneTBB.
//
// Kept honest: a wait inside the queue pool runs the task it waits for itself if no worker has started it (as
// weft's and oneTBB's waits do), which is what makes fib possible on it at all without a thread per level;
// waits form a tree, so none deadlocks and the stack stays as deep as the recursion. Its workers sleep on the
// condition variable rather than spin. Thread-per-task cannot run 10^6 tasks in the time a row may take:
// it runs 1/kNoopDivisor of the no-op burst and fib(kFibN) with a smaller n, and the demo scales its time by
// the task count (a thread's start and join cost the same for every task), saying so in its header.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bench/common/pool_workloads.hpp"

namespace weft::bench {

// What a side runs of the pool rows, and by how much its time is scaled up to the full row.
template <class S>
[[nodiscard]] constexpr std::size_t noop_divisor() noexcept {
  if constexpr (requires { S::kNoopDivisor; }) return S::kNoopDivisor;
  return 1;
}
template <class S>
[[nodiscard]] constexpr int fib_n_of() noexcept {
  if constexpr (requires { S::kFibN; }) return S::kFibN;
  return kFibN;
}
[[nodiscard]] constexpr std::uint64_t fib_value(int n) noexcept {
  std::uint64_t a = 0;
  std::uint64_t b = 1;
  for (int i = 0; i < n; ++i) b = std::exchange(a, b) + b;
  return a;
}
// Calls of fib(n) in the recursion (each spawns at most one task): the cost a capped fib row is scaled by.
[[nodiscard]] constexpr double fib_calls(int n) noexcept { return 2.0 * static_cast<double>(fib_value(n + 1)) - 1; }

// One queue behind one mutex; workers sleep on a condition variable; submit returns a std::future.
class QueuePool {
 public:
  explicit QueuePool(unsigned threads) {
    for (unsigned i = 0; i < (threads == 0 ? 1 : threads); ++i) workers_.emplace_back([this] { work(); });
  }
  ~QueuePool() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  QueuePool(const QueuePool&) = delete;
  QueuePool& operator=(const QueuePool&) = delete;

  void post(std::function<void()> task) {
    {
      const std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
      ++pending_;
    }
    work_.notify_one();
  }

  // A submitted task: its future, and a claim that lets a waiter run the task itself if no worker has started
  // it (the queue's copy then finds it claimed and does nothing).
  template <class R>
  struct Handle {
    struct Job {
      std::atomic<bool> claimed{false};
      std::packaged_task<R()> task;
    };
    std::shared_ptr<Job> job;
    std::future<R> future;

    // Runs the task here if nobody has claimed it, else blocks until it is done.
    R get() {
      if (!job->claimed.exchange(true, std::memory_order_acq_rel)) job->task();
      return future.get();
    }
  };

  template <class F>
  [[nodiscard]] Handle<std::invoke_result_t<F&>> submit(F f) {
    using R = std::invoke_result_t<F&>;
    auto job = std::make_shared<typename Handle<R>::Job>();
    job->task = std::packaged_task<R()>(std::move(f));
    auto future = job->task.get_future();
    post([job] {
      if (!job->claimed.exchange(true, std::memory_order_acq_rel)) job->task();
    });
    return {std::move(job), std::move(future)};
  }

  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
      finished();
    }
  }
  void finished() {
    const std::lock_guard lock(mutex_);
    if (--pending_ == 0) idle_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  std::size_t pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

class QueuePoolSide {
 public:
  static constexpr std::string_view kName = "mutex pool";
  explicit QueuePoolSide(unsigned threads) : pool_(threads) {}

  void noop_burst(std::size_t tasks) {
    for (std::size_t i = 0; i < tasks; ++i) pool_.post([] {});
    pool_.wait_idle();
  }
  std::uint64_t fib(int n) {
    auto root = pool_.submit([this, n] { return fib_in_pool(n); });
    return root.future.get();
  }
  std::uint64_t round_trips(int count) {
    std::uint64_t sum = 0;
    for (int i = 0; i < count; ++i) {
      auto f = pool_.submit([i] { return static_cast<std::uint64_t>(i); });
      sum += f.future.get();  // from outside: a plain wait on the std::future
    }
    return sum;
  }
  std::chrono::nanoseconds wake_latency() {
    return probe_.measure([this](auto task) { pool_.post(std::move(task)); });
  }

 private:
  std::uint64_t fib_in_pool(int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    auto left = pool_.submit([this, n] { return fib_in_pool(n - 1); });
    const std::uint64_t right = fib_in_pool(n - 2);
    return left.get() + right;
  }

  WakeProbe probe_;  // outlives the pool's last task
  QueuePool pool_;
};

// A thread per task: std::async(std::launch::async), the future's get() joins it.
class AsyncSide {
 public:
  static constexpr std::string_view kName = "std::async";
  static constexpr std::size_t kNoopDivisor = 100;  // 10^4 threads: a no-op row in well under a second
  static constexpr int kFibN = 15;                  // 1973 calls, at most a few hundred threads alive at once
  explicit AsyncSide(unsigned) {}

  void noop_burst(std::size_t tasks) {
    std::vector<std::future<void>> futures;
    futures.reserve(tasks);
    for (std::size_t i = 0; i < tasks; ++i) futures.push_back(std::async(std::launch::async, [] {}));
    for (auto& f : futures) f.get();
  }
  std::uint64_t fib(int n) {
    if (n < 2) return static_cast<std::uint64_t>(n);
    auto left = std::async(std::launch::async, [this, n] { return fib(n - 1); });
    const std::uint64_t right = fib(n - 2);
    return left.get() + right;
  }
  std::uint64_t round_trips(int count) {
    std::uint64_t sum = 0;
    for (int i = 0; i < count; ++i) sum += std::async(std::launch::async, [i] { return std::uint64_t(i); }).get();
    return sum;
  }
  std::chrono::nanoseconds wake_latency() {
    std::future<void> running;
    const auto latency = probe_.measure([&running](auto task) { running = std::async(std::launch::async, task); });
    running.get();
    return latency;
  }

 private:
  WakeProbe probe_;
};

static_assert(PoolSide<QueuePoolSide>);
static_assert(PoolSide<AsyncSide>);

}  // namespace weft::bench
