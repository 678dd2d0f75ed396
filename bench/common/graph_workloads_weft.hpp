// weft's side of the graph workloads (graph_workloads.hpp), written as a user of the public API would: a
// weft::TaskGraph for the dependency graphs, weft::parallel_for / TaskScope::parallel_for for the loop and
// TaskScope::submit for independent tasks.
//
// Each workload class builds its graph in the constructor (the "build" phase: add_node, add_edge, compile),
// runs it once per run() call (the "run" phase: TaskGraph::run(pool).wait()) and checks its data with check().
// The one-shot workloads (parallel_for, TaskScope) have nothing to build: their run() does everything.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/common/graph_shapes.hpp"
#include "bench/common/graph_workloads.hpp"
#include "weft/parallel_for.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"
#include "weft/task_scope.hpp"

namespace weft::bench {

// The pool every weft graph workload runs on: borrowed, created once outside any timed region.
class WeftGraphSide {
 public:
  static constexpr std::string_view kName = "weft";
  explicit WeftGraphSide(Pool& pool) noexcept : pool_(pool) {}
  [[nodiscard]] Pool& pool() const noexcept { return pool_; }

 private:
  Pool& pool_;
};

namespace weft_graph {

// A TaskGraph and the pool it runs on. The sizes are known, so the build reserves room for them as a user
// would (TaskGraph::reserve; oneTBB has no counterpart). compile() belongs to the build: the first run would
// do it otherwise.
class Graph {
 public:
  Graph(WeftGraphSide& side, std::size_t nodes, std::size_t edges) : pool_(side.pool()) {
    graph_.reserve(nodes, edges);
  }
  template <class F>
  Node add(F&& f) {
    return graph_.add_node(std::forward<F>(f));
  }
  void edge(Node from, Node to) { graph_.add_edge(from, to); }
  void compile() { graph_.compile(); }
  void run_and_wait() { graph_.run(pool_).wait(); }

 private:
  Pool& pool_;
  TaskGraph graph_;
};

class Chain {
 public:
  Chain(WeftGraphSide& side, std::size_t n) : data_(n), graph_(side, n, n - 1) {
    Node previous;
    for (std::size_t i = 0; i < n; ++i) {
      const Node node = graph_.add([this] { data_.visit(); });
      if (i > 0) graph_.edge(previous, node);
      previous = node;
    }
    graph_.compile();
  }
  void run() { graph_.run_and_wait(); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  ChainData data_;
  Graph graph_;
};

class Layered {
 public:
  Layered(WeftGraphSide& side, Layers shape)
      : data_(shape), graph_(side, shape.nodes(), (shape.depth - 1) * shape.width * shape.width) {
    std::vector<Node> nodes;
    nodes.reserve(shape.nodes());
    for (std::size_t l = 0; l < shape.depth; ++l) {
      for (std::size_t k = 0; k < shape.width; ++k) {
        nodes.push_back(graph_.add([this, l, k] { data_.visit(l, k); }));
        for (std::size_t p = 0; l > 0 && p < shape.width; ++p)
          graph_.edge(nodes[(l - 1) * shape.width + p], nodes.back());
      }
    }
    graph_.compile();
  }
  void run() { graph_.run_and_wait(); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  LayeredData data_;
  Graph graph_;
};

class Tree {
 public:
  Tree(WeftGraphSide& side, std::size_t levels) : data_(levels), graph_(side, data_.size(), data_.size() - 1) {
    std::vector<Node> nodes;
    nodes.reserve(data_.size());
    for (std::size_t i = 0; i < data_.size(); ++i) {
      nodes.push_back(graph_.add([this, i] { data_.visit(i); }));
      if (i > 0) graph_.edge(nodes[(i - 1) / 2], nodes.back());
    }
    graph_.compile();
  }
  void run() { graph_.run_and_wait(); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  TreeData data_;
  Graph graph_;
};

class Wavefront {
 public:
  Wavefront(WeftGraphSide& side, std::size_t n) : data_(n), graph_(side, n * n, 2 * n * (n - 1)) {
    std::vector<Node> nodes;
    nodes.reserve(n * n);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        nodes.push_back(graph_.add([this, i, j] { data_.visit(i, j); }));
        if (i > 0) graph_.edge(nodes[(i - 1) * n + j], nodes.back());
        if (j > 0) graph_.edge(nodes[i * n + j - 1], nodes.back());
      }
    }
    graph_.compile();
  }
  void run() { graph_.run_and_wait(); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  WavefrontData data_;
  Graph graph_;
};

// n nodes without edges: all of them start when the run starts.
class Independent {
 public:
  Independent(WeftGraphSide& side, std::size_t n) : data_(n), graph_(side, n, 0) {
    for (std::size_t i = 0; i < n; ++i) (void)graph_.add([this, i] { data_.visit(i); });
    graph_.compile();
  }
  void run() { graph_.run_and_wait(); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  IndependentData data_;
  Graph graph_;
};

// The standalone blocking weft::parallel_for with its default (adaptive) grain.
class ParallelFor {
 public:
  explicit ParallelFor(WeftGraphSide& side) : pool_(side.pool()) {}
  void run() {
    weft::parallel_for(pool_, std::size_t{0}, data_.size(), [this](std::size_t i) { data_.visit(i); });
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  Pool& pool_;
  LcgData data_;
};

// The same loop as a TaskScope job: what a user writing a scope of jobs gets.
class ScopeParallelFor {
 public:
  explicit ScopeParallelFor(WeftGraphSide& side) : pool_(side.pool()) {}
  void run() {
    TaskScope scope{pool_};
    (void)scope.parallel_for(std::size_t{0}, data_.size(), [this](std::size_t i) { data_.visit(i); });
    scope.run_and_wait();
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  Pool& pool_;
  LcgData data_;
};

// One TaskScope: submit each task, then run_and_wait (the analogue of a task_group).
class SinCos {
 public:
  explicit SinCos(WeftGraphSide& side) : pool_(side.pool()) {}
  void run() {
    TaskScope scope{pool_};
    for (std::size_t i = 0; i < data_.size(); ++i) (void)scope.submit([this, i] { data_.visit(i); });
    scope.run_and_wait();
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  Pool& pool_;
  SinCosData data_;
};

// The random DAG (graph_shapes.hpp): an edge from each predecessor.
class RandomDag {
 public:
  RandomDag(WeftGraphSide& side) : graph_(side, data_.size(), data_.edges()) {
    std::vector<Node> nodes;
    nodes.reserve(data_.size());
    for (std::size_t i = 0; i < data_.size(); ++i) {
      nodes.push_back(graph_.add([this, i] { data_.visit(i); }));
      for (std::size_t k = i == 0 ? 0 : data_.pred_begin(i); i > 0 && k < data_.pred_end(i); ++k)
        graph_.edge(nodes[data_.pred(k)], nodes.back());
    }
    graph_.compile();
  }
  void run() { graph_.run_and_wait(); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  RandomDagData data_;
  Graph graph_;
};

// The recursive reduction as fib is written on a Pool: submit the left half, sum the right, get() the left
// (which runs other tasks meanwhile). The root is one submit from this thread.
class Reduce {
 public:
  explicit Reduce(WeftGraphSide& side) : pool_(side.pool()) {}
  void run() {
    data_.set_result(pool_.submit([this] { return sum(0, data_.size()); }).get());
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  std::uint64_t sum(std::size_t begin, std::size_t end) {
    if (end - begin <= kReduceLeaf) return data_.leaf(begin, end);
    const std::size_t mid = begin + (end - begin) / 2;
    Future<std::uint64_t> left = pool_.submit([this, begin, mid] { return sum(begin, mid); });
    const std::uint64_t right = sum(mid, end);
    return left.get() + right;
  }

  Pool& pool_;
  ReduceData data_;
};

// The sin*cos tasks in batches of kBatchSize: Pool::post_bulk of one batch, wait_idle, the next.
class SinCosBatches {
 public:
  explicit SinCosBatches(WeftGraphSide& side) : pool_(side.pool()) {}
  void run() {
    for (std::size_t base = 0; base < data_.size(); base += kBatchSize) {
      pool_.post_bulk(kBatchSize, [this, base](std::size_t i) { data_.visit(base + i); });
      pool_.wait_idle();
    }
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  Pool& pool_;
  SinCosData data_;
};

}  // namespace weft_graph

// The workload classes of this side, by the names graph_workloads_cases.hpp knows them by.
struct WeftGraphWorkloads {
  using Side = WeftGraphSide;
  using Chain = weft_graph::Chain;
  using Layered = weft_graph::Layered;
  using Tree = weft_graph::Tree;
  using Wavefront = weft_graph::Wavefront;
  using Independent = weft_graph::Independent;
  using ParallelFor = weft_graph::ParallelFor;
  using ScopeParallelFor = weft_graph::ScopeParallelFor;
  using SinCos = weft_graph::SinCos;
  using RandomDag = weft_graph::RandomDag;
  using Reduce = weft_graph::Reduce;
  using SinCosBatches = weft_graph::SinCosBatches;
};

}  // namespace weft::bench
