// The hardware floor of weft-demo's compute-bound rows: the same work run serially on this thread, divided by
// the threads a side. How a row at the floor counts: kFloorSlack in demo_table.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "bench/common/graph_workloads.hpp"
#include "bench/common/pipeline_workloads.hpp"
#include "bench/demo/demo_measure.hpp"

namespace weft::demo {

// The median of `reps` serial runs of `run`, in ms.
template <class Run>
[[nodiscard]] double serial_ms(int reps, Run&& run) {
  std::vector<double> samples;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return median(std::move(samples))->median;
}

// The floor of the graph case `id` in ms (serial time / threads), for the compute-bound cases; else nothing.
[[nodiscard]] inline std::optional<double> graph_floor_ms(const Settings& s, std::string_view id) {
  using namespace weft::bench;
  const int reps = (s.reps + 1) / 2;
  if (id == "parallel_for_lcg" || id == "scope_parallel_for_lcg") {
    LcgData data;
    const double ms = serial_ms(reps, [&] {
      for (std::size_t i = 0; i < data.size(); ++i) data.visit(i);
    });
    return ms / s.threads;
  }
  if (id == "sincos_1000" || id == "sincos_batches_10") {
    SinCosData data;
    const double ms = serial_ms(reps, [&] {
      for (std::size_t i = 0; i < data.size(); ++i) data.visit(i);
    });
    return ms / s.threads;
  }
  return std::nullopt;
}

// The floor of a spin pipeline in ms: its parallel stages' work (2 stages x `steps` LCG steps per item), timed
// serially on a twentieth of the items and scaled up, over the threads. The serial stages' tiny work is left out.
[[nodiscard]] inline double pipeline_floor_ms(const Settings& s, std::size_t items, std::uint64_t steps) {
  using namespace weft::bench;
  constexpr std::size_t kPart = 20;
  std::uint64_t sink = 0;
  const double ms = serial_ms((s.reps + 1) / 2, [&] {
    for (std::size_t i = 0; i < items / kPart; ++i) sink += lcg_steps(lcg_steps(i, steps), steps);
  });
  __asm__ volatile("" : : "r"(sink));  // the work must be done
  return ms * kPart / s.threads;
}

}  // namespace weft::demo
