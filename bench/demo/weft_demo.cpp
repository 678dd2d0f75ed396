// weft-demo: the README's main job, the head-to-head suite's short form. Runs the pool workloads of issue 3
// (bench/common/pool_workloads.hpp) on weft, oneTBB and the two baselines (bench/common/baseline_sides.hpp),
// the scheduler micro-benchmarks (demo_micro.hpp), the waits (demo_waits.hpp: tasks waiting on Event and
// WaitGroup), the graph workloads (bench/common/graph_workloads*.hpp, graph_shapes.hpp) and the pipelines
// (bench/common/pipeline_workloads*.hpp) on weft and oneTBB, several times each; prints each library's median
// and spread, the ratio weft/oneTBB and whether the goal is met; sweeps graph sizes (demo_scaling.hpp);
// writes it all to a folder (demo_output.hpp) for bench/demo/charts.py. Needs only weft
// and (optionally) oneTBB: without oneTBB at build time it shows weft and the baselines. Exits 0 whether or not
// the goals are met; 1 on bad arguments or a wrong result.
//
//   weft-demo [--full] [--reps N] [--threads N] [--only weft|oneTBB] [--workload NAME] [--out DIR] [--verbose]
//   NAME: pool (noop, fib, submit, wake, memory), micro (spawn, steal, small-function, mpmc), waits (ping-pong,
//   fan-out, wait-latency), graph (graph-chain, graph-layered, graph-tree, graph-wavefront, graph-independent,
//   graph-random, reduce, parallel-for, sincos), pipeline (pipeline-tiny, pipeline-spin, pipeline-linear,
//   pipeline-memory), scaling, or one of those.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/common/peak_rss.hpp"
#include "bench/common/pool_workloads.hpp"
#include "bench/demo/demo_containers.hpp"
#include "bench/demo/demo_graph.hpp"
#include "bench/demo/demo_measure.hpp"
#include "bench/demo/demo_micro.hpp"
#include "bench/demo/demo_output.hpp"
#include "bench/demo/demo_pipeline.hpp"
#include "bench/demo/demo_scaling.hpp"
#include "bench/demo/demo_table.hpp"
#include "bench/demo/demo_waits.hpp"
#include "weft/version.hpp"  // WEFT_VERSION_STRING

namespace {

using namespace weft::demo;

constexpr std::string_view kUsage =
    "usage: weft-demo [--full] [--reps N] [--threads N] [--only weft|oneTBB] [--workload NAME] [--out DIR]\n"
    "                 [--verbose]\n"
    "  --full: every row with more runs (default: the short mode, about two minutes on two cores)\n"
    "  NAME: pool, noop, fib, submit, wake, memory, micro, spawn, steal, small-function, mpmc, waits,\n"
    "  ping-pong, fan-out, wait-latency, graph, graph-chain, graph-layered, graph-tree, graph-wavefront,\n"
    "  graph-independent, graph-random, reduce, parallel-for, sincos, pipeline, pipeline-tiny, pipeline-spin,\n"
    "  pipeline-linear, pipeline-memory, scaling\n"
    "  --out DIR: where results.csv, results.json and scaling.csv go (default: weft-demo-results)";

constexpr std::string_view kPoolWorkloads[] = {"noop", "fib", "submit", "wake", "memory"};
constexpr std::string_view kMicroWorkloads[] = {"spawn", "steal", "small-function", "mpmc"};
constexpr int kShortReps = 7;
constexpr int kFullReps = 15;

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

struct Options {
  Settings settings;
  std::string only;      // empty: both libraries
  std::string workload;  // empty: all of them; "pool", "micro", "waits", "graph" or "pipeline": that group's
  std::filesystem::path out = "weft-demo-results";
  bool reps_given = false;
  [[nodiscard]] bool wants(std::string_view name) const {
    if (workload.empty() || workload == name) return true;
    if (listed(kPoolWorkloads, name)) return workload == "pool";
    if (listed(kMicroWorkloads, name)) return workload == "micro";
    if (listed(kWaitWorkloads, name)) return workload == "waits";
    if (name == "scaling") return false;
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
      o.reps_given = true;
    } else if (arg == "--full") {
      o.settings.full = true;
    } else if (arg == "--out") {
      o.out = value();
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
      if (o.workload != "pool" && o.workload != "graph" && o.workload != "pipeline" && o.workload != "micro" &&
          o.workload != "waits" && o.workload != "scaling" && !listed(kMicroWorkloads, o.workload) &&
          !listed(kWaitWorkloads, o.workload) && !listed(kPoolWorkloads, o.workload) &&
          !listed(kGraphFamilies, o.workload) && !listed(kPipelineFamilies, o.workload)) {
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
  if (!o.reps_given) o.settings.reps = o.settings.full ? kFullReps : kShortReps;
  return o;
}

std::string load_average() {
  double loads[3] = {0, 0, 0};
  if (getloadavg(loads, 3) != 3) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", loads[0], loads[1], loads[2]);
  return text;
}

std::string compiler_text() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "g++ " __VERSION__;
#else
  return "unknown compiler";
#endif
}

std::string now_text() {
  const std::time_t now = std::time(nullptr);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %z", std::localtime(&now));
  return text;
}

std::string host_name() {
  char name[256] = "unknown";
  (void)gethostname(name, sizeof name - 1);
  return name;
}

void print_header(const Options& o, std::uint64_t spin_steps) {
  const Settings& s = o.settings;
  std::printf(
      "weft-demo (%s mode): weft against oneTBB and two baselines (a mutex + condition-variable pool\n"
      "  with futures; a thread per task, std::async) on the workloads of issues 3 (Pool) and 4\n"
      "  (TaskGraph, TaskScope), scheduler micro-benchmarks, and pipelines\n",
      s.full ? "full" : "short");
  std::printf("  build: %s, %s; the library's own flags: release (see meson.build); %s\n", compiler_text().c_str(),
#ifdef __OPTIMIZE__
              "optimised",
#else
              "NOT optimised",
#endif
              now_text().c_str());
  std::printf(
      "  baselines: std::async runs 1/%zu of the no-op burst and fib(%d) instead of fib(%d); its times are\n"
      "  scaled up by the task count. A wait in the mutex pool runs its task itself if no worker has\n"
      "  started it.\n",
      weft::bench::AsyncSide::kNoopDivisor, weft::bench::AsyncSide::kFibN, weft::bench::kFibN);
#if WEFT_BENCH_HAVE_TBB
  std::printf("  versions: weft %s, oneTBB %s (run time; headers %s)\n", WEFT_VERSION_STRING,
              std::string(tbb_runtime_version()).c_str(), std::string(tbb_header_version()).c_str());
#else
  std::printf("  versions: weft %s; oneTBB was not found at build time: weft only\n", WEFT_VERSION_STRING);
#endif
  std::printf(
      "  CPUs: %u usable by this process (hardware_concurrency %u); threads per library: %u\n"
      "  (weft: that many workers, the calling thread waits; oneTBB: an arena of that many slots, one of\n"
      "  them taken by the calling thread)\n",
      weft::os::usable_cpu_count(), std::thread::hardware_concurrency(), s.threads);
  std::printf("  load average at start: %s (other processes share the CPUs; figures vary with the load)\n",
              load_average().c_str());
  std::printf(
      "  pools created once, before timing; times: median of %d runs after a warm-up (submit-and-wait:\n"
      "  %d runs); wake-up: median of %d samples, each after %lld ms idle; memory: median of %d fresh\n"
      "  child processes\n",
      s.reps, s.reps * kRoundTripBatchesPerRep, s.reps * kWakeSamplesPerRep,
      static_cast<long long>(weft::bench::kIdleBeforeWake.count()), kMemoryRuns);
  print_waits_header(s);
  print_graph_header(s);
  print_pipeline_header(s, spin_steps);
  std::printf(
      "  micro: spawn + run on one worker and steal + run, ns per task over a burst of %zu no-ops (libfork\n"
      "  publishes a ~%.0f ns spawn + run floor: a reference line, not a goal); closures (small_function\n"
      "  against std::function, %zu made, moved, called) and the MPMC queue (against\n"
      "  boost::lockfree::queue, %u threads each pushing and popping %zu times), taking turns with their\n"
      "  peer. A value reads median ±h%%, h being half the interquartile range of the runs over the median.\n",
      kMicroTasks, kLibforkSpawnFloorNs, kClosureOps, kQueueThreads, kQueuePairs);
}

}  // namespace

int main(int argc, char** argv) {
  if (const auto code = weft::bench::run_peak_rss_child_if_asked(argc, argv)) return *code;
  if (const auto code = weft::bench::run_pipeline_memory_child_if_asked(argc, argv)) return *code;
  try {
    const Options o = parse(argc, argv);
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t spin_steps = weft::bench::spin_steps_for(weft::bench::kPipelineSpin);
    const std::string load_start = load_average();
    print_header(o, spin_steps);
    Sides sides;
    if (o.only.empty() || o.only == "weft") sides.weft.emplace(o.settings.threads);
#if WEFT_BENCH_HAVE_TBB
    if (o.only.empty() || o.only == "oneTBB") sides.tbb.emplace(o.settings.threads);
#endif
    if (o.only.empty()) {
      sides.queue_pool.emplace(o.settings.threads);
      sides.async.emplace(o.settings.threads);
    }
    std::vector<Row> rows;
    std::vector<ScalingPoint> scaling;
    GraphSides graph_sides;
    const auto wants = [&](std::string_view family) { return o.wants(family); };

    // The steps in order, each with a weight: its seconds in a short run on two loaded cores, for
    // the progress line's estimate of the time left (scaled by how fast the steps so far went).
    struct Step {
      std::string name;
      double weight;
      std::function<void()> run;
    };
    std::vector<Step> steps;
    const auto pool_step = [&](const char* name, double weight, std::function<void()> run) {
      if (o.wants(name)) steps.push_back({name, weight, std::move(run)});
    };
    // A pool row: weft, oneTBB and the two baselines on one workload; `items`: tasks per run.
    const auto pool_row = [&](const char* name, double weight, const char* title, const char* unit, Goal goal,
                              std::optional<double> items, Pair (*measure)(const Settings&, Sides&)) {
      pool_step(name, weight, [&, title, unit, goal, items, measure] {
        const Pair p = measure(o.settings, sides);
        rows.push_back({title, unit, p.weft, p.tbb, goal, p.queue_pool, p.async});
        rows.back().items = items;
      });
    };
    pool_row("noop", 7, "1M no-op tasks, post + wait", "ms", Goal{0.5, false, "<= 0.5x"},
             static_cast<double>(kNoopTasks), measure_noop);
    pool_row("fib", 4, "fib(28), spawn + wait in tasks", "ms", Goal{0.5, false, "<= 0.5x"}, std::nullopt, measure_fib);
    pool_row("submit", 1, "1000 x (submit one, wait)", "us", Goal{1.0, false, "<= 1.0x"},
             static_cast<double>(kRoundTrips), measure_submit);
    pool_step("wake", 6, [&] {
      const WakePairs p = measure_wake(o.settings, sides);
      rows.push_back({"wake-up from idle, p50", "us", p.p50.weft, p.p50.tbb, Goal{.report_only = true},
                      p.p50.queue_pool, p.p50.async});
      rows.push_back({"wake-up from idle, p99", "us", p.p99.weft, p.p99.tbb, Goal{.report_only = true},
                      p.p99.queue_pool, p.p99.async});
    });
    pool_step("memory", 1, [&] {
      const Pair p = measure_memory(o.settings, sides);
      rows.push_back({"1M no-op: peak RSS over baseline", "MiB", p.weft, p.tbb, Goal{1.0, true, "< 1.0x"}});
    });
    pool_step("spawn", 2, [&] {
      const Pair p = measure_spawn_one_worker(o.settings, sides);
      rows.push_back({"spawn + run, one worker (lf ~16)", "ns", p.weft, p.tbb, Goal{0.5, false, "<= 0.5x"}});
      rows.back().items = 1;  // a task per figure
    });
    pool_step("steal", 2, [&] {
      const Pair p = measure_steal(o.settings, sides);
      rows.push_back({"steal + run, two threads", "ns", p.weft, p.tbb, Goal{.report_only = true}});
      rows.back().items = 1;
    });
    const bool weft_side = sides.weft.has_value();
    pool_step("small-function", 1, [&] {
      add_closure_row<16>(o.settings, weft_side, rows);
      add_closure_row<120>(o.settings, weft_side, rows);
    });
    pool_step("mpmc", 1, [&] { add_mpmc_row(o.settings, weft_side, rows); });
    pool_step("ping-pong", 2, [&] { add_ping_pong_row(o.settings, weft_side, rows); });
    pool_step("fan-out", 1, [&] { add_fan_out_row(o.settings, sides, rows); });
    pool_step("wait-latency", 1, [&] { add_wait_latency_row(o.settings, weft_side, rows); });
    const bool pipelines = o.workload.empty() || o.workload == "pipeline" || listed(kPipelineFamilies, o.workload);
    const bool sweep = o.workload.empty() || o.workload == "scaling";
    bool graphs = false;
    for (const GraphCase& c : kGraphCases) graphs = graphs || wants(c.family);
    if (graphs || pipelines || sweep)
      steps.push_back({"(graph setup)", 0, [&] {
                         keep_heap_warm();  // from here on: see graph_workloads_cases.hpp
                         if (sides.weft) graph_sides.weft.emplace(sides.weft->pool());
#if WEFT_BENCH_HAVE_TBB
                         if (sides.tbb) graph_sides.tbb.emplace(o.settings.threads);
#endif
                       }});
    for (std::size_t i = 0; i < kGraphCaseCount; ++i) {
      const GraphCase& c = kGraphCases[i];
      if (!wants(c.family)) continue;
      steps.push_back({std::string(c.id), c.milliseconds ? 3.0 : 0.5, [&, i] {
                         add_graph_rows(
                             o.settings, graph_sides, [i](std::size_t k) { return k == i; }, rows);
                       }});
    }
    if (pipelines)
      steps.push_back({"pipelines", 47, [&] { add_pipeline_rows(o.settings, graph_sides, spin_steps, wants, rows); }});
    if (sweep) steps.push_back({"size sweep", 5, [&] { scaling = measure_scaling(o.settings, graph_sides); }});

    double total_weight = 0;
    for (const Step& step : steps) total_weight += step.weight;
    double done_weight = 0;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (done_weight > 0) {
        std::printf("[%2zu/%zu] %-22s %5.0f s elapsed, about %.0f s left\n", k + 1, steps.size(), steps[k].name.c_str(),
                    elapsed, elapsed / done_weight * (total_weight - done_weight));
      } else {
        std::printf("[%2zu/%zu] %-22s %5.0f s elapsed\n", k + 1, steps.size(), steps[k].name.c_str(), elapsed);
      }
      std::fflush(stdout);
      steps[k].run();
      done_weight += steps[k].weight;
    }

    const GoalCount goals = print_table(rows);
    const std::string load_end = load_average();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("\nGoals: %d met, %d not met.", goals.met, goals.missed);
    if (goals.baselines_slower + goals.baselines_not_slower > 0)
      std::printf(" Baselines slower than weft on %d of %d rows.", goals.baselines_slower,
                  goals.baselines_slower + goals.baselines_not_slower);
    std::printf("\nLoad average at the end: %s. Took %.1f s.\n", load_end.c_str(), took);
    RunContext context;
    context.date = now_text();
    context.host = host_name();
    context.cpus = static_cast<int>(weft::os::usable_cpu_count());
    context.threads = o.settings.threads;
    context.load_start = load_start;
    context.load_end = load_end;
#if WEFT_BENCH_HAVE_TBB
    context.versions = std::string("weft ") + WEFT_VERSION_STRING + ", oneTBB " + std::string(tbb_runtime_version());
#else
    context.versions = std::string("weft ") + WEFT_VERSION_STRING;
#endif
    context.compiler = compiler_text();
    context.mode = o.settings.full ? "full" : "short";
    write_results(o.out, context, rows, scaling);
    std::printf("Results: %s (results.csv, results.json, scaling.csv)\n", o.out.c_str());
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "weft-demo: %s\n", error.what());
    return 1;
  }
}
