// weft-demo's size sweep: cost per task against graph size, for the chart on log axes. A chain and a set of
// independent nodes (TaskGraph against the flow graph), built and run (one use of a one-shot graph) at sizes
// from 2^8 to 2^20 nodes; each point is the median time over the node count, in ns per node.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/common/graph_workloads_cases.hpp"
#include "bench/common/graph_workloads_weft.hpp"
#include "bench/demo/demo_graph.hpp"
#if WEFT_BENCH_HAVE_TBB
#include "bench/common/graph_workloads_tbb.hpp"
#endif

namespace weft::demo {

struct ScalingPoint {
  std::string shape;    // "chain" or "independent"
  std::string library;  // "weft" or "oneTBB"
  std::size_t nodes = 0;
  double ns_per_node = 0;
};

inline constexpr std::size_t kScalingSizes[] = {std::size_t{1} << 8, std::size_t{1} << 11, std::size_t{1} << 14,
                                                std::size_t{1} << 17, std::size_t{1} << 20};

// The median build+run time of `Workload` made with `nodes` on `side`, in ns per node.
template <class Workload, class Side>
double ns_per_node(const Settings& s, Side& side, std::size_t nodes) {
  const auto make = [&side, nodes](auto& w) { w.emplace(side, nodes); };
  PhaseTimer<Workload, decltype(make)> timer(Phase::total, false, make);
  (void)timer.once();
  // Fewer runs of the big graphs: a 2^20-node point takes tens of ms.
  const int reps = nodes >= (std::size_t{1} << 17) ? (s.reps + 1) / 2 : s.reps * 3;
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) samples.push_back(timer.once() * 1e9 / static_cast<double>(nodes));
  if (!timer.ok()) throw std::runtime_error(std::string(Side::kName) + " computed a wrong result in the sweep");
  return median(std::move(samples))->median;
}

template <class W>
void sweep_side(const Settings& s, typename W::Side& side, std::vector<ScalingPoint>& out) {
  const std::string library(W::Side::kName);
  for (const std::size_t n : kScalingSizes) {
    std::this_thread::sleep_for(kIdleBeforeWake);
    out.push_back({"chain", library, n, ns_per_node<typename W::Chain>(s, side, n)});
    out.push_back({"independent", library, n, ns_per_node<typename W::Independent>(s, side, n)});
  }
}

inline std::vector<ScalingPoint> measure_scaling(const Settings& s, GraphSides& sides) {
  std::vector<ScalingPoint> points;
  if (sides.weft) sweep_side<WeftGraphWorkloads>(s, *sides.weft, points);
#if WEFT_BENCH_HAVE_TBB
  if (sides.tbb) sweep_side<TbbGraphWorkloads>(s, *sides.tbb, points);
#endif
  return points;
}

}  // namespace weft::demo
