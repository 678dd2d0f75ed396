// Condition nodes and run_n: Newton's method for square roots as a graph loop. Each iteration refines every
// estimate in parallel (one node per value, a fork-join), then a condition node decides: loop back while some
// estimate still moves, or go on to the check. run_n then runs the whole graph again for more inputs, as one
// Run. Exits with 1 if a result is wrong.
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

#include <weft/pool.hpp>
#include <weft/task_graph.hpp>

int main() {
  weft::Pool pool;
  constexpr std::size_t kValues = 8;
  std::vector<double> input(kValues), estimate(kValues);
  std::vector<char> moved(kValues);
  int iterations = 0;   // written by `start` and `again` only: the graph orders them
  int bad_results = 0;  // written by `check` only
  int pass = 0;

  weft::TaskGraph g;
  auto start = g.add_node([&] {
    for (std::size_t i = 0; i < kValues; ++i) {
      input[i] = static_cast<double>((pass + 1) * 100 + i);
      estimate[i] = input[i];
    }
    iterations = 0;
  });
  auto again = g.add_condition(
      [&] {
        ++iterations;
        for (const char m : moved)
          if (m != 0) return 0;  // successor 0: refine once more
        return 1;                // successor 1: done
      },
      weft::NodeOptions{.name = "again?"});
  auto refine_all = g.add_node([] {}, weft::NodeOptions{.name = "iteration"});
  for (std::size_t i = 0; i < kValues; ++i) {
    auto refine = g.add_node([&, i] {
      const double next = 0.5 * (estimate[i] + input[i] / estimate[i]);
      moved[i] = std::fabs(next - estimate[i]) > 1e-12 * next ? 1 : 0;
      estimate[i] = next;
    });
    g.add_edge(refine_all, refine);
    g.add_edge(refine, again);  // strong: `again` waits for every refine of this iteration
  }
  auto check = g.add_node(
      [&] {
        for (std::size_t i = 0; i < kValues; ++i)
          if (std::fabs(estimate[i] * estimate[i] - input[i]) > 1e-9 * input[i]) ++bad_results;
        if (iterations < 2) ++bad_results;
        ++pass;
      },
      weft::NodeOptions{.name = "check"});
  g.add_edge(start, refine_all);
  g.add_edges(again, {refine_all, check});  // weak edges: the loop, and its way out

  weft::Run run = g.run_n(pool, 4);
  if (run.wait() != weft::RunStatus::Completed || run.stats().passes != 4 || pass != 4 || bad_results != 0) {
    std::fprintf(stderr, "condition_loop: FAILED (passes %d, bad results %d)\n", pass, bad_results);
    return 1;
  }
  std::printf("condition_loop: 4 passes, the last one converged in %d iterations\n", iterations);
  return 0;
}
