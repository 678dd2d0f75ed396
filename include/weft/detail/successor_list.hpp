// The hand-over between a task submitted with dependencies on the fly (weft::Pool::submit_after) and its
// predecessors: each task's list of successors, closed when it finishes, and each successor's count of
// predecessors still to finish. Internal: weft/async_task.hpp holds one per task; tests/model/successor_list_model.cpp
// checks this very text under Relacy, planted bugs included (through the `Plants` policy, as
// weft/detail/child_count.hpp takes them: this installed header holds no test switch).
//
// The protocol. A task's `head_` is 0 (no successor yet), a Link's address (the newest of a stack of links), or
// kClosed (the task is final). A successor being submitted pushes one Link of its own onto each predecessor's
// stack with a CAS, unless it finds kClosed: then that predecessor is done and is not counted. A finishing task
// takes the whole stack with one exchange to kClosed, so that in the modification order of `head_` every push is
// either before the exchange (the finisher finds the link and releases the successor) or fails on kClosed (the
// submitter counts that predecessor done itself): exactly one side counts each edge, and no edge is lost.
//
// A successor's `waiting_` starts at its predecessors + 1: the extra unit is the submitter's, given up once every
// edge is pushed or found done, so that the successor cannot start while it is still being linked. Each count
// given up is one fetch_sub; whoever brings it to zero (a finisher or the submitter) releases the successor.
#pragma once

#include <atomic>
#include <cstdint>

#include "weft/detail/child_count.hpp"  // PlainField, NoPlants

namespace weft::detail {

// `Atomic`: std::atomic, or the model's; `Field`: PlainField, or the model's checked variable; `Plants`: NoPlants,
// or the model's (tests/model/plant.hpp), whose planted(name) is true for the one planted bug.
template <template <class> class Atomic = std::atomic, template <class> class Field = PlainField,
          class Plants = NoPlants>
class BasicSuccessorList {
 public:
  static constexpr std::uintptr_t kClosed = 1;  // never a Link's address (links are aligned)

  // One edge, owned by the successor (it lives in the successor's block until the successor has started): written
  // before the push that publishes it, read by the finisher after the exchange that takes it.
  struct Link {
    Field<Link*> next{nullptr};
    Field<void*> successor{nullptr};  // the successor task (the caller's type), whose list's arrive() it calls
  };

  // A task with `predecessors` edges still to link (the submitter's unit is added).
  explicit BasicSuccessorList(std::uint32_t predecessors) noexcept : waiting_(predecessors + 1) {}

  // The submitter, before the first link(): `predecessors` edges are to be linked after all. relaxed: the task
  // is not published yet (the first link's release publishes it).
  void expect(std::uint32_t predecessors) noexcept { waiting_.store(predecessors + 1, std::memory_order_relaxed); }

  // True once the task is final (close() ran). acquire: pairs with close()'s release, so a caller that sees it
  // also sees the task's outcome.
  [[nodiscard]] bool closed() const noexcept { return head_.load(std::memory_order_acquire) == kClosed; }

  // The submitter of `successor` (what the finisher finds in the link): pushes `link` (the successor's own) onto this
  // task's stack. False if this task is final: the edge is not linked, and the caller counts it done (arrive) and reads
  // this task's outcome.
  [[nodiscard]] bool link(Link& link, void* successor) noexcept {
    link.successor.store(successor);
    // acquire: a kClosed read here publishes the task's outcome (close() is a release).
    std::uintptr_t head = head_.load(std::memory_order_acquire);
    for (;;) {
      if (head == kClosed) return false;
      link.next.store(reinterpret_cast<Link*>(head));
      // Success, release (in acq_rel): the finisher's exchange (acquire) then sees the link's fields written
      // above. Failure, acquire: as the load above. acq_rel rather than release on success: a failure order
      // stronger than the success order is C++17's, and the Relacy model (C++11's rule) then read the failure as
      // release, which its search reported as a race on the outcome; on x86 and ARMv8 the CAS costs the same.
      // (Planted bug successor_list.relaxed_link: relaxed on success.)
      const auto success = Plants::planted("successor_list.relaxed_link") ? std::memory_order_relaxed
                                                                          : std::memory_order_acq_rel;
      if (head_.compare_exchange_strong(head, reinterpret_cast<std::uintptr_t>(&link), success,
                                        std::memory_order_acquire))
        return true;
    }
  }

  // The finisher, once the task's outcome is written: closes the stack and returns its newest link (null if none).
  // acq_rel: release for a later link() that finds kClosed (it reads the outcome); acquire for the links pushed
  // before (their fields). (Planted bug successor_list.relaxed_close: relaxed, neither.)
  [[nodiscard]] Link* close() noexcept {
    const auto order = Plants::planted("successor_list.relaxed_close") ? std::memory_order_relaxed
                                                                       : std::memory_order_acq_rel;
    const std::uintptr_t found = head_.exchange(kClosed, order);
    return reinterpret_cast<Link*>(found);  // 0 (no successor) is null; kClosed is never found (closed once)
  }

  // `count` of this successor's units are given up (predecessors done, or the submitter's unit with those it
  // found done). True for the call that gives up the last one: the caller releases the successor (runs it, or
  // settles it with a predecessor's failure). acq_rel: every giver's writes before its call (a predecessor's
  // outcome, a recorded failure) happen-before the releaser's next steps; the RMWs form one release sequence.
  // (Planted bug successor_list.relaxed_arrive: relaxed.)
  [[nodiscard]] bool arrive(std::uint32_t count) noexcept {
    const auto order = Plants::planted("successor_list.relaxed_arrive") ? std::memory_order_relaxed
                                                                        : std::memory_order_acq_rel;
    return waiting_.fetch_sub(count, order) == count;
  }

 private:
  Atomic<std::uintptr_t> head_{0};
  Atomic<std::uint32_t> waiting_;
};

}  // namespace weft::detail
