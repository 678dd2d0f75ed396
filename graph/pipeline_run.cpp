// One run of a TaskScope pipeline (see graph/pipeline_run.hpp for the invariants).
#include "graph/pipeline_run.hpp"

#include <algorithm>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "graph/subflow_access.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft::detail::pipeline {

void SpinLock::lock() noexcept {
  unsigned spins = 0;
  // acquire: pairs with unlock()'s release, so the holder's changes are seen by the next one.
  while (held_.exchange(true, std::memory_order_acquire)) {
    while (held_.load(std::memory_order_relaxed)) {
      if (++spins < 64) {
        sched::cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
  }
}

void SlotList::push(Slot* slot) noexcept {
  slot->next = nullptr;
  if (tail == nullptr) {
    head = slot;
  } else {
    tail->next = slot;
  }
  tail = slot;
  ++size;
}

Slot* SlotList::pop() noexcept {
  Slot* slot = head;
  if (slot == nullptr) return nullptr;
  head = slot->next;
  if (head == nullptr) tail = nullptr;
  slot->next = nullptr;
  --size;
  return slot;
}

struct alignas(sched::kCacheLine) Run::StageState {
  SpinLock lock;
  unsigned running = 0;  // bodies running, or items that took a slot and are on their way to run
  unsigned concurrency = 1;
  std::size_t capacity = 1;
  Overflow overflow = Overflow::Block;
  bool ordered = false;
  SlotList inbox;                // Order::Any: items waiting for a slot, oldest first
  std::vector<Slot*> ring;       // Order::Input: waiting items and markers, at their number modulo its size
  std::uint64_t mask = 0;
  std::uint64_t next_seq = 0;    // Order::Input: the number the stage takes next
  std::size_t waiting = 0;       // Order::Input: items (not markers) in the ring
  std::uint64_t dropped = 0;
  // A fan-out stage: the number of its next element, in its segment's order. relaxed: only the numbers' uniqueness
  // matters; a serial Order::Input fan-out stage hands them out in its input's order anyway.
  std::atomic<std::uint64_t> emitted{0};
};

struct Run::Segment {
  std::size_t budget = 0;
  std::size_t live = 0;          // slots of the segment taken
  SlotList waiters;              // fan states waiting for a slot of the segment
  bool source_waiting = false;   // the source is waiting for a slot (segment 0)
  std::uint32_t producer = 0;    // the source (0) or the fan-out stage whose elements the segment's items are
};

namespace {
constexpr std::size_t kChunkSlots = 32;

std::size_t round_up(std::size_t n, std::size_t align) { return (n + align - 1) / align * align; }
}  // namespace

Run::Run(Pipeline& pipeline, Subflow& subflow)
    : pipeline_(pipeline),
      subflow_(subflow),
      stages_(pipeline.stages()),
      last_(static_cast<std::uint32_t>(pipeline.stages().size() - 1)) {
  align_ = std::max(pipeline.slot_align(), alignof(Slot));
  storage_offset_ = round_up(sizeof(Slot), align_);
  stride_ = round_up(storage_offset_ + pipeline.slot_size(), align_);
  const std::size_t workers = subflow.pool().size();
  const std::size_t n = stages_.size();
  // segment_in[k]: the segment of the items stage k consumes (the source: 0).
  std::vector<std::uint32_t> segment_in(n, 0);
  segment_of_.assign(n, 0);
  segments_.emplace_back();
  segments_[0].budget = 1;  // the source's item
  for (std::uint32_t k = 1; k < n; ++k) {
    const Pipeline::Stage& stage = stages_[k];
    segment_in[k] = segment_of_[k - 1];
    const std::size_t concurrency = std::min<std::size_t>(stage.options.concurrency, workers + 1);
    segments_[segment_in[k]].budget += stage.options.capacity + concurrency;
    if (stage.kind == StageKind::fan_out) {
      segments_.emplace_back();
      segments_.back().producer = k;
      segment_of_[k] = static_cast<std::uint32_t>(segments_.size() - 1);
    } else {
      segment_of_[k] = segment_in[k];
    }
  }
  states_.reserve(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    auto state = std::make_unique<StageState>();
    const StageOptions& options = stages_[k].options;
    state->concurrency = options.concurrency;
    state->capacity = options.capacity;
    state->overflow = options.overflow;
    state->ordered = k != 0 && options.order == Order::Input;
    if (state->ordered) {
      std::size_t size = 1;
      while (size < segments_[segment_in[k]].budget) size *= 2;
      state->ring.assign(size, nullptr);
      state->mask = size - 1;
    }
    states_.push_back(std::move(state));
  }
  // A marker leaving stage k (an item filtered out there, or dropped on its way into k) goes to the next
  // Order::Input stage consuming the same segment; a fan-out stage ends the segment.
  next_ordered_.assign(n, kNone);
  for (std::uint32_t k = 0; k < n; ++k) {
    for (std::uint32_t j = k + 1; j < n && segment_in[j] == segment_in[k]; ++j) {
      if (states_[j]->ordered) {
        next_ordered_[k] = j;
        break;
      }
    }
  }
}

Run::~Run() {
  // Every task has ended: destroy what is left in the slots (a stopped run's items), then the slots.
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    const std::size_t used = c + 1 == chunks_.size() ? chunk_used_ : kChunkSlots;
    for (std::size_t i = 0; i < used; ++i) {
      Slot* slot = std::launder(reinterpret_cast<Slot*>(chunks_[c] + i * stride_));
      destroy_content(slot);
      slot->~Slot();
    }
    ::operator delete(chunks_[c], std::align_val_t(align_));
  }
}

std::exception_ptr Run::run(bool& completed) noexcept {
  carry(Step{Step::Kind::source, 0, nullptr, nullptr});
  // Every task of the pipeline was spawned into this subflow: once it is joined, none touches this run.
  SubflowAccess::join_if_spawned(subflow_);
  bool all_freed = true;
  for (const Segment& segment : segments_) all_freed = all_freed && segment.live == 0;
  completed = !stop_.load(std::memory_order_relaxed) && source_ended_ && all_freed;
  for (std::uint32_t k = 0; k < states_.size(); ++k) {
    if (states_[k]->dropped != 0) {
      SubflowAccess::add_dropped(subflow_, pipeline_.name() + "/" + stages_[k].name, states_[k]->dropped);
    }
  }
  return error_;
}

bool Run::stopping() const noexcept { return stop_.load(std::memory_order_relaxed) || subflow_.cancelled(); }

void Run::carry(Step step) noexcept {
  Carrier carrier;
  carrier.next = step;
  carrier.has = true;
  while (carrier.has) {
    carrier.has = false;
    const Step now = carrier.next;
    // A stopped run leaves the item where it is: ~Run destroys it.
    if (stopping()) return;
    switch (now.kind) {
      case Step::Kind::source:
        run_source(carrier, now.slot);
        break;
      case Step::Kind::stage:
        run_stage(carrier, now.slot, now.stage);
        break;
      case Step::Kind::fan:
        run_fan(carrier, now.slot, now.stage, now.fresh);
        break;
    }
  }
}

void Run::offer(Carrier& carrier, Step step) noexcept {
  if (!carrier.has) {
    carrier.next = step;
    carrier.has = true;
  } else {
    spawn(step);
  }
}

void Run::spawn(Step step) noexcept {
  const Priority priority = stages_[step.kind == Step::Kind::source ? 0 : step.stage].options.priority;
  try {
    SubflowAccess::spawn(subflow_, [this, step] { carry(step); }, priority);
  } catch (...) {  // pool_closed, or a stack too short to spawn: the step's item is left for ~Run
    fail(std::current_exception());
  }
}

void Run::run_source(Carrier& carrier, Slot* slot) noexcept {
  // This carrier holds the source's turn: nobody else calls the source until it hands the turn on.
  for (;;) {
    if (stopping()) return;
    if (slot == nullptr) {
      slot = acquire(0, nullptr);
      if (slot == nullptr) return;  // the budget is spent: the next slot freed brings the turn back
    }
    slot->seq = source_seq_++;
    bool produced = false;
    try {
      produced = stages_[0].body->produce(storage(slot));
    } catch (...) {
      fail(std::current_exception());
      return;
    }
    if (!produced) {
      source_ended_ = true;
      free_slot(carrier, slot);
      return;
    }
    slot->holder = 0;
    const bool was_free = !carrier.has;
    deliver(carrier, std::exchange(slot, nullptr), 1);
    if (was_free && carrier.has) {
      // This carrier takes the item on; another task calls the source meanwhile (as oneTBB's input filter).
      spawn(Step{Step::Kind::source, 0, nullptr, nullptr});
      return;
    }
    // The item waits in an inbox (or was dropped): call the source again.
  }
}

void Run::run_stage(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  const Pipeline::Stage& s = stages_[stage];
  slot->holder = kNone;  // process() destroys the input whatever happens
  bool produced = false;
  try {
    produced = s.body->process(storage(slot));
  } catch (...) {
    fail(std::current_exception());
    return;
  }
  if (s.kind == StageKind::fan_out) {
    slot->holder = stage;
    slot->fan_state = true;
    run_fan(carrier, slot, stage, nullptr);
    return;
  }
  if (stage == last_) {
    // The sink's next waiting item first: an Order::Input sink is usually the pipeline's narrowest stage.
    release(carrier, stage);
    free_slot(carrier, slot);
    return;
  }
  if (produced) {
    slot->holder = stage;
    deliver(carrier, slot, stage + 1);
  } else {
    slot->marker = true;
    deliver(carrier, slot, next_ordered_[stage]);
  }
  release(carrier, stage);
}

void Run::run_fan(Carrier& carrier, Slot* state, std::uint32_t stage, Slot* fresh) noexcept {
  const std::uint32_t segment = segment_of_[stage];
  StageBody& body = *stages_[stage].body;
  for (;;) {
    if (stopping()) return;  // `fresh`, if any, is empty: ~Run only frees it
    Slot* element = fresh != nullptr ? std::exchange(fresh, nullptr) : acquire(segment, state);
    if (element == nullptr) return;  // registered: the next slot freed in the segment resumes this fan state
    bool got = false;
    try {
      got = body.next(storage(state), storage(element));
    } catch (...) {
      fail(std::current_exception());
      return;
    }
    if (!got) {
      body.destroy_state(storage(state));
      state->holder = kNone;
      state->fan_state = false;
      free_slot(carrier, element);
      free_slot(carrier, state);
      release(carrier, stage);
      return;
    }
    element->holder = stage;
    element->seq = states_[stage]->emitted.fetch_add(1, std::memory_order_relaxed);
    deliver(carrier, element, stage + 1);
  }
}

void Run::deliver(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  if (stage == kNone) {  // a marker past the last Order::Input stage of its segment
    free_slot(carrier, slot);
    return;
  }
  StageState& s = *states_[stage];
  if (!s.ordered) {  // markers never come here
    s.lock.lock();
    if (s.running < s.concurrency) {
      ++s.running;
      s.lock.unlock();
      offer(carrier, Step{Step::Kind::stage, stage, slot, nullptr});
      return;
    }
    if (s.inbox.size >= s.capacity && s.overflow != Overflow::Block) {
      if (s.overflow == Overflow::Drop) ++s.dropped;
      s.lock.unlock();
      drop(carrier, slot, stage);
      return;
    }
    s.inbox.push(slot);
    s.lock.unlock();
    return;
  }
  SlotList markers;
  SlotList starts;
  s.lock.lock();
  const bool starts_now = slot->seq == s.next_seq && s.running < s.concurrency;
  if (!slot->marker && !starts_now && s.waiting >= s.capacity && s.overflow != Overflow::Block) {
    if (s.overflow == Overflow::Drop) ++s.dropped;
    s.lock.unlock();
    drop(carrier, slot, stage);
    return;
  }
  s.ring[slot->seq & s.mask] = slot;
  if (!slot->marker) ++s.waiting;
  take_ready(s, markers, starts);
  s.lock.unlock();
  send_on(carrier, stage, markers, starts);
}

void Run::drop(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  StageState& s = *states_[stage];
  if (s.overflow == Overflow::Fail) {
    try {
      std::string message = "weft::TaskScope: stage '" + stages_[stage].name + "' of pipeline '" +
                             pipeline_.name() + "' found its inbox full (capacity " + std::to_string(s.capacity) +
                             ", Overflow::Fail): the run is cancelled";
      fail(std::make_exception_ptr(weft::inbox_full(message)));
    } catch (...) {
      fail(std::current_exception());
    }
    return;  // the item stays in its slot: ~Run destroys it
  }
  destroy_content(slot);
  slot->holder = kNone;
  slot->marker = true;
  // Its number still passes the Order::Input stages: this one (if it is one) and those after it.
  deliver(carrier, slot, s.ordered ? stage : next_ordered_[stage]);
}

void Run::release(Carrier& carrier, std::uint32_t stage) noexcept {
  StageState& s = *states_[stage];
  if (!s.ordered) {
    s.lock.lock();
    --s.running;
    Slot* next = s.inbox.pop();  // non-empty only while every slot was taken: one is free now
    if (next != nullptr) ++s.running;
    s.lock.unlock();
    if (next != nullptr) offer(carrier, Step{Step::Kind::stage, stage, next, nullptr});
    return;
  }
  SlotList markers;
  SlotList starts;
  s.lock.lock();
  --s.running;
  take_ready(s, markers, starts);
  s.lock.unlock();
  send_on(carrier, stage, markers, starts);
}

void Run::take_ready(StageState& s, SlotList& markers, SlotList& starts) noexcept {
  for (;;) {
    Slot*& at = s.ring[s.next_seq & s.mask];
    Slot* front = at;
    if (front == nullptr) return;
    if (!front->marker) {
      if (s.running >= s.concurrency) return;
      ++s.running;
      --s.waiting;
    }
    at = nullptr;
    ++s.next_seq;
    (front->marker ? markers : starts).push(front);
  }
}

void Run::send_on(Carrier& carrier, std::uint32_t stage, SlotList& markers, SlotList& starts) noexcept {
  while (Slot* slot = starts.pop()) offer(carrier, Step{Step::Kind::stage, stage, slot, nullptr});
  while (Slot* slot = markers.pop()) deliver(carrier, slot, next_ordered_[stage]);
}

Slot* Run::acquire(std::uint32_t segment, Slot* waiter) noexcept {
  pool_lock_.lock();
  Segment& g = segments_[segment];
  if (g.live >= g.budget) {
    if (waiter != nullptr) {
      g.waiters.push(waiter);
    } else {
      g.source_waiting = true;
    }
    pool_lock_.unlock();
    return nullptr;
  }
  Slot* slot = free_;
  if (slot != nullptr) {
    free_ = slot->next;
  } else {
    if (chunks_.empty() || chunk_used_ == kChunkSlots) {
      try {
        chunks_.reserve(chunks_.size() + 1);
        chunks_.push_back(static_cast<std::byte*>(::operator new(kChunkSlots * stride_, std::align_val_t(align_))));
      } catch (...) {
        pool_lock_.unlock();
        fail(std::current_exception());
        return nullptr;
      }
      chunk_used_ = 0;
    }
    slot = ::new (chunks_.back() + chunk_used_ * stride_) Slot();
    ++chunk_used_;
  }
  ++g.live;
  pool_lock_.unlock();
  slot->next = nullptr;
  slot->segment = segment;
  return slot;
}

void Run::free_slot(Carrier& carrier, Slot* slot) noexcept {
  slot->holder = kNone;
  slot->marker = false;
  slot->fan_state = false;
  pool_lock_.lock();
  Segment& g = segments_[slot->segment];
  if (g.source_waiting) {  // the slot goes straight to the source, still counted in the budget
    g.source_waiting = false;
    pool_lock_.unlock();
    offer(carrier, Step{Step::Kind::source, 0, slot, nullptr});
    return;
  }
  if (Slot* state = g.waiters.pop()) {  // likewise to the oldest fan state waiting for one
    pool_lock_.unlock();
    offer(carrier, Step{Step::Kind::fan, g.producer, state, slot});
    return;
  }
  --g.live;
  slot->next = free_;
  free_ = slot;
  pool_lock_.unlock();
}

void Run::destroy_content(Slot* slot) noexcept {
  if (slot->holder == kNone) return;
  StageBody& body = *stages_[slot->holder].body;
  if (slot->fan_state) {
    body.destroy_state(storage(slot));
  } else {
    body.destroy(storage(slot));
  }
  slot->holder = kNone;
  slot->fan_state = false;
}

void Run::fail(std::exception_ptr error) noexcept {
  {
    const std::lock_guard<std::mutex> hold(error_lock_);
    if (!error_) error_ = error;
  }
  stop_.store(true, std::memory_order_relaxed);
  // The run's first exception: it cancels the scope's other jobs, and wait() rethrows it.
  SubflowAccess::record_exception(subflow_, std::move(error));
}

}  // namespace weft::detail::pipeline

namespace weft::detail {

std::exception_ptr Pipeline::run(Subflow& subflow, bool& completed) noexcept {
  completed = false;
  std::unique_ptr<pipeline::Run> run;
  try {
    run = std::make_unique<pipeline::Run>(*this, subflow);
  } catch (...) {  // out of memory for the rings
    std::exception_ptr error = std::current_exception();
    SubflowAccess::record_exception(subflow, error);
    return error;
  }
  return run->run(completed);
}

}  // namespace weft::detail
