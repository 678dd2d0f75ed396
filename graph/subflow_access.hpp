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
  // Joins the root's children if it has any (the common case, none, costs one load).
  static void join_if_spawned(Subflow& subflow) noexcept {
    if (subflow.pending_.load(std::memory_order_acquire) != 0) subflow.join();
  }
};

}  // namespace weft::detail
