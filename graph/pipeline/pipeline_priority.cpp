// The priority buffers of a pipeline run (TaskScope::priority_buffer, StreamGraph::priority_buffer): an Order::Any
// stage whose waiting items leave by rank, highest first, instead of in arrival order.
#include <algorithm>
#include <cstddef>
#include <exception>
#include <utility>

#include "graph/pipeline/pipeline_run.hpp"
#include "graph/pipeline/pipeline_state.hpp"

namespace weft::detail::pipeline {

namespace {
// The heap's order, by the stage's comparison: the item no other ranks below on top.
struct RanksBelow {
  StageBody* body;
  std::size_t offset;
  bool operator()(Slot* a, Slot* b) const noexcept {
    return body->ranks_below(reinterpret_cast<std::byte*>(a) + offset, reinterpret_cast<std::byte*>(b) + offset);
  }
};
}  // namespace

bool Run::arrive_priority(Carrier& carrier, Slot* slot, std::uint32_t stage, std::uint32_t producer) noexcept {
  StageState& s = state(stage);
  const RanksBelow order{s.body, storage_offset_};
  s.lock.lock();
  const Arrival arrival = admit(carrier, slot, stage, producer, s.held().size());
  if (arrival != Arrival::wait) return arrival == Arrival::parked;
  s.held().push_back(slot);
  std::push_heap(s.held().begin(), s.held().end(), order);
  const std::exception_ptr error = s.body->take_error();
  s.lock.unlock();
  if (error) fail(error);
  return false;
}

void Run::release_priority(Carrier& carrier, std::uint32_t stage) noexcept {
  StageState& s = state(stage);
  const RanksBelow order{s.body, storage_offset_};
  Slot* next = nullptr;
  std::uint32_t held = kNone;  // the producer's slot held by a parked item that takes the room just made
  s.lock.lock();
  --s.running;
  if (!s.held().empty()) {  // non-empty only while every slot was taken: one is free now
    std::pop_heap(s.held().begin(), s.held().end(), order);
    next = s.held().back();
    s.held().pop_back();
    ++s.running;
    if (Slot* entered = s.parked.pop()) {
      held = std::exchange(entered->held, kNone);  // under the lock: once in the heap, others may take it
      s.held().push_back(entered);
      std::push_heap(s.held().begin(), s.held().end(), order);
    }
  }
  const std::exception_ptr error = s.body->take_error();
  s.lock.unlock();
  if (error) fail(error);
  if (next != nullptr) offer(carrier, Step{Step::Kind::stage, stage, next, nullptr});
  if (held != kNone) unpark(carrier, held);
}

}  // namespace weft::detail::pipeline
