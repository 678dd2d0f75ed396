// Which nodes compile() puts in a join group (graph/graph_impl.hpp, JoinGroup), read off the layout itself:
// consecutive nodes with the same two or more predecessors, and only when the edges came by target and forward.
// The run-time side (every member starts once, after all its predecessors) is the differential test's and the
// layered shape test's; this one makes sure the groups they rely on are the ones intended.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/graph_impl.hpp"
#include "weft/task_graph.hpp"

namespace {

using weft::graph::GraphImpl;
using weft::graph::JoinGroup;

struct Noop {
  void operator()() const noexcept {}
};

class Layout {
 public:
  explicit Layout(std::size_t nodes) {
    for (std::size_t i = 0; i < nodes; ++i) {
      nodes_.push_back(graph_.add_node(weft::detail::NodeBody(weft::detail::NodeBodyAdapter<Noop>(Noop{})),
                                       weft::NodeOptions{}, weft::detail::Caller{"weft::TaskGraph::add_node"}));
    }
  }
  Layout& edge(std::size_t from, std::size_t to) {
    graph_.add_edge(nodes_[from], nodes_[to]);
    return *this;
  }
  // The edges into `to` from each of `from`, in that order.
  Layout& into(std::size_t to, std::initializer_list<std::size_t> from) {
    for (const std::size_t f : from) edge(f, to);
    return *this;
  }
  // The groups as [first, end) pairs, after compiling.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> groups() {
    graph_.compile();
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    for (std::uint32_t g = 0; g < graph_.join_group_count(); ++g) {
      const JoinGroup& group = graph_.join_group(g);
      out.emplace_back(group.first, group.end);
    }
    return out;
  }
  // Entries in all successor lists: one per edge, less the followers' (a group has one entry per predecessor).
  std::size_t successor_entries() {
    graph_.compile();
    std::size_t entries = 0;
    for (std::uint32_t i = 0; i < graph_.size(); ++i) entries += graph_.node(i).succ_end - graph_.node(i).succ_begin;
    return entries;
  }
  GraphImpl& graph() { return graph_; }

 private:
  GraphImpl graph_;
  std::vector<weft::Node> nodes_;
};

using Groups = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

TEST_CASE("layers joined all-to-all: one group per layer after the first") {
  const std::size_t width = 4, depth = 3;
  Layout layout(width * depth);
  for (std::size_t l = 1; l < depth; ++l) {
    for (std::size_t k = 0; k < width; ++k) {
      for (std::size_t p = 0; p < width; ++p) layout.edge((l - 1) * width + p, l * width + k);
    }
  }
  CHECK(layout.groups() == Groups{{4, 8}, {8, 12}});
  CHECK(layout.successor_entries() == (depth - 1) * width);  // one per predecessor and group
  CHECK(layout.graph().edge_count() == (depth - 1) * width * width);
}

TEST_CASE("adjacent groups with different predecessors stay apart; a group may have two members") {
  Layout layout(7);
  layout.into(3, {0, 1}).into(4, {0, 1}).into(5, {0, 2}).into(6, {0, 2});
  CHECK(layout.groups() == Groups{{3, 5}, {5, 7}});
  CHECK(layout.successor_entries() == 4);
}

TEST_CASE("a node with other predecessors in between ends a group") {
  Layout layout(8);
  // 3, 4 share {0, 1}; 5 has {0} only (one predecessor: never grouped); 6, 7 share {0, 1} again.
  layout.into(3, {0, 1}).into(4, {0, 1}).into(5, {0}).into(6, {0, 1}).into(7, {0, 1});
  CHECK(layout.groups() == Groups{{3, 5}, {6, 8}});
}

TEST_CASE("no groups: different predecessors, a wavefront, single predecessors") {
  SUBCASE("same count, different sources") {
    Layout layout(5);
    layout.into(3, {0, 1}).into(4, {0, 2});
    CHECK(layout.groups().empty());
  }
  SUBCASE("wavefront 3 x 3") {
    Layout layout(9);
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t j = 0; j < 3; ++j) {
        if (i > 0) layout.edge((i - 1) * 3 + j, i * 3 + j);
        if (j > 0) layout.edge(i * 3 + j - 1, i * 3 + j);
      }
    }
    CHECK(layout.groups().empty());
  }
  SUBCASE("a chain") {
    Layout layout(4);
    layout.edge(0, 1).edge(1, 2).edge(2, 3);
    CHECK(layout.groups().empty());
  }
}

TEST_CASE("edges not added by target, or going backwards, give no groups (and the same edges)") {
  SUBCASE("predecessors added in descending order") {
    Layout layout(5);
    layout.into(3, {1, 0}).into(4, {1, 0});
    CHECK(layout.groups().empty());
    CHECK(layout.successor_entries() == 4);
  }
  SUBCASE("a later edge into an earlier node") {
    Layout layout(5);
    layout.into(3, {0, 1}).into(4, {0, 1}).edge(2, 3);
    CHECK(layout.groups().empty());
    CHECK(layout.graph().edge_count() == 5);
  }
  SUBCASE("an edge from a later node (acyclic, not forward)") {
    Layout layout(5);
    layout.into(1, {4}).into(2, {0, 1}).into(3, {0, 1});
    CHECK(layout.groups().empty());
  }
  SUBCASE("groups go away when the graph grows out of order, and come back in a new graph") {
    Layout layout(5);
    layout.into(3, {0, 1}).into(4, {0, 1});
    CHECK(layout.groups() == Groups{{3, 5}});
    layout.edge(2, 3);  // out of order now: recompiled without groups
    CHECK(layout.groups().empty());
  }
}

}  // namespace
