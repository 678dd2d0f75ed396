// The join stages of a TaskScope pipeline run (TaskScope::join, join_by_key): items waiting for their partners,
// the tuples they make, the items lost with a partner, and what a join still holds when the run ends.
#include <array>
#include <string>
#include <vector>

#include "graph/pipeline/pipeline_run.hpp"
#include "graph/pipeline/pipeline_state.hpp"
#include "graph/run_state.hpp"
#include "weft/detail/pipeline_join.hpp"
#include "weft/errors.hpp"

namespace weft::detail::pipeline {

void Run::arrive_join(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  StageState& s = state(stage);
  auto& body = *static_cast<JoinBody*>(s.body);
  std::uint32_t input = 0;
  while (input + 1 < s.join_origins.size() &&
         (s.join_origins[input].stage != slot->origin || s.join_origins[input].port != slot->port)) {
    ++input;
  }
  std::array<void*, kMaxBranches> parts{};
  if (slot->marker) {  // a join by position: the item of this number was lost on this input
    std::size_t count = 0;
    try {
      count = body.lost(input, slot->seq, parts.data());
    } catch (...) {  // out of memory for the join's record
      fail(std::current_exception());
      return;
    }
    for (std::size_t i = 0; i < count; ++i) lose(carrier, static_cast<Slot*>(parts[i]), stage);
    free_slot(carrier, slot);
    return;
  }
  JoinBody::Arrival arrival = JoinBody::Arrival::waiting;
  const std::int64_t traced_from = trace_from();
  try {
    arrival = body.arrive(input, slot->seq, storage(slot), slot, parts.data());
  } catch (...) {  // the key function's exception: the item stays in its slot, which ~Run empties
    fail(std::current_exception());
    return;
  }
  if (arrival == JoinBody::Arrival::waiting) return;
  if (arrival == JoinBody::Arrival::lost) {
    lose(carrier, slot, stage);
    return;
  }
  const std::size_t inputs = s.join_origins.size();
  std::array<void*, kMaxBranches> items{};
  for (std::size_t i = 0; i < inputs; ++i) items[i] = storage(static_cast<Slot*>(parts[i]));
  body.make(items.data());  // every part consumed; the tuple in input 0's slot
  for (std::size_t i = 1; i < inputs; ++i) {
    auto* part = static_cast<Slot*>(parts[i]);
    part->holder = kNone;
    free_slot(carrier, part);
  }
  auto* tuple = static_cast<Slot*>(parts[0]);
  tuple->holder = stage;
  tuple->seq = s.emitted.fetch_add(1, std::memory_order_relaxed);  // tuples are numbered as they are made
  tuple->origin = stage;
  tuple->port = 0;
  trace_stage(stage, tuple->seq, traced_from);
  deliver(carrier, tuple, next_[stage]);
}

void Run::lose(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  destroy_content(slot);
  StageState& s = state(stage);
  s.lock.lock();
  ++s.dropped;
  s.lock.unlock();
  free_slot(carrier, slot);
}

void Run::check_end() noexcept {
  if (stop_.load(std::memory_order_relaxed) || run_state_->cancelled()) return;
  if (check_sequences()) return;
  for (std::uint32_t k = 0; k < stages_.size(); ++k) {
    const StageState& s = state(k);
    if (s.kind != StageKind::join) continue;
    const auto& body = *static_cast<const JoinBody*>(s.body);
    const std::vector<Pipeline::Output>& inputs = stages_[k].inputs;
    std::array<std::size_t, kMaxBranches> counts{};
    body.waiting(counts.data());
    std::size_t total = 0;
    std::string which;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      total += counts[i];
      which += (i == 0 ? "input " : ", input ") + std::to_string(i) + " (stage '" + stages_[inputs[i].stage].name +
               "'): " + std::to_string(counts[i]);
    }
    if (total == 0) continue;
    // Nothing else alive (no item elsewhere, no fan state waiting for a slot): the inputs really ended.
    pool_lock_.lock();
    std::size_t live = 0;
    for (const Segment& segment : segments_) live += segment.live;
    pool_lock_.unlock();
    if (source_ended_ && live == total) {
      fail(error_of<weft::unmatched_items>(owner(), ": join '", stages_[k].name, "' of pipeline '", pipeline_.name(),
                                           "': its inputs ended unequally, ", std::to_string(total),
                                           " item(s) left without a partner (", which, "); they are destroyed"));
    } else {
      fail(error_of<weft::would_deadlock>(
          owner(), ": pipeline '", pipeline_.name(), "' cannot go on: join '", stages_[k].name, "' holds ",
          std::to_string(total), " item(s) waiting for partners (", which,
          ") and they fill the room the pipeline's bound leaves, so the partners can never be made (raise the "
          "join's capacity, or route the items so that every input gets its share)"));
    }
    return;
  }
}

}  // namespace weft::detail::pipeline
