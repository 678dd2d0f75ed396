#include "src/process_barrier.hpp"

#include <cstdio>
#include <cstdlib>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace weft::os {
namespace {

long membarrier(int command) noexcept { return syscall(SYS_membarrier, command, 0, 0); }

bool register_process() noexcept {
  if (process_barrier_switched_off()) return false;
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

}  // namespace

bool process_barrier_available() noexcept {
  // Registration is per process and idempotent; the static only saves the system calls after the first.
  static const bool available = register_process();
  return available;
}

void process_barrier() noexcept {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) [[likely]]
    return;
  // The one error left once registered: a child made by fork() may not inherit the registration. Register
  // this process and try again; a barrier that cannot be had would leave the parking without its half of the
  // handshake (a lost wake-up), so that is not survivable.
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return;
  }
  std::fputs("weft: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after it was available\n", stderr);
  std::abort();
}

}  // namespace weft::os
