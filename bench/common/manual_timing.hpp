// The timing loop of the benches that time their workload by hand (Google Benchmark's UseManualTime) and check
// its result: each iteration times what it chooses with a Stopwatch, and a wrong result marks the row as an error
// and the program as failed; and the parts of such a bench's main() around its rows.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "weft/pool_options.hpp"

namespace weft::bench {

// Sums the steady-clock time of the calls it times.
class Stopwatch {
 public:
  // Calls f() and adds its duration; returns what f returns.
  template <class F>
  decltype(auto) time(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      std::invoke(f);
      add_since(start);
    } else {
      decltype(auto) result = std::invoke(f);
      add_since(start);
      return result;
    }
  }
  [[nodiscard]] double seconds() const noexcept { return seconds_; }

 private:
  void add_since(std::chrono::steady_clock::time_point start) noexcept {
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  double seconds_ = 0;
};

// Runs the benchmark's iterations: iteration(Stopwatch&) -> bool (true: the result was right) does one, timing
// what it chooses; the iteration's time is the stopwatch's. items_per_iteration feeds items_per_second. A wrong
// result in any iteration sets `failed` (main's exit code) and marks the row with `wrong`. Returns the last
// iteration's seconds.
template <class Iteration>
double time_iterations(benchmark::State& state, std::int64_t items_per_iteration, bool& failed, const char* wrong,
                       Iteration&& iteration) {
  bool ok = true;
  double seconds = 0;
  for (auto _ : state) {
    Stopwatch watch;
    ok = iteration(watch) && ok;
    seconds = watch.seconds();
    state.SetIterationTime(seconds);
  }
  state.SetItemsProcessed(state.iterations() * items_per_iteration);
  if (!ok) {
    failed = true;
    state.SkipWithError(wrong);
  }
  return seconds;
}

// The options of a bench's weft pool: `threads` workers, everything else at its default.
[[nodiscard]] inline weft::PoolOptions pool_options(unsigned threads) {
  weft::PoolOptions options;  // not designated: -Wextra flags the members left out
  options.threads = threads;
  return options;
}

// Google Benchmark's part of main(), once the rows are registered: returns main's exit code, 1 on an argument it
// does not know or if a row computed a wrong result (`failed`).
inline int run_benchmarks(int argc, char** argv, const bool& failed) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return failed ? 1 : 0;
}

}  // namespace weft::bench
