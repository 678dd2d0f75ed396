// compile(): checks a TaskGraph for cycles and lays it out for speed. Successor lists go into one contiguous
// array (a counting sort by source, then duplicates removed per node), join counters get their start values,
// and nodes with more than one token get their Limiter. Linear in nodes + edges.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/graph_impl.hpp"
#include "weft/errors.hpp"

namespace weft::detail {

void GraphImpl::lay_out() {
  const std::size_t n = bodies_.size();
  // One scratch allocation: `start` (n + 2) for the counting sort, `taken_by` (n) for removing duplicates.
  std::vector<std::uint32_t> scratch(2 * n + 2, 0);
  std::uint32_t* const start = scratch.data();
  std::uint32_t* const taken_by = start + n + 2;
  std::fill(taken_by, taken_by + n, kNoIndex);
  // Successor lists by counting sort on the source node, shifted by one so that no cursor array is needed:
  // after the counts' prefix sum, start[s + 1] is where source s's edges begin; placing the edges advances it
  // to where they end, which is where s + 1's begin. So start[0..n] ends up as the offsets.
  for (const auto& edge : edges_) ++start[edge.first + 2];
  for (std::size_t i = 2; i < n + 2; ++i) start[i] += start[i - 1];
  std::vector<std::uint32_t> targets(edges_.size());
  for (const auto& edge : edges_) targets[start[edge.first + 1]++] = edge.second;
  // Remove duplicate edges per node, compacting in place and keeping the order they were added in: a target
  // already taken for this source carries the source's index in `taken_by` (linear, no sort per node).
  std::vector<CompiledNode> compiled(n);
  std::uint32_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto source = static_cast<std::uint32_t>(i);
    compiled[i].succ_begin = out;
    for (std::uint32_t e = start[i]; e != start[i + 1]; ++e) {
      const std::uint32_t target = targets[e];
      if (taken_by[target] == source) continue;
      taken_by[target] = source;
      targets[out++] = target;
    }
    compiled[i].succ_end = out;
  }
  targets.resize(out);
  // Join counts, and how many nodes are left with none (the roots: one allocation of the right size for them,
  // without another pass over `compiled`, which is 20 MiB for a million nodes).
  std::size_t root_count = n;
  for (const std::uint32_t target : targets) root_count -= compiled[target].join_init++ == 0 ? 1 : 0;
  std::vector<std::uint32_t> roots;
  roots.reserve(root_count);
  for (std::size_t i = 0; i < n; ++i)
    if (compiled[i].join_init == 0) roots.push_back(static_cast<std::uint32_t>(i));
  if (!edges_forward_) {
    // Kahn's algorithm: every node must be reachable in topological order, else there is a cycle. Skipped
    // when every edge goes forward in node order, which is then a topological order already.
    std::vector<std::uint32_t> indegree(n);
    for (std::size_t i = 0; i < n; ++i) indegree[i] = compiled[i].join_init;
    std::vector<std::uint32_t> order;
    order.reserve(n);
    order.assign(roots.begin(), roots.end());
    for (std::size_t head = 0; head < order.size(); ++head) {
      const CompiledNode& node = compiled[order[head]];
      for (std::uint32_t e = node.succ_begin; e != node.succ_end; ++e)
        if (--indegree[targets[e]] == 0) order.push_back(targets[e]);
    }
    if (order.size() != n) {
      succ_ = std::move(targets);  // throw_cycle walks the edges; the layout stays invalid
      compiled_ = std::move(compiled);
      throw_cycle(indegree);
    }
  }

  // Options: limiters for multi-token nodes; who may run in place.
  std::vector<std::unique_ptr<graph::Limiter>> limiters;
  std::vector<std::uint32_t> limited_nodes;
  unsigned max_affinity_plus_one = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (options_index_[i] == kNoIndex) continue;
    const NodeOptions& options = options_[options_index_[i]];
    if (options.affinity) max_affinity_plus_one = std::max(max_affinity_plus_one, *options.affinity + 1);
    if (options.tokens > 1) {
      compiled[i].limiter = static_cast<std::uint32_t>(limiters.size());
      limiters.push_back(std::make_unique<graph::Limiter>(options));
      limited_nodes.push_back(static_cast<std::uint32_t>(i));
    }
    compiled[i].runs_in_place = options.tokens == 1 && options.priority == Priority::Normal && !options.affinity;
  }
  auto join = std::make_unique<std::atomic<std::uint32_t>[]>(n);
  for (std::size_t i = 0; i < n; ++i) join[i].store(compiled[i].join_init, std::memory_order_relaxed);

  compiled_ = std::move(compiled);
  succ_ = std::move(targets);
  join_ = std::move(join);
  limiters_ = std::move(limiters);
  limited_nodes_ = std::move(limited_nodes);
  roots_ = std::move(roots);
  max_affinity_plus_one_ = max_affinity_plus_one;
  compiled_valid_ = true;
}

void GraphImpl::throw_cycle(const std::vector<std::uint32_t>& indegree_left) const {
  // Every node left over has a predecessor that is left over too: walking predecessors must revisit a node,
  // and the walk from that node back to itself is a cycle.
  const std::size_t n = bodies_.size();
  std::vector<std::uint32_t> some_predecessor(n, kNoIndex);
  for (std::size_t from = 0; from < n; ++from) {
    if (indegree_left[from] == 0) continue;
    for (std::uint32_t e = compiled_[from].succ_begin; e != compiled_[from].succ_end; ++e)
      if (indegree_left[succ_[e]] != 0) some_predecessor[succ_[e]] = static_cast<std::uint32_t>(from);
  }
  std::uint32_t at = 0;
  while (indegree_left[at] == 0) ++at;
  std::vector<std::uint32_t> seen_at(n, kNoIndex);
  std::vector<std::uint32_t> walk;
  while (seen_at[at] == kNoIndex) {
    seen_at[at] = static_cast<std::uint32_t>(walk.size());
    walk.push_back(at);
    at = some_predecessor[at];
  }
  // walk[seen_at[at]..] is the cycle backwards (each entry's predecessor follows it).
  std::vector<std::uint32_t> cycle(walk.begin() + seen_at[at], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::vector<std::string> names;
  std::string message = "weft::TaskGraph: the graph has a cycle: ";
  for (const std::uint32_t node : cycle) {
    names.push_back(name(node));
    message += names.back();
    message += " -> ";
  }
  names.push_back(name(cycle.front()));
  message += names.back();
  throw cycle_error(message, std::move(names));
}

}  // namespace weft::detail
