// A loaded machine on demand: WEFT_BENCH_LOAD=n starts n CPU-bound processes beside the benchmark for as long as
// it runs, so that every row (weft's and oneTBB's alike, interleaved in one process) is measured on a machine
// whose CPUs other work also wants, the normal case for a user. Unset or 0: nothing is started.
#pragma once

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace weft::bench {

class BackgroundLoad {
 public:
  // Starts WEFT_BENCH_LOAD busy processes (each dies with this process too, should it be killed).
  BackgroundLoad() {
    const char* text = std::getenv("WEFT_BENCH_LOAD");
    const long count = text != nullptr ? std::strtol(text, nullptr, 10) : 0;
    for (long i = 0; i < count; ++i) {
      const pid_t child = ::fork();
      if (child < 0) {
        std::perror("WEFT_BENCH_LOAD: fork");
        break;
      }
      if (child == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;  // a CPU-bound neighbour: never sleeps, never yields
      }
      children_.push_back(child);
    }
  }
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;
  ~BackgroundLoad() {
    for (const pid_t child : children_) ::kill(child, SIGKILL);
    for (const pid_t child : children_) ::waitpid(child, nullptr, 0);
  }

  // For the benchmark's context line: how many busy processes run beside it.
  [[nodiscard]] std::string describe() const { return std::to_string(children_.size()) + " CPU-bound processes"; }

 private:
  std::vector<pid_t> children_;
};

}  // namespace weft::bench
