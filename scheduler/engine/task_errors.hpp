// The exceptions a pool's tasks let escape (PoolStats::errors, Pool::take_errors, PoolOptions::on_error).
//
// Contract:
// - Every exception reported is counted (count()), and none is lost: it goes to on_error if the pool has one,
//   else it is kept for take_errors(); an exception thrown by on_error itself is counted and kept the same way.
// - At most kKept exceptions are kept between two take_errors(); past that, and when keeping one finds no
//   memory, they are only counted.
// - report() may be called from any thread at once; take() hands over what is kept and keeps nothing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "weft/pool_options.hpp"

namespace weft::engine {

class TaskErrors {
 public:
  static constexpr std::size_t kKept = 64;

  explicit TaskErrors(const PoolOptions& options) : on_error_(options.on_error) {}
  TaskErrors(const TaskErrors&) = delete;
  TaskErrors& operator=(const TaskErrors&) = delete;

  // A task (or a hook) threw `error`.
  void report(std::exception_ptr error) noexcept;
  // The exceptions kept since the last call, oldest first.
  [[nodiscard]] std::vector<std::exception_ptr> take();
  // Every exception reported so far (PoolStats::errors). relaxed: a count.
  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

 private:
  const shared_function<void(std::exception_ptr)> on_error_;
  std::atomic<std::uint64_t> count_{0};
  std::mutex mutex_;
  std::vector<std::exception_ptr> kept_;  // under mutex_
};

}  // namespace weft::engine
