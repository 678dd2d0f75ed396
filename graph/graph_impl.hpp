// What a TaskGraph is behind its handle: the nodes and edges as built, and the layout compile() makes of them.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <iosfwd>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph/chunked_vector.hpp"
#include "graph/claim_cursor.hpp"
#include "graph/inbox/limiter.hpp"
#include "weft/node_options.hpp"
#include "weft/task_graph.hpp"

namespace weft::graph {

class RunState;

// run_n / run_until: how many more passes of the graph one Run makes, or the predicate that says when to stop
// (checked before each pass; true stops). Held by the run's state; null there for a plain run (one pass).
struct RunRepeat {
  std::uint64_t remaining = 0;  // run_n: passes still to start (unused when `until` is set)
  detail::RunPredicate until;   // run_until: called before each pass, and once more after the last
};

inline constexpr std::uint32_t kNoIndex = std::numeric_limits<std::uint32_t>::max();
// Nodes a graph may hold: they are indexed with 32 bits, and kNoIndex is no node.
inline constexpr std::size_t kMaxNodes = kNoIndex;
// Edges a graph may hold: compile() indexes them (and counts each node's incoming ones) with 32 bits.
inline constexpr std::size_t kMaxEdges = std::numeric_limits<std::uint32_t>::max() - 1;

// In a graph that has join groups (fewer than 2^31 nodes), a successor entry with this bit set names a join
// group (the rest is its index), not a node.
inline constexpr std::uint32_t kJoinGroupBit = std::uint32_t{1} << 31;

// Consecutive nodes [first, end) with the same two or more predecessors, so one join counter (first's) serves
// them all: each predecessor's successor list holds one entry for the group instead of one per member, and
// finishing it takes one atomic decrement instead of end - first. Layers joined all-to-all (a fork-join stage)
// are the case it is for: a 100 x 100 layered graph's run makes 9,900 decrements instead of 990,000.
struct JoinGroup {
  std::uint32_t first;
  std::uint32_t end;
};

// The run-time view of one node, laid out contiguously so that finishing a node touches one cache line for
// itself and one array slice for its successors.
struct CompiledNode {
  std::uint32_t succ_begin = 0;  // successors are succ_[succ_begin, succ_end)
  std::uint32_t succ_end = 0;
  std::uint32_t join_init = 0;       // distinct predecessors: the join counter's value at the start of a run
  std::uint32_t limiter = kNoIndex;  // index into limiters_ for a node with tokens > 1, else kNoIndex
  // Priority Normal, no affinity, one token, no semaphores: the thread that makes it ready may run it in place.
  bool runs_in_place = true;
  // The node takes units of semaphores (NodeOptions::semaphores): tested only when its task starts, never on
  // the in-place path, which such a node never takes (graph/semaphore.cpp).
  bool has_semaphores = false;
  // A condition node (add_condition): its successor entries are weak edges, one of which it starts by index
  // (RunState::finish_condition). Tested once per finished node; false in a graph without conditions.
  bool condition = false;
};
// The flags sit in what was padding: a node's layout, and so a run's walk over the nodes, is as before.
static_assert(sizeof(CompiledNode) == 20);

// A node's units of one semaphore (its NodeOptions::semaphores with repeats counted), in the order first listed.
struct SemaphoreNeed {
  Semaphore* semaphore;
  std::size_t units;
};

// A node with semaphores: its needs are semaphore_needs()[begin, end).
// The subflow children of one run, kept for dump() when the run asked for them (RunOptions::retain_subflows):
// each child spawned by a node's execution (or by a child of it), in the order spawned, and the edges
// Subflow::spawn_after made between them. Filled by the run's spawns under `lock`; the graph owns it from the run's
// start until its next run starts (which replaces it) or the graph is destroyed.
struct RetainedSubflows {
  struct Child {
    std::uint32_t node;  // the node whose execution (or one of its children) spawned it
    std::string name;    // Subflow::spawn's or spawn_after's name, or empty
  };
  std::mutex lock;
  std::vector<Child> children;                                 // an index here is a child's id
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // {predecessor id, successor id}
};

struct SemaphoreNode {
  std::uint32_t node;
  std::uint32_t begin;
  std::uint32_t end;
};

class GraphImpl {
 public:
  GraphImpl();
  ~GraphImpl();
  GraphImpl(const GraphImpl&) = delete;
  GraphImpl& operator=(const GraphImpl&) = delete;

  // `caller` names the public call in errors (TaskGraph's own, or TaskScope's, parallel_for's).
  Node add_node(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller);
  // A node without a body (TaskGraph::placeholder); set_work gives it one. A run or compile refuses the graph
  // while one is left without (require_bodies).
  Node add_placeholder(NodeOptions&& options);
  void set_work(Node node, detail::NodeBody&& body);
  [[nodiscard]] bool has_work(Node node) const;
  [[nodiscard]] std::size_t placeholders_left() const noexcept { return placeholders_left_; }
  // A condition node (TaskGraph::add_condition): its out-edges are weak (see CompiledNode::condition).
  Node add_condition(detail::NodeBody&& body, NodeOptions&& options);
  // A node kind that runs once per activation: tokens > 1 throws invalid_option naming the node and `rule`.
  void require_one_token(const NodeOptions& options, const detail::Caller& caller, const char* rule) const;
  // The graph has condition nodes: a run may leave join counters part-way down (a branch not taken), so each
  // pass ends by setting them all back.
  [[nodiscard]] bool has_conditions() const noexcept { return !conditions_.empty(); }
  // A module node running `inner` (TaskGraph::add_graph); `inner` is checked by the caller not to be this one.
  Node add_module(GraphImpl& inner, NodeOptions&& options);
  // A module node's execution: runs `inner` as one run on the node's pool and waits for it (graph_impl.cpp).
  void run_module(GraphImpl& inner, std::uint32_t index, detail::NodeCall& call);
  void add_edge(Node from, Node to);
  // Every edge is checked before any is added: a refused call changes nothing.
  void add_edges(Node from, std::initializer_list<Node> to);
  void reserve(std::size_t nodes, std::size_t edges);
  // Draws the subflow children the last run retained (RunOptions::retain_subflows) as clusters in their nodes.
  void dump(std::ostream& out) const;
  // A run starts: it replaces the children the previous run retained (freed here) with its own (null if it
  // retains none). Called by the run holding the graph (running_), so never beside another run's spawns.
  void replace_retained(std::unique_ptr<RetainedSubflows> retained) noexcept { retained_ = std::move(retained); }
  void compile();
  // `live`, if given, gets the run's state before any node starts (GraphAccess::run).
  // `repeat`, if given, makes the run several passes (run_n / run_until); `options`: its error policy and what
  // it records (RunOptions).
  // `queue`: while a run is in flight (or queued), queue this one behind it (TaskGraph's run, run_n, run_until)
  // instead of throwing graph_busy (the layers over TaskGraph, and module nodes, which would wait for it).
  Run run(Pool& pool, const detail::Caller& caller, std::atomic<void*>* live = nullptr,
          std::unique_ptr<RunRepeat> repeat = nullptr, const RunOptions& options = {}, bool queue = false);
  // Blocks until the run in flight and every queued run (if any) are over; aborts if called from inside the
  // run in flight's own nodes.
  void wait_for_run_end() noexcept;

  [[nodiscard]] std::size_t size() const noexcept { return bodies_.size(); }
  [[nodiscard]] std::size_t edge_count();
  [[nodiscard]] std::string name(std::uint32_t index) const;
  [[nodiscard]] std::string name(Node node) const;
  [[nodiscard]] bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  // Node handles for a finished run's outcomes, which outlive the graph and keep only its id (Run::outcome).
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }
  [[nodiscard]] static Node make_node(std::uint32_t index, std::uint64_t graph) noexcept { return {index, graph}; }
  [[nodiscard]] static std::uint64_t graph_of(Node node) noexcept { return node.graph_; }

  // For RunState: the compiled layout, valid while a run is in flight.
  [[nodiscard]] const CompiledNode& node(std::uint32_t index) const noexcept { return compiled_[index]; }
  // Node indices, and join groups marked with kJoinGroupBit.
  [[nodiscard]] const std::uint32_t* successors() const noexcept { return succ_.data(); }
  [[nodiscard]] const JoinGroup& join_group(std::uint32_t index) const noexcept { return join_groups_[index]; }
  [[nodiscard]] std::size_t join_group_count() const noexcept { return join_groups_.size(); }
  [[nodiscard]] std::atomic<std::uint32_t>& join(std::uint32_t index) noexcept { return join_[index]; }
  // Where a run's tasks claim a join group's members, and the roots (graph/claim_cursor.hpp). One per graph:
  // a graph runs once at a time, and each range starts at most once per run.
  [[nodiscard]] graph::ClaimCursor& group_cursor(std::uint32_t index) noexcept { return group_cursors_[index]; }
  [[nodiscard]] graph::ClaimCursor& roots_cursor() noexcept { return roots_cursor_; }
  [[nodiscard]] detail::NodeBody& body(std::uint32_t index) noexcept { return bodies_[index]; }
  // Inline: a run reads it for every node it posts or finishes, and a build without LTO would call across files.
  [[nodiscard]] const NodeOptions& options(std::uint32_t index) const noexcept {
    const std::uint32_t at = options_index_[index];
    return at == kNoIndex ? kDefaultOptions : options_[at];
  }
  [[nodiscard]] inbox::Limiter& limiter(std::uint32_t limiter_index) noexcept { return *limiters_[limiter_index]; }
  [[nodiscard]] std::size_t limiter_count() const noexcept { return limiters_.size(); }
  [[nodiscard]] std::uint32_t limited_node(std::uint32_t limiter_index) const noexcept {
    return limited_nodes_[limiter_index];
  }
  [[nodiscard]] const std::vector<std::uint32_t>& roots() const noexcept { return roots_; }
  // The nodes with semaphores, by increasing node index; their needs; every semaphore the graph's nodes name.
  [[nodiscard]] const std::vector<SemaphoreNode>& semaphore_nodes() const noexcept { return semaphore_nodes_; }
  [[nodiscard]] const SemaphoreNeed* semaphore_needs() const noexcept { return semaphore_needs_.data(); }
  [[nodiscard]] const std::vector<Semaphore*>& semaphores() const noexcept { return semaphores_; }
  // Where `node` (which has semaphores) is in semaphore_nodes().
  [[nodiscard]] std::uint32_t semaphore_slot(std::uint32_t node) const noexcept;
  // Sets every join counter to its start value (after a run that lost tasks; see RunState::finish_unit).
  void reset_join_counters() noexcept {
    for (std::size_t i = 0; i < compiled_.size(); ++i)
      join_[i].store(compiled_[i].join_init, std::memory_order_relaxed);
  }
  // Called by the run's last unit of work, before it tells waiters: hands the graph to the next queued run and
  // returns true (the caller then starts it, RunState::start_queued(take_handed()), after telling its own
  // waiters, so that the runs end in order), or leaves the graph idle (it may be changed or run again) and
  // returns false. Inline: a run without a queue pays a load, a store and a load, no lock.
  [[nodiscard]] bool run_ended() noexcept {
    // seq_cst, these three: with enqueue's increment of queued_ and then claim_queued's exchange of running_,
    // either this thread sees the run queued or the enqueuer sees the graph idle (or both: the lock decides).
    if (queued_.load(std::memory_order_seq_cst) != 0) [[unlikely]]
      return hand_over();  // running_ stays set: nothing may change the graph between two queued runs
    // release (within seq_cst): pairs with the next run's claim, which then sees everything this run did.
    running_.store(false, std::memory_order_seq_cst);
    if (queued_.load(std::memory_order_seq_cst) != 0) [[unlikely]]
      return claim_handed();  // a run was queued as this one ended
    return false;
  }
  // After run_ended() returned true: the run it handed the graph to (read by that same thread).
  [[nodiscard]] std::shared_ptr<RunState> take_handed() noexcept { return std::move(handed_); }

 private:
  // The checks every builder call makes: inline fast paths, the message building out of line and cold.
  void require_idle(const char* what) const {
    if (running()) [[unlikely]]
      throw_busy(what);
  }
  [[nodiscard]] bool owns(Node node) const noexcept { return node.graph_ == id_ && node.index() < bodies_.size(); }
  // An edge from `from` to `to` is one this graph may hold. `position`: the index of `to` in add_edges' list
  // (null for add_edge), so that the error says which end, and which element, was wrong.
  void require_edge(Node from, Node to, const char* what, const std::size_t* position) const {
    if (!owns(from) || !owns(to) || from.index() == to.index()) [[unlikely]]
      throw_bad_edge(from, to, what, position);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void throw_busy(const char* what) const;
  // The checks and the state of a run about to start or be queued (run()).
  [[nodiscard, gnu::always_inline]] inline std::shared_ptr<RunState> make_run(Pool& pool, const detail::Caller& caller,
                                                                              std::unique_ptr<RunRepeat> repeat,
                                                                              const RunOptions& options);
  // run() while a run is in flight or queued: queues the run (out of line; the lone run never comes here).
  [[gnu::noinline]] Run enqueue(Pool& pool, const detail::Caller& caller, std::unique_ptr<RunRepeat> repeat,
                                const RunOptions& options);
  // The holder of running_ ends with runs queued: pops the first into handed_, keeping running_ set; true.
  [[nodiscard, gnu::noinline]] bool hand_over() noexcept;
  // run_ended() saw a run queued after it left the graph idle: claim_queued() into handed_; true if it did.
  [[nodiscard, gnu::noinline]] bool claim_handed() noexcept;
  // Any thread, after queueing a run or seeing one queued as the graph went idle: claims running_ if the graph
  // is idle and pops the first queued run, to start; else returns null (the run in flight hands over at its end).
  [[nodiscard, gnu::noinline]] std::shared_ptr<RunState> claim_queued() noexcept;
  // Under queue_lock_: takes the first queued run, records it as the one in flight.
  [[nodiscard]] std::shared_ptr<RunState> pop_queued() noexcept;
  // dump()'s clusters of the children retained_ holds (not null).
  void dump_retained(std::ostream& out) const;
  // Describes a node handle this graph does not own: "node 3 of another graph", "an empty weft::Node ...".
  [[nodiscard]] std::string describe_foreign(Node node) const;
  [[noreturn, gnu::cold, gnu::noinline]] void throw_bad_edge(Node from, Node to, const char* what,
                                                             const std::size_t* position) const;
  // Appends a checked edge; the caller made sure it fits without allocating (so no growth code is emitted).
  void record_edge(std::uint32_t from, std::uint32_t to) noexcept {
    if (edges_.size() == edges_.capacity()) __builtin_unreachable();
    edges_.emplace_back(from, to);
  }
  // The graph only grows, so a layout is current while the counts it was made for still hold.
  [[nodiscard]] bool compiled_valid() const noexcept {
    return compiled_nodes_ == bodies_.size() && compiled_edges_ == edges_.size();
  }
  [[gnu::noinline]] void add_edge_growing(std::uint32_t from, std::uint32_t to);
  // std::length_error: "<call>: <count> <items>; a graph holds at most <limit>".
  [[noreturn, gnu::cold, gnu::noinline]] static void throw_too_many(const std::string& call, std::size_t count,
                                                                    const char* items, std::size_t limit);
  void validate(const NodeOptions& options, std::uint32_t index, const detail::Caller& caller) const;
  // Appends a node (its body possibly empty: a placeholder), its options checked.
  Node append(detail::NodeBody&& body, NodeOptions&& options, const detail::Caller& caller);
  // Throws invalid_graph naming `call` and the first placeholder still without a body, if any is.
  void require_bodies(const char* call) const {
    if (placeholders_left_ != 0) [[unlikely]]
      throw_missing_body(call);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void throw_missing_body(const char* call) const;
  // Compiles; errors (a cycle, out of memory) name `call`: compile() or the run() that compiles first.
  void lay_out(const char* call);
  void lay_out_unchecked(const char* call);
  // The limiters of the nodes with tokens > 1. Throws weft::out_of_memory naming `call` and the node whose
  // inbox could not be allocated.
  void make_limiters(std::vector<CompiledNode>& compiled, std::vector<std::unique_ptr<inbox::Limiter>>& limiters,
                     std::vector<std::uint32_t>& limited_nodes, std::uint64_t& max_affinity_plus_one,
                     const char* call) const;
  // The semaphore tables of the nodes that have NodeOptions::semaphores; such nodes never run in place.
  void make_semaphore_tables(std::vector<CompiledNode>& compiled, std::vector<SemaphoreNode>& nodes,
                             std::vector<SemaphoreNeed>& needs, std::vector<Semaphore*>& semaphores) const;
  [[noreturn]] void throw_cycle(const std::vector<std::uint32_t>& indegree_left, const char* call) const;

  const std::uint64_t id_;
  // The options of every node that sets none (graph/graph_impl.cpp).
  static const NodeOptions kDefaultOptions;
  // As built. Options are stored only for nodes that have some non-default one (options_index_).
  ChunkedVector<detail::NodeBody> bodies_;  // 64 KiB chunks: only the first grows (chunked_vector.hpp)
  std::vector<std::uint32_t> options_index_;
  std::vector<NodeOptions> options_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  // Condition nodes (add_condition), in increasing order.
  std::vector<std::uint32_t> conditions_;
  // Placeholders (add_placeholder) not yet given a body by set_work: their bodies_ entries are empty.
  std::size_t placeholders_left_ = 0;
  // Module nodes (add_graph), by node index in increasing order: {node, the graph it runs}. For dump().
  std::vector<std::pair<std::uint32_t, const GraphImpl*>> modules_;
  // The node and edge counts the layout below was made for (none yet: no count matches).
  std::size_t compiled_nodes_ = std::numeric_limits<std::size_t>::max();
  std::size_t compiled_edges_ = 0;

  // Compiled.
  std::vector<CompiledNode> compiled_;
  std::vector<std::uint32_t> succ_;
  std::vector<JoinGroup> join_groups_;
  std::size_t distinct_edges_ = 0;  // succ_ holds fewer entries when nodes share a join group
  std::unique_ptr<std::atomic<std::uint32_t>[]> join_;
  std::unique_ptr<graph::ClaimCursor[]> group_cursors_;  // one per join group
  graph::ClaimCursor roots_cursor_;
  std::vector<std::unique_ptr<inbox::Limiter>> limiters_;
  std::vector<std::uint32_t> limited_nodes_;  // limiter index -> node index
  std::vector<std::uint32_t> roots_;
  std::vector<SemaphoreNode> semaphore_nodes_;
  std::vector<SemaphoreNeed> semaphore_needs_;
  std::vector<Semaphore*> semaphores_;       // distinct, sorted by address
  std::uint64_t max_affinity_plus_one_ = 0;  // 0: no node has an affinity (64 bits: affinity + 1 cannot wrap)

  // A run holds the graph (in flight) from its claim (run(), or a hand-over) to run_ended().
  std::atomic<bool> running_{false};
  // The last run started (kept so the destructor can wait for it). Written by the thread that claimed
  // running_: the caller of run() on the path without a queue, else under queue_lock_.
  std::shared_ptr<RunState> current_;
  // Runs submitted while the graph was running, in order (TaskGraph::run's queue), and their count, read
  // without the lock by run() and run_ended(). Popped only by whoever holds running_.
  std::mutex queue_lock_;
  std::deque<std::shared_ptr<RunState>> queue_;
  std::atomic<std::size_t> queued_{0};
  // The run run_ended() handed the graph to, until its caller takes it (take_handed).
  std::shared_ptr<RunState> handed_;
  // The subflow children the last run retained (RunOptions::retain_subflows), or null; see replace_retained.
  std::unique_ptr<RetainedSubflows> retained_;
};

}  // namespace weft::graph
