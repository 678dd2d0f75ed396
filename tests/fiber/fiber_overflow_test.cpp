// A fiber that overflows its stack hits the guard page below it: a clean SIGSEGV whose fault address is in the
// guard, not silent corruption of whatever lies below; a pool's worker says so on stderr before the process dies
// (scheduler/fiber/fiber_overflow.hpp); and the default stack lets a task recurse as deep as a thread's default stack
// would. Each runs in a forked child, which reports through its exit status and its stderr.
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <string>
#include <utility>

#include <sys/wait.h>
#include <unistd.h>

#include "scheduler/fiber/fiber.hpp"
#include "weft/weft.hpp"

namespace {

using weft::fiber::Fiber;
using weft::fiber::FiberStackOptions;
using weft::fiber::FiberStackPool;
using weft::fiber::ThisFiber;

// The child's exit codes.
constexpr int kGuardHit = 42;      // SIGSEGV with si_addr inside the guard page
constexpr int kOtherAddress = 43;  // SIGSEGV somewhere else
constexpr int kNoFault = 44;       // the recursion came back (it must not)
constexpr int kSetupFailed = 45;

volatile int never = -1;       // recurse's base case, never reached (and no -Winfinite-recursion)
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

// Recurses `depth` levels with a frame of some 256 bytes each; returns `depth`.
[[gnu::noinline]] int bounded_recurse(int depth) {
  if (depth == 0) return 0;
  volatile char frame[256];
  std::memset(const_cast<char*>(frame), depth & 0xff, sizeof frame);
  return bounded_recurse(depth - 1) + 1 + (frame[depth % sizeof frame] == static_cast<char>(depth & 0xff) ? 0 : 1);
}

[[noreturn]] void child() {
  // The handler needs a stack of its own: the fiber's is exhausted when it runs.
  static char alternate[64 * 1024];
  stack_t ss{};
  ss.ss_sp = alternate;
  ss.ss_size = sizeof alternate;
  struct sigaction action {};
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  if (sigaltstack(&ss, nullptr) != 0 || sigaction(SIGSEGV, &action, nullptr) != 0) _exit(kSetupFailed);

  FiberStackPool pool(FiberStackOptions{.stack_size = 64 * 1024, .max_stacks = 4, .keep_free = 4});
  // Two stacks mapped first, so that memory of this pool lies near the overflowing one.
  weft::fiber::FiberStack neighbour = pool.acquire();
  weft::fiber::FiberStack stack = pool.acquire();
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

// Runs `body` in a forked child with its stderr sent to a pipe; returns the child's wait status and what it wrote.
template <class Body>
std::pair<int, std::string> run_in_child(Body body) {
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipe_ends[0]);
    if (dup2(pipe_ends[1], STDERR_FILENO) < 0) _exit(kSetupFailed);
    alarm(120);  // the child's watchdog: a hang ends in SIGALRM, which the parent reports (no thread to fork)
    body();
    _exit(0);
  }
  close(pipe_ends[1]);
  std::string err;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(pipe_ends[0], buffer, sizeof buffer);
    if (got <= 0) break;
    err.append(buffer, static_cast<std::size_t>(got));
  }
  close(pipe_ends[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return {status, err};
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

TEST_CASE("a task that overflows its fiber stack says so, naming the worker, the size and the option, then dies") {
  const auto [status, err] = run_in_child([] {
    weft::Pool pool{weft::PoolOptions{.threads = 1, .name = "deep", .fiber_stack_size = 256 * 1024}};
    pool.post([] { static_cast<void>(recurse(0)); });  // posted: runs on the worker, never inline here
    pool.wait_idle();
    _exit(kNoFault);
  });
  INFO("child " << describe(status) << "; its stderr:\n" << err);
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV));
  CHECK(err.find("weft: fiber stack overflow: a task on worker 0 of pool 'deep' used all 256 KiB of its fiber "
                 "stack") != std::string::npos);
  CHECK(err.find("PoolOptions::fiber_stack_size (now 262144 bytes") != std::string::npos);
}

TEST_CASE("another fault on a worker is not called an overflow: the handler before weft's gets it") {
  const auto [status, err] = run_in_child([] {
    // The handler weft finds is the default one (not the test framework's, which would report a crash of its
    // own from this child): the fault must reach it and kill the child with SIGSEGV.
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    if (sigaction(SIGSEGV, &fallback, nullptr) != 0) _exit(kSetupFailed);
    weft::Pool pool{weft::PoolOptions{.threads = 1}};
    pool.post([] {
      // Not null (UBSan would stop at a null store first): the first page, which nothing maps.
      volatile std::uintptr_t address = 16;
      *reinterpret_cast<volatile int*>(address) = 1;
    });
    pool.wait_idle();
    _exit(kNoFault);
  });
  INFO("child " << describe(status) << "; its stderr:\n" << err);
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV));
  CHECK(err.find("fiber stack overflow") == std::string::npos);
}

TEST_CASE("with the default fiber stack a task recurses as deep as on a thread's default stack") {
  // 3 MiB of frames (12,000 of 256 bytes and more): well within the 8 MiB a Linux thread gets by default, and
  // what a task on a fiber could not do with the 256 KiB stacks weft had before.
  const auto [status, err] = run_in_child([] {
    weft::Pool pool{weft::PoolOptions{.threads = 2}};
    const int depth = 12'000;
    std::atomic<int> got{0};
    pool.post([&got, depth] { got.store(bounded_recurse(depth)); });  // posted: on a worker's fiber
    pool.wait_idle();
    _exit(got.load() == depth ? 0 : kOtherAddress);
  });
  INFO("child " << describe(status) << "; its stderr:\n" << err);
  CHECK(WIFEXITED(status));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

}  // namespace
