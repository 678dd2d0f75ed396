// How weft-demo times the graph workloads of issue 4 (bench/common/graph_workloads*.hpp): for each case, weft
// then oneTBB, seconds apart, so that both figures see much the same load from other processes. Each dependency
// graph gets two rows: build + run (a one-shot use) and run only (a graph built once and run again); the
// one-shot workloads (the parallel_fors, the sin*cos tasks) one row.
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/common/graph_workloads_cases.hpp"
#include "bench/common/graph_workloads_weft.hpp"
#include "bench/demo/demo_floor.hpp"
#include "bench/demo/demo_measure.hpp"
#include "bench/demo/demo_table.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/graph_workloads_tbb.hpp"
#endif

namespace weft::demo {

// The --workload names of the graph cases, in table order (several cases may share one).
inline constexpr std::string_view kGraphFamilies[] = {"graph-chain",     "graph-layered",     "graph-tree",
                                                      "graph-wavefront", "graph-independent", "graph-random",
                                                      "reduce",          "parallel-for",      "sincos"};
static_assert(
    [] {
      for (const GraphCase& c : kGraphCases) {
        bool listed = false;
        for (const std::string_view family : kGraphFamilies) listed = listed || family == c.family;
        if (!listed) return false;
      }
      return true;
    }(),
    "every case's family must be a --workload name");

// Each library's side of the graph workloads. weft's borrows the pool of the pool workloads.
struct GraphSides {
  std::optional<WeftGraphSide> weft;
#if WEFT_BENCH_HAVE_TBB
  std::optional<TbbGraphSide> tbb;
#endif
};

// Timed runs per sample set: the big workloads (the ones shown in ms: 2^20-node graphs, the compute-bound
// loops) get half the runs, which keeps the whole demo near a minute on two idle CPUs; a median of 4 still
// ignores one descheduled run. The small ones (shown in us) get kSmallGraphSamplesPerRep times the runs: a run
// of a few microseconds is one wake-up or one preemption away from doubling, and a median of 7 such samples
// moved by 0.2 of the ratio between demos of the same binary; 35 samples cost well under a millisecond.
inline constexpr int kSmallGraphSamplesPerRep = 5;
[[nodiscard]] inline int big_graph_reps(const Settings& s) { return (s.reps + 1) / 2; }
[[nodiscard]] inline int small_graph_reps(const Settings& s) { return s.reps * kSmallGraphSamplesPerRep; }
[[nodiscard]] inline int graph_reps(const Settings& s, const GraphCase& c) {
  return c.milliseconds ? big_graph_reps(s) : small_graph_reps(s);
}

// What the graph rows measure, for the demo's header.
inline void print_graph_header(const Settings& s) {
  std::printf(
      "  graphs: build+run = build the graph (weft: add_node/add_edge/compile; oneTBB: flow graph nodes and\n"
      "  edges), run it, wait (teardown not timed); run only = run again a graph built once. Each row: the\n"
      "  median of %d runs after a warm-up (small workloads, in us) or of %d (big ones, in ms). weft's\n"
      "  graphs run on the pool above, oneTBB's in an arena of the same size. Layered: each node sums all\n"
      "  nodes of the layer above (width^2 edges per layer); wavefront: each block waits for its left and\n"
      "  top neighbours.\n",
      small_graph_reps(s), big_graph_reps(s));
}

// One warm-up, then the median of graph_reps samples of `phase`, in the case's unit.
template <class Workload, class Make>
Value time_graph_phase(const Settings& s, const GraphCase& c, Phase phase, std::string_view library, const Make& make) {
  PhaseTimer<Workload, Make> timer(phase, c.one_shot, make);
  const double unit = c.milliseconds ? 1e3 : 1e6;
  (void)timer.once();
  std::vector<double> samples;
  for (int i = 0; i < graph_reps(s, c); ++i) samples.push_back(timer.once() * unit);
  if (!timer.ok()) {
    std::string what(library);
    what += " computed a wrong result in ";
    what += c.id;
    throw std::runtime_error(what);
  }
  std::string what(library);
  what += " ";
  what += c.id;
  what += " ";
  what += phase_name(phase);
  what += c.milliseconds ? " ms" : " us";
  return summarise(s, what, std::move(samples));
}

// Medians of the total and run phases of the index-th case on one side (run: nothing for a one-shot case).
struct CaseFigures {
  Value total;
  Value run;
};

template <class W>
CaseFigures measure_case(const Settings& s, typename W::Side& side, std::size_t index) {
  CaseFigures figures;
  std::size_t at = 0;
  for_each_graph_case<W>(side, [&](const GraphCase& c, auto type, const auto& make) {
    using Workload = typename decltype(type)::type;
    if (at++ != index) return;
    std::this_thread::sleep_for(kIdleBeforeWake);  // the other library's workers go to sleep first
    figures.total = time_graph_phase<Workload>(s, c, Phase::total, W::Side::kName, make);
    if (!c.one_shot) figures.run = time_graph_phase<Workload>(s, c, Phase::run, W::Side::kName, make);
  });
  return figures;
}

// Times every case whose index `wants` accepts and appends its rows.
template <class Wants>
void add_graph_rows(const Settings& s, GraphSides& sides, const Wants& wants, std::vector<Row>& rows) {
  for (std::size_t i = 0; i < kGraphCaseCount; ++i) {
    const GraphCase& c = kGraphCases[i];
    if (!wants(i)) continue;
    CaseFigures weft;
    CaseFigures tbb;
    if (sides.weft) weft = measure_case<WeftGraphWorkloads>(s, *sides.weft, i);
#if WEFT_BENCH_HAVE_TBB
    if (sides.tbb) tbb = measure_case<TbbGraphWorkloads>(s, *sides.tbb, i);
#endif
    const Goal goal = c.overhead_bound ? Goal{0.5, false, "<= 0.5x"} : Goal{1.0, false, "<= 1.0x"};
    const std::string unit = c.milliseconds ? "ms" : "us";
    std::string title(c.title);
    if (c.one_shot) {
      rows.push_back(Row{title, unit, weft.total, tbb.total, goal});
      if (!c.overhead_bound) rows.back().floor = graph_floor_ms(s, c.id);
    } else {
      rows.push_back(Row{title + ", build+run", unit, weft.total, tbb.total, goal});
      rows.back().items = static_cast<double>(c.items);
      rows.push_back(Row{title + ", run only", unit, weft.run, tbb.run, goal});
    }
    rows.back().items = static_cast<double>(c.items);
  }
}

}  // namespace weft::demo
