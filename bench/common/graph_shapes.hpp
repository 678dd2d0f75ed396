// The graph shapes the head-to-head suite adds to issue 4's (graph_workloads.hpp): a random DAG and a
// tree-structured reduction by recursion. Data and checks only, as in graph_workloads.hpp: each library's side
// lays out the dependencies and calls visit().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace weft::bench {

inline constexpr std::size_t kRandomDagNodes = 100'000;
inline constexpr std::uint64_t kRandomDagSeed = 0x5EED'DA6;
inline constexpr std::size_t kReduceValues = std::size_t{1} << 20;
inline constexpr std::size_t kReduceLeaf = 64;  // a leaf sums this many values: the tree has 2^14 leaves
inline constexpr std::size_t kBatchSize = 10;   // the batched sin*cos row: 100 batches of 10, each waited for

// A random DAG of kRandomDagNodes: node i > 0 has 1..5 distinct predecessors (3 on average) drawn uniformly from
// the nodes before it, by a fixed-seed generator, so every run and both libraries get the same graph. Node i
// stores i + 1 plus the sum of its predecessors' values (mod 2^64): a node run early or twice changes the sum.
class RandomDagData {
 public:
  RandomDagData() : shape_(shape()), values_(kRandomDagNodes, 0) {}
  [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
  [[nodiscard]] std::size_t edges() const noexcept { return shape_.preds.size(); }
  // The predecessors of node i > 0: pred(k) for k in [pred_begin(i), pred_end(i)).
  [[nodiscard]] std::size_t pred_begin(std::size_t i) const noexcept { return shape_.offsets[i - 1]; }
  [[nodiscard]] std::size_t pred_end(std::size_t i) const noexcept { return shape_.offsets[i]; }
  [[nodiscard]] std::uint32_t pred(std::size_t k) const noexcept { return shape_.preds[k]; }
  void visit(std::size_t i) noexcept {
    std::uint64_t sum = i + 1;
    for (std::size_t k = i == 0 ? 0 : pred_begin(i); i > 0 && k < pred_end(i); ++k) sum += values_[pred(k)];
    values_[i] = sum;
  }
  [[nodiscard]] bool check() noexcept {
    static const std::vector<std::uint64_t> expected = [] {
      RandomDagData reference;
      for (std::size_t i = 0; i < reference.size(); ++i) reference.visit(i);
      return reference.values_;
    }();
    const bool ok = values_ == expected;
    std::fill(values_.begin(), values_.end(), 0);
    return ok;
  }

 private:
  struct Shape {
    std::vector<std::size_t> offsets{0};  // offsets[i - 1] .. offsets[i]: node i's predecessors
    std::vector<std::uint32_t> preds;
  };
  // Drawn once per process, outside any timed region's cost after the first: both libraries build from it.
  static const Shape& shape() {
    static const Shape drawn = [] {
      Shape out;
      std::uint64_t state = kRandomDagSeed;
      const auto next = [&state] {  // splitmix64
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
      };
      for (std::size_t i = 1; i < kRandomDagNodes; ++i) {
        const std::size_t wanted = std::min<std::size_t>(i, 1 + next() % 5);
        const std::size_t first = out.preds.size();
        while (out.preds.size() - first < wanted) {
          const auto p = static_cast<std::uint32_t>(next() % i);
          if (std::find(out.preds.begin() + static_cast<std::ptrdiff_t>(first), out.preds.end(), p) == out.preds.end())
            out.preds.push_back(p);
        }
        out.offsets.push_back(out.preds.size());
      }
      return out;
    }();
    return drawn;
  }

  const Shape& shape_;
  std::vector<std::uint64_t> values_;
};

// kReduceValues values summed by recursion: a range longer than kReduceLeaf splits in halves, the left half a
// task of its own, the right half computed by the splitting task, which then waits for the left.
class ReduceData {
 public:
  ReduceData() : values_(kReduceValues) { std::iota(values_.begin(), values_.end(), std::uint64_t{1}); }
  [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
  [[nodiscard]] std::uint64_t leaf(std::size_t begin, std::size_t end) const noexcept {
    std::uint64_t sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += values_[i];
    return sum;
  }
  void set_result(std::uint64_t sum) noexcept { result_ = sum; }
  [[nodiscard]] bool check() noexcept {
    const bool ok = result_ == std::uint64_t{kReduceValues} * (kReduceValues + 1) / 2;
    result_ = 0;
    return ok;
  }

 private:
  std::vector<std::uint64_t> values_;
  std::uint64_t result_ = 0;
};

}  // namespace weft::bench
