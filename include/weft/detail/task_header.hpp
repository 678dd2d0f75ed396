// The part of a queued task that the scheduler reads to route and run it. Public only because a future's
// state (future_state.hpp) is queued as itself, with no task block around it; users never name anything here.
#pragma once

#include <cstdint>

#include "weft/detail/inline_tag.hpp"
#include "weft/pool_options.hpp"

namespace weft::detail {

// What the scheduler's deques and queues hold pointers to. Two kinds share it:
// - the scheduler's own task blocks (sched::ClosureTask: this header, then a small_function), which the
//   scheduler runs and frees;
// - a future's state (FutureStateBase), queued as itself: FutureStateBase::finish_queued runs it or reports
//   it dropped, then gives up the queue's reference.
// 16 bytes, so that a closure task's routing fields and the start of its closure share one cache line.
struct TaskHeader {
  static constexpr std::uint32_t kNoAffinity = ~std::uint32_t{0};

  // Who may run it from its outside submitter's slot besides the workers (InlineTag).
  InlineTag inline_tag = kWorkersOnly;
  std::uint32_t affinity = kNoAffinity;  // a worker index, or kNoAffinity
  Priority priority = Priority::Normal;
  bool is_future_state = false;  // which of the two kinds above
};
static_assert(sizeof(TaskHeader) == 16, "the header shares a cache line with a closure task's first bytes");

}  // namespace weft::detail
