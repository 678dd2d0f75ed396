// The sequence stages of a pipeline run (TaskScope::sequence, StreamGraph::sequence): items held until their
// key's turn, handed on in key order, and what a sequence still holds when the run ends.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "graph/pipeline/pipeline_run.hpp"
#include "graph/pipeline/pipeline_state.hpp"
#include "graph/run_state.hpp"
#include "weft/errors.hpp"

namespace weft::detail::pipeline {

namespace {
// The heap's order: the smallest key on top.
struct LaterKey {
  bool operator()(const Slot* a, const Slot* b) const noexcept { return a->seq > b->seq; }
};
}  // namespace

void Run::arrive_sequence(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  StageState& s = state(stage);
  std::uint64_t key = 0;
  try {
    key = s.body->sequence_key(storage(slot));
  } catch (...) {  // the key function's exception, or a negative key: the item stays in its slot, which reset() empties
    fail(std::current_exception());
    return;
  }
  slot->seq = key;  // from here on the item is numbered by its key
  slot->origin = stage;
  slot->port = 0;
  SlotList starts;
  bool repeated = false;
  bool late = false;
  bool full = false;
  std::uint64_t expected = 0;
  std::size_t held = 0;
  s.lock.lock();
  expected = s.next_seq;
  if (key < s.next_seq) {
    late = true;
  } else if (s.overflow == Overflow::Fail && !(key == s.next_seq && s.running < s.concurrency) &&
             s.held().size() >= s.capacity) {
    full = true;
  } else {
    s.held().push_back(slot);  // reserved for every item alive: no allocation
    std::push_heap(s.held().begin(), s.held().end(), LaterKey{});
    take_sequenced(s, starts, repeated);
    expected = s.next_seq;
  }
  held = s.held().size();
  s.lock.unlock();
  if (late || repeated) {
    // The item (or its twin, left in the heap) stays in its slot: reset() destroys it.
    const std::uint64_t bad = late ? key : expected - 1;
    fail(error_of<std::out_of_range>(owner(), ": sequence '", stages_[stage].name, "' of pipeline '", pipeline_.name(),
                                     "': key ", std::to_string(bad),
                                     " came twice (or after its turn: the stage had handed on every key below ",
                                     std::to_string(expected), "); each key 0, 1, 2, ... must come exactly once"));
    return;
  }
  if (full) {
    fail(error_of<weft::inbox_full>(owner(), ": sequence '", stages_[stage].name, "' of pipeline '", pipeline_.name(),
                                    "' holds ", std::to_string(held), " item(s) waiting for key ",
                                    std::to_string(expected), " (capacity ", std::to_string(s.capacity),
                                    ", Overflow::Fail) and key ", std::to_string(key), " came: the run is cancelled"));
    return;
  }
  while (Slot* start = starts.pop()) offer(carrier, Step{Step::Kind::stage, stage, start, nullptr});
}

void Run::release_sequence(Carrier& carrier, std::uint32_t stage) noexcept {
  StageState& s = state(stage);
  SlotList starts;
  bool repeated = false;
  s.lock.lock();
  --s.running;
  take_sequenced(s, starts, repeated);
  const std::uint64_t expected = s.next_seq;
  s.lock.unlock();
  while (Slot* start = starts.pop()) offer(carrier, Step{Step::Kind::stage, stage, start, nullptr});
  if (repeated) {
    fail(error_of<std::out_of_range>(owner(), ": sequence '", stages_[stage].name, "' of pipeline '", pipeline_.name(),
                                     "': key ", std::to_string(expected - 1),
                                     " came twice (or after its turn: the stage had handed on every key below ",
                                     std::to_string(expected), "); each key 0, 1, 2, ... must come exactly once"));
  }
}

void Run::take_sequenced(StageState& s, SlotList& starts, bool& repeated) noexcept {
  while (!s.held().empty() && s.running < s.concurrency) {
    Slot* front = s.held().front();
    if (front->seq < s.next_seq) {  // a second item of a key handed on already
      repeated = true;
      return;
    }
    if (front->seq != s.next_seq) return;  // the next key has not come yet
    std::pop_heap(s.held().begin(), s.held().end(), LaterKey{});
    s.held().pop_back();
    ++s.running;
    ++s.next_seq;
    starts.push(front);
  }
}

bool Run::check_sequences() noexcept {
  for (std::uint32_t k = 0; k < stages_.size(); ++k) {
    const StageState& s = state(k);
    if (s.kind != StageKind::sequence || s.held().empty()) continue;
    std::uint64_t highest = 0;
    for (const Slot* slot : s.held()) highest = std::max(highest, slot->seq);
    const std::string held = std::to_string(s.held().size()) + " item(s) (keys " +
                             std::to_string(s.held().front()->seq) + " .. " + std::to_string(highest) + ")";
    pool_lock_.lock();
    std::size_t live = 0;
    for (const Segment& segment : segments_) live += segment.live;
    pool_lock_.unlock();
    if (source_ended_ && live == s.held().size()) {
      // Nothing else alive: the key it waits for will never come.
      fail(error_of<weft::unmatched_items>(
          owner(), ": sequence '", stages_[k].name, "' of pipeline '", pipeline_.name(), "' waits for key ",
          std::to_string(s.next_seq), ", which never came, and holds ", held,
          "; each key 0, 1, 2, ... must come exactly once (an item filtered out or dropped before the sequence "
          "leaves its key missing); the items held are destroyed"));
    } else {
      fail(error_of<weft::would_deadlock>(
          owner(), ": pipeline '", pipeline_.name(), "' cannot go on: sequence '", stages_[k].name, "' waits for key ",
          std::to_string(s.next_seq), " and holds ", held,
          ", which fill the room the pipeline's bound leaves, so the item of key ", std::to_string(s.next_seq),
          " can never be made (raise the sequence's capacity, or make the keys follow the source's order more "
          "closely)"));
    }
    return true;
  }
  return false;
}

}  // namespace weft::detail::pipeline
