// A fiber that overflows its stack hits the guard page below it: a clean SIGSEGV whose fault address is in the
// guard, not silent corruption of whatever lies below; a pool's worker says so on stderr before the process dies
// (scheduler/fiber/fiber_overflow.hpp); and the default stack lets a task recurse as deep as a thread's default stack
// would. Each runs in a child process, which reports through its exit status and its stderr: forked on Linux; on
// Windows, which cannot fork, this executable started again with WEFT_FIBER_OVERFLOW_CHILD naming the case, which
// runs only that case's child side. A child that dies of a fault ends with SIGSEGV on Linux, and with the
// exception's code as its exit code on Windows: an access violation (0xc0000005), or for an overflow a stack
// overflow (0xc00000fd), which Windows raises on a touch of the guard page with room left for the handlers.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "scheduler/fiber/fiber.hpp"
#include "src/fault_handler.hpp"
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

#if defined(_WIN32)
LONG WINAPI on_fault(EXCEPTION_POINTERS* pointers) {
  // An access violation names the address; a stack overflow (the guard page touched: src/windows/stack_memory.cpp)
  // may not (Wine's does not), and the stack pointer is then in the guard.
  const EXCEPTION_RECORD* record = pointers->ExceptionRecord;
  std::uintptr_t address = 0;
  if (record->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && record->NumberParameters >= 2) {
    address = static_cast<std::uintptr_t>(record->ExceptionInformation[1]);
  } else if (record->ExceptionCode == EXCEPTION_STACK_OVERFLOW) {
    address = record->NumberParameters >= 2 ? static_cast<std::uintptr_t>(record->ExceptionInformation[1])
                                            : static_cast<std::uintptr_t>(pointers->ContextRecord->Rsp);
  } else {
    return EXCEPTION_CONTINUE_SEARCH;
  }
  TerminateProcess(GetCurrentProcess(), address >= guard_low && address < guard_high ? kGuardHit : kOtherAddress);
  return EXCEPTION_CONTINUE_SEARCH;
}
#else
void on_segv(int, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  _exit(address >= guard_low && address < guard_high ? kGuardHit : kOtherAddress);
}
#endif

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

[[noreturn]] void guard_child() {
#if defined(_WIN32)
  // A vectored handler runs on the faulting stack, in the room the guard keeps there for a stack overflow's
  // handlers (src/windows/stack_memory.cpp), which the thread's stack guarantee commits, as weft's workers set it
  // (src/windows/fault_handler.cpp); first in line, ahead of the test framework's.
  ULONG guarantee = weft::os::AlternateSignalStack::kSize;
  if (SetThreadStackGuarantee(&guarantee) == 0) _exit(kSetupFailed);
  if (AddVectoredExceptionHandler(1, &on_fault) == nullptr) _exit(kSetupFailed);
#else
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
#endif

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

// How a child ended, and what it wrote to stderr.
struct ChildEnd {
  bool exited = false;  // by exit or _exit, with `code`
  int code = 0;
  bool faulted = false;  // killed by a memory fault (SIGSEGV; on Windows an access violation)
  std::string description;
  std::string err;
};

constexpr int kTimedOut = 46;  // the child's watchdog fired

#if defined(_WIN32)
constexpr char kChildVariable[] = "WEFT_FIBER_OVERFLOW_CHILD";

// Runs `body` in a child: this executable again, on this file's test cases only, with kChildVariable set to
// `id`; the run_in_child of the case with that id runs `body` there and exits. In a child, returns nothing
// without running anything for any other id (its test case then ends at once).
template <class Body>
std::optional<ChildEnd> run_in_child(int id, Body body) {
  if (const char* wanted = std::getenv(kChildVariable); wanted != nullptr) {
    if (std::atoi(wanted) != id) return std::nullopt;
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(120));
      _exit(kTimedOut);
    }).detach();
    body();
    _exit(0);
  }
  char path[MAX_PATH];
  const DWORD length = GetModuleFileNameA(nullptr, path, sizeof path);
  REQUIRE((length > 0 && length < sizeof path));
  std::string command = std::string("\"") + path + "\" --source-file=*fiber_overflow_test.cpp";
  SECURITY_ATTRIBUTES inherit{.nLength = sizeof(SECURITY_ATTRIBUTES),
                              .lpSecurityDescriptor = nullptr,
                              .bInheritHandle = TRUE};
  HANDLE read_end = nullptr;
  HANDLE write_end = nullptr;
  REQUIRE(CreatePipe(&read_end, &write_end, &inherit, 0) != 0);
  REQUIRE(SetHandleInformation(read_end, HANDLE_FLAG_INHERIT, 0) != 0);
  STARTUPINFOA startup{};
  startup.cb = sizeof startup;
  startup.dwFlags = STARTF_USESTDHANDLES;
  startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  startup.hStdOutput = write_end;  // the child's doctest report too: read with its stderr, not checked
  startup.hStdError = write_end;
  PROCESS_INFORMATION process{};
  const std::string id_text = std::to_string(id);
  REQUIRE(SetEnvironmentVariableA(kChildVariable, id_text.c_str()) != 0);
  const BOOL started = CreateProcessA(nullptr, command.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &startup,
                                      &process);
  SetEnvironmentVariableA(kChildVariable, nullptr);
  CloseHandle(write_end);
  REQUIRE(started != 0);
  ChildEnd end;
  char buffer[4096];
  DWORD got = 0;
  while (ReadFile(read_end, buffer, sizeof buffer, &got, nullptr) != 0 && got > 0) end.err.append(buffer, got);
  CloseHandle(read_end);
  WaitForSingleObject(process.hProcess, INFINITE);
  DWORD code = 0;
  GetExitCodeProcess(process.hProcess, &code);
  CloseHandle(process.hThread);
  CloseHandle(process.hProcess);
  end.faulted = code == static_cast<DWORD>(EXCEPTION_ACCESS_VIOLATION) ||
                code == static_cast<DWORD>(EXCEPTION_STACK_OVERFLOW);
  end.exited = code < 256;
  end.code = static_cast<int>(code);
  char hex[16];
  std::snprintf(hex, sizeof hex, "%lx", static_cast<unsigned long>(code));
  end.description = "exit code 0x" + std::string(hex);
  return end;
}
#else
// Runs `body` in a forked child with its stderr sent to a pipe; returns how it ended and what it wrote (always
// something: `id` matters on Windows only).
template <class Body>
std::optional<ChildEnd> run_in_child(int /*id*/, Body body) {
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
  ChildEnd end;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(pipe_ends[0], buffer, sizeof buffer);
    if (got <= 0) break;
    end.err.append(buffer, static_cast<std::size_t>(got));
  }
  close(pipe_ends[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  end.exited = WIFEXITED(status);
  end.code = end.exited ? WEXITSTATUS(status) : -1;
  end.faulted = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
  if (WIFEXITED(status)) {
    end.description = "exited with code " + std::to_string(WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    end.description = "killed by signal " + std::to_string(WTERMSIG(status));
  } else {
    end.description = "status " + std::to_string(status);
  }
  return end;
}
#endif

// Wine (8.0) runs no handler for an overflow into a fiber stack's guard: the Wine process dies of SIGSEGV in its own
// fault handling before any exception is raised (the same program's thread-stack overflows do raise one). The
// stack's layout is Windows's own for a thread's stack (src/windows/stack_memory.cpp), which Windows itself
// handles; Wine cannot show it, so the two overflow cases below say they skipped there. Everywhere else they run.
[[nodiscard]] bool overflow_handlers_unavailable() {
#if defined(_WIN32)
  const HMODULE ntdll = GetModuleHandleA("ntdll.dll");
  if (ntdll != nullptr && GetProcAddress(ntdll, "wine_get_version") != nullptr) {
    MESSAGE(
        "skipped under Wine: an overflow into a fiber stack's guard ends the Wine process without raising "
        "the stack overflow exception (see above)");
    return true;
  }
#endif
  return false;
}

TEST_CASE("a stack overflow on a fiber dies of a fault on the guard page") {
  if (std::getenv("WEFT_FIBER_OVERFLOW_CHILD") == nullptr && overflow_handlers_unavailable()) return;
  const std::optional<ChildEnd> end = run_in_child(1, [] { guard_child(); });
  if (!end) return;
  INFO("child " << end->description << "; its stderr:\n" << end->err);
  REQUIRE(end->exited);
  CHECK(end->code != kOtherAddress);
  CHECK(end->code != kNoFault);
  CHECK(end->code == kGuardHit);
}

TEST_CASE("a task that overflows its fiber stack says so, naming the worker, the size and the option, then dies") {
  if (std::getenv("WEFT_FIBER_OVERFLOW_CHILD") == nullptr && overflow_handlers_unavailable()) return;
  const std::optional<ChildEnd> end = run_in_child(2, [] {
    weft::Pool pool{weft::PoolOptions{.threads = 1, .name = "deep", .fiber_stack_size = 256 * 1024}};
    pool.post([] { static_cast<void>(recurse(0)); });  // posted: runs on the worker, never inline here
    pool.wait_idle();
    _exit(kNoFault);
  });
  if (!end) return;
  INFO("child " << end->description << "; its stderr:\n" << end->err);
  CHECK(end->faulted);
  CHECK(end->err.find("weft: fiber stack overflow: a task on worker 0 of pool 'deep' used all 256 KiB of its fiber "
                      "stack") != std::string::npos);
  CHECK(end->err.find("PoolOptions::fiber_stack_size (now 262144 bytes") != std::string::npos);
}

TEST_CASE("another fault on a worker is not called an overflow: the handler before weft's gets it") {
  const std::optional<ChildEnd> end = run_in_child(3, [] {
#if !defined(_WIN32)
    // The handler weft finds is the default one (not the test framework's, which would report a crash of its
    // own from this child): the fault must reach it and kill the child with SIGSEGV. (On Windows the test
    // framework's handler is an unhandled-exception filter, which the search reaches after weft's vectored one.)
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    if (sigaction(SIGSEGV, &fallback, nullptr) != 0) _exit(kSetupFailed);
#endif
    weft::Pool pool{weft::PoolOptions{.threads = 1}};
    pool.post([] {
      // Not null (UBSan would stop at a null store first): the first page, which nothing maps.
      volatile std::uintptr_t address = 16;
      *reinterpret_cast<volatile int*>(address) = 1;
    });
    pool.wait_idle();
    _exit(kNoFault);
  });
  if (!end) return;
  INFO("child " << end->description << "; its stderr:\n" << end->err);
  CHECK(end->faulted);
  CHECK(end->err.find("fiber stack overflow") == std::string::npos);
}

TEST_CASE("with the default fiber stack a task recurses as deep as on a thread's default stack") {
  // 3 MiB of frames (12,000 of 256 bytes and more): well within the 8 MiB a Linux thread gets by default, and
  // what a task on a fiber could not do with the 256 KiB stacks weft had before.
  const std::optional<ChildEnd> end = run_in_child(4, [] {
    weft::Pool pool{weft::PoolOptions{.threads = 2}};
    const int depth = 12'000;
    std::atomic<int> got{0};
    pool.post([&got, depth] { got.store(bounded_recurse(depth)); });  // posted: on a worker's fiber
    pool.wait_idle();
    _exit(got.load() == depth ? 0 : kOtherAddress);
  });
  if (!end) return;
  INFO("child " << end->description << "; its stderr:\n" << end->err);
  CHECK(end->exited);
  CHECK(end->code == 0);
}

}  // namespace
