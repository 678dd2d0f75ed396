// Building a TaskGraph and starting its runs: validation with errors that name the node, and one run at a time.
#include "graph/graph_impl.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/fiber/stack_guard.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/semaphore.hpp"

namespace weft::graph {
namespace {

std::atomic<std::uint64_t> next_graph_id{1};

[[nodiscard]] bool has_default_options(const NodeOptions& options) noexcept {
  return options.name.empty() && options.priority == Priority::Normal && !options.affinity &&
         options.concurrency == kUnlimited && options.capacity == kUnbounded && options.overflow == Overflow::Block &&
         options.tokens == 1 && options.semaphores.empty();
}

// "<call>: NodeOptions::<option> = <value> for <noun> '<name>': <rule>".
[[noreturn]] void throw_option(const detail::Caller& caller, const std::string& node, const char* option,
                               const std::string& value, const std::string& rule) {
  std::string message = caller.call;
  message += ": NodeOptions::";
  message += option;
  message += " = ";
  message += value;
  message += " for ";
  message += caller.noun;
  message += " '";
  message += node;
  message += "': ";
  message += rule;
  throw invalid_option(message);
}

// A module node's body (TaskGraph::add_graph): 24 bytes, inline in the NodeBody.
class ModuleBody {
 public:
  ModuleBody(GraphImpl& outer, GraphImpl& inner, std::uint32_t index) noexcept
      : outer_(&outer), inner_(&inner), index_(index) {}
  void operator()(detail::NodeCall& call) { outer_->run_module(*inner_, index_, call); }

 private:
  GraphImpl* outer_;  // GraphImpl does not move (TaskGraph holds it by unique_ptr): these stay valid
  GraphImpl* inner_;
  std::uint32_t index_;
};

}  // namespace

const NodeOptions GraphImpl::kDefaultOptions{};

void GraphImpl::require_one_token(const NodeOptions& options, const detail::Caller& caller, const char* rule) const {
  if (options.tokens <= 1) return;  // 0 is refused with the other options, by add_node
  const std::string node = options.name.empty() ? "node " + std::to_string(size()) : options.name;
  throw_option(caller, node, "tokens", std::to_string(options.tokens), rule);
}

Node GraphImpl::add_condition(detail::NodeBody&& body, NodeOptions&& options) {
  const detail::Caller caller{"weft::TaskGraph::add_condition"};
  require_idle("add_condition");
  require_one_token(options, caller, "a condition node picks one successor per execution: must be 1");
  conditions_.reserve(conditions_.size() + 1);  // so that recording it below cannot throw after the node exists
  const Node node = add_node(std::move(body), std::move(options), caller);
  conditions_.push_back(node.index());
  return node;
}

Node GraphImpl::add_module(GraphImpl& inner, NodeOptions&& options) {
  const detail::Caller caller{"weft::TaskGraph::add_graph"};
  require_idle("add_graph");
  // One module node runs its graph once at a time; tokens > 1 would start it `tokens` times at once.
  require_one_token(options, caller,
                    "a module node runs its graph once per execution and a graph runs once at a time: must be 1");
  modules_.reserve(modules_.size() + 1);  // so that recording it below cannot throw after the node exists
  const Node node = add_node(detail::NodeBody(ModuleBody(*this, inner, static_cast<std::uint32_t>(size()))),
                             std::move(options), caller);
  modules_.emplace_back(node.index(), &inner);
  return node;
}

void GraphImpl::run_module(GraphImpl& inner, std::uint32_t index, detail::NodeCall& call) {
  RunState& outer_run = detail::SubflowAccess::run(call.subflow);
  Run run;
  try {
    run = inner.run(outer_run.pool(), detail::Caller{"weft::TaskGraph::add_graph"});
  } catch (const graph_busy&) {
    // Refused at once, never waited for: a composition cycle or two module nodes of one graph cannot hang.
    std::string message = "weft::TaskGraph: module node '";
    message += name(index);
    message +=
        "' cannot run its graph: a run of that graph is in flight (a graph runs once at a time: two module "
        "nodes of one graph that may run at once, a graph composed into itself through another, or a run "
        "of it started elsewhere)";
    throw graph_busy(message);
  }
  RunState& inner_run = *run.state_;
  outer_run.attach_child(inner_run);  // cancelling the outer run cancels this one
  struct Detach {
    RunState& outer;
    RunState& inner;
    ~Detach() { outer.detach_child(inner); }
  } detach{outer_run, inner_run};
  // Through the scheduler's one wait point: on a worker, it runs other tasks (the inner run's among them).
  (void)run.wait();  // rethrows the inner run's first exception: it fails this node
}

GraphImpl::GraphImpl() : id_(next_graph_id.fetch_add(1, std::memory_order_relaxed)) {}

GraphImpl::~GraphImpl() { wait_for_run_end(); }

void GraphImpl::wait_for_run_end() noexcept {
  std::shared_ptr<RunState> current;
  std::shared_ptr<RunState> last;
  {
    // Under the lock: a hand-over writes current_ under it (no run() is in progress while the graph is being
    // destroyed or assigned, so nothing else writes it). The queued runs end in order, the last one last:
    // waiting for it waits for all of them.
    const std::lock_guard<std::mutex> hold(queue_lock_);
    current = current_;
    if (!queue_.empty()) last = queue_.back();
  }
  if (current == nullptr || (current->done() && last == nullptr)) return;
  if (!current->done() && current->is_caller_inside()) {
    std::fputs(
        "weft::TaskGraph destroyed from inside one of its own running nodes (or their subflow children): "
        "the run cannot end\n",
        stderr);
    std::terminate();
  }
  (last != nullptr ? last : current)->wait_quietly();
}

void GraphImpl::throw_busy(const char* what) const {
  std::string message = "weft::TaskGraph::";
  message += what;
  message += ": a run of this graph is in flight; wait for it to end first";
  throw graph_busy(message);
}

std::string GraphImpl::describe_foreign(Node node) const {
  // A handle of another graph carries only its index there: this graph cannot know the node's name.
  if (!node.valid()) return "an empty weft::Node (default-constructed), of no graph";
  std::string text = "node " + std::to_string(node.index());
  if (node.graph_ != id_) return text + " of another graph";
  return text + ", past this graph's " + std::to_string(bodies_.size()) + " nodes";
}

void GraphImpl::throw_bad_edge(Node from, Node to, const char* what, const std::size_t* position) const {
  std::string message = "weft::TaskGraph::";
  message += what;
  message += "(from, to): ";
  const std::string to_param = position == nullptr ? "`to`" : "`to[" + std::to_string(*position) + "]`";
  if (!owns(from) || !owns(to)) {
    // The first bad end, described; the other end by name if it is one of ours, so the edge can be found.
    const bool from_bad = !owns(from);
    message += from_bad ? "`from`" : to_param;
    message += " is ";
    message += describe_foreign(from_bad ? from : to);
    message += ", not a node of this graph";
    if (from_bad && owns(to)) message += " (" + to_param + " is '" + name(to.index()) + "')";
    if (!from_bad) message += " (`from` is '" + name(from.index()) + "')";
  } else {
    message += "an edge from node '";
    message += name(from.index());
    message += "' to itself";
    if (position != nullptr) message += " (" + to_param + ")";
  }
  throw invalid_graph(message);
}

namespace {

// NodeOptions::semaphores: no null entry, no more units of one semaphore than its count, one token.
void validate_semaphores(const NodeOptions& options, const std::string& node, const detail::Caller& caller) {
  const std::vector<Semaphore*>& list = options.semaphores;
  if (list.empty()) return;
  if (options.tokens > 1) {
    throw_option(caller, node, "semaphores",
                 "a list of " + std::to_string(list.size()) + (list.size() == 1 ? " entry" : " entries"),
                 "not allowed with tokens = " + std::to_string(options.tokens) +
                     ": a node with semaphores runs one token per activation (use tokens = 1, e.g. one node or "
                     "a TaskScope job per unit of work, or NodeOptions::concurrency to limit the node alone)");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string entry = "semaphores[" + std::to_string(i) + "]";
    if (list[i] == nullptr) throw_option(caller, node, entry.c_str(), "null", "must point to a weft::Semaphore");
    std::size_t units = 0;
    std::size_t first = i;
    for (std::size_t j = 0; j <= i; ++j) {
      if (list[j] != list[i]) continue;
      if (units++ == 0) first = j;
    }
    if (units > list[i]->count()) {
      std::string rule = "the semaphore of semaphores[" + std::to_string(first) + "] (count ";
      rule += std::to_string(list[i]->count()) + ") is listed " + std::to_string(units) + " times up to here: ";
      rule += "a node taking more units than a semaphore's count could never start";
      throw_option(caller, node, entry.c_str(), "the same weft::Semaphore again", rule);
    }
  }
}

}  // namespace

void GraphImpl::validate(const NodeOptions& options, std::uint32_t index, const detail::Caller& caller) const {
  const std::string node = options.name.empty() ? "node " + std::to_string(index) : options.name;
  if (options.concurrency == 0)
    throw_option(caller, node, "concurrency", "0", "must be at least 1 (or weft::kUnlimited)");
  if (options.capacity == 0) throw_option(caller, node, "capacity", "0", "must be at least 1 (or weft::kUnbounded)");
  if (options.tokens == 0) throw_option(caller, node, "tokens", "0", "must be at least 1");
  if (options.priority > Priority::Low)
    throw_option(caller, node, "priority", std::to_string(static_cast<unsigned>(options.priority)),
                 "not a weft::Priority (High, Normal or Low)");
  if (options.overflow > Overflow::Fail)
    throw_option(caller, node, "overflow", std::to_string(static_cast<unsigned>(options.overflow)),
                 "not a weft::Overflow (Block, Drop or Fail)");
  // An inbox that can overflow holds exactly `capacity` tokens, allocated at compile time; any other takes a
  // few thousand slots at most, whatever its capacity (graph/inbox/limiter.hpp).
  if (inbox::Limiter::may_overflow(options) && options.capacity > kMaxInboxCapacity) {
    std::string rule = "at most weft::kMaxInboxCapacity = " + std::to_string(kMaxInboxCapacity);
    rule += options.overflow == Overflow::Drop ? " under Overflow::Drop" : " under Overflow::Fail";
    rule += " when tokens (" + std::to_string(options.tokens) + ") exceed it: such an inbox holds that many";
    rule += " tokens, 16 bytes each (use Overflow::Block, or a smaller capacity)";
    throw_option(caller, node, "capacity", std::to_string(options.capacity), rule);
  }
  validate_semaphores(options, node, caller);
}

Node GraphImpl::add_node(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller) {
  require_idle("add_node");
  if (!body) throw std::invalid_argument(std::string(caller.call) + ": the callable is empty (a null function)");
  return append(std::move(body), std::move(options), caller);
}

Node GraphImpl::add_placeholder(NodeOptions&& options) {
  require_idle("placeholder");
  const Node node = append(detail::NodeBody(), std::move(options), detail::Caller{"weft::TaskGraph::placeholder"});
  ++placeholders_left_;
  return node;
}

void GraphImpl::set_work(Node node, detail::NodeBody&& body) {
  require_idle("set_work");
  if (!owns(node)) [[unlikely]]
    throw invalid_graph("weft::TaskGraph::set_work(node, f): `node` is " + describe_foreign(node) +
                        ", not a node of this graph");
  detail::NodeBody& slot = bodies_[node.index()];
  if (slot) [[unlikely]] {
    throw invalid_graph("weft::TaskGraph::set_work(node, f): node '" + name(node.index()) +
                        "' has a body already (from add_node, add_condition, add_graph or an earlier set_work): "
                        "only a placeholder takes one, once");
  }
  if (!body) throw std::invalid_argument("weft::TaskGraph::set_work: the callable is empty (a null function)");
  slot = std::move(body);
  --placeholders_left_;
}

bool GraphImpl::has_work(Node node) const {
  if (!owns(node)) [[unlikely]]
    throw invalid_graph("weft::TaskGraph::has_work(node): `node` is " + describe_foreign(node) +
                        ", not a node of this graph");
  return static_cast<bool>(bodies_[node.index()]);
}

void GraphImpl::throw_missing_body(const char* call) const {
  std::uint32_t first = 0;
  while (first < size() && bodies_[first]) ++first;
  std::string message = call;
  message += ": placeholder '";
  message += name(first);
  message += "' has no body: give it one with weft::TaskGraph::set_work before the graph runs";
  if (placeholders_left_ > 1) {
    message += " (";
    message += std::to_string(placeholders_left_ - 1);
    message += placeholders_left_ == 2 ? " other placeholder has none either)"
                                       : " other placeholders have none either)";
  }
  throw invalid_graph(message);
}

Node GraphImpl::append(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller) {
  if (bodies_.size() >= kMaxNodes) [[unlikely]]
    throw_too_many(caller.call, bodies_.size() + 1, "nodes", kMaxNodes);
  const auto index = static_cast<std::uint32_t>(bodies_.size());
  const bool plain = has_default_options(options);
  if (!plain) validate(options, index, caller);
  if (!plain) {
    options_.push_back(std::move(options));
    try {
      bodies_.emplace_back(std::move(body));
    } catch (...) {
      options_.pop_back();
      throw;
    }
    options_index_.push_back(static_cast<std::uint32_t>(options_.size() - 1));
  } else {
    bodies_.emplace_back(std::move(body));
    options_index_.push_back(kNoIndex);
  }
  return Node(index, id_);
}

void GraphImpl::add_edge(Node from, Node to) {
  require_idle("add_edge");
  require_edge(from, to, "add_edge", nullptr);
  // The growth path is a tail call out of line: inlined, its calls made this (otherwise leaf) function save
  // six registers on every edge.
  if (edges_.size() == edges_.capacity()) [[unlikely]]
    return add_edge_growing(from.index(), to.index());
  record_edge(from.index(), to.index());
}

void GraphImpl::add_edges(Node from, std::initializer_list<Node> to) {
  require_idle("add_edges");
  std::size_t position = 0;
  for (const Node node : to) {
    require_edge(from, node, "add_edges", &position);
    ++position;
  }
  if (to.size() > kMaxEdges - edges_.size())
    throw_too_many("weft::TaskGraph::add_edges", edges_.size() + to.size(), "edges", kMaxEdges);
  if (edges_.capacity() - edges_.size() < to.size()) {
    const std::size_t grown = std::max({edges_.size() + to.size(), std::size_t{16}, 2 * edges_.capacity()});
    edges_.reserve(std::min(kMaxEdges, grown));
  }
  for (const Node node : to) record_edge(from.index(), node.index());
}

void GraphImpl::add_edge_growing(std::uint32_t from, std::uint32_t to) {
  // The layout indexes edges with 32 bits: growth stops at kMaxEdges, so only this path needs the check.
  if (edges_.size() >= kMaxEdges) throw_too_many("weft::TaskGraph::add_edge", edges_.size() + 1, "edges", kMaxEdges);
  edges_.reserve(std::min(kMaxEdges, std::max<std::size_t>(16, 2 * edges_.capacity())));
  record_edge(from, to);
}

void GraphImpl::throw_too_many(const std::string& call, std::size_t count, const char* items, std::size_t limit) {
  std::string message = call;
  message += ": ";
  message += std::to_string(count);
  message += ' ';
  message += items;
  message += "; a graph holds at most ";
  message += std::to_string(limit);
  throw std::length_error(message);
}

void GraphImpl::reserve(std::size_t nodes, std::size_t edges) {
  require_idle("reserve");
  // Both checked before anything is reserved: a refused call changes nothing.
  if (nodes > kMaxNodes) throw_too_many("weft::TaskGraph::reserve", nodes, "nodes", kMaxNodes);
  if (edges > kMaxEdges) throw_too_many("weft::TaskGraph::reserve", edges, "edges", kMaxEdges);
  bodies_.reserve(nodes);
  options_index_.reserve(nodes);
  edges_.reserve(edges);
}

std::string GraphImpl::name(std::uint32_t index) const {
  const NodeOptions& options = this->options(index);
  if (!options.name.empty()) return options.name;
  return "node " + std::to_string(index);
}

std::string GraphImpl::name(Node node) const {
  if (!owns(node)) [[unlikely]]
    throw invalid_graph("weft::TaskGraph::name(node): `node` is " + describe_foreign(node) +
                        ", not a node of this graph");
  return name(node.index());
}

std::size_t GraphImpl::edge_count() {
  if (!compiled_valid()) {
    auto sorted = edges_;
    std::sort(sorted.begin(), sorted.end());
    return static_cast<std::size_t>(std::unique(sorted.begin(), sorted.end()) - sorted.begin());
  }
  return distinct_edges_;
}

void GraphImpl::compile() {
  require_idle("compile");
  require_bodies("weft::TaskGraph::compile");
  if (!compiled_valid()) lay_out("weft::TaskGraph::compile");
}

inline std::shared_ptr<RunState> GraphImpl::make_run(Pool& pool, const detail::Caller& caller,
                                                     std::unique_ptr<RunRepeat> repeat, const RunOptions& options) {
  require_bodies(caller.call);
  // Compiled by now: by run() (under queue_lock_) before it calls this, or found so by enqueue (under the lock).
  if (max_affinity_plus_one_ > pool.size()) {
    for (std::uint32_t i = 0; i < size(); ++i) {
      const NodeOptions& options = this->options(i);
      if (options.affinity && *options.affinity >= pool.size()) {
        std::string rule = "the pool has ";
        rule += std::to_string(pool.size());
        rule += " workers";
        throw_option(caller, name(i), "affinity", std::to_string(*options.affinity), rule);
      }
    }
  }
  if (options.on_error > ErrorPolicy::KeepGoing) {
    throw invalid_option(std::string(caller.call) +
                         ": RunOptions::on_error = " + std::to_string(static_cast<unsigned>(options.on_error)) +
                         ": not a weft::ErrorPolicy (CancelRun or KeepGoing)");
  }
  auto state = std::make_shared<RunState>(*this, pool, options);
  state->set_repeat(std::move(repeat));
  state->set_noun(caller.noun);
  return state;
}

Run GraphImpl::run(Pool& pool, const detail::Caller& caller, std::atomic<void*>* live,
                   std::unique_ptr<RunRepeat> repeat, const RunOptions& options, bool queue) {
  // Refused before anything starts (TaskGraph::run, TaskScope::run, parallel_for alike): a run started here would
  // be waited for here too (by Run::wait or the Run's destructor), and that wait runs its nodes on this stack.
  fiber::require_stack(caller.call);
  // Nothing queued, and the graph claimed: the lone run's path, as before there was a queue. acquire on queued_:
  // a run queued before this call (it happened-before) is seen, and this one goes behind it. acq_rel: claims the
  // graph; pairs with run_ended()'s release, so this run sees everything the last one did.
  if (queued_.load(std::memory_order_acquire) != 0 || running_.exchange(true, std::memory_order_acq_rel)) {
    if (queue) return enqueue(pool, caller, std::move(repeat), options);
    throw graph_busy(std::string(caller.call) + ": a run of this graph is in flight; wait for it to end first");
  }
  std::shared_ptr<RunState> state;
  try {
    if (!compiled_valid()) [[unlikely]] {
      require_bodies(caller.call);  // a placeholder left is reported before a cycle, as compile() does
      // Under the lock: a run queued meanwhile (enqueue) reads the layout under it, from another thread.
      const std::lock_guard<std::mutex> hold(queue_lock_);
      lay_out(caller.call);
    }
    state = make_run(pool, caller, std::move(repeat), options);
    for (const auto& limiter : limiters_) limiter->dropped.store(0, std::memory_order_relaxed);
  } catch (...) {
    // Hands the graph to a run queued meanwhile, if any.
    if (run_ended()) RunState::start_queued(take_handed());
    throw;
  }
  current_ = state;
  // seq_cst: pairs with TaskScope::cancel() from a node of this run (which it happens before anyway).
  if (live != nullptr) live->store(state.get(), std::memory_order_seq_cst);
  if (!state->start(state))
    throw pool_closed(std::string(caller.call) + ": the pool is shut down (or shutting down); the run did not start");
  return Run(std::move(state));
}

Run GraphImpl::enqueue(Pool& pool, const detail::Caller& caller, std::unique_ptr<RunRepeat> repeat,
                       const RunOptions& options) {
  // From inside a node of this graph's run in flight, a queued run could start only after that node ends, and
  // its Run (waited for by its destructor at the latest) would wait for it from inside the node: refused, as a
  // graph running itself always was.
  const RunState* inside = RunState::current();
  const RunState* child = detail::SubflowAccess::current_child_run();
  if ((inside != nullptr && &inside->graph() == this) || (child != nullptr && &child->graph() == this)) {
    throw graph_busy(std::string(caller.call) +
                     ": called from inside a node of this graph's own run in flight (or a subflow child of one, "
                     "or its RunOptions::on_done); a run queued from there could only start after that call "
                     "returns, so its Run could not be waited for from it");
  }
  // The graph cannot change while it runs or has runs queued (require_idle), so the checks made now hold when
  // the run starts. They read the layout under queue_lock_, under which run() compiles it.
  std::shared_ptr<RunState> state;
  for (;;) {
    {
      const std::lock_guard<std::mutex> hold(queue_lock_);
      if (compiled_valid()) {
        state = make_run(pool, caller, std::move(repeat), options);
        queue_.push_back(state);
        // seq_cst: see run_ended(); the exchange in claim_queued below comes after it.
        queued_.fetch_add(1, std::memory_order_seq_cst);
        break;
      }
    }
    // The run that holds the graph has not compiled it yet (its first run, a few instructions after its claim):
    // wait for that, or, if it gave up (a cycle, a placeholder left), run as if it had never been there.
    if (!running()) return run(pool, caller, nullptr, std::move(repeat), options, true);
    std::this_thread::yield();
  }
  // The run in flight may have ended meanwhile: then this thread starts the first queued run.
  if (std::shared_ptr<RunState> next = claim_queued()) RunState::start_queued(std::move(next));
  return Run(std::move(state));
}

std::shared_ptr<RunState> GraphImpl::pop_queued() noexcept {
  std::shared_ptr<RunState> next = std::move(queue_.front());
  queue_.pop_front();
  queued_.fetch_sub(1, std::memory_order_seq_cst);
  current_ = next;
  return next;
}

bool GraphImpl::hand_over() noexcept {
  // Not empty: queued_ counted it after it was pushed, and only the holder of running_ (this thread) pops.
  const std::lock_guard<std::mutex> hold(queue_lock_);
  handed_ = pop_queued();
  return true;
}

bool GraphImpl::claim_handed() noexcept {
  std::shared_ptr<RunState> next = claim_queued();
  if (next == nullptr) return false;  // handed_ untouched: the holder of running_ may be writing it
  handed_ = std::move(next);          // this thread holds running_ now: handed_ is its own
  return true;
}

std::shared_ptr<RunState> GraphImpl::claim_queued() noexcept {
  const std::lock_guard<std::mutex> hold(queue_lock_);
  if (queue_.empty()) return nullptr;  // another thread took it
  // seq_cst: see run_ended(). Held: the run in flight hands over at its end.
  if (running_.exchange(true, std::memory_order_seq_cst)) return nullptr;
  return pop_queued();
}

}  // namespace weft::graph
