// The executor's access to Subflow's private constructor and join: a node execution owns a root Subflow on its
// stack and joins it before the node counts as finished.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include "scheduler/fiber/stack_guard.hpp"
#include "weft/subflow.hpp"

namespace weft::detail {

struct SubflowAccess {
  // Guaranteed copy elision: the Subflow is built in the caller's frame and never moves.
  [[nodiscard]] static Subflow make_root(graph::RunState& run, Priority priority, std::uint32_t node) noexcept {
    return Subflow(run, nullptr, priority, node, fiber::current_stack_id());
  }
  // The run whose subflow child this thread is running (innermost), or null: its Run::wait() would wait for
  // that very child.
  [[nodiscard]] static const graph::RunState* current_child_run() noexcept;
  // Joins the root's children if it has any (the common case, none, costs one load).
  static void join_if_spawned(Subflow& subflow) noexcept {
    if (subflow.has_unfinished()) subflow.join_children();
  }
  // The node (index) whose execution the subflow is.
  [[nodiscard]] static std::uint32_t node(const Subflow& subflow) noexcept { return subflow.node_; }
  // The run the subflow's execution belongs to.
  [[nodiscard]] static graph::RunState& run(Subflow& subflow) noexcept { return *subflow.run_; }
  // An exception of work done for the subflow's execution: counted, and the run's first one cancels it.
  static void record_exception(Subflow& subflow, std::exception_ptr error) noexcept {
    subflow.record_exception(std::move(error));
  }
  // Items a pipeline stage dropped (Overflow::Drop), for RunStats; `name` is "pipeline/stage".
  static void add_dropped(Subflow& subflow, std::string name, std::uint64_t count) noexcept;
};

}  // namespace weft::detail
