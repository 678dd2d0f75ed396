// How a weft::Subflow counts its unfinished children, and how the last one knows to wake a sleeping joiner.
// Internal: weft::Subflow holds one (include/weft/subflow.hpp); tests/graph/child_count_model.cpp checks it under
// Relacy, planted bugs included: they come in through the `Plants` template parameter (the model's policy marks
// one of the "child_count.*" sites taken), and ChildCount's NoPlants answers a constant false, so the library
// compiles only the correct text and this installed header holds no test switch.
//
// Two counts. `local_`, a plain integer, is touched only by code on the owner's stack (the execution that owns the
// Subflow: its body, and whatever its waits run nested on that stack, one piece at a time): children it spawned,
// minus children that finished nested on it. `shared_`, atomic, counts the rest: children spawned from other
// stacks, minus children that finished elsewhere, plus kBias so that it never crosses zero or reaches kSleeper
// whichever comes first (a child spawned here and stolen finishes elsewhere before the joiner looks). The children
// are all finished when local_ + shared_ == kBias. A recursive split spawns and finishes most children on the
// owner's stack: no locked instruction for them at all.
//
// kSleeper: before the joiner first sleeps it folds local_ into shared_ and sets kSleeper in one RMW; from then on
// every spawn and finish goes through shared_, so the child whose decrement leaves kSleeper | kBias is the last, and
// it wakes the joiner. Its decrement is its last access: the Subflow may be gone the moment it lands.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace weft::detail {

// A plain field, spelled as the model's checked one (load/store), so that the Relacy model runs this text.
template <class T>
class PlainField {
 public:
  explicit PlainField(T value) noexcept : value_(value) {}
  [[nodiscard]] T load() const noexcept { return value_; }
  void store(T value) noexcept { value_ = value; }

 private:
  T value_;
};

// The production plant policy: no planted bug anywhere.
struct NoPlants {
  static constexpr bool planted(const char* /*name*/) noexcept { return false; }
};

// `Atomic64`: std::atomic<std::uint64_t>, or the model's; `Field`: PlainField<std::int64_t>, or the model's;
// `Plants`: NoPlants, or the model's (tests/model/plant.hpp), whose planted(name) is true for the one planted bug.
template <class Atomic64, class Field, class Plants = NoPlants>
class BasicChildCount {
 public:
  static constexpr std::uint64_t kSleeper = std::uint64_t{1} << 63;
  static constexpr std::uint64_t kBias = std::uint64_t{1} << 62;

  // Counts a child about to be queued. `on_owner_stack`: the caller runs on the owner's stack.
  void spawned(bool on_owner_stack) noexcept {
    if (on_owner_stack && !announced_unless_planted()) {
      local_.store(local_.load() + 1);
      return;
    }
    // relaxed: counted before the child can run (the queue's publication orders it); the child's decrement
    // (acq_rel) publishes its work.
    shared_.fetch_add(1, std::memory_order_relaxed);
  }

  // Counts a child that finished. `on_owner_stack`: it ran nested on the owner's stack. Returns true if the
  // caller must wake the joiner (the last child, and the joiner announced itself); either way the caller must not
  // touch this count, or the Subflow, afterwards.
  [[nodiscard]] bool finished(bool on_owner_stack) noexcept {
    if (on_owner_stack && !announced_unless_planted()) {
      local_.store(local_.load() - 1);
      return false;
    }
    // acq_rel: publishes the child's work to the joiner (acquire in unfinished()) and, through the chain of RMWs,
    // its siblings' work too.
    // (Planted bug child_count.relaxed_finish: relaxed, the child publishes nothing.)
    const auto order = Plants::planted("child_count.relaxed_finish") ? std::memory_order_relaxed
                                                                     : std::memory_order_acq_rel;
    return shared_.fetch_sub(1, order) == (kSleeper | (kBias + 1));
  }

  // Owner only: true while a child is unfinished.
  [[nodiscard]] bool unfinished() const noexcept {
    // acquire: pairs with finished()'s decrement, so the joiner sees what the children wrote.
    const std::uint64_t shared = shared_.load(std::memory_order_acquire) & ~kSleeper;
    return shared + static_cast<std::uint64_t>(local_.load()) != kBias;
  }

  // Owner only, before it sleeps: sets kSleeper, so that the last child wakes it. Returns false, announcing
  // nothing, if every child had finished already.
  [[nodiscard]] bool announce() noexcept {
    if (announced()) return true;
    std::uint64_t folded = 0;
    // (Planted bug child_count.fold_forgotten: sets the bit and keeps the plain count.)
    if (!Plants::planted("child_count.fold_forgotten")) {
      folded = static_cast<std::uint64_t>(local_.load());
      local_.store(0);
    }
    // One RMW: a child's decrement lands either before it (and is in the sum) or after it (and sees the bit). The
    // sum stays below kSleeper, so adding the bit carries nothing. seq_cst, as the children's RMWs on this one
    // variable are ordered against it anyway.
    const std::uint64_t before = shared_.fetch_add(kSleeper + folded, std::memory_order_seq_cst);
    if (before + folded != kBias) return true;
    // Every child had finished: none will touch the count again.
    shared_.store(kBias, std::memory_order_relaxed);
    return false;
  }

  // Owner only: whether it announced itself (only the owner sets or clears the bit).
  [[nodiscard]] bool announced() const noexcept { return (shared_.load(std::memory_order_relaxed) & kSleeper) != 0; }

  // Owner only, once unfinished() returned false: back to the empty state (no child touches the count any more;
  // the last one's decrement was its final access).
  void reset() noexcept {
    if (shared_.load(std::memory_order_relaxed) != kBias) shared_.store(kBias, std::memory_order_relaxed);
    local_.store(0);
  }

 private:
  [[nodiscard]] bool announced_unless_planted() const noexcept {
    // (Planted bug child_count.plain_while_announced: counts plainly after the fold.)
    if (Plants::planted("child_count.plain_while_announced")) return false;
    return announced();
  }

  Atomic64 shared_{kBias};
  Field local_{0};
};

using ChildCount = BasicChildCount<std::atomic<std::uint64_t>, PlainField<std::int64_t>>;

}  // namespace weft::detail
