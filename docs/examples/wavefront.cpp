// Placeholder nodes: Taskflow's wavefront. Every cell of an N x N grid is a node, made first as a placeholder;
// the edges go right and down; the bodies are given afterwards with set_work. Cell (i, j) adds its upper and
// left neighbours (1 on the borders), so the last cell holds the binomial coefficient C(2(N - 1), N - 1): run
// twice, it must be that both times. Exits with 1 if a result is wrong.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include <weft/errors.hpp>
#include <weft/pool.hpp>
#include <weft/task_graph.hpp>

int main() {
  try {
    weft::Pool pool;
    constexpr std::size_t n = 10;
    std::vector<std::uint64_t> value(n * n);

    weft::TaskGraph g;
    // Every node first, without a body: a placeholder.
    std::vector<weft::Node> cell(n * n);
    for (weft::Node& c : cell) c = g.placeholder();
    // Then the edges, right and down: a cell runs after its left and upper neighbours.
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (j + 1 < n) g.add_edge(cell[i * n + j], cell[i * n + j + 1]);
        if (i + 1 < n) g.add_edge(cell[i * n + j], cell[(i + 1) * n + j]);
      }
    }
    // A graph with a placeholder still without a body does not run: the error names it.
    bool refused = false;
    try {
      (void)g.run(pool);
    } catch (const weft::invalid_graph&) {
      refused = true;  // "weft::TaskGraph::run: placeholder 'node 0' has no body: ..."
    }
    // Then the bodies, once each, before the first run.
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        g.set_work(cell[i * n + j], [&value, i, j] {
          const std::uint64_t up = i == 0 ? 1 : value[(i - 1) * n + j];
          const std::uint64_t left = j == 0 ? 1 : value[i * n + j - 1];
          value[i * n + j] = i == 0 || j == 0 ? 1 : up + left;
        });
      }
    }
    g.run(pool).wait();

    const bool first = value[n * n - 1] == 48'620;  // C(18, 9)
    value.assign(n * n, 0);
    g.run(pool).wait();  // the same bodies, run again
    if (!refused || !first || value[n * n - 1] != 48'620 || g.placeholders_left() != 0) {
      std::fprintf(stderr, "wavefront: FAILED (refused %d, last cell %llu)\n", refused ? 1 : 0,
                   static_cast<unsigned long long>(value[n * n - 1]));
      return 1;
    }
    std::printf("wavefront: %zu x %zu cells, the last one %llu\n", n, n,
                static_cast<unsigned long long>(value[n * n - 1]));
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "wavefront: unexpected exception: %s\n", error.what());
    return 1;
  }
}
