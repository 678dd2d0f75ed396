// The exceptions weft throws. Each message names what was wrong: the option, the value, the task.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace weft {

// A submission was refused because the pool is shutting down or shut down. The task did not run and will not.
class pool_closed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A task was accepted but then dropped without running (Shutdown::DropPending, or shutdown_for's deadline);
// thrown by Future::get() of that task.
class task_dropped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A task was not run because it was cancelled before it started: its timer's Timer::cancel() won
// (Pool::submit_after_delay, Pool::submit_at), or its std::stop_token was stopped before a worker started it
// (Pool::submit with a stop token). Thrown by Future::get() of that task; the message names the call. Also thrown
// by co_await on a weft::Run (weft/task.hpp) that was cancelled.
class task_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An option had a value weft cannot honour, e.g. PoolOptions::threads = 100000 or an affinity to worker 9 in a
// pool of 4. The message names the option and the value.
class invalid_option : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A call would wait for itself, e.g. Pool::wait_idle() or Pool::shutdown() from one of the pool's own tasks.
class would_deadlock : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A wait, join or spawn inside tasks was nested so deep that the calling thread's stack could not serve it
// (each wait inside a task runs the awaited work on the waiting thread's stack, so recursion through waits grows
// it). Thrown by the call that would have nested deeper, instead of overflowing the stack; the message names the
// call and the stack left. Inside a graph or scope it fails the run like any exception of a node.
class nesting_too_deep : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A graph is malformed: an edge to a node of another graph or to itself, a node handle that is not one of the
// graph's, a job of another scope. The message names the node(s).
class invalid_graph : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The graph has a cycle; the message and nodes() name the nodes on it, in order (the first one again closes it).
class cycle_error : public invalid_graph {
 public:
  // message: what() says; nodes: the names of the nodes on the cycle, in order, the first repeated at the end.
  cycle_error(const std::string& message, std::vector<std::string> nodes)
      : invalid_graph(message), nodes_(std::move(nodes)) {}
  // The names of the nodes on the cycle (NodeOptions::name or "node <index>"), in edge order; the last entry is
  // the first again.
  [[nodiscard]] const std::vector<std::string>& nodes() const noexcept { return nodes_; }

 private:
  std::vector<std::string> nodes_;
};

// A graph or scope was changed while a run of it is in flight (or queued), a one-shot scope was run twice, a
// module node's graph was already running, or TaskGraph::run was called from inside the graph's own run. (A
// TaskGraph's run, run_n or run_until while it runs is queued, not refused.)
class graph_busy : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// A node with Overflow::Fail found its inbox full: the run is cancelled (under ErrorPolicy::KeepGoing only the
// node's descendants are skipped) and Run::wait() throws this, naming the node and its capacity.
class inbox_full : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A pipeline's join (TaskScope::join, join_by_key) still held items waiting for partners when its inputs ended:
// the run fails with this, naming the join, its pipeline and the items left on each input (they are destroyed).
class unmatched_items : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A job's result was asked for (Job::get, or co_await on the Job) but the job did not run: its run was cancelled
// (or failed elsewhere) first, or, under ErrorPolicy::KeepGoing, a job it depends on failed (the message names that
// job).
class job_cancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An allocation weft made for something it can name failed: what() names the call and what the memory was for
// (e.g. the inbox of a node, when a graph is compiled). A std::bad_alloc, so handlers of that catch it too.
class out_of_memory : public std::bad_alloc {
 public:
  // message: what() returns it (the call, and what the memory was for).
  explicit out_of_memory(std::string message) : message_(std::make_shared<const std::string>(std::move(message))) {}
  // The message given to the constructor.
  [[nodiscard]] const char* what() const noexcept override { return message_->c_str(); }

 private:
  std::shared_ptr<const std::string> message_;  // shared: copying the exception never allocates or throws
};

}  // namespace weft
