// weft-demo: the README's main job. Runs the pool workloads of issue 3 (bench/common/pool_workloads.hpp), the
// graph workloads of issue 4 (bench/common/graph_workloads*.hpp) and the pipeline workloads
// (bench/common/pipeline_workloads*.hpp) on weft and on oneTBB, several times each, and prints each library's
// median, the ratio weft/oneTBB and whether the goal is met. Needs only weft and (optionally) oneTBB:
// without oneTBB at build time it shows weft alone. Exits 0 whether or not the goals are met; 1 on bad
// arguments or a wrong result.
//
//   weft-demo [--reps N] [--threads N] [--only weft|oneTBB] [--workload NAME] [--verbose]
//   NAME: pool (noop, fib, submit, wake, memory), graph (graph-chain, graph-layered, graph-tree,
//   graph-wavefront, graph-independent, parallel-for, sincos) or pipeline (pipeline-tiny, pipeline-spin,
//   pipeline-linear, pipeline-memory), or one of those.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/common/peak_rss.hpp"
#include "bench/common/pool_workloads.hpp"
#include "bench/demo/demo_graph.hpp"
#include "bench/demo/demo_measure.hpp"
#include "bench/demo/demo_pipeline.hpp"
#include "bench/demo/demo_table.hpp"

namespace {

using namespace weft::demo;

constexpr std::string_view kUsage =
    "usage: weft-demo [--reps N] [--threads N] [--only weft|oneTBB] [--workload NAME] [--verbose]\n"
    "  NAME: pool, noop, fib, submit, wake, memory, graph, graph-chain, graph-layered, graph-tree,\n"
    "  graph-wavefront, graph-independent, parallel-for, sincos, pipeline, pipeline-tiny, pipeline-spin,\n"
    "  pipeline-linear, pipeline-memory";

constexpr std::string_view kPoolWorkloads[] = {"noop", "fib", "submit", "wake", "memory"};

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

struct Options {
  Settings settings;
  std::string only;      // empty: both libraries
  std::string workload;  // empty: all of them; "pool", "graph" or "pipeline": that group's
  [[nodiscard]] bool wants(std::string_view name) const {
    if (workload.empty() || workload == name) return true;
    if (listed(kPoolWorkloads, name)) return workload == "pool";
    if (listed(kPipelineFamilies, name)) return workload == "pipeline";
    return workload == "graph";
  }
};

int parse_int(std::string_view flag, const char* text, int low, int high) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high)
    throw std::invalid_argument(std::string(flag) + " " + text + ": must be an integer in " + std::to_string(low) +
                                ".." + std::to_string(high));
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options o;
  o.settings.threads = weft::bench::default_threads();
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(arg) + " needs a value (" + std::string(kUsage) + ")");
      return argv[++i];
    };
    if (arg == "--reps") {
      o.settings.reps = parse_int(arg, value(), 1, 1000);
    } else if (arg == "--threads") {
      o.settings.threads = static_cast<unsigned>(parse_int(arg, value(), 1, 4096));
    } else if (arg == "--only") {
      o.only = value();
      if (o.only != "weft" && o.only != "oneTBB") throw std::invalid_argument("--only " + o.only + ": weft or oneTBB");
#if !WEFT_BENCH_HAVE_TBB
      if (o.only == "oneTBB") throw std::invalid_argument("--only oneTBB: this weft-demo was built without oneTBB");
#endif
    } else if (arg == "--workload") {
      o.workload = value();
      if (o.workload != "pool" && o.workload != "graph" && o.workload != "pipeline" &&
          !listed(kPoolWorkloads, o.workload) && !listed(kGraphFamilies, o.workload) &&
          !listed(kPipelineFamilies, o.workload)) {
        std::string message = "--workload ";
        message += o.workload;
        message += ": not a workload (";
        message += kUsage;
        message += ")";
        throw std::invalid_argument(message);
      }
    } else if (arg == "--verbose") {
      o.settings.verbose = true;
    } else {
      throw std::invalid_argument("unknown argument " + std::string(arg) + " (" + std::string(kUsage) + ")");
    }
  }
  return o;
}

std::string load_average() {
  double loads[3] = {0, 0, 0};
  if (getloadavg(loads, 3) != 3) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", loads[0], loads[1], loads[2]);
  return text;
}

void print_header(const Options& o, std::uint64_t spin_steps) {
  const Settings& s = o.settings;
  std::printf("weft-demo: weft against oneTBB on the workloads of issues 3 (Pool) and 4 (TaskGraph, TaskScope)\n"
              "  and on pipelines (TaskScope source, stage, sink against parallel_pipeline)\n");
#if WEFT_BENCH_HAVE_TBB
  std::printf("  versions: weft %s, oneTBB %s (run time; headers %s)\n", WEFT_VERSION_STRING,
              std::string(tbb_runtime_version()).c_str(), std::string(tbb_header_version()).c_str());
#else
  std::printf("  versions: weft %s; oneTBB was not found at build time: weft only\n", WEFT_VERSION_STRING);
#endif
  std::printf("  CPUs: %u usable by this process (hardware_concurrency %u); threads per library: %u\n"
              "  (weft: that many workers, the calling thread waits; oneTBB: an arena of that many slots, one of\n"
              "  them taken by the calling thread)\n",
              weft::os::usable_cpu_count(), std::thread::hardware_concurrency(), s.threads);
  std::printf("  load average at start: %s (other processes share the CPUs; figures vary with the load)\n",
              load_average().c_str());
  std::printf("  pools created once, before timing; times: median of %d runs after a warm-up (submit-and-wait:\n"
              "  %d runs); wake-up: median of %d samples, each after %lld ms idle; memory: median of %d fresh\n"
              "  child processes\n",
              s.reps, s.reps * kRoundTripBatchesPerRep, s.reps * kWakeSamplesPerRep,
              static_cast<long long>(weft::bench::kIdleBeforeWake.count()), kMemoryRuns);
  print_graph_header(s);
  print_pipeline_header(s, spin_steps);
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto code = weft::bench::run_peak_rss_child_if_asked(argc, argv)) return *code;
  if (const auto code = weft::bench::run_pipeline_memory_child_if_asked(argc, argv)) return *code;
  try {
    const Options o = parse(argc, argv);
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t spin_steps = weft::bench::spin_steps_for(weft::bench::kPipelineSpin);
    print_header(o, spin_steps);
    Sides sides;
    if (o.only.empty() || o.only == "weft") sides.weft.emplace(o.settings.threads);
#if WEFT_BENCH_HAVE_TBB
    if (o.only.empty() || o.only == "oneTBB") sides.tbb.emplace(o.settings.threads);
#endif
    const auto run = [&](const char* name, Pair (*measure)(const Settings&, Sides&)) -> Pair {
      if (!o.wants(name)) return {};
      std::printf("running %s ...\n", name);
      std::fflush(stdout);
      return measure(o.settings, sides);
    };
    const Pair noop = run("noop", measure_noop);
    const Pair fib = run("fib", measure_fib);
    const Pair submit = run("submit", measure_submit);
    const Pair wake = run("wake", measure_wake);
    const Pair memory = run("memory", measure_memory);
    std::vector<Row> rows = {
        {"1M no-op tasks, post + wait", "ms", noop.weft, noop.tbb, Goal{0.5, false, "<= 0.5x"}},
        {"fib(28), spawn + wait in tasks", "ms", fib.weft, fib.tbb, Goal{0.5, false, "<= 0.5x"}},
        {"1000 x (submit one, wait)", "us", submit.weft, submit.tbb, Goal{1.0, false, "<= 1.0x"}},
        {"wake-up from idle, post -> start", "us", wake.weft, wake.tbb, Goal{.report_only = true}},
        {"1M no-op: peak RSS over baseline", "MiB", memory.weft, memory.tbb, Goal{1.0, true, "< 1.0x"}},
    };
    keep_heap_warm();  // from here on: see graph_workloads_cases.hpp
    GraphSides graph_sides;
    if (sides.weft) graph_sides.weft.emplace(sides.weft->pool());
#if WEFT_BENCH_HAVE_TBB
    if (sides.tbb) graph_sides.tbb.emplace(o.settings.threads);
#endif
    const auto wants = [&](std::string_view family) { return o.wants(family); };
    add_graph_rows(o.settings, graph_sides, wants, rows);
    add_pipeline_rows(o.settings, graph_sides, spin_steps, wants, rows);
    const GoalCount goals = print_table(rows);
    std::printf("\nGoals: %d met, %d not met. Load average at the end: %s. Took %.1f s.\n", goals.met, goals.missed,
                load_average().c_str(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "weft-demo: %s\n", error.what());
    return 1;
  }
}
