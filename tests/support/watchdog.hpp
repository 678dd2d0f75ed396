// A watchdog for concurrency tests: kills the process with a message naming what hung, so a deadlock or a lost
// wake-up fails at once instead of running into meson's timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "tests/support/platform.hpp"

namespace weft::test {

// Prints every thread's stack to stderr if gdb is installed (it is not a dependency: without it, nothing): a
// hang that shows up once in a thousand runs is then diagnosed from the log it left. Not on Windows (no gdb to
// attach there, nor a shell's `command -v`).
inline void print_thread_stacks() {
#if defined(_WIN32)
  return;
#endif
  if (std::system("command -v gdb >/dev/null 2>&1") != 0) return;
  const std::string command = "timeout 60 gdb -nx -batch -p " + std::to_string(process_id()) +
                              " -ex 'thread apply all bt 30' </dev/null 1>&2 2>/dev/null";
  std::fprintf(stderr, "WATCHDOG: the threads' stacks follow (gdb)\n");
  std::fflush(stderr);
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "WATCHDOG: gdb could not attach\n");
}

// Kills the process with a message if it is still alive after `limit`: a deadlocked test then fails at once,
// saying what hung, instead of running into meson's timeout. Declare it before the Pool it guards, so that it
// also covers the Pool's draining destructor.
class Watchdog {
 public:
  Watchdog(std::string what, std::chrono::seconds limit) : what_(std::move(what)) {
    thread_ = std::thread([this, limit] {
      std::unique_lock lock(mutex_);
      if (!done_changed_.wait_for(lock, limit, [this] { return done_; })) {
        std::fflush(stdout);  // what the test printed so far (doctest writes to stdout)
        std::fprintf(stderr, "\nWATCHDOG: '%s' did not finish within %llds: deadlock or lost wake-up\n", what_.c_str(),
                     static_cast<long long>(limit.count()));
        std::fflush(stderr);
        print_thread_stacks();
        std::_Exit(86);
      }
    });
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  // Replaces what the message names (say, the step now under way, with its seed).
  void describe(std::string what) {
    const std::lock_guard lock(mutex_);
    what_ = std::move(what);
  }

  ~Watchdog() {
    {
      const std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_one();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace weft::test
