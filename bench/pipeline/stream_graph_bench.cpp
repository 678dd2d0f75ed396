// A stream that forks and joins, weft against oneTBB's flow graph, side by side in one binary: the shape of
// oneTBB's flow-graph example, a broadcast into three parallel function stages whose results a join pairs, and
// a serial sink that sums them.
//   fork_join3/weft     a TaskScope pipeline: source -> broadcast<3> -> three stages (kUnlimited) -> join (by
//                       position) -> serial sink; the scope is built, run and waited for in each iteration
//   fork_join3/oneTBB   a tbb::flow::graph: broadcast_node -> three function_node (unlimited) -> join_node
//                       <queueing> -> function_node (serial); each message put from the arena's thread, then
//                       wait_for_all; the graph is built in each iteration too
// Each of kMessages messages x gives x*x + x*x*x + 2x to the sum; a wrong sum marks the row as an error and makes
// the program exit 1. Both libraries get the same number of threads: 2, or WEFT_BENCH_THREADS (weft: that many
// workers, the calling thread waits; oneTBB: an arena of that many slots, one taken by the calling thread).
// Interleave and repeat: --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true, and divide the weft median by the oneTBB median.
#include <benchmark/benchmark.h>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/version.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "bench/common/graph_workloads_cases.hpp"
#include "bench/common/manual_timing.hpp"
#include "weft/pool.hpp"
#include "weft/task_scope.hpp"

namespace {

using namespace weft::bench;

// 10^5 rather than the 10^6: one oneTBB run stays near a tenth of a second on two threads, so the
// interleaved repetitions fit a shared machine.
constexpr std::uint64_t kMessages = 100'000;

constexpr std::uint64_t expected_sum() noexcept {
  std::uint64_t sum = 0;
  for (std::uint64_t x = 0; x < kMessages; ++x) sum += x * x + x * x * x + 2 * x;
  return sum;
}

bool failed = false;

std::uint64_t weft_run(weft::Pool& pool) {
  weft::TaskScope scope{pool};
  std::uint64_t next = 0;
  auto numbers = scope.source([&next]() -> std::optional<std::uint64_t> {
    if (next == kMessages) return std::nullopt;
    return next++;
  });
  auto [a, b, c] = scope.broadcast<3>(numbers);
  const weft::StageOptions parallel{.concurrency = weft::kUnlimited};
  auto squares = scope.stage(
      a, [](std::uint64_t x) { return x * x; }, parallel);
  auto cubes = scope.stage(
      b, [](std::uint64_t x) { return x * x * x; }, parallel);
  auto doubles = scope.stage(
      c, [](std::uint64_t x) { return 2 * x; }, parallel);
  auto results = scope.join(std::tuple{squares, cubes, doubles});
  std::uint64_t sum = 0;
  scope.sink(results, [&sum](const std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>& r) {
    sum += std::get<0>(r) + std::get<1>(r) + std::get<2>(r);
  });
  scope.run_and_wait();
  return sum;
}

std::uint64_t tbb_run(tbb::task_arena& arena) {
  namespace flow = tbb::flow;
  std::uint64_t sum = 0;
  arena.execute([&sum] {
    flow::graph g;
    flow::broadcast_node<std::uint64_t> input(g);
    flow::function_node<std::uint64_t, std::uint64_t> squarer(g, flow::unlimited,
                                                              [](std::uint64_t x) { return x * x; });
    flow::function_node<std::uint64_t, std::uint64_t> cuber(g, flow::unlimited,
                                                            [](std::uint64_t x) { return x * x * x; });
    flow::function_node<std::uint64_t, std::uint64_t> doubler(g, flow::unlimited,
                                                              [](std::uint64_t x) { return 2 * x; });
    using Triple = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;
    flow::join_node<Triple, flow::queueing> join(g);
    flow::function_node<Triple, flow::continue_msg> summer(g, flow::serial, [&sum](const Triple& r) {
      sum += std::get<0>(r) + std::get<1>(r) + std::get<2>(r);
      return flow::continue_msg();
    });
    flow::make_edge(input, squarer);
    flow::make_edge(input, cuber);
    flow::make_edge(input, doubler);
    flow::make_edge(squarer, flow::input_port<0>(join));
    flow::make_edge(cuber, flow::input_port<1>(join));
    flow::make_edge(doubler, flow::input_port<2>(join));
    flow::make_edge(join, summer);
    for (std::uint64_t x = 0; x < kMessages; ++x) input.try_put(x);
    g.wait_for_all();
  });
  return sum;
}

template <class Run>
void time_case(benchmark::State& state, Run run) {
  (void)time_iterations(state, static_cast<std::int64_t>(kMessages), failed, "the sum is wrong",
                        [&run](Stopwatch& watch) { return watch.time(run) == expected_sum(); });
}

}  // namespace

int main(int argc, char** argv) {
  keep_heap_warm();
  const unsigned threads = graph_threads();
  weft::Pool pool(pool_options(threads));
  const tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
  tbb::task_arena arena(static_cast<int>(threads));
  arena.initialize();

  benchmark::RegisterBenchmark("fork_join3/weft",
                               [&pool](benchmark::State& state) {
                                 time_case(state, [&pool] { return weft_run(pool); });
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  benchmark::RegisterBenchmark("fork_join3/oneTBB",
                               [&arena](benchmark::State& state) {
                                 time_case(state, [&arena] { return tbb_run(arena); });
                               })
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("oneTBB", TBB_runtime_version());
  benchmark::AddCustomContext("messages", std::to_string(kMessages));
  return run_benchmarks(argc, argv, failed);
}
