#include "src/futex.hpp"

#include <climits>
#include <ctime>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weft::os {
namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "futex needs std::atomic<uint32_t> to be a plain 32-bit word");

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value, const timespec* timeout) noexcept {
  // The word is only ever touched by the kernel through its address; FUTEX_PRIVATE: weft never shares it
  // across processes.
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op | FUTEX_PRIVATE_FLAG, value, timeout, nullptr,
                 0);
}

}  // namespace

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  futex(word, FUTEX_WAIT, expected, nullptr);
}

void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                    std::chrono::nanoseconds timeout) noexcept {
  if (timeout <= std::chrono::nanoseconds::zero()) return;
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  timespec relative{};
  relative.tv_sec = static_cast<time_t>(seconds.count());
  relative.tv_nsec = static_cast<long>((timeout - seconds).count());
  futex(word, FUTEX_WAIT, expected, &relative);
}

void futex_wake_one(std::atomic<std::uint32_t>& word) noexcept { futex(word, FUTEX_WAKE, 1, nullptr); }

void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept { futex(word, FUTEX_WAKE, INT_MAX, nullptr); }

}  // namespace weft::os
