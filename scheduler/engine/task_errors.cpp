// The exceptions a pool's tasks let escape: counted, handed to on_error or kept (task_errors.hpp).
#include "scheduler/engine/task_errors.hpp"

#include <utility>

namespace weft::engine {

void TaskErrors::report(std::exception_ptr error) noexcept {
  count_.fetch_add(1, std::memory_order_relaxed);
  if (on_error_) {
    try {
      on_error_(error);
      return;
    } catch (...) {
      error = std::current_exception();  // the handler's own failure is kept below, never lost
      count_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  try {
    const std::lock_guard lock(mutex_);
    if (kept_.size() < kKept) kept_.push_back(std::move(error));
  } catch (...) {
    // Out of memory while keeping an error: it is still counted.
  }
}

std::vector<std::exception_ptr> TaskErrors::take() {
  const std::lock_guard lock(mutex_);
  return std::exchange(kept_, {});
}

}  // namespace weft::engine
