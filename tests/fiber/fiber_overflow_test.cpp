// A fiber that overflows its stack hits the guard page below it: a clean SIGSEGV whose fault address is in the
// guard, not silent corruption of whatever lies below. Run in a forked child, which reports through its exit code.
#include <doctest/doctest.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <sys/wait.h>
#include <unistd.h>

#include "scheduler/fiber.hpp"

namespace {

using weft::sched::Fiber;
using weft::sched::FiberStackOptions;
using weft::sched::FiberStackPool;
using weft::sched::ThisFiber;

// The child's exit codes.
constexpr int kGuardHit = 42;      // SIGSEGV with si_addr inside the guard page
constexpr int kOtherAddress = 43;  // SIGSEGV somewhere else
constexpr int kNoFault = 44;       // the recursion came back (it must not)
constexpr int kSetupFailed = 45;

volatile int never = -1;  // recurse's base case, never reached (and no -Winfinite-recursion)
std::uintptr_t guard_low = 0;  // written before the fault, read by the handler
std::uintptr_t guard_high = 0;

void on_segv(int, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  _exit(address >= guard_low && address < guard_high ? kGuardHit : kOtherAddress);
}

// Recurses with a frame well under a page, so the first access past the stack's end lands in the guard page
// (a frame larger than the guard could jump over it: that is what a guard page cannot catch).
[[gnu::noinline]] int recurse(int depth) {
  if (depth == never) return 0;
  volatile char frame[256];
  std::memset(const_cast<char*>(frame), depth & 0xff, sizeof frame);
  const int below = recurse(depth + 1);
  return below + frame[depth % sizeof frame];
}

[[noreturn]] void child() {
  // The handler needs a stack of its own: the fiber's is exhausted when it runs.
  static char alternate[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate;
  ss.ss_size = sizeof alternate;
  struct sigaction action{};
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  if (sigaltstack(&ss, nullptr) != 0 || sigaction(SIGSEGV, &action, nullptr) != 0) _exit(kSetupFailed);

  FiberStackPool pool(FiberStackOptions{.stack_size = 64 * 1024, .max_stacks = 4, .keep_free = 4});
  // Two stacks mapped first, so that memory of this pool lies near the overflowing one.
  weft::sched::FiberStack neighbour = pool.acquire();
  weft::sched::FiberStack stack = pool.acquire();
  if (!neighbour || !stack) _exit(kSetupFailed);
  guard_low = reinterpret_cast<std::uintptr_t>(stack.guard());
  guard_high = guard_low + stack.guard_size();
  Fiber fiber(std::move(stack), [](ThisFiber&) { static_cast<void>(recurse(0)); });
  static_cast<void>(fiber.resume());
  _exit(kNoFault);
}

TEST_CASE("a stack overflow on a fiber dies of SIGSEGV on the guard page") {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) child();
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << ": exited = " << WIFEXITED(status) << " (code "
                       << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << "), signalled = " << WIFSIGNALED(status)
                       << " (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")");
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != kOtherAddress);
  CHECK(WEXITSTATUS(status) != kNoFault);
  CHECK(WEXITSTATUS(status) == kGuardHit);
}

}  // namespace
