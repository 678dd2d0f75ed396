// The closure that resumes a suspended coroutine as a pool task: Pool::schedule() and weft's coroutine types
// (weft/task.hpp). Public only because they are templates and inline; users never name anything here.
#pragma once

#include <coroutine>
#include <utility>

namespace weft::detail {

// A closure that resumes a coroutine when the pool runs it. If the pool never runs it (refused at a shutdown,
// dropped by Shutdown::DropPending), its destructor resumes the coroutine there and then, after setting
// *dropped (when given): a suspended coroutine is never left behind, and the awaiter reports the drop.
class CoroResumer {
 public:
  CoroResumer(std::coroutine_handle<> handle, bool* dropped) noexcept : handle_(handle), dropped_(dropped) {}
  CoroResumer(CoroResumer&& other) noexcept : handle_(std::exchange(other.handle_, {})), dropped_(other.dropped_) {}
  CoroResumer& operator=(CoroResumer&&) = delete;
  CoroResumer(const CoroResumer&) = delete;
  CoroResumer& operator=(const CoroResumer&) = delete;
  ~CoroResumer() {
    if (!handle_) return;
    if (dropped_ != nullptr) *dropped_ = true;
    std::exchange(handle_, {}).resume();
  }
  void operator()() noexcept { std::exchange(handle_, {}).resume(); }

 private:
  std::coroutine_handle<> handle_;
  bool* dropped_;
};

}  // namespace weft::detail
