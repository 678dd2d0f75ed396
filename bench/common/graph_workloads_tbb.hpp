// oneTBB's side of the graph workloads (graph_workloads.hpp), written the idiomatic oneTBB way: flow graph
// continue_nodes for the dependency graphs, tbb::parallel_for for the loop, task_group for independent tasks.
//
// Each workload class builds its graph in the constructor (the "build" phase), runs it once per run() call
// (the "run" phase: try_put into the entry nodes, graph::wait_for_all) and checks its data with check(). The
// one-shot workloads (parallel_for, task_group) have nothing to build: their run() does everything.
//
// Thread accounting, as in tbb_side.hpp: everything happens inside one task_arena of `threads` slots, one of
// them taken by the calling thread; a flow graph constructed inside the arena runs its tasks there.
#pragma once

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include <cstddef>
#include <deque>
#include <memory>
#include <string_view>
#include <utility>

#include "bench/common/graph_shapes.hpp"
#include "bench/common/graph_workloads.hpp"

namespace weft::bench {

// The arena every oneTBB graph workload runs in; created once, outside any timed region.
class TbbGraphSide {
 public:
  static constexpr std::string_view kName = "oneTBB";

  explicit TbbGraphSide(unsigned threads)
      : parallelism_(tbb::global_control::max_allowed_parallelism, threads == 0 ? 1 : threads),
        arena_(static_cast<int>(threads == 0 ? 1 : threads)) {
    arena_.initialize();
  }

  template <class F>
  decltype(auto) execute(F&& f) {
    return arena_.execute(std::forward<F>(f));
  }

 private:
  tbb::global_control parallelism_;
  tbb::task_arena arena_;
};

namespace tbb_graph {

using Msg = tbb::flow::continue_msg;
using Node = tbb::flow::continue_node<Msg>;

// A flow graph attached to the side's arena and its continue_nodes. The deque keeps nodes in place (they can
// neither move nor copy) without one allocation per node; it is declared after the graph so nodes go first.
class Flow {
 public:
  explicit Flow(TbbGraphSide& side)
      : side_(side), graph_(side.execute([] { return std::make_unique<tbb::flow::graph>(); })) {}

  template <class Body>
  Node& add(Body&& body) {
    return nodes_.emplace_back(*graph_, std::forward<Body>(body));
  }
  Node& operator[](std::size_t i) noexcept { return nodes_[i]; }

  // Puts one message into `entry` and waits for the graph to go idle.
  template <class Entry>
  void start_and_wait(Entry& entry) {
    side_.execute([&] {
      entry.try_put(Msg{});
      graph_->wait_for_all();
    });
  }
  [[nodiscard]] tbb::flow::graph& graph() noexcept { return *graph_; }

 private:
  TbbGraphSide& side_;
  std::unique_ptr<tbb::flow::graph> graph_;
  std::deque<Node> nodes_;
};

class Chain {
 public:
  Chain(TbbGraphSide& side, std::size_t n) : data_(n), flow_(side) {
    for (std::size_t i = 0; i < n; ++i) {
      flow_.add([this](const Msg&) { data_.visit(); });
      if (i > 0) tbb::flow::make_edge(flow_[i - 1], flow_[i]);
    }
  }
  void run() { flow_.start_and_wait(flow_[0]); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  ChainData data_;
  Flow flow_;
};

// Every node of layer l waits for all of layer l-1: a continue_node counts its predecessors, so it needs no
// join_node (whose port count is fixed at compile time) and no copies of the values.
class Layered {
 public:
  Layered(TbbGraphSide& side, Layers shape) : data_(shape), flow_(side), entry_(flow_.graph()) {
    for (std::size_t l = 0; l < shape.depth; ++l) {
      for (std::size_t k = 0; k < shape.width; ++k) {
        Node& node = flow_.add([this, l, k](const Msg&) { data_.visit(l, k); });
        if (l == 0) tbb::flow::make_edge(entry_, node);
        for (std::size_t p = 0; l > 0 && p < shape.width; ++p)
          tbb::flow::make_edge(flow_[(l - 1) * shape.width + p], node);
      }
    }
  }
  void run() { flow_.start_and_wait(entry_); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  LayeredData data_;
  Flow flow_;
  tbb::flow::broadcast_node<Msg> entry_;
};

class Tree {
 public:
  Tree(TbbGraphSide& side, std::size_t levels) : data_(levels), flow_(side) {
    for (std::size_t i = 0; i < data_.size(); ++i) {
      flow_.add([this, i](const Msg&) { data_.visit(i); });
      if (i > 0) tbb::flow::make_edge(flow_[(i - 1) / 2], flow_[i]);
    }
  }
  void run() { flow_.start_and_wait(flow_[0]); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  TreeData data_;
  Flow flow_;
};

class Wavefront {
 public:
  Wavefront(TbbGraphSide& side, std::size_t n) : data_(n), flow_(side) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        Node& node = flow_.add([this, i, j](const Msg&) { data_.visit(i, j); });
        if (i > 0) tbb::flow::make_edge(flow_[(i - 1) * n + j], node);
        if (j > 0) tbb::flow::make_edge(flow_[i * n + j - 1], node);
      }
    }
  }
  void run() { flow_.start_and_wait(flow_[0]); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  WavefrontData data_;
  Flow flow_;
};

// n continue_nodes behind one broadcast_node: one try_put releases them all.
class Independent {
 public:
  Independent(TbbGraphSide& side, std::size_t n) : data_(n), flow_(side), entry_(flow_.graph()) {
    for (std::size_t i = 0; i < n; ++i)
      tbb::flow::make_edge(entry_, flow_.add([this, i](const Msg&) { data_.visit(i); }));
  }
  void run() { flow_.start_and_wait(entry_); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  IndependentData data_;
  Flow flow_;
  tbb::flow::broadcast_node<Msg> entry_;
};

// tbb::parallel_for over the indices with its default (auto) partitioner.
class ParallelFor {
 public:
  explicit ParallelFor(TbbGraphSide& side) : side_(side) {}
  void run() {
    side_.execute(
        [this] { tbb::parallel_for(std::size_t{0}, data_.size(), [this](std::size_t i) { data_.visit(i); }); });
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  TbbGraphSide& side_;
  LcgData data_;
};

// One task_group: run() each task, then wait().
class SinCos {
 public:
  explicit SinCos(TbbGraphSide& side) : side_(side) {}
  void run() {
    side_.execute([this] {
      tbb::task_group group;
      for (std::size_t i = 0; i < data_.size(); ++i) group.run([this, i] { data_.visit(i); });
      group.wait();
    });
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  TbbGraphSide& side_;
  SinCosData data_;
};

// The random DAG (graph_shapes.hpp): node 0 is the only one without predecessors.
class RandomDag {
 public:
  explicit RandomDag(TbbGraphSide& side) : flow_(side) {
    for (std::size_t i = 0; i < data_.size(); ++i) {
      Node& node = flow_.add([this, i](const Msg&) { data_.visit(i); });
      for (std::size_t k = i == 0 ? 0 : data_.pred_begin(i); i > 0 && k < data_.pred_end(i); ++k)
        tbb::flow::make_edge(flow_[data_.pred(k)], node);
    }
  }
  void run() { flow_.start_and_wait(flow_[0]); }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  RandomDagData data_;
  Flow flow_;
};

// The recursive reduction as oneTBB's fib: a task_group per split, run the left half, sum the right, wait.
class Reduce {
 public:
  explicit Reduce(TbbGraphSide& side) : side_(side) {}
  void run() {
    side_.execute([this] { data_.set_result(sum(0, data_.size())); });
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  std::uint64_t sum(std::size_t begin, std::size_t end) {
    if (end - begin <= kReduceLeaf) return data_.leaf(begin, end);
    const std::size_t mid = begin + (end - begin) / 2;
    std::uint64_t left = 0;
    tbb::task_group group;
    group.run([this, begin, mid, &left] { left = sum(begin, mid); });
    const std::uint64_t right = sum(mid, end);
    group.wait();
    return left + right;
  }

  TbbGraphSide& side_;
  ReduceData data_;
};

// The sin*cos tasks in batches of kBatchSize: one task_group, run a batch, wait, the next.
class SinCosBatches {
 public:
  explicit SinCosBatches(TbbGraphSide& side) : side_(side) {}
  void run() {
    side_.execute([this] {
      tbb::task_group group;
      for (std::size_t base = 0; base < data_.size(); base += kBatchSize) {
        for (std::size_t i = 0; i < kBatchSize; ++i) group.run([this, base, i] { data_.visit(base + i); });
        group.wait();
      }
    });
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }

 private:
  TbbGraphSide& side_;
  SinCosData data_;
};

}  // namespace tbb_graph

// The workload classes of this side, by the names graph_workloads_cases.hpp knows them by.
struct TbbGraphWorkloads {
  using Side = TbbGraphSide;
  using Chain = tbb_graph::Chain;
  using Layered = tbb_graph::Layered;
  using Tree = tbb_graph::Tree;
  using Wavefront = tbb_graph::Wavefront;
  using Independent = tbb_graph::Independent;
  using ParallelFor = tbb_graph::ParallelFor;
  using ScopeParallelFor = tbb_graph::ParallelFor;  // oneTBB has one parallel_for: the same peer twice
  using SinCos = tbb_graph::SinCos;
  using RandomDag = tbb_graph::RandomDag;
  using Reduce = tbb_graph::Reduce;
  using SinCosBatches = tbb_graph::SinCosBatches;
};

}  // namespace weft::bench
