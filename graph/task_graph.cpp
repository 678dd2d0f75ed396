// weft::TaskGraph: the public handle over GraphImpl. A moved-from graph refuses every call but destruction and
// assignment with a clear error.
#include "weft/task_graph.hpp"

#include <stdexcept>
#include <string>

#include "graph/graph_impl.hpp"
#include "scheduler/stack_guard.hpp"

namespace weft {
namespace {

[[noreturn]] void throw_moved_from(const char* what) {
  std::string message = "weft::TaskGraph::";
  message += what;
  message += ": the graph was moved from";
  throw std::logic_error(message);
}

}  // namespace

TaskGraph::TaskGraph() : impl_(std::make_unique<detail::GraphImpl>()) {}
TaskGraph::~TaskGraph() = default;
TaskGraph::TaskGraph(TaskGraph&& other) noexcept = default;
TaskGraph& TaskGraph::operator=(TaskGraph&& other) {
  if (this != &other) impl_ = std::move(other.impl_);  // the old graph's destructor waits for its run
  return *this;
}

Node TaskGraph::add_node_body(detail::NodeBody&& body, NodeOptions&& options) {
  if (!impl_) throw_moved_from("add_node");
  return impl_->add_node(std::move(body), std::move(options));
}

void TaskGraph::add_edge(Node from, Node to) {
  if (!impl_) throw_moved_from("add_edge");
  impl_->add_edge(from, to);
}

void TaskGraph::add_edges(Node from, std::initializer_list<Node> to) {
  if (!impl_) throw_moved_from("add_edges");
  for (const Node node : to) impl_->add_edge(from, node);
}

void TaskGraph::dump(std::ostream& out) const {
  if (!impl_) throw_moved_from("dump");
  impl_->dump(out);
}

void TaskGraph::reserve(std::size_t nodes, std::size_t edges) {
  if (!impl_) throw_moved_from("reserve");
  impl_->reserve(nodes, edges);
}

void TaskGraph::compile() {
  if (!impl_) throw_moved_from("compile");
  impl_->compile();
}

Run TaskGraph::run(Pool& pool) {
  if (!impl_) throw_moved_from("run");
  // Refused before anything starts: a run started here would be waited for here too (by Run::wait or the
  // Run's destructor), and that wait runs its nodes on this very stack.
  sched::require_stack("weft::TaskGraph::run (or TaskScope::run)");
  return impl_->run(pool);
}

std::size_t TaskGraph::size() const noexcept { return impl_ ? impl_->size() : 0; }

std::size_t TaskGraph::edge_count() const {
  if (!impl_) throw_moved_from("edge_count");
  return impl_->edge_count();
}

std::string TaskGraph::name(Node node) const {
  if (!impl_) throw_moved_from("name");
  return impl_->name(node);
}

bool TaskGraph::running() const noexcept { return impl_ && impl_->running(); }

}  // namespace weft
