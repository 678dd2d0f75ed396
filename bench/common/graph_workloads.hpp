// The graph workloads of issue 4, shared by bench/graph/graph_bench (Google Benchmark) and bench/demo/weft-demo:
// their sizes and the data each one computes, with its check. Each library's side (graph_workloads_weft.hpp,
// graph_workloads_tbb.hpp) only lays out the dependencies and calls the `visit` functions below from its
// tasks, so both libraries run exactly the same node bodies.
//
// Every workload's data is reset by check(), outside any timed region: a run that skipped a node, ran one
// before its predecessors or did not run at all leaves a wrong checksum behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace weft::bench {

inline constexpr std::size_t kChainShort = 1'000;
inline constexpr std::size_t kChainLong = std::size_t{1} << 20;
inline constexpr std::size_t kTreeLevels = 20;  // a complete binary tree of 2^20 - 1 nodes
inline constexpr std::size_t kWavefrontSide = 1'024;
inline constexpr std::size_t kIndependentTasks = std::size_t{1} << 20;
inline constexpr std::size_t kLcgInts = 1'000'000;
inline constexpr int kLcgSteps = 100;
inline constexpr std::size_t kSinCosTasks = 1'000;
inline constexpr int kSinCosSteps = 20'000;

// Width x depth of a layered graph: every node of a layer depends on every node of the layer before.
struct Layers {
  std::size_t width = 0;
  std::size_t depth = 0;
  [[nodiscard]] std::size_t nodes() const noexcept { return width * depth; }
};
inline constexpr Layers kLayersSmall{10, 5};
inline constexpr Layers kLayersLarge{100, 100};

// Chain of n dependent nodes: each advances one 64-bit LCG state, so the result depends on every node having
// run exactly once, in order.
class ChainData {
 public:
  explicit ChainData(std::size_t n) : n_(n) {}
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  void visit() noexcept { state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL; }
  [[nodiscard]] bool check() noexcept;

 private:
  std::size_t n_;
  std::uint64_t state_ = 0;
};

// Layered graph: node (l, k) holds the sum of layer l-1 plus k + 1 (layer 0 holds k + 1), wrapping mod 2^64.
class LayeredData {
 public:
  explicit LayeredData(Layers shape) : shape_(shape), values_(shape.nodes(), 0) {}
  [[nodiscard]] Layers shape() const noexcept { return shape_; }
  void visit(std::size_t layer, std::size_t k) noexcept {
    std::uint64_t sum = k + 1;
    if (layer > 0) {
      const std::uint64_t* above = values_.data() + (layer - 1) * shape_.width;
      for (std::size_t p = 0; p < shape_.width; ++p) sum += above[p];
    }
    values_[layer * shape_.width + k] = sum;
  }
  [[nodiscard]] bool check() noexcept;

 private:
  Layers shape_;
  std::vector<std::uint64_t> values_;
};

// Complete binary tree in heap order (children of i: 2i+1, 2i+2): each node stores its parent's depth + 1.
class TreeData {
 public:
  explicit TreeData(std::size_t levels) : levels_(levels), depth_((std::size_t{1} << levels) - 1, 0) {}
  [[nodiscard]] std::size_t levels() const noexcept { return levels_; }
  [[nodiscard]] std::size_t size() const noexcept { return depth_.size(); }
  void visit(std::size_t i) noexcept { depth_[i] = i == 0 ? 1 : depth_[(i - 1) / 2] + 1; }
  [[nodiscard]] bool check() noexcept;

 private:
  std::size_t levels_;
  std::vector<std::uint32_t> depth_;
};

// Wavefront of side x side blocks: block (i, j) depends on (i-1, j) and (i, j-1) and stores their sum + 1.
class WavefrontData {
 public:
  explicit WavefrontData(std::size_t side) : side_(side), values_(side * side, 0) {}
  [[nodiscard]] std::size_t side() const noexcept { return side_; }
  void visit(std::size_t i, std::size_t j) noexcept {
    const std::uint64_t top = i > 0 ? values_[(i - 1) * side_ + j] : 0;
    const std::uint64_t left = j > 0 ? values_[i * side_ + j - 1] : 0;
    values_[i * side_ + j] = top + left + 1;
  }
  [[nodiscard]] bool check() noexcept;

 private:
  std::size_t side_;
  std::vector<std::uint64_t> values_;
};

// n independent nodes, each writing its own slot.
class IndependentData {
 public:
  explicit IndependentData(std::size_t n) : out_(n, 0) {}
  [[nodiscard]] std::size_t size() const noexcept { return out_.size(); }
  void visit(std::size_t i) noexcept { out_[i] = i * 0x9E3779B97F4A7C15ULL + 1; }
  [[nodiscard]] bool check() noexcept;

 private:
  std::vector<std::uint64_t> out_;
};

// kLcgInts 32-bit ints, each advanced kLcgSteps times in place by a 32-bit LCG; they start as their index.
class LcgData {
 public:
  LcgData();
  [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
  void visit(std::size_t i) noexcept {
    std::uint32_t x = values_[i];
    for (int s = 0; s < kLcgSteps; ++s) x = x * 1664525U + 1013904223U;
    values_[i] = x;
  }
  [[nodiscard]] bool check() noexcept;

 private:
  std::vector<std::uint32_t> values_;
};

// kSinCosTasks tasks, each summing kSinCosSteps products sin(x) * cos(x) into its own slot.
class SinCosData {
 public:
  SinCosData() : out_(kSinCosTasks, 0.0) {}
  [[nodiscard]] std::size_t size() const noexcept { return out_.size(); }
  void visit(std::size_t i) noexcept;
  [[nodiscard]] bool check() noexcept;

 private:
  std::vector<double> out_;
};

}  // namespace weft::bench

#include "bench/common/graph_workloads_check.hpp"
