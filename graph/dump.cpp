// TaskGraph::dump: the graph as Graphviz DOT, for looking at what was built.
#include <algorithm>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "graph/graph_impl.hpp"

namespace weft::graph {
namespace {

// Text inside a DOT string literal: quotes and backslashes escaped.
std::string escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string describe(const NodeOptions& options) {
  std::string out;
  auto add = [&out](const std::string& item) {
    out += out.empty() ? "" : ", ";
    out += item;
  };
  if (options.priority == Priority::High) add("priority High");
  if (options.priority == Priority::Low) add("priority Low");
  if (options.affinity) add("affinity " + std::to_string(*options.affinity));
  if (options.concurrency != kUnlimited) add("concurrency " + std::to_string(options.concurrency));
  if (options.capacity != kUnbounded) add("capacity " + std::to_string(options.capacity));
  if (options.overflow == Overflow::Drop) add("Drop");
  if (options.overflow == Overflow::Fail) add("Fail");
  if (options.tokens != 1) add("tokens " + std::to_string(options.tokens));
  if (!options.semaphores.empty()) {
    const std::size_t units = options.semaphores.size();
    add(std::to_string(units) + (units == 1 ? " semaphore unit" : " semaphore units"));
  }
  return out;
}

}  // namespace

void GraphImpl::dump(std::ostream& out) const {
  out << "digraph weft {\n";
  for (std::uint32_t i = 0; i < size(); ++i) {
    std::string label = escaped(name(i));
    const std::string details = describe(options(i));
    if (!details.empty()) label += "\\n" + escaped(details);  // DOT's line break inside a label
    // A module node (add_graph): a 3-D box saying how many nodes the graph it runs has.
    const auto module = std::lower_bound(modules_.begin(), modules_.end(), i,
                                         [](const auto& entry, std::uint32_t index) { return entry.first < index; });
    const bool is_module = module != modules_.end() && module->first == i;
    if (is_module) {
      const std::size_t nodes = module->second->size();
      label += "\\nmodule: " + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
    }
    // A condition node (add_condition): a diamond, its weak out-edges dashed.
    const bool is_condition = std::binary_search(conditions_.begin(), conditions_.end(), i);
    // A placeholder still without a body (TaskGraph::placeholder, before set_work): dashed, and said so.
    const bool is_empty = !bodies_[i];
    if (is_empty) label += "\\nplaceholder: no body yet";
    out << "  n" << i << " [label=\"" << label << "\"" << (is_module ? ", shape=box3d" : "")
        << (is_condition ? ", shape=diamond" : "") << (is_empty ? ", style=dashed" : "") << "];\n";
  }
  for (const auto& [from, to] : edges_) {
    const bool weak = std::binary_search(conditions_.begin(), conditions_.end(), from);
    out << "  n" << from << " -> n" << to << (weak ? " [style=dashed]" : "") << ";\n";
  }
  if (retained_ != nullptr) dump_retained(out);
  out << "}\n";
}

void GraphImpl::dump_retained(std::ostream& out) const {
  RetainedSubflows& retained = *retained_;
  const std::lock_guard lock(retained.lock);
  // Child ids by node, in spawn order: one cluster per node that spawned any.
  std::vector<std::uint32_t> order(retained.children.size());
  for (std::uint32_t id = 0; id < order.size(); ++id) order[id] = id;
  std::stable_sort(order.begin(), order.end(), [&retained](std::uint32_t a, std::uint32_t b) {
    return retained.children[a].node < retained.children[b].node;
  });
  for (std::size_t first = 0; first < order.size();) {
    const std::uint32_t node = retained.children[order[first]].node;
    out << "  subgraph cluster_n" << node << " {\n    label=\"" << escaped(name(node)) << "\";\n    n" << node << ";\n";
    std::size_t k = 0;
    for (; first + k < order.size() && retained.children[order[first + k]].node == node; ++k) {
      const std::uint32_t id = order[first + k];
      const std::string& child = retained.children[id].name;
      out << "    c" << id << " [label=\"" << (child.empty() ? "child " + std::to_string(k) : escaped(child))
          << "\"];\n";
    }
    for (const auto& [from, to] : retained.edges) {
      if (retained.children[to].node == node) out << "    c" << from << " -> c" << to << ";\n";
    }
    out << "  }\n";
    first += k;
  }
}

}  // namespace weft::graph
