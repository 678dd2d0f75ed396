// One run of a TaskScope pipeline: its layout (segments, budgets, each stage's state, built from the stages), its
// item slots and its entry point (see graph/pipeline/pipeline_run.hpp for the invariants).
#include <algorithm>
#include <new>
#include <thread>
#include <utility>

#include "graph/pipeline/pipeline_run.hpp"
#include "graph/pipeline/pipeline_state.hpp"
#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/atomics/cpu_relax.hpp"
#include "weft/detail/pipeline_join.hpp"

namespace weft::detail::pipeline {

std::atomic<TestMode> test_mode{TestMode::automatic};

void SpinLock::lock() noexcept {
  unsigned spins = 0;
  // acquire: pairs with unlock()'s release, so the holder's changes are seen by the next one.
  while (held_.exchange(true, std::memory_order_acquire)) {
    while (held_.load(std::memory_order_relaxed)) {
      if (++spins < 64) {
        atomics::cpu_relax();
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

Run::Run(Pipeline& pipeline, std::size_t workers)
    : pipeline_(pipeline),
      workers_(workers),
      stages_(pipeline.stages()),
      last_(static_cast<std::uint32_t>(pipeline.stages().size() - 1)) {
  align_ = std::max(pipeline.slot_align(), alignof(Slot));
  storage_offset_ = round_up(sizeof(Slot), align_);
  stride_ = round_up(storage_offset_ + pipeline.slot_size(), align_);
  const std::size_t n = stages_.size();
  // feeds[k]: the segments whose slots may hold the items stage k consumes; outs[k]: those of the items it
  // makes. A fan-out or fork stage's items have a segment of their own (shared by every branch of a fork); a
  // merge's are its inputs'; a join's tuples are built in input 0's slots. Every stage comes after the stages it
  // consumes, so one pass in index order sees them first.
  std::vector<std::vector<std::uint32_t>> feeds(n);
  std::vector<std::vector<std::uint32_t>> outs(n);
  segment_of_.assign(n, 0);
  next_.assign(n, kNone);
  segments_.emplace_back();
  segments_[0].budget = 1;  // the source's item
  outs[0] = {0};
  for (std::uint32_t k = 0; k < n; ++k) {
    if (!stages_[k].to.empty()) next_[k] = stages_[k].to[0];
  }
  for (std::uint32_t k = 1; k < n; ++k) {
    const Pipeline::Stage& stage = stages_[k];
    if (stage.inputs.empty()) {
      feeds[k] = outs[stage.from];
    } else {
      for (const Pipeline::Output& input : stage.inputs) {
        for (const std::uint32_t segment : outs[input.stage]) {
          if (std::find(feeds[k].begin(), feeds[k].end(), segment) == feeds[k].end()) feeds[k].push_back(segment);
        }
      }
    }
    const std::size_t concurrency = std::min<std::size_t>(stage.options.concurrency, workers + 1);
    for (const std::uint32_t segment : feeds[k]) segments_[segment].budget += stage.options.capacity + concurrency;
    switch (stage.kind) {
      case StageKind::fan_out:
      case StageKind::fork:
        segments_.emplace_back();
        segments_.back().producer = k;
        segment_of_[k] = static_cast<std::uint32_t>(segments_.size() - 1);
        outs[k] = {segment_of_[k]};
        break;
      case StageKind::join:
        outs[k] = outs[stage.inputs[0].stage];
        break;
      default:
        outs[k] = feeds[k];
        break;
    }
    // run_solo takes one slot through the stages in index order: a chain of map stages and a sink only.
    if (stage.kind != StageKind::map && stage.kind != StageKind::sink) solo_layout_ = false;
  }
  // StageOptions::live_tokens: each segment's slots (an item alive holds one from its making to its end) are at
  // most that many, whatever the stages' options allow. Any budget >= 1 keeps the run going: a slot freed goes
  // to the source or to a fan state waiting for one, and the rings below are sized by the capped budget, which
  // still exceeds the span of numbers an Order::Input stage can wait on (all of them alive, each in a slot).
  const std::size_t tokens = stages_[0].options.live_tokens;
  for (Segment& segment : segments_) segment.budget = std::min(segment.budget, tokens);
  states_ = std::make_unique<StageState[]>(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    StageState& state = states_[k];
    const StageOptions& options = stages_[k].options;
    state.body = stages_[k].body.get();
    state.kind = stages_[k].kind;
    state.last = stages_[k].kind == StageKind::sink;
    if (state.kind == StageKind::fork) {
      state.port_emitted = std::make_unique<std::atomic<std::uint64_t>[]>(stages_[k].to.size());
    }
    state.priority = options.priority;
    state.concurrency = options.concurrency;
    state.capacity = options.capacity;
    state.overflow = options.overflow;
    state.ordered = k != 0 && options.order == Order::Input;
    // The numbers waiting are of items alive in the segments feeding the stage.
    std::size_t span = 0;
    for (const std::uint32_t segment : feeds[k]) span += segments_[segment].budget;
    if (state.kind == StageKind::sequence || state.kind == StageKind::priority) state.held().reserve(span);
    if (state.ordered) {
      std::size_t size = 1;
      while (size < span) size *= 2;
      state.ring.assign(size, nullptr);
      state.mask = size - 1;
    }
  }
  // A marker leaving stage k (an item filtered out there, or dropped on its way into k) goes to the next
  // Order::Input stage along the stages each consuming the one before, or to a join by position (which loses
  // the item's partners). A stage that numbers its items anew (fan-out, fork, merge, join, sequence by key,
  // priority buffer by rank) ends
  // the walk, its own number included: a marker leaving it has no one to tell (so an item filtered out before a
  // sequence leaves its key missing there, which the run's end reports).
  const auto renumbers = [](StageKind kind) {
    return kind == StageKind::fan_out || kind == StageKind::fork || kind == StageKind::merge ||
           kind == StageKind::join || kind == StageKind::sequence || kind == StageKind::priority;
  };
  for (std::uint32_t k = 0; k < n; ++k) {
    if (renumbers(states_[k].kind)) continue;
    for (std::uint32_t j = next_[k]; j != kNone; j = next_[j]) {
      if (states_[j].kind == StageKind::join) {
        if (static_cast<JoinBody*>(states_[j].body)->by_position()) states_[k].next_ordered = j;
        break;
      }
      if (states_[j].ordered) {
        states_[k].next_ordered = j;
        break;
      }
      if (renumbers(states_[j].kind)) break;
    }
  }
  // A join tells its inputs apart by the stage that numbered an item (and the branch, after a fork): walk back
  // from each input to the source, fan-out, fork, merge or join that did.
  for (std::uint32_t k = 0; k < n; ++k) {
    if (states_[k].kind != StageKind::join) continue;
    for (const Pipeline::Output& input : stages_[k].inputs) {
      std::uint32_t stage = input.stage;
      std::uint32_t port = input.port;
      while (stage != 0 && !renumbers(stages_[stage].kind)) {
        port = stages_[stage].from_port;
        stage = stages_[stage].from;
      }
      states_[k].join_origins.push_back(Origin{stage, stages_[stage].kind == StageKind::fork ? port : 0});
    }
  }
}

Run::~Run() {
  // Every run ended, and reset() emptied every slot: free the slots.
  for (std::byte* chunk : chunks_) ::operator delete(chunk, std::align_val_t(align_));
}

void Run::reset() noexcept {
  // Every task has ended: destroy what is left in the slots (a stopped run's items) and chain every slot into
  // the free list, in the order they were made.
  free_ = nullptr;
  Slot** link = &free_;
  for (std::size_t c = 0; c < chunks_.size(); ++c) {
    const std::size_t used = c + 1 == chunks_.size() ? chunk_used_ : kChunkSlots;
    for (std::size_t i = 0; i < used; ++i) {
      Slot* slot = std::launder(reinterpret_cast<Slot*>(chunks_[c] + i * stride_));
      destroy_content(slot);
      *slot = Slot();
      *link = slot;
      link = &slot->next;
    }
  }
  for (Segment& segment : segments_) {
    segment.live = 0;
    segment.waiters = SlotList();
    segment.source_waiting = false;
  }
  for (std::uint32_t k = 0; k < stages_.size(); ++k) {
    StageState& s = states_[k];
    s.running = 0;
    s.inbox = SlotList();
    s.parked = SlotList();
    if (s.ordered) {
      std::fill(s.ring.begin(), s.ring.end(), nullptr);
    } else {
      s.held().clear();  // a sequence or priority stage: its items were destroyed above, with every slot's
    }
    s.next_seq = 0;
    s.waiting = 0;
    s.dropped = 0;
    s.emitted.store(0, std::memory_order_relaxed);
    if (s.port_emitted) {
      for (std::size_t j = 0; j < stages_[k].to.size(); ++j) s.port_emitted[j].store(0, std::memory_order_relaxed);
    }
    s.body->reset();
  }
  source_seq_ = 0;
  source_ended_ = false;
  stop_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  subflow_ = nullptr;
  run_state_ = nullptr;
  tracer_ = nullptr;
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
        chunks_.push_back(static_cast<std::byte*>(::operator new(kChunkSlots* stride_, std::align_val_t(align_))));
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
  if (carrier.source_turn && carrier.spare == nullptr && slot->segment == 0) {
    // This carrier calls the source next: it keeps the slot (still counted in the budget) for that call.
    carrier.spare = slot;
    return;
  }
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
  StageBody& body = *state(slot->holder).body;
  if (slot->fan_state) {
    body.destroy_state(storage(slot));
  } else {
    body.destroy(storage(slot));
  }
  slot->holder = kNone;
  slot->fan_state = false;
}
}  // namespace weft::detail::pipeline

namespace weft::detail {

Pipeline::Pipeline(const void* scope, std::string name, const char* owner, bool keep_layout)
    : scope_(scope), name_(std::move(name)), owner_(owner), keep_layout_(keep_layout) {}

Pipeline::~Pipeline() = default;

void Pipeline::changed() noexcept { compiled_.reset(); }

std::exception_ptr Pipeline::run(Subflow& subflow, bool& completed) noexcept {
  completed = false;
  const std::size_t workers = subflow.pool().size();
  std::unique_ptr<pipeline::Run> run = std::move(compiled_);
  if (run == nullptr || run->workers() != workers) {  // laid out anew: the first run, or a pool of another size
    run.reset();
    try {
      run = std::make_unique<pipeline::Run>(*this, workers);
    } catch (...) {  // out of memory for the layout
      std::exception_ptr error = std::current_exception();
      SubflowAccess::record_exception(subflow, error);
      return error;
    }
  }
  std::exception_ptr error = run->run(subflow, completed);
  if (keep_layout_) compiled_ = std::move(run);  // reset by its run: ready for the next
  return error;
}

}  // namespace weft::detail
