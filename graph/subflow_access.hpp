// The executor's access to Subflow's private constructor and join: a node execution owns a root Subflow on its
// stack and joins it before the node counts as finished.
#pragma once

#include "weft/subflow.hpp"

namespace weft::detail {

struct SubflowAccess {
  // Guaranteed copy elision: the Subflow is built in the caller's frame and never moves.
  [[nodiscard]] static Subflow make_root(RunState& run, Priority priority) noexcept {
    return Subflow(run, nullptr, priority);
  }
  // The run whose subflow child this thread is running (innermost), or null: its Run::wait() would wait for
  // that very child.
  [[nodiscard]] static const RunState* current_child_run() noexcept;
  // Joins the root's children if it has any (the common case, none, costs one load).
  static void join_if_spawned(Subflow& subflow) noexcept {
    if (subflow.pending_.load(std::memory_order_acquire) != 0) subflow.join_children();
  }
};

}  // namespace weft::detail
