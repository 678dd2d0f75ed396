// compile(): checks a TaskGraph for cycles and lays it out for speed. Successor lists go into one contiguous array (a
// counting sort by source, then duplicates removed per node unless the edges were added in an order that rules them
// out), consecutive nodes with the same (two or more) predecessors share one join counter (a join group), join
// counters get their start values, and nodes with more than one token get their Limiter. Linear in nodes + edges.
// Out of memory throws weft::out_of_memory naming the call (compile, or the run that compiles first) and, for a
// node's inbox, the node.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "graph/graph_impl.hpp"
#include "weft/errors.hpp"

namespace weft::graph {
namespace {

using Edges = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

// Join groups (graph_impl.hpp, JoinGroup), for edges that came by target and forward: the edges into node v
// are then the run edges[run, run + join_init) in node order. Node v joins v - 1's group (or starts one with
// it) when both runs have the same sources. A member after the first gets no successor entries of its own,
// so its edges are taken out of the per-source counts (`count_of_source`, start[] before its prefix sum).
std::vector<JoinGroup> find_join_groups(const Edges& edges, const std::vector<CompiledNode>& compiled,
                                        std::vector<std::uint32_t>& count_of_source, std::size_t offset) {
  std::vector<JoinGroup> groups;
  std::size_t previous_run = 0;
  std::uint32_t previous_length = 0;
  std::size_t run = 0;
  const auto n = static_cast<std::uint32_t>(compiled.size());
  for (std::uint32_t v = 0; v < n; ++v) {
    const std::uint32_t length = compiled[v].join_init;
    bool same = length >= 2 && length == previous_length;
    for (std::uint32_t i = 0; same && i < length; ++i) same = edges[previous_run + i].first == edges[run + i].first;
    if (same) {
      if (groups.empty() || groups.back().end != v) groups.push_back({v - 1, v});
      groups.back().end = v + 1;
      for (std::uint32_t i = 0; i < length; ++i) --count_of_source[edges[run + i].first + offset];
    }
    previous_run = run;
    previous_length = length;
    run += length;
  }
  return groups;
}

}  // namespace

void GraphImpl::lay_out(const char* call) {
  try {
    lay_out_unchecked(call);
  } catch (const out_of_memory&) {
    throw;
  } catch (const std::bad_alloc&) {
    std::string message = call;
    message += ": out of memory laying out the graph (";
    message += std::to_string(bodies_.size());
    message += " nodes, ";
    message += std::to_string(edges_.size());
    message += " edges)";
    throw out_of_memory(message);
  }
}

void GraphImpl::make_limiters(std::vector<CompiledNode>& compiled,
                              std::vector<std::unique_ptr<inbox::Limiter>>& limiters,
                              std::vector<std::uint32_t>& limited_nodes, std::uint64_t& max_affinity_plus_one,
                              const char* call) const {
  const std::size_t n = bodies_.size();
  for (std::size_t i = 0; !options_.empty() && i < n; ++i) {
    if (options_index_[i] == kNoIndex) continue;
    const NodeOptions& options = options_[options_index_[i]];
    if (options.affinity) max_affinity_plus_one = std::max(max_affinity_plus_one, std::uint64_t{*options.affinity} + 1);
    if (options.tokens > 1) {
      std::unique_ptr<inbox::Limiter> limiter;
      try {
        limiter = std::make_unique<inbox::Limiter>(options);
      } catch (const std::bad_alloc&) {
        const std::size_t slots = inbox::Limiter::inbox_slots(options);
        std::string message = call;
        message += ": out of memory allocating the inbox of node '";
        message += name(static_cast<std::uint32_t>(i));
        message += "' (";
        message += std::to_string(slots);
        message += " slots of 16 bytes, for capacity ";
        message += options.capacity == kUnbounded ? std::string("unbounded") : std::to_string(options.capacity);
        message += " and tokens ";
        message += std::to_string(options.tokens);
        message += ")";
        throw out_of_memory(message);
      }
      compiled[i].limiter = static_cast<std::uint32_t>(limiters.size());
      limiters.push_back(std::move(limiter));
      limited_nodes.push_back(static_cast<std::uint32_t>(i));
    }
    compiled[i].runs_in_place = options.tokens == 1 && options.priority == Priority::Normal && !options.affinity;
  }
}

void GraphImpl::make_semaphore_tables(std::vector<CompiledNode>& compiled, std::vector<SemaphoreNode>& nodes,
                                      std::vector<SemaphoreNeed>& needs, std::vector<Semaphore*>& semaphores) const {
  const std::size_t n = bodies_.size();
  for (std::size_t i = 0; !options_.empty() && i < n; ++i) {
    if (options_index_[i] == kNoIndex) continue;
    const NodeOptions& options = options_[options_index_[i]];
    if (options.semaphores.empty()) continue;
    // Posted, never run in place: taking the units may park it, which only a task of its own can do.
    compiled[i].runs_in_place = false;
    compiled[i].has_semaphores = true;
    const auto begin = static_cast<std::uint32_t>(needs.size());
    for (Semaphore* const semaphore : options.semaphores) {
      auto* const first = needs.data() + begin;
      auto* const end = needs.data() + needs.size();
      auto* const same = std::find_if(first, end,
                                      [&](const SemaphoreNeed& need) { return need.semaphore == semaphore; });
      if (same != end) {
        ++same->units;
      } else {
        needs.push_back({semaphore, 1});
        semaphores.push_back(semaphore);
      }
    }
    nodes.push_back({static_cast<std::uint32_t>(i), begin, static_cast<std::uint32_t>(needs.size())});
  }
  std::sort(semaphores.begin(), semaphores.end());
  semaphores.erase(std::unique(semaphores.begin(), semaphores.end()), semaphores.end());
}

namespace {

// What the counting pass over the edges found (see lay_out_unchecked).
struct EdgeScan {
  std::size_t with_predecessors = 0;  // nodes with a strong incoming edge
  bool forward = true;                // every edge goes from a lower to a higher index
  bool by_target = true;              // the edges came in strictly increasing (to, from) order
};

// Successor lists by counting sort on the source node, shifted by one so that no cursor array is needed:
// after the counts' prefix sum, start[s + 1] is where source s's edges begin; placing the edges advances it
// to where they end, which is where s + 1's begin. So start[0..n] ends up as the offsets.
// The same pass counts every node's incoming edges into its join counter's start value (a repeated edge is
// taken back below) and the nodes that have any, so the roots are known without another pass. It also
// notes two orders the common builders keep (add a node, then the edges into it from its predecessors in
// order: chains, trees, layers, wavefronts), each of which saves a pass below:
//  - forward: every edge goes from a lower to a higher index, so node order is a topological order and
//    there can be no cycle;
//  - by_target: the edges came in strictly increasing (to, from) order, so none repeats.
// `weak_target` (only with conditions) marks the targets of a condition's weak edges.
EdgeScan count_edges(const Edges& edges, bool conditions, std::vector<CompiledNode>& compiled,
                     std::vector<std::uint32_t>& start, std::vector<std::uint8_t>& weak_target) {
  EdgeScan scan;
  std::uint64_t last_key = 0;  // below every edge's key: a self-edge is never added
  for (const auto& [from, to] : edges) {
    ++start[from + 2];
    if (conditions && compiled[from].condition) [[unlikely]] {
      weak_target[to] = 1;
    } else {
      scan.with_predecessors += compiled[to].join_init++ == 0 ? 1 : 0;
    }
    const std::uint64_t key = std::uint64_t{to} << 32 | from;
    scan.forward &= from < to;
    scan.by_target &= key > last_key;
    last_key = key;
  }
  return scan;
}

// The successor entries, each source's from start[source + 1] on (advancing it): a target's index, or for a join
// group's first member the group's entry (kJoinGroupBit | group) and for the group's other members nothing.
std::vector<std::uint32_t> place_targets(const Edges& edges, const std::vector<CompiledNode>& compiled,
                                         const std::vector<JoinGroup>& groups, std::vector<std::uint32_t>& start) {
  const auto n = static_cast<std::uint32_t>(compiled.size());
  std::vector<std::uint32_t> targets(start[n + 1]);
  if (groups.empty()) {
    for (const auto& [from, to] : edges) targets[start[from + 1]++] = to;
    return targets;
  }
  // Run by run (see find_join_groups): a group's first member places the group's entry, the others nothing.
  std::size_t run = 0;
  std::size_t g = 0;
  for (std::uint32_t v = 0; v < n; ++v) {
    const std::uint32_t length = compiled[v].join_init;
    std::uint32_t entry = v;
    if (g < groups.size() && v >= groups[g].first) {
      entry = kJoinGroupBit | static_cast<std::uint32_t>(g);
      const bool follower = v != groups[g].first;
      if (v + 1 == groups[g].end) ++g;
      if (follower) {
        run += length;
        continue;
      }
    }
    for (std::size_t e = run; e != run + length; ++e) targets[start[edges[e].first + 1]++] = entry;
    run += length;
  }
  return targets;
}

// Sets every node's successor range; unless no edge can repeat (`by_target`), removes the repeated ones first.
// Returns the number of distinct edges.
std::size_t finish_successor_lists(std::vector<CompiledNode>& compiled, const std::vector<std::uint32_t>& start,
                                   std::vector<std::uint32_t>& targets, bool by_target, std::size_t edges) {
  const std::size_t n = compiled.size();
  if (by_target) {
    // No edge repeats: the lists are final as placed.
    for (std::size_t i = 0; i < n; ++i) {
      compiled[i].succ_begin = start[i];
      compiled[i].succ_end = start[i + 1];
    }
    return edges;
  }
  // Remove repeated edges per node, compacting in place and keeping the order they were added in: a target
  // already taken for this source carries the source's index in `taken_by` (linear, no sort per node).
  std::vector<std::uint32_t> taken_by(n, kNoIndex);
  std::uint32_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto source = static_cast<std::uint32_t>(i);
    compiled[i].succ_begin = out;
    for (std::uint32_t e = start[i]; e != start[i + 1]; ++e) {
      const std::uint32_t target = targets[e];
      if (taken_by[target] == source) {
        // Counted twice above (a weak edge not at all); still >= 1, so the root count holds.
        if (!compiled[i].condition) --compiled[target].join_init;
        continue;
      }
      taken_by[target] = source;
      targets[out++] = target;
    }
    compiled[i].succ_end = out;
  }
  targets.resize(out);
  return out;
}

// Join counters and roots in one pass (`compiled` is 20 MiB for a million nodes: one walk, not three).
std::unique_ptr<std::atomic<std::uint32_t>[]> start_joins(const std::vector<CompiledNode>& compiled,
                                                          const std::vector<std::uint8_t>& weak_target, bool conditions,
                                                          std::vector<std::uint32_t>& roots) {
  const std::size_t n = compiled.size();
  auto join = std::make_unique<std::atomic<std::uint32_t>[]>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t count = compiled[i].join_init;
    join[i].store(count, std::memory_order_relaxed);
    // A root has no incoming edge at all, strong or weak (as in Taskflow): a loop's head is not one.
    if (count == 0 && (!conditions || weak_target[i] == 0)) roots.push_back(static_cast<std::uint32_t>(i));
  }
  return join;
}

// Kahn's algorithm over strong edges (a cycle through a condition's weak edge is a loop, allowed): every node
// must be reachable in topological order, else there is a cycle. Returns the in-degrees left: all zero if none.
std::vector<std::uint32_t> indegrees_left(const std::vector<CompiledNode>& compiled,
                                          const std::vector<std::uint32_t>& targets,
                                          const std::vector<std::uint32_t>& roots, bool conditions, bool& acyclic) {
  const std::size_t n = compiled.size();
  std::vector<std::uint32_t> indegree(n);
  for (std::size_t i = 0; i < n; ++i) indegree[i] = compiled[i].join_init;
  std::vector<std::uint32_t> order;
  order.reserve(n);
  if (conditions) {
    for (std::size_t i = 0; i < n; ++i)
      if (indegree[i] == 0) order.push_back(static_cast<std::uint32_t>(i));  // roots and loop heads
  } else {
    order.assign(roots.begin(), roots.end());
  }
  for (std::size_t head = 0; head < order.size(); ++head) {
    const CompiledNode& node = compiled[order[head]];
    if (node.condition) continue;
    for (std::uint32_t e = node.succ_begin; e != node.succ_end; ++e)
      if (--indegree[targets[e]] == 0) order.push_back(targets[e]);
  }
  acyclic = order.size() == n;
  return indegree;
}

}  // namespace

// The steps, each a function above: count the edges (and see which orders they keep), find the join groups,
// place the successor entries, drop repeated edges, start the join counters and find the roots, check for a
// cycle unless the edges all go forward; then the nodes' options; then the layout replaces the old one whole.
void GraphImpl::lay_out_unchecked(const char* call) {
  const std::size_t n = bodies_.size();
  std::vector<CompiledNode> compiled(n);
  std::vector<std::uint32_t> start(n + 2, 0);  // see count_edges
  // Condition nodes (add_condition): their out-edges are weak, left out of join counters, join groups and the
  // cycle check. A graph without any takes none of the branches below on `conditions`.
  const bool conditions = !conditions_.empty();
  std::vector<std::uint8_t> weak_target;  // has an incoming weak edge: not a root even with no strong one
  if (conditions) {
    weak_target.assign(n, 0);
    for (const std::uint32_t c : conditions_) compiled[c].condition = true;
  }
  const EdgeScan scan = count_edges(edges_, conditions, compiled, start, weak_target);
  // Join groups need whole runs of edges per target (by target), members after their predecessors (forward: no
  // cycle check walks the lists) and a group index that fits beside kJoinGroupBit.
  std::vector<JoinGroup> groups;
  if (scan.by_target && scan.forward && n < kJoinGroupBit && !conditions)
    groups = find_join_groups(edges_, compiled, start, 2);
  for (std::size_t i = 2; i < n + 2; ++i) start[i] += start[i - 1];
  std::vector<std::uint32_t> targets = place_targets(edges_, compiled, groups, start);
  const std::size_t distinct_edges = finish_successor_lists(compiled, start, targets, scan.by_target, edges_.size());
  std::vector<std::uint32_t> roots;
  roots.reserve(n - scan.with_predecessors);
  auto join = start_joins(compiled, weak_target, conditions, roots);
  if (!scan.forward) {
    bool acyclic = true;
    const std::vector<std::uint32_t> indegree = indegrees_left(compiled, targets, roots, conditions, acyclic);
    if (!acyclic) {
      succ_ = std::move(targets);  // throw_cycle walks the edges; the layout stays invalid
      compiled_ = std::move(compiled);
      compiled_nodes_ = std::numeric_limits<std::size_t>::max();
      throw_cycle(indegree, call);
    }
  }

  // Options (only nodes that have some): limiters for multi-token nodes; who may run in place.
  std::vector<std::unique_ptr<inbox::Limiter>> limiters;
  std::vector<std::uint32_t> limited_nodes;
  std::uint64_t max_affinity_plus_one = 0;
  make_limiters(compiled, limiters, limited_nodes, max_affinity_plus_one, call);
  std::vector<SemaphoreNode> semaphore_nodes;
  std::vector<SemaphoreNeed> semaphore_needs;
  std::vector<Semaphore*> semaphores;
  make_semaphore_tables(compiled, semaphore_nodes, semaphore_needs, semaphores);

  std::unique_ptr<graph::ClaimCursor[]> group_cursors;
  if (!groups.empty()) group_cursors = std::make_unique<graph::ClaimCursor[]>(groups.size());

  compiled_ = std::move(compiled);
  succ_ = std::move(targets);
  join_groups_ = std::move(groups);
  group_cursors_ = std::move(group_cursors);
  distinct_edges_ = distinct_edges;
  join_ = std::move(join);
  limiters_ = std::move(limiters);
  limited_nodes_ = std::move(limited_nodes);
  roots_ = std::move(roots);
  semaphore_nodes_ = std::move(semaphore_nodes);
  semaphore_needs_ = std::move(semaphore_needs);
  semaphores_ = std::move(semaphores);
  max_affinity_plus_one_ = max_affinity_plus_one;
  compiled_nodes_ = n;
  compiled_edges_ = edges_.size();
}

void GraphImpl::throw_cycle(const std::vector<std::uint32_t>& indegree_left, const char* call) const {
  // Every node left over has a predecessor that is left over too: walking predecessors must revisit a node,
  // and the walk from that node back to itself is a cycle.
  const std::size_t n = bodies_.size();
  std::vector<std::uint32_t> some_predecessor(n, kNoIndex);
  for (std::size_t from = 0; from < n; ++from) {
    if (indegree_left[from] == 0 || compiled_[from].condition) continue;  // weak edges are in no cycle refused
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
  std::string message = call;
  message += ": the graph has a cycle: ";
  for (const std::uint32_t node : cycle) {
    names.push_back(name(node));
    message += names.back();
    message += " -> ";
  }
  names.push_back(name(cycle.front()));
  message += names.back();
  throw cycle_error(message, std::move(names));
}

}  // namespace weft::graph
