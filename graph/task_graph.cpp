// weft::TaskGraph: the public handle over GraphImpl. A moved-from graph refuses every call but destruction and
// assignment with a clear error.
#include "weft/task_graph.hpp"

#include <stdexcept>
#include <string>

#include "graph/graph_impl.hpp"
#include "graph/run_state.hpp"
#include "weft/errors.hpp"

namespace weft {
namespace {

[[noreturn]] void throw_moved_from(const char* what) {
  std::string message = "weft::TaskGraph::";
  message += what;
  message += ": the graph was moved from";
  throw std::logic_error(message);
}

}  // namespace

TaskGraph::TaskGraph() : impl_(std::make_unique<graph::GraphImpl>()) {}
TaskGraph::~TaskGraph() = default;
TaskGraph::TaskGraph(TaskGraph&& other) noexcept = default;
// noexcept: a pointer move, and the old graph's destructor (noexcept, as destructors are) waits for its run.
TaskGraph& TaskGraph::operator=(TaskGraph&& other) noexcept {
  if (this != &other) impl_ = std::move(other.impl_);
  return *this;
}

Node TaskGraph::add_node_body(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller) {
  if (!impl_) throw_moved_from("add_node");
  return impl_->add_node(std::move(body), std::move(options), caller);
}

Node TaskGraph::placeholder(NodeOptions options) {
  if (!impl_) throw_moved_from("placeholder");
  return impl_->add_placeholder(std::move(options));
}

void TaskGraph::set_work_body(Node node, detail::NodeBody&& body) {
  if (!impl_) throw_moved_from("set_work");
  impl_->set_work(node, std::move(body));
}

bool TaskGraph::has_work(Node node) const {
  if (!impl_) throw_moved_from("has_work");
  return impl_->has_work(node);
}

std::size_t TaskGraph::placeholders_left() const noexcept { return impl_ ? impl_->placeholders_left() : 0; }

Node TaskGraph::add_condition_body(detail::NodeBody&& body, NodeOptions&& options) {
  if (!impl_) throw_moved_from("add_condition");
  return impl_->add_condition(std::move(body), std::move(options));
}

Node TaskGraph::add_graph(TaskGraph& inner, NodeOptions options) {
  if (!impl_) throw_moved_from("add_graph");
  const std::string node = options.name.empty() ? "node " + std::to_string(impl_->size()) : options.name;
  if (!inner.impl_)
    throw invalid_graph("weft::TaskGraph::add_graph: `inner` (for module node '" + node + "') was moved from");
  if (inner.impl_ == impl_)
    throw invalid_graph("weft::TaskGraph::add_graph: `inner` (for module node '" + node +
                        "') is this graph itself: a graph cannot be a node of itself");
  return impl_->add_module(*inner.impl_, std::move(options));
}

void TaskGraph::add_edge(Node from, Node to) {
  if (!impl_) throw_moved_from("add_edge");
  impl_->add_edge(from, to);
}

void TaskGraph::add_edges(Node from, std::initializer_list<Node> to) {
  if (!impl_) throw_moved_from("add_edges");
  impl_->add_edges(from, to);
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

// TaskGraph's own runs queue behind a run in flight (GraphImpl::run's `queue`); the layers over it do not.
Run TaskGraph::run(Pool& pool) {
  if (!impl_) throw_moved_from("run");
  return impl_->run(pool, detail::Caller{"weft::TaskGraph::run"}, nullptr, nullptr, {}, true);
}

Run TaskGraph::run_n(Pool& pool, std::size_t n) { return run_n(pool, n, RunOptions{}); }

Run TaskGraph::run_n(Pool& pool, std::size_t n, RunOptions options) {
  if (!impl_) throw_moved_from("run_n");
  auto repeat = std::make_unique<graph::RunRepeat>();
  repeat->remaining = n;
  return impl_->run(pool, detail::Caller{"weft::TaskGraph::run_n"}, nullptr, std::move(repeat), options, true);
}

Run TaskGraph::run_until_erased(Pool& pool, detail::RunPredicate&& predicate, const RunOptions& options) {
  if (!impl_) throw_moved_from("run_until");
  auto repeat = std::make_unique<graph::RunRepeat>();
  repeat->until = std::move(predicate);
  return impl_->run(pool, detail::Caller{"weft::TaskGraph::run_until"}, nullptr, std::move(repeat), options, true);
}

Run TaskGraph::run(Pool& pool, RunOptions options) {
  if (!impl_) throw_moved_from("run");
  return impl_->run(pool, detail::Caller{"weft::TaskGraph::run"}, nullptr, nullptr, options, true);
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

namespace detail {

Run GraphAccess::run(TaskGraph& graph, Pool& pool, const Caller& caller) {
  if (!graph.impl_) throw_moved_from("run");
  return graph.impl_->run(pool, caller);
}

Run GraphAccess::run(TaskGraph& graph, Pool& pool, const Caller& caller, std::atomic<void*>& live,
                     const RunOptions& options) {
  if (!graph.impl_) throw_moved_from("run");
  return graph.impl_->run(pool, caller, &live, nullptr, options);
}

bool GraphAccess::attach_waiter(const Run& run, CoroWaiter& waiter, std::shared_ptr<const void> keep) {
  return run.state_->attach_waiter(waiter, std::move(keep));
}

Pool& GraphAccess::pool_of(const Run& run) noexcept { return run.state_->pool(); }

void GraphAccess::cancel_live(void* live) noexcept { static_cast<graph::RunState*>(live)->cancel(); }

RunStatus GraphAccess::wait(Run& run, const Caller& caller, bool spin_outside) {
  if (run.state_ != nullptr && run.state_->is_caller_inside()) {
    std::string message = caller.call;
    message += ": called from inside one of the run's own ";
    message += caller.noun;
    message += "s (or a subflow child of one); the run cannot end while it waits";
    throw would_deadlock(message);
  }
  if (!spin_outside && run.state_ != nullptr) return run.state_->wait(false);
  return run.wait();
}

}  // namespace detail
}  // namespace weft
