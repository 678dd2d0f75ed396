// Peak memory of one library's 1M no-op case. Each measurement re-runs this very executable
// (/proc/<pid>/exe) as a child with `--peak-rss-child=<side> <threads>`: a fresh process in which only that
// library has run, so neither the other library nor earlier workloads count towards its high-water mark.
// The child reports its RSS before creating the pool (the baseline: code and libraries) and its VmHWM after
// the workload; both programs that use this call run_peak_rss_child_if_asked() first thing in main().
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "bench/common/pool_workloads.hpp"
#include "bench/common/weft_side.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/tbb_side.hpp"
#endif

namespace weft::bench {

struct PeakRss {
  long baseline_kib = 0;  // VmRSS before the pool exists
  long peak_kib = 0;      // VmHWM after the workload: the whole process's high-water mark
  [[nodiscard]] long workload_kib() const noexcept { return peak_kib - baseline_kib; }
};

// A "<field>:   123 kB" line of /proc/self/status, in KiB; -1 if absent.
[[nodiscard]] inline long status_kib(const char* field) {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return -1;
  long value = -1;
  char line[256];
  const std::size_t length = std::strlen(field);
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::strncmp(line, field, length) == 0 && line[length] == ':') {
      value = std::strtol(line + length + 1, nullptr, 10);
      break;
    }
  }
  std::fclose(status);
  return value;
}

// The child's body: baseline, one 1M no-op burst on a fresh side, high-water mark; prints "baseline peak".
template <PoolSide S>
int peak_rss_child(unsigned threads) {
  const long baseline = status_kib("VmRSS");
  {
    S side(threads);
    side.noop_burst(kNoopTasks);
  }
  std::printf("%ld %ld\n", baseline, status_kib("VmHWM"));
  return baseline > 0 ? 0 : 1;
}

// If argv asks for the child mode, runs it and returns its exit code; else returns nothing.
[[nodiscard]] inline std::optional<int> run_peak_rss_child_if_asked(int argc, char** argv) {
  constexpr std::string_view flag = "--peak-rss-child=";
  if (argc < 3 || std::string_view(argv[1]).substr(0, flag.size()) != flag) return std::nullopt;
  const std::string_view side = std::string_view(argv[1]).substr(flag.size());
  const auto threads = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10));
  if (side == WeftSide::kName) return peak_rss_child<WeftSide>(threads);
#if WEFT_BENCH_HAVE_TBB
  if (side == TbbSide::kName) return peak_rss_child<TbbSide>(threads);
#endif
  std::fprintf(stderr, "--peak-rss-child: unknown side '%.*s'\n", static_cast<int>(side.size()), side.data());
  return 2;
}

// Runs this very executable again as a child with `arguments` (the caller's own fixed words: digits, names
// and flags without shell metacharacters, so no quoting is needed) and returns the first line it printed;
// nothing if it could not start or exited non-zero.
[[nodiscard]] inline std::optional<std::string> run_self(const std::string& arguments) {
  // popen runs a shell, whose /proc/self/exe is the shell itself: name this process by its pid instead.
  const std::string command = "/proc/" + std::to_string(getpid()) + "/exe " + arguments;
  std::FILE* child = popen(command.c_str(), "r");
  if (child == nullptr) return std::nullopt;
  char line[512] = {};
  const bool got = std::fgets(line, sizeof line, child) != nullptr;
  while (std::fgetc(child) != EOF) {
  }
  const int status = pclose(child);
  if (!got || status != 0) return std::nullopt;
  return std::string(line);
}

// Runs one child for `side` (a PoolSide's kName) with `threads` workers; nothing if the child failed.
[[nodiscard]] inline std::optional<PeakRss> measure_peak_rss(std::string_view side, unsigned threads) {
  const auto output = run_self("--peak-rss-child=" + std::string(side) + " " + std::to_string(threads));
  if (!output) return std::nullopt;
  PeakRss result;
  if (std::sscanf(output->c_str(), "%ld %ld", &result.baseline_kib, &result.peak_kib) != 2) return std::nullopt;
  return result;
}

}  // namespace weft::bench
