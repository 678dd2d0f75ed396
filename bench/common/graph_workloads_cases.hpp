// The list of graph workload cases (sizes, names, goals) and how one phase of a case is timed, shared by
// bench/graph/graph_bench and bench/demo/weft-demo so that both time exactly the same thing.
//
// Phases of a prebuilt-graph case:
//   build: construct the workload (add nodes and edges; weft also compiles).
//   run:   run an already built graph once and wait for it (the graph is built once, then run many times).
//   total: build + run + wait, i.e. what one use of a one-shot graph costs.
// Neither the result check nor the teardown (destroying the graph) is timed, as in the figures published for
// the peers (build + run + wait).
// A one-shot case (the parallel_fors; the sin*cos tasks in a task_group / TaskScope) has nothing to build:
// only "total", which is its run.
#pragma once

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "bench/common/graph_shapes.hpp"
#include "bench/common/graph_workloads.hpp"

namespace weft::bench {

enum class Phase { build, run, total };

// Issue 4 compares the libraries on a 2-thread pool: WEFT_BENCH_THREADS overrides it.
[[nodiscard]] inline unsigned graph_threads() {
  if (const char* text = std::getenv("WEFT_BENCH_THREADS")) {
    const unsigned long value = std::strtoul(text, nullptr, 10);
    if (value > 0 && value <= 4096) return static_cast<unsigned>(value);
  }
  return 2;
}

// WEFT_BENCH_PIN=1 pins weft's workers one per CPU (PoolOptions::pinning); oneTBB's threads stay unpinned.
[[nodiscard]] inline bool graph_pinned() {
  const char* text = std::getenv("WEFT_BENCH_PIN");
  return text != nullptr && text[0] == '1';
}

[[nodiscard]] constexpr std::string_view phase_name(Phase phase) noexcept {
  return phase == Phase::build ? "build" : phase == Phase::run ? "run" : "total";
}

// Makes glibc keep freed memory in the process (no trimming; blocks up to 32 MiB from the heap, not fresh
// mmaps), so that a build's time does not depend on whether the benchmark before it happened to leave
// faulted-in pages behind: without this, the same 2^20-node chain's build time depended on which benchmark ran
// before it (docs/perf-log.md). Blocks over 32 MiB (glibc's ceiling) are still mapped afresh, page faults
// included, on both sides. Call once, before timing.
inline void keep_heap_warm() noexcept {
#ifdef M_TRIM_THRESHOLD
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
#endif
}

struct GraphCase {
  std::string_view id;         // benchmark name stem, e.g. "chain_1k"
  std::string_view family;     // weft-demo's --workload name, e.g. "graph-chain"
  std::string_view title;      // the demo table's row title
  bool one_shot = false;       // nothing to build: only Phase::total, which is the run
  bool overhead_bound = true;  // issue 4's goal: <= 0.5x oneTBB if overhead-bound, else <= 1.0x
  bool milliseconds = true;    // the demo's unit: ms, else us
  std::size_t items = 0;       // nodes, tasks or elements one run goes through (the demo's items per second)
};

// Every case, in the order both programs show them. for_each_graph_case below maps each to its workload.
inline constexpr GraphCase kGraphCases[] = {
    {"chain_1k", "graph-chain", "chain of 1000", false, true, false, kChainShort},
    {"chain_1M", "graph-chain", "chain of 2^20", false, true, true, kChainLong},
    {"layered_10x5", "graph-layered", "layered 10x5", false, true, false, 50},
    {"layered_100x100", "graph-layered", "layered 100x100", false, true, true, 10'000},
    {"tree_20", "graph-tree", "binary tree, depth 20", false, true, true, (std::size_t{1} << kTreeLevels) - 1},
    {"wavefront_1024", "graph-wavefront", "wavefront 1024x1024", false, true, true, (kWavefrontSide * kWavefrontSide)},
    {"independent_1M", "graph-independent", "2^20 independent tasks", false, true, true, kIndependentTasks},
    {"parallel_for_lcg", "parallel-for", "parallel_for 1M x 100 LCG", true, false, true, kLcgInts},
    {"scope_parallel_for_lcg", "parallel-for", "scope.parallel_for 1M x 100 LCG", true, false, true, kLcgInts},
    {"sincos_1000", "sincos", "1000 tasks x 20k sin*cos", true, false, true, kSinCosTasks},
    {"sincos_batches_10", "sincos", "the same, in batches of 10", true, false, true, kSinCosTasks},
    {"random_dag_100k", "graph-random", "random DAG 100k, degree 3", false, true, true, kRandomDagNodes},
    {"reduce_tree_1M", "reduce", "tree reduction 2^20, leaf 64", true, true, false, kReduceValues},
};
inline constexpr std::size_t kGraphCaseCount = sizeof kGraphCases / sizeof kGraphCases[0];

// Calls visit(kGraphCases[i], std::type_identity<Workload>{}, make) for every i, where
// make(std::optional<Workload>&) constructs the workload on `side`. `W` is a side's workload list
// (WeftGraphWorkloads, TbbGraphWorkloads).
template <class W, class Visit>
void for_each_graph_case(typename W::Side& side, Visit&& visit) {
  using std::type_identity;
  auto& s = side;
  const GraphCase* c = kGraphCases;
  visit(c[0], type_identity<typename W::Chain>{}, [&s](auto& w) { w.emplace(s, kChainShort); });
  visit(c[1], type_identity<typename W::Chain>{}, [&s](auto& w) { w.emplace(s, kChainLong); });
  visit(c[2], type_identity<typename W::Layered>{}, [&s](auto& w) { w.emplace(s, kLayersSmall); });
  visit(c[3], type_identity<typename W::Layered>{}, [&s](auto& w) { w.emplace(s, kLayersLarge); });
  visit(c[4], type_identity<typename W::Tree>{}, [&s](auto& w) { w.emplace(s, kTreeLevels); });
  visit(c[5], type_identity<typename W::Wavefront>{}, [&s](auto& w) { w.emplace(s, kWavefrontSide); });
  visit(c[6], type_identity<typename W::Independent>{}, [&s](auto& w) { w.emplace(s, kIndependentTasks); });
  visit(c[7], type_identity<typename W::ParallelFor>{}, [&s](auto& w) { w.emplace(s); });
  visit(c[8], type_identity<typename W::ScopeParallelFor>{}, [&s](auto& w) { w.emplace(s); });
  visit(c[9], type_identity<typename W::SinCos>{}, [&s](auto& w) { w.emplace(s); });
  visit(c[10], type_identity<typename W::SinCosBatches>{}, [&s](auto& w) { w.emplace(s); });
  visit(c[11], type_identity<typename W::RandomDag>{}, [&s](auto& w) { w.emplace(s); });
  visit(c[12], type_identity<typename W::Reduce>{}, [&s](auto& w) { w.emplace(s); });
  static_assert(kGraphCaseCount == 13, "every case needs its line above");
}

// Times one phase of one workload, one sample per once() call. For Phase::run (and one-shot cases) the
// workload is built once, in the constructor; Phase::build and ::total build a fresh one for every sample.
template <class Workload, class Make>
class PhaseTimer {
 public:
  PhaseTimer(Phase phase, bool one_shot, Make make) : phase_(one_shot ? Phase::run : phase), make_(std::move(make)) {
    if (phase_ == Phase::run) make_(workload_);
  }

  // One sample, in seconds.
  double once() {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    if (phase_ != Phase::run) make_(workload_);
    if (phase_ != Phase::build) workload_->run();
    const auto timed = Clock::now() - start;
    if (phase_ != Phase::build) ok_ = workload_->check() && ok_;
    if (phase_ != Phase::run) workload_.reset();
    return std::chrono::duration<double>(timed).count();
  }

  // False once any run left a wrong result behind.
  [[nodiscard]] bool ok() const noexcept { return ok_; }

 private:
  Phase phase_;
  Make make_;
  std::optional<Workload> workload_;
  bool ok_ = true;
};

}  // namespace weft::bench
