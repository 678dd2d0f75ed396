// The part of a queued task that the scheduler reads to route and run it. Public only because a future's
// state (future_state.hpp) is queued as itself, with no task block around it; users never name anything here.
#pragma once

#include <cstdint>

#include "weft/detail/inline_tag.hpp"
#include "weft/pool_options.hpp"

namespace weft::detail {

// What a queued task is, which says how the scheduler runs it and gives it up.
enum class TaskKind : std::uint8_t {
  // The scheduler's own task block (engine::ClosureTask: this header, then a small_function), which the
  // scheduler runs and frees.
  closure,
  // A future's state (FutureStateBase), queued as itself: FutureStateBase::finish_queued runs it or reports
  // it dropped, then gives up the queue's reference.
  future_state,
  // A block that finishes itself (SelfTask below, such as a Subflow child): its finish function runs it or
  // reports it dropped, and frees it.
  self_finishing,
};

// What the scheduler's deques and queues hold pointers to: the header of one of the kinds above. 16 bytes, so
// that a closure task's routing fields and the start of its closure share one cache line.
struct TaskHeader {
  static constexpr std::uint32_t kNoAffinity = ~std::uint32_t{0};

  // Who may run it from its outside submitter's slot besides the workers (InlineTag).
  InlineTag inline_tag = kWorkersOnly;
  std::uint32_t affinity = kNoAffinity;  // a worker index, or kNoAffinity
  Priority priority = Priority::Normal;
  TaskKind kind = TaskKind::closure;
};
static_assert(sizeof(TaskHeader) == 16, "the header shares a cache line with a closure task's first bytes");

// A task that is its own block, typed by whoever makes it, and knows how to end: finish() is called exactly once, by
// the scheduler with run = true to run it, or with false when it will never run (by the scheduler on a DropPending
// shutdown; by the submitter when the pool refused it). Either way the block frees itself: the task is gone when
// finish returns. One indirect call a task, with no closure to relocate into a block of the scheduler's and no table
// of operations to go through.
class SelfTask : public TaskHeader {
 public:
  using Finish = void (*)(SelfTask* task, bool run) noexcept;

  static void finish(TaskHeader* task, bool run) noexcept {
    auto* const self = static_cast<SelfTask*>(task);
    self->finish_(self, run);
  }

 protected:
  explicit SelfTask(Finish finish) noexcept : finish_(finish) { kind = TaskKind::self_finishing; }
  ~SelfTask() = default;
  SelfTask(const SelfTask&) = delete;
  SelfTask& operator=(const SelfTask&) = delete;

 private:
  Finish finish_;
};

}  // namespace weft::detail
