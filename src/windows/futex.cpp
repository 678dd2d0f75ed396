// Windows: the futex is WaitOnAddress / WakeByAddressSingle / WakeByAddressAll (Windows 8 and later; the
// synchronization API set, -lsynchronization), which compare and sleep on the word as futex(2) does.
#include "src/futex.hpp"

#include <windows.h>

namespace weft::os {
namespace {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "WaitOnAddress needs std::atomic<uint32_t> to be a plain 32-bit word");

void wait_on(std::atomic<std::uint32_t>& word, std::uint32_t expected, DWORD milliseconds) noexcept {
  // The word is only ever touched by the OS through its address, as with futex(2). A false return is a timeout
  // (or a spurious return): the caller re-checks its condition either way.
  (void)WaitOnAddress(reinterpret_cast<volatile std::uint32_t*>(&word), &expected, sizeof(expected), milliseconds);
}

}  // namespace

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  wait_on(word, expected, INFINITE);
}

void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                    std::chrono::nanoseconds timeout) noexcept {
  if (timeout <= std::chrono::nanoseconds::zero()) return;
  // Milliseconds, rounded up (a timeout is never cut short to zero, which would spin the caller), and below
  // INFINITE (0xFFFFFFFF), which would never return.
  const auto milliseconds = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
  constexpr long long kLongest = static_cast<long long>(INFINITE) - 1;
  wait_on(word, expected, static_cast<DWORD>(milliseconds < kLongest ? milliseconds : kLongest));
}

void futex_wake_one(std::atomic<std::uint32_t>& word) noexcept { WakeByAddressSingle(static_cast<void*>(&word)); }

void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept { WakeByAddressAll(static_cast<void*>(&word)); }

}  // namespace weft::os
