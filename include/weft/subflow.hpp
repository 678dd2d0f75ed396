// weft::Subflow: child work spawned by a running TaskGraph node, which the node's completion waits for.
#pragma once

#include "weft/detail/require_cpp20.hpp"

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <mutex>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/detail/block_cache.hpp"
#include "weft/detail/child_count.hpp"
#include "weft/detail/require_callable.hpp"
#include "weft/detail/task_header.hpp"
#include "weft/pool_options.hpp"

namespace weft {

class Pool;
class Subflow;
class SubflowChild;

namespace graph {  // graph/: the TaskGraph executor behind the public classes
class RunState;    // graph/run_state.hpp: one run of a TaskGraph
}  // namespace graph
namespace detail {
struct SubflowAccess;  // graph/subflow_access.hpp: the executor's access to Subflow
struct LongJoin;       // weft/detail/for_splitter.hpp: the parallel algorithms' join after long work

// The state a SubflowChild handle shares with its child (Subflow::spawn_after). Public only because spawn_after is
// a template; users name SubflowChild. Freed with the last of: the handles, the child, the successor edges.
class SubflowChildState {
 public:
  explicit SubflowChildState(Subflow* owner) noexcept : owner_(owner) {}
  SubflowChildState(const SubflowChildState&) = delete;
  SubflowChildState& operator=(const SubflowChildState&) = delete;

  // relaxed: a new reference is made from one the caller holds.
  void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // acq_rel: the last release sees every other holder's writes before it frees the state.
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 private:
  friend class weft::Subflow;
  friend class weft::SubflowChild;
  ~SubflowChildState() = default;

  Subflow* owner_;  // the Subflow the child belongs to: compared, and spawned into only while a predecessor runs
  std::atomic<std::uint32_t> refs_{1};
  // Unfinished predecessors, plus one the spawner holds while it links the edges: the child is queued (or skipped)
  // by whoever takes it to zero.
  std::atomic<std::uint32_t> pending_{1};
  // A predecessor failed (threw, was skipped, or was dropped): the child is skipped. Written before the decrement
  // of pending_ (acq_rel) that the releaser's read follows.
  std::atomic<bool> predecessor_failed_{false};
  // The child until it is queued or skipped (then null), and how to free it unrun.
  detail::SelfTask* task_ = nullptr;
  void (*destroy_)(detail::SelfTask*) noexcept = nullptr;
  std::mutex mutex_;  // guards the three fields below: a successor links itself, or sees the child done
  bool done_ = false;
  bool failed_ = false;
  std::vector<SubflowChildState*> successors_;  // each holds a reference
  // Its index among the children its run retained (RunOptions::retain_subflows), or kNotRetained. Written by the
  // spawner before the handle is returned; read by later spawn_after calls given the handle.
  static constexpr std::uint32_t kNotRetained = ~std::uint32_t{0};
  std::uint32_t retained_id_ = kNotRetained;
};
}  // namespace detail

// A child spawned by Subflow::spawn_after, which later spawn_after calls of the same Subflow may depend on: a
// shared handle (copies refer to the same child). Holding one keeps only a small state alive, not the child.
// A default-constructed or moved-from handle is empty.
class [[nodiscard]] SubflowChild {
 public:
  // An empty handle, of no child.
  SubflowChild() noexcept = default;
  // Another handle of other's child.
  SubflowChild(const SubflowChild& other) noexcept : state_(other.state_) {
    if (state_ != nullptr) state_->retain();
  }
  // Takes over other's child; `other` is left empty.
  SubflowChild(SubflowChild&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  // Lets go of this handle's child (which still runs), then refers to other's.
  SubflowChild& operator=(const SubflowChild& other) noexcept {
    SubflowChild(other).swap(*this);
    return *this;
  }
  // Lets go of this handle's child (which still runs), then takes over other's; `other` is left empty.
  SubflowChild& operator=(SubflowChild&& other) noexcept {
    SubflowChild(std::move(other)).swap(*this);
    return *this;
  }
  // Lets go of the child without waiting: it still runs, and the Subflow's join waits for it.
  ~SubflowChild() {
    if (state_ != nullptr) state_->release();
  }
  // True unless empty (default-constructed or moved from).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  // Exchanges the children two handles refer to.
  void swap(SubflowChild& other) noexcept { std::swap(state_, other.state_); }

 private:
  friend class Subflow;
  explicit SubflowChild(detail::SubflowChildState* adopted) noexcept : state_(adopted) {}
  detail::SubflowChildState* state_ = nullptr;
};

// A callable a Subflow can spawn: it takes nothing, or its own Subflow (to spawn grandchildren).
template <class F>
concept SubflowCallable = std::invocable<std::decay_t<F>&> || std::invocable<std::decay_t<F>&, Subflow&>;

// The children of one node execution (or of one child). A node body that takes a `weft::Subflow&` may spawn
// child tasks on the pool; the node finishes, and its successors start, only when the body returned and every
// child (with all of its own children) finished.
//
// Contract:
// - spawn() is thread-safe: the body and any of its running children may spawn into the same Subflow. A child
//   that takes `Subflow&` gets its own Subflow, joined implicitly when the child returns.
// - spawn_after() spawns a child that starts only once given earlier children of the same Subflow finished
//   (edges between children); join() waits for those too.
// - join() waits until every child spawned so far finished; on a worker it runs other tasks meanwhile (the
//   scheduler's one wait point). The end of the body joins implicitly.
// - A child's exception goes to the run like a node's: the first one cancels the run and Run::wait() rethrows
//   it (under ErrorPolicy::KeepGoing it fails the child's node, whose descendants are skipped, and the run
//   goes on). Once the run is cancelled, children not started yet are skipped.
// - A Subflow lives on the stack of the execution that owns it: do not keep a reference past the body.
// - Children run at their node's priority (NodeOptions::priority), so a High node's subflow (a parallel_for's
//   chunks, say) is not overtaken by Normal work; grandchildren likewise. They do not inherit the node's
//   affinity: children exist to run in parallel, and one worker's mailbox would serialise them.
//
// Example (recursive sum):
//   graph.add_node([&](weft::Subflow& sf) {
//     sf.spawn([&] { left = sum(lo, mid); });
//     right = sum(mid, hi);
//     sf.join();
//     total = left + right;
//   });
class Subflow {
 public:
  // Not copyable or movable: weft makes each Subflow for one execution, and children refer to it by address.
  Subflow(const Subflow&) = delete;
  Subflow& operator=(const Subflow&) = delete;
  // Its children were joined before it is destroyed (the implicit join at the end of the body).
  ~Subflow() = default;

  // Runs f (as f() or f(child_subflow)) on the pool as a child of this execution. Throws pool_closed if the
  // pool is shutting down; a child accepted and then dropped by a DropPending shutdown fails the run with
  // task_dropped. Throws weft::nesting_too_deep if children nest so deep that this thread's stack could not
  // serve the join (see errors.hpp).
  template <class F>
    requires SubflowCallable<F>
  void spawn(F&& f) {
    detail::require_callable(f, "weft::Subflow::spawn");
    using Child = ChildTask<std::decay_t<F>>;
    spawn_child(new Child(this, std::forward<F>(f)), &Child::destroy);  // counted only once it exists
  }
  // spawn(f) with a name for the child, which TaskGraph::dump shows if the run retains its children
  // (RunOptions::retain_subflows); otherwise the name is not even copied.
  template <class F>
    requires SubflowCallable<F>
  void spawn(std::string_view name, F&& f) {
    detail::require_callable(f, "weft::Subflow::spawn");
    using Child = ChildTask<std::decay_t<F>>;
    spawn_named_child(new Child(this, std::forward<F>(f)), &Child::destroy, name);
  }

  // Runs f (as f() or f(child_subflow)) as a child of this execution once every child of `after` finished, and
  // returns a handle later spawn_after calls may depend on in turn: edges between the children of one Subflow
  // (Taskflow's B1, B2 -> B3 inside a subflow). `after` may be empty: the child is queued at once, as spawn(f)'s.
  //
  // Contract:
  // - A child of `after` has finished once its callable returned and its own children (if it took a Subflow&)
  //   finished; the last predecessor to finish queues f, without a thread waiting. A predecessor that finished
  //   already costs a lock: it is not linked. A cycle cannot be written (a child depends only on existing handles).
  // - join() (and the implicit join at the end of the body) waits for every child, those still waiting for their
  //   predecessors included: an unfinished predecessor queues its successors before it counts as finished.
  // - Failures, as ErrorPolicy::KeepGoing does for a node's successors and Pool::submit_after for its tasks: if a
  //   predecessor's callable threw, or the predecessor was skipped (a failed predecessor of its own, a cancelled
  //   run) or dropped (shutdown), f is not called; the child counts as skipped in RunStats and its own successors
  //   are skipped alike. The exception itself goes to the run as any child's. Children that do not depend on the
  //   failed one run.
  // - f is destroyed (what it captured released) once it ran or will not run; the handle keeps a small state only.
  // - Throws std::invalid_argument (nothing spawned or linked) for an empty handle in `after` (naming its index) or
  //   a handle of a child of another Subflow (naming its index). A handle must not be used after the body of its
  //   Subflow returned: a later Subflow at the same address cannot tell it from its own (a finished one, then).
  // - Throws as spawn(f) does (pool_closed, nesting_too_deep) when f would be queued at once; queued later, by a
  //   predecessor, such a refusal fails the run (task_dropped, or the nesting_too_deep error) instead.
  // - Costs one more allocation and a lock per edge than spawn(f); spawn(f) is unchanged by it.
  //
  // Example (b3 after b1 and b2):
  //   weft::SubflowChild b1 = sf.spawn_after({}, [&] { x = load_x(); });
  //   weft::SubflowChild b2 = sf.spawn_after({}, [&] { y = load_y(); });
  //   (void)sf.spawn_after({b1, b2}, [&] { z = x + y; });
  template <class F>
    requires SubflowCallable<F>
  SubflowChild spawn_after(std::span<const SubflowChild> after, F&& f) {
    return spawn_after(after, std::string_view{}, std::forward<F>(f));
  }
  // The same with the predecessors written in braces: sf.spawn_after({b1, b2}, f), or sf.spawn_after({}, f).
  template <class F>
    requires SubflowCallable<F>
  SubflowChild spawn_after(std::initializer_list<SubflowChild> after, F&& f) {
    return spawn_after(std::span<const SubflowChild>(after.begin(), after.size()), std::string_view{},
                       std::forward<F>(f));
  }
  // spawn_after(after, f) with a name for the child, which TaskGraph::dump shows if the run retains its children
  // (RunOptions::retain_subflows), with the edges from `after`.
  template <class F>
    requires SubflowCallable<F>
  SubflowChild spawn_after(std::span<const SubflowChild> after, std::string_view name, F&& f) {
    detail::require_callable(f, "weft::Subflow::spawn_after");
    check_after(after);
    SubflowChild handle{new detail::SubflowChildState(this)};
    using Child = ChildTask<Tracked<std::decay_t<F>>>;
    handle.state_->task_ = new Child(this, Tracked<std::decay_t<F>>(handle.state_, std::forward<F>(f)));
    handle.state_->destroy_ = &Child::destroy;
    link_and_start(*handle.state_, after, name);
    return handle;
  }
  // The same with the predecessors written in braces: sf.spawn_after({b1, b2}, "sum", f).
  template <class F>
    requires SubflowCallable<F>
  SubflowChild spawn_after(std::initializer_list<SubflowChild> after, std::string_view name, F&& f) {
    return spawn_after(std::span<const SubflowChild>(after.begin(), after.size()), name, std::forward<F>(f));
  }

  // Waits for every child spawned so far (and their descendants). Throws would_deadlock if called from one of
  // those children (or their descendants): the caller is itself one of the children it would wait for;
  // std::logic_error if this is a child's Subflow and the caller is not that child's body (only the body a
  // Subflow was given to joins it); and weft::nesting_too_deep if this thread's stack is too short for another
  // nested wait (see errors.hpp).
  void join();

  // True once the run is cancelled (by Run::cancel, an exception, an Overflow::Fail): long bodies may poll it.
  [[nodiscard]] bool cancelled() const noexcept;

  // The pool the run executes on.
  [[nodiscard]] Pool& pool() const noexcept;

 private:
  friend struct detail::SubflowAccess;
  friend struct detail::LongJoin;

  // join(), with its refusals; `spin_outside` false: a thread that is not a worker sleeps at once rather than
  // looking for a while first (a join known to wait long, where that thread's spin would only take a core from
  // the workers that run the children).
  void join(bool spin_outside);

  Subflow(graph::RunState& run, Subflow* parent, Priority priority, std::uint32_t node,
          std::uintptr_t owner_stack = 0) noexcept
      : run_(&run), parent_(parent), priority_(priority), node_(node), owner_stack_(owner_stack) {}

  // A child as the pool queues it: one block (the scheduler's header, this Subflow, the user's callable) from the
  // thread's block cache, run or dropped by one call of its finish function. Running it runs the callable inside
  // a fresh Subflow, joins that Subflow's children, destroys the callable and frees the block, and only then
  // tells the parent, so nothing of the child is left once the parent's join returns. If the pool destroys it
  // unrun (DropPending, a refused spawn), the parent is told too: a dropped child is never silently lost.
  template <class F>
  class ChildTask final : public detail::SelfTask {
   public:
    template <class G>
    ChildTask(Subflow* parent, G&& f) : SelfTask(&finish_task), parent_(parent), f_(std::forward<G>(f)) {}

    static void* operator new(std::size_t bytes) { return detail::allocate_future_state(bytes, alignof(ChildTask)); }
    static void operator delete(void* p, std::size_t bytes) noexcept {
      detail::deallocate_future_state(p, bytes, alignof(ChildTask));
    }

    // Frees a child that was never counted (spawn_child refused it before counting): the parent is not told.
    static void destroy(detail::SelfTask* task) noexcept { delete static_cast<ChildTask*>(task); }

   private:
    ~ChildTask() = default;

    static void finish_task(detail::SelfTask* task, bool run) noexcept {
      auto* const self = static_cast<ChildTask*>(task);
      Subflow* const parent = self->parent_;
      if (!run) {
        delete self;
        parent->child_dropped();
        return;
      }
      Subflow own(*parent->run_, parent, parent->priority_, parent->node_);
      Subflow* outer = nullptr;
      const bool started = own.begin_body(outer);  // false: the run is cancelled, and the child skipped
      if (started) {
        try {
          if constexpr (std::is_invocable_v<F&, Subflow&>) {
            self->f_(own);
          } else {
            self->f_();
          }
        } catch (...) {
          own.record_exception(std::current_exception());
        }
      }
      // Never refused: the children hold on to `own` until they finish, whatever the stack left.
      if (own.has_unfinished()) own.join_children();
      delete self;  // the user's callable, before the parent can see this child finished
      own.end_body(started, outer);
    }

    Subflow* parent_;
    F f_;
  };

  // spawn_after's callable: f, which tells its state (and so its successors) how it ended when it is destroyed,
  // which its ChildTask does after f ran and f's own children finished, or when the child will not run.
  template <class G>
  class Tracked {
   public:
    template <class H>
    Tracked(detail::SubflowChildState* state, H&& f) : f_(std::forward<H>(f)), state_(state) {
      state_->retain();
    }
    Tracked(Tracked&& other) noexcept(std::is_nothrow_move_constructible_v<G>)
        : f_(std::move(other.f_)), state_(std::exchange(other.state_, nullptr)) {}
    Tracked(const Tracked&) = delete;
    Tracked& operator=(const Tracked&) = delete;
    Tracked& operator=(Tracked&&) = delete;
    ~Tracked() {
      if (state_ != nullptr) child_completed(state_, ran_);
    }
    void operator()(Subflow& own) {
      if constexpr (std::is_invocable_v<G&, Subflow&>) {
        f_(own);
      } else {
        f_();
      }
      ran_ = true;  // not reached if f threw: the successors are skipped
    }

   private:
    G f_;
    detail::SubflowChildState* state_;
    bool ran_ = false;
  };

  // spawn_after's untyped half (graph/subflow.cpp). check_after: throws std::invalid_argument for an empty handle
  // or one of another Subflow. link_and_start: links `state` after the unfinished children of `after`, then drops
  // the spawner's hold (queueing the child if no predecessor is left). child_completed: the child of `state`
  // finished (`ran`: its callable returned) or will not run; queues or skips the successors it releases, then
  // drops the child's reference. `name`: the child's, recorded (with the edges) if the run retains its children.
  void check_after(std::span<const SubflowChild> after) const;
  void link_and_start(detail::SubflowChildState& state, std::span<const SubflowChild> after, std::string_view name);
  static void child_completed(detail::SubflowChildState* state, bool ran) noexcept;
  // The last hold of `state` is gone: queue its child, or skip it if a predecessor failed. `rethrow`: a refused
  // queueing throws to the caller (the spawner); otherwise it fails the run.
  static void start_ready(detail::SubflowChildState* state, bool rethrow);

  // The Subflow of the child whose body this thread is running (the innermost, as waits nest on one stack), or
  // null. join() on one of its ancestors, or Run::wait() on its run, waits for that child itself: they throw
  // would_deadlock instead of hanging.
  static Subflow* exchange_current(Subflow* next) noexcept;
  // Marks this (a child's Subflow) as the running child and records its owner's stack; returns the child that was
  // running before (restored with exchange_current when the body returns).
  Subflow* enter_body() noexcept;
  // A child's start and end, each one call into the library (the steps inside are calls between its own
  // functions, which it inlines without LTO). begin_body: if the run is cancelled, records the child as skipped
  // and returns false; else enter_body(), its result in `outer`, and true. end_body, once the body returned
  // (`started`: begin_body's result), the child's own children are joined and its block is freed: tells the
  // parent (counted in its plain field when the child ran nested in the parent's execution, on this stack:
  // outer == the parent), then restores `outer`.
  [[nodiscard]] bool begin_body(Subflow*& outer) noexcept;
  void end_body(bool started, Subflow* outer) noexcept;

  // Counts `child` (a ChildTask this Subflow made) and queues it; if the pool refuses it, drops it (the parent is
  // told) and throws pool_closed. If this thread's stack could not serve the join, frees it uncounted
  // (`destroy`) and throws nesting_too_deep. Both checks sit in this one call into the library, which a build
  // without LTO does not inline.
  void spawn_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept);
  // spawn_child of a named child (the name kept only if the run retains its children).
  [[gnu::noinline]] void spawn_named_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept,
                                           std::string_view name);
  // spawn_child once the child is recorded (if the run retains children): spawn_after's children, recorded when
  // linked, are queued through it.
  void post_child(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept);
  // If the run retains its children (RunOptions::retain_subflows), records `child`, named `name`; if that fails
  // (out of memory), frees it uncounted (`destroy`) and throws.
  void retain_spawned(detail::SelfTask* child, void (*destroy)(detail::SelfTask*) noexcept, std::string_view name);
  // join() without its refusals: the implicit joins (a node's or a child's end) must wait for the children,
  // which hold on to this Subflow until they finish.
  void join_children(bool spin_outside = true) noexcept;
  // Before a joiner sleeps: announces it, so that the last child wakes it (see children_).
  void announce_sleeper() noexcept;
  struct JoinSleeper;  // graph/subflow.cpp: join_children's way to sleep (announce_sleeper, then the signal)
  // The child of this subflow finished (its body, then its own join) or was dropped unrun. `on_owner_stack`: it
  // finished nested on this Subflow's owner's stack.
  void child_finished(bool on_owner_stack) noexcept;
  void child_dropped() noexcept;
  // Children not finished: what join() waits to see reach zero. Only the execution that owns this Subflow
  // calls it.
  [[nodiscard]] bool has_unfinished() const noexcept { return children_.unfinished(); }
  // Whether the caller runs on the stack of the execution that owns this Subflow (its body, or work its waits
  // run nested there): such code runs one piece at a time, and counts children in a plain field.
  [[nodiscard]] bool on_owner_stack() const noexcept;
  void record_exception(std::exception_ptr error) noexcept;
  void record_skipped() noexcept;

  graph::RunState* run_;
  Subflow* parent_;
  Priority priority_;   // the node's: every child and grandchild is posted with it
  std::uint32_t node_;  // the node (index) whose execution this is: a child's exception is that node's failure
  // The stack the owning execution runs on (fiber::current_stack_id()); 0 until it is known, which sends every
  // count through the shared field.
  std::uintptr_t owner_stack_ = 0;
  // Children spawned and not finished (weft/detail/child_count.hpp). A child touches no run-wide counter: its
  // ancestors' executions, which wait for it, keep the run alive while it runs (one shared counter per child was
  // the bulk of a spawn's cost with two workers, docs/perf-log.md).
  //
  // Once the joiner announced itself (before it first sleeps) it holds a unit of the run for the child that will
  // wake it: the last child notifies the run's subflow signal and then ends the unit. The Subflow may be gone the
  // moment that child's count lands, the run may not (the unit): so the notifier touches only the run.
  detail::ChildCount children_;
};

}  // namespace weft
