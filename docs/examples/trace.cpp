// Seeing what runs: a pool that records a weft::Trace while a TaskScope runs a small pipeline and a graph, then
// writes Chrome Trace Event JSON that https://ui.perfetto.dev and chrome://tracing open. Each worker is a track;
// each pool task, graph node and pipeline stage call is a slice on the track of the thread that ran it, named
// after the node or stage; steals and sleeps are instant marks.
//
// Usage: trace [file]   (default: weft-trace.json in the system's temporary directory)
// The program checks that the file was written and that the trace holds one event per stage call and per node;
// it exits with 1 otherwise. Built and run by weft's test suite (suite 'examples').
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <weft/pool.hpp>
#include <weft/task_graph.hpp>
#include <weft/task_scope.hpp>
#include <weft/trace.hpp>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "weft-trace.json").string();

  // [trace]
  auto trace = std::make_shared<weft::Trace>();
  weft::Pool pool{weft::PoolOptions{.threads = 2, .name = "demo", .trace = trace}};

  weft::TaskScope scope{pool};
  auto lines = scope.source(
      [n = 0]() mutable -> std::optional<int> {
        if (n == 100) return std::nullopt;
        return n++;
      },
      {.name = "read"});
  auto parsed = scope.stage(lines, [](int line) { return line * 2; }, {.name = "parse", .concurrency = 2});
  long total = 0;
  weft::Job<void> store = scope.sink(parsed, [&total](int value) { total += value; }, {.name = "store"});
  scope.run_and_wait();

  weft::TaskGraph report;
  const weft::Node sum = report.add_node([] { /* sum up */ }, {.name = "sum"});
  report.add_edge(sum, report.add_node([] { /* print */ }, {.name = "print"}));
  report.run(pool).wait();

  pool.wait_idle();
  trace->save(path);  // open it in https://ui.perfetto.dev or chrome://tracing
  // [trace]

  (void)store;
  const auto size = std::filesystem::file_size(path);
  std::printf("wrote %s: %zu events, %ju bytes\n", path.c_str(), trace->size(), static_cast<std::uintmax_t>(size));
  // 100 items through three stages, two nodes, and at least one pool task.
  const bool ok = total == 9900 && trace->size() >= 3 * 100 + 2 + 1 && trace->dropped() == 0 && size > 0;
  if (argc <= 1) std::filesystem::remove(path);
  return ok ? 0 : 1;
}
