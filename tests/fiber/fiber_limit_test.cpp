// More waiting tasks than PoolOptions::max_fibers: a wait at the bound still suspends, on a stack mapped past the
// bound for it and unmapped when it ends, and PoolStats counts that overshoot. Before, a wait at the bound ran
// other tasks on its own stack: waiters queued before the tasks that release them nested on one another until
// every worker was stuck, and the program hung without a word.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#if !defined(_WIN32)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"
#include "weft/weft.hpp"

namespace {

using weft::test::patience;
using weft::test::Watchdog;

struct Scenario {
  std::size_t waiters;
  std::size_t max_fibers;
};

// `waiters` tasks each wait on their own Event, all posted before the `waiters` tasks that signal them. Every
// waiter is queued ahead of every signaller, so the signallers run only once each waiter has suspended (or been
// set aside): with a stack per waiter, more than max_fibers stacks are needed at once.
void waiters_before_signallers(const Scenario& s, unsigned threads) {
  const std::string what = std::to_string(s.waiters) +
                           " waiters before their signallers, max_fibers = " + std::to_string(s.max_fibers) + ", " +
                           std::to_string(threads) + " workers";
  INFO(what);
  const Watchdog watchdog(what, patience(120));
  std::vector<std::unique_ptr<weft::Event>> events;
  events.reserve(s.waiters);
  for (std::size_t i = 0; i < s.waiters; ++i) events.push_back(std::make_unique<weft::Event>());
  std::atomic<std::size_t> released{0};
  weft::Pool pool{weft::PoolOptions{.threads = threads, .max_fibers = s.max_fibers}};
  for (std::size_t i = 0; i < s.waiters; ++i) {
    pool.post([&, i] {
      events[i]->wait();
      released.fetch_add(1, std::memory_order_relaxed);
    });
  }
  for (std::size_t i = 0; i < s.waiters; ++i) pool.post([&, i] { events[i]->signal(); });
  pool.wait_idle();
  CHECK(released.load() == s.waiters);
  const weft::PoolStats stats = pool.stats();
  MESSAGE(what << ": peak " << stats.fiber_stacks_peak << " stacks, overshoot " << stats.fiber_overshoot);
  CHECK(stats.suspended == 0);
  CHECK(stats.errors == 0);
  // Past the bound: some waits suspended on stacks beyond max_fibers, counted as they were mapped, and the peak
  // shows how far (every overshoot stack is unmapped again when its task is done).
  CHECK(stats.fiber_overshoot > 0);
  CHECK(stats.fiber_stacks_peak > s.max_fibers);
  CHECK(stats.fiber_stacks_peak <= s.max_fibers + stats.fiber_overshoot);
  // Back under the bound once the waits are over (a spare fiber per worker aside, made for a wait that then
  // found its event signalled).
  CHECK(stats.fiber_stacks <= s.max_fibers + threads);
  CHECK(stats.fiber_waits_unsuspended == 0);
}

TEST_CASE("more waiters than max_fibers, queued before their signallers, all finish and the overshoot is counted") {
  // The sizes that hung: 20,000 with the default bound, 2,000 with 16, 200 with 2. Where every stack's mapping
  // costs many times its native price (reduced_runs(): TSan, which also gives each fiber state and shadow mappings
  // of its own, so that 20,000 fibers alive at once exhaust the process's mappings inside its runtime, "failed to
  // allocate"; ASan, whose shadow each stack has; or an emulator) the first two are 600 waiters against bounds of 300
  // and 16: past the bound by as large a share, so the same overshoot path runs, at a third of the mappings.
  const bool reduced = weft::test::reduced_runs();
  const Scenario scenarios[] = {
      reduced ? Scenario{600, 300} : Scenario{20'000, weft::PoolOptions{}.max_fibers},
      reduced ? Scenario{600, 16} : Scenario{2'000, 16},
      {200, 2},
  };
  for (const Scenario& s : scenarios) {
    for (const unsigned threads : {1u, 2u}) waiters_before_signallers(s, threads);
  }
}

TEST_CASE("below max_fibers nothing overshoots") {
  const Watchdog watchdog("waiters below the bound", patience(60));
  std::vector<std::unique_ptr<weft::Event>> events;
  for (int i = 0; i < 50; ++i) events.push_back(std::make_unique<weft::Event>());
  weft::Pool pool{weft::PoolOptions{.threads = 2, .max_fibers = 100}};
  for (int i = 0; i < 50; ++i) pool.post([&, i] { events[static_cast<std::size_t>(i)]->wait(); });
  for (int i = 0; i < 50; ++i) pool.post([&, i] { events[static_cast<std::size_t>(i)]->signal(); });
  pool.wait_idle();
  const weft::PoolStats stats = pool.stats();
  CHECK(stats.fiber_overshoot == 0);
  CHECK(stats.fiber_stacks_peak <= 100);
  CHECK(stats.fiber_waits_unsuspended == 0);
}

// When no stack can be had even past the bound (here the address space is limited with RLIMIT_AS, which the
// sanitizers' shadow memory cannot live with, and qemu-user ignores: it would limit the emulator's own), a wait
// falls back to running other tasks on its stack: counted, and said once on stderr, naming max_fibers. Run in a
// forked child, which reports through its exit code. Not on Windows: it has neither RLIMIT_AS nor fork (a job
// object's memory limit would be the counterpart; not written).
#if !defined(_WIN32)
TEST_CASE("a wait that finds no stack at all is counted and reported, naming max_fibers" *
          doctest::skip(weft::test::kAddressSanitizer || weft::test::kThreadSanitizer || weft::test::emulated())) {
  int pipe_ends[2];
  REQUIRE(pipe(pipe_ends) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipe_ends[0]);
    if (dup2(pipe_ends[1], STDERR_FILENO) < 0) _exit(10);
    alarm(120);  // the child's watchdog
    weft::Pool pool{weft::PoolOptions{.threads = 1, .fiber_stack_size = 1024 * 1024, .max_fibers = 2}};
    // Room for the address space in use now and 8 MiB more: a few 1 MiB stacks, then the OS refuses.
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (8 << 20);
    const rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(11);
    weft::Event go;
    std::atomic<int> released{0};
    constexpr int kTasks = 40;
    for (int i = 0; i < kTasks; ++i) {
      pool.post([&] {
        go.wait();
        released.fetch_add(1);
      });
    }
    while (pool.stats().fiber_waits_unsuspended == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    go.signal();  // the waits that fell back nest on one another, and all end once the event is set
    pool.wait_idle();
    const weft::PoolStats stats = pool.stats();
    _exit(released.load() == kTasks && stats.fiber_waits_unsuspended > 0 ? 0 : 12);
  }
  close(pipe_ends[1]);
  std::string err;
  char buffer[4096];
  for (ssize_t got; (got = read(pipe_ends[0], buffer, sizeof buffer)) > 0;) {
    err.append(buffer, static_cast<std::size_t>(got));
  }
  close(pipe_ends[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << "; its stderr:\n" << err);
  CHECK(WIFEXITED(status));
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(err.find("a waiting task could not suspend") != std::string::npos);
  CHECK(err.find("PoolOptions::max_fibers = 2") != std::string::npos);
}
#endif

}  // namespace
