// One run of a TaskScope pipeline (see graph/pipeline/pipeline_run.hpp for the invariants).
#include "graph/pipeline/pipeline_run.hpp"

#include <new>
#include <string>
#include <utility>

#include "graph/pipeline/pipeline_state.hpp"
#include "graph/run_state.hpp"
#include "graph/subflow_access.hpp"
#include "scheduler/engine/pool_access.hpp"
#include "scheduler/engine/task_locals.hpp"
#include "weft/detail/cycle_clock.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"

namespace weft::detail::pipeline {

namespace {
// A hand-off to another worker costs a spawn, a steal and the item's cache lines moving: a few hundred
// nanoseconds. An item whose trip through the stages takes less is better carried by the thread that made it.
constexpr std::uint64_t kHandOffNanoseconds = 1024;
// The same in ticks of the cycle clock: 2048 on x86 (a constant there), from the timer's rate on ARM64.
std::uint64_t hand_off_cycles() noexcept { return kHandOffNanoseconds * cycles_per_microsecond() / 1000; }
}  // namespace

std::exception_ptr Run::run(Subflow& subflow, bool& completed) noexcept {
  subflow_ = &subflow;
  run_state_ = &SubflowAccess::run(subflow);
  tracer_ = run_state_->tracer();
  if (tracer_ != nullptr) {  // the stages' names, interned in this run's recorder (each run may have its own)
    try {
      trace_names_.clear();
      trace_names_.reserve(stages_.size());
      for (const Pipeline::Stage& stage : stages_) trace_names_.push_back(tracer_->intern(stage.name));
    } catch (...) {  // out of memory for the names: this run is not traced
      tracer_ = nullptr;
    }
  }
  test_mode_ = test_mode.load(std::memory_order_relaxed);
  solo_allowed_ = solo_layout_ && test_mode_ != TestMode::shared;
  carry(Step{Step::Kind::source, 0, nullptr, nullptr});
  // Once every task ended, none touches this run any more. acquire: pairs with task_ended()'s decrement, so
  // what the tasks did is seen here. On a worker, the wait runs other tasks (the pipeline's among them).
  sync::wait_until([this] { return tasks_.load(std::memory_order_acquire) == 0; }, run_state_->subflow_signal());
  check_end();
  bool all_freed = true;
  for (const Segment& segment : segments_) all_freed = all_freed && segment.live == 0;
  completed = !stop_.load(std::memory_order_relaxed) && source_ended_ && all_freed;
  for (std::uint32_t k = 0; k <= last_; ++k) {
    if (states_[k].dropped != 0) {
      SubflowAccess::add_dropped(*subflow_, pipeline_.name() + "/" + stages_[k].name, states_[k].dropped);
    }
  }
  std::exception_ptr error = std::exchange(error_, nullptr);
  reset();
  if (!error && !completed) {
    // Cancelled (the scope's cancel(), or another job's exception): the sink's job says so by name. Not the
    // run's exception: it only tells the job's readers.
    return error_of<weft::job_cancelled>(owner(), ": pipeline '", pipeline_.name(),
                                         "' was stopped before its end: its scope's run was cancelled, or "
                                         "another job failed");
  }
  return error;
}

bool Run::stopping() noexcept {
  if (stop_.load(std::memory_order_relaxed) || run_state_->cancelled()) return true;
  if (PoolAccess::engine(run_state_->pool()).dropping()) [[unlikely]] {
    // A DropPending shutdown began: a pipeline stops at the next item as the pool's queued tasks stop, and the
    // run fails with task_dropped.
    const engine::Engine& engine = PoolAccess::engine(run_state_->pool());
    fail(error_of<weft::task_dropped>(owner(), ": pipeline '", pipeline_.name(),
                                      "' was stopped before its end: its pool is shutting down and drops pending "
                                      "work (",
                                      engine.drop_policy(), ")"));
    return true;
  }
  return false;
}

bool Run::hand_off_pays() const noexcept {
  if (test_mode_ != TestMode::automatic) [[unlikely]]
    return test_mode_ == TestMode::shared;
  return cycles_per_item_.load(std::memory_order_relaxed) > hand_off_cycles();
}

void Run::carry(Step step) noexcept {
  Carrier carrier;
  carrier.next = step;
  carrier.has = true;
  for (;;) {
    if (!carrier.has) {
      if (carrier.timed_from != 0) {
        // The source's last item went as far as it could on this carrier: how long that took decides whether
        // the next one is handed off (a moving average over the last few items).
        note_item_time(now_cycles() - std::exchange(carrier.timed_from, 0));
      }
      if (!carrier.source_turn) return;
      carrier.source_turn = false;
      carrier.next = Step{Step::Kind::source, 0, nullptr, nullptr};
      carrier.has = true;
    }
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

class Run::Task {
 public:
  Task(Run* run, Step step) noexcept : run_(run), step_(step) {}
  Task(Task&& other) noexcept : run_(std::exchange(other.run_, nullptr)), step_(other.step_) {}
  Task& operator=(Task&&) = delete;
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (run_ != nullptr) run_->task_dropped();
  }
  void operator()() noexcept {
    Run* run = std::exchange(run_, nullptr);
    // The stages' bodies run inside the scope's run, as the pipeline's job does: a wait for that run from one of
    // them (TaskScope::wait, Run::wait) could never end and must be refused with would_deadlock, not suspend the
    // carrier (and the item it holds) for good.
    void* const outer = engine::exchange_task_local(graph::kCurrentRunSlot, run->run_state_);
    run->carry(step_);
    (void)engine::exchange_task_local(graph::kCurrentRunSlot, outer);
    run->task_ended();
  }

 private:
  Run* run_;
  Step step_;
};

void Run::spawn(Step step) noexcept {
  TaskOptions options{};
  options.priority = state(step.kind == Step::Kind::source ? 0 : step.stage).priority;
  // relaxed: counted before the task exists; its end's decrement (acq_rel) is what the owner's wait reads.
  tasks_.fetch_add(1, std::memory_order_relaxed);
  // The task is a unit of the run too, so the run (and the signal task_ended() notifies) outlives it.
  run_state_->add_unit();
  try {
    // The run's tag: an outside thread waiting for the scope may run these tasks from its own slot.
    PoolAccess::post(run_state_->pool(), small_function<void()>(Task(this, step)), options, run_state_->inline_tag());
  } catch (...) {
    // pool_closed: the task was destroyed unrun, and task_dropped() already failed the run and uncounted it.
  }
}

void Run::task_ended() noexcept {
  // Once the count is zero, the owner may return and destroy *this before notify() runs: the signal is the
  // run's, which the task's unit keeps alive until finish_unit(), last.
  graph::RunState& run = *run_state_;
  if (tasks_.fetch_sub(1, std::memory_order_acq_rel) == 1) run.subflow_signal().notify();
  run.finish_unit();
}

void Run::task_dropped() noexcept {
  // Named by the policy in force: a pool that drops (DropPending or shutdown_for's deadline) may have dropped
  // the task; one that does not only refused it.
  const engine::Engine& engine = PoolAccess::engine(run_state_->pool());
  if (engine.dropping()) {
    fail(error_of<weft::task_dropped>(owner(), ": a task of pipeline '", pipeline_.name(),
                                      "' was not run: the pool refused it (shut down, or out of memory) or "
                                      "dropped it (",
                                      engine.drop_policy(), ")"));
  } else {
    fail(error_of<weft::task_dropped>(owner(), ": a task of pipeline '", pipeline_.name(),
                                      "' was not run: the pool refused it (shut down, or out of memory)"));
  }
  task_ended();
}

void Run::run_source(Carrier& carrier, Slot* slot) noexcept {
  // This carrier holds the source's turn: nobody else calls the source until it hands the turn on.
  for (;;) {
    if (stopping()) return;
    if (slot == nullptr) slot = std::exchange(carrier.spare, nullptr);
    if (slot == nullptr) {
      slot = acquire(0, nullptr);
      if (slot == nullptr) return;  // the budget is spent: the next slot freed brings the turn back
    }
    if (solo_allowed_ && !hand_off_pays() && alone()) {
      if (!run_solo(slot)) return;
      // Items take long enough now for other threads to help: on in the shared mode with the same slot.
    }
    if (!call_source(carrier, slot)) return;
    const bool was_free = !carrier.has;
    if (deliver(carrier, std::exchange(slot, nullptr), next_[0], 0)) return;  // parked: it holds the source's turn
    if (was_free && carrier.has) {
      // This carrier takes the item on. If items take long enough, another task calls the source meanwhile
      // (as oneTBB's input filter does); else this carrier keeps the turn and calls it again once free.
      carrier.timed_from = now_cycles();
      if (hand_off_pays()) {
        spawn(Step{Step::Kind::source, 0, nullptr, nullptr});
      } else {
        carrier.source_turn = true;
      }
      return;
    }
    // The item waits in an inbox (or was dropped): call the source again.
  }
}

bool Run::call_source(Carrier& carrier, Slot* slot) noexcept {
  slot->seq = source_seq_++;
  bool produced = false;
  const std::int64_t traced_from = trace_from();
  try {
    produced = states_[0].body->produce(storage(slot), slot->seq);
  } catch (...) {
    fail(std::current_exception());
    return false;
  }
  if (produced) trace_stage(0, slot->seq, traced_from);
  if (!produced) {
    source_ended_ = true;
    free_slot(carrier, slot);
    return false;
  }
  slot->holder = 0;
  slot->origin = 0;
  slot->port = 0;
  return true;
}

void Run::note_item_time(std::uint64_t took) noexcept {
  // A moving average over the last few items (one writer at a time in practice; a lost update only delays it).
  const std::uint64_t average = cycles_per_item_.load(std::memory_order_relaxed);
  cycles_per_item_.store(average - average / 8 + took / 8, std::memory_order_relaxed);
}

bool Run::alone() noexcept {
  pool_lock_.lock();
  std::size_t live = 0;
  for (const Segment& segment : segments_) live += segment.live;
  pool_lock_.unlock();
  return live == 1;
}

bool Run::run_solo(Slot* slot) noexcept {
  for (;;) {
    if (stopping()) return false;  // the slot is empty: ~Run only frees it
    const std::uint64_t started = now_cycles();
    Carrier none;  // nobody waits for a slot while this runs alone: freeing one hands it to no one
    if (!call_source(none, slot)) return false;
    bool produced = true;
    for (std::uint32_t k = 1; k <= last_; ++k) {
      slot->holder = kNone;  // process() destroys the input whatever happens
      const std::int64_t traced_from = trace_from();
      try {
        produced = states_[k].body->process(storage(slot));
      } catch (...) {
        fail(std::current_exception());
        return false;
      }
      trace_stage(k, slot->seq, traced_from);
      if (!produced) break;  // filtered out, or consumed by the sink
      slot->holder = k;
    }
    note_item_time(now_cycles() - started);
    if (hand_off_pays()) break;
  }
  // Back to the shared mode: the Order::Input stages take next the number the source gives next (every item
  // before it went through them here, unseen by their rings).
  for (std::uint32_t k = 1; k <= last_; ++k) {
    StageState& s = states_[k];
    if (!s.ordered) continue;
    s.lock.lock();
    s.next_seq = source_seq_;
    s.lock.unlock();
  }
  return true;
}

void Run::run_stage(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  const StageState& s = state(stage);
  slot->holder = kNone;  // process() destroys the input whatever happens
  bool produced = false;
  const std::int64_t traced_from = trace_from();
  try {
    produced = s.body->process(storage(slot));
  } catch (...) {
    fail(std::current_exception());
    return;
  }
  trace_stage(stage, slot->seq, traced_from);
  if (s.kind == StageKind::fan_out || s.kind == StageKind::fork) {
    slot->holder = stage;
    slot->fan_state = true;
    run_fan(carrier, slot, stage, nullptr);
    return;
  }
  if (s.last) {
    // The sink's next waiting item first: an Order::Input sink is usually the pipeline's narrowest stage.
    release(carrier, stage);
    free_slot(carrier, slot);
    return;
  }
  if (produced) {
    slot->holder = stage;
    if (s.kind == StageKind::merge || s.kind == StageKind::priority) {  // numbered anew, in the order they leave
      slot->seq = state(stage).emitted.fetch_add(1, std::memory_order_relaxed);
      slot->origin = stage;
      slot->port = 0;
    }
    if (deliver(carrier, slot, next_[stage], stage)) return;  // parked: it holds this stage's slot
  } else {
    slot->marker = true;
    deliver(carrier, slot, s.next_ordered);
  }
  release(carrier, stage);
}

void Run::run_fan(Carrier& carrier, Slot* fan, std::uint32_t stage, Slot* fresh) noexcept {
  const std::uint32_t segment = segment_of_[stage];
  StageState& s = state(stage);
  StageBody& body = *s.body;
  for (;;) {
    if (stopping()) return;             // `fresh`, if any, is empty: ~Run only frees it
    if (body.finished(storage(fan))) {  // a fork's last copy went on: no slot to take only to learn it
      if (fresh != nullptr) free_slot(carrier, std::exchange(fresh, nullptr));
      end_fan(carrier, fan, stage);
      return;
    }
    Slot* element = fresh != nullptr ? std::exchange(fresh, nullptr) : acquire(segment, fan);
    if (element == nullptr) return;  // registered: the next slot freed in the segment resumes this fan state
    bool got = false;
    std::uint32_t port = 0;
    const std::int64_t traced_from = trace_from();
    try {
      got = body.next(storage(fan), storage(element), port);
    } catch (...) {
      fail(std::current_exception());
      return;
    }
    if (!got) {
      free_slot(carrier, element);
      end_fan(carrier, fan, stage);
      return;
    }
    element->holder = stage;
    element->origin = stage;
    element->port = port;
    if (s.kind == StageKind::fork) {
      element->seq = s.port_emitted[port].fetch_add(1, std::memory_order_relaxed);
      trace_stage(stage, element->seq, traced_from);
      deliver(carrier, element, stages_[stage].to[port]);
    } else {
      element->seq = s.emitted.fetch_add(1, std::memory_order_relaxed);
      trace_stage(stage, element->seq, traced_from);
      deliver(carrier, element, next_[stage]);
    }
  }
}

void Run::end_fan(Carrier& carrier, Slot* fan, std::uint32_t stage) noexcept {
  state(stage).body->destroy_state(storage(fan));
  fan->holder = kNone;
  fan->fan_state = false;
  free_slot(carrier, fan);
  release(carrier, stage);
}

bool Run::deliver(Carrier& carrier, Slot* slot, std::uint32_t stage, std::uint32_t producer) noexcept {
  if (stage == kNone) {  // a marker past the last Order::Input stage of its segment
    free_slot(carrier, slot);
    return false;
  }
  StageState& s = state(stage);
  if (s.kind == StageKind::join) [[unlikely]] {  // no inbox: the item waits there for its partners, in its slot
    arrive_join(carrier, slot, stage);
    return false;
  }
  if (s.kind == StageKind::sequence) [[unlikely]] {  // held in its slot until its key's turn
    arrive_sequence(carrier, slot, stage);
    return false;
  }
  if (s.kind == StageKind::priority) [[unlikely]] {  // waits in a heap by rank, not in a FIFO
    return arrive_priority(carrier, slot, stage, producer);
  }
  if (!s.ordered) {  // markers never come here
    s.lock.lock();
    const Arrival arrival = admit(carrier, slot, stage, producer, s.inbox.size);
    if (arrival != Arrival::wait) return arrival == Arrival::parked;
    s.inbox.push(slot);
    s.lock.unlock();
    return false;
  }
  SlotList markers;
  SlotList starts;
  s.lock.lock();
  const bool starts_now = slot->seq == s.next_seq && s.running < s.concurrency;
  if (!slot->marker && !starts_now && s.waiting >= s.capacity && s.overflow != Overflow::Block) {
    if (s.overflow == Overflow::Drop) ++s.dropped;
    s.lock.unlock();
    drop(carrier, slot, stage);
    return false;
  }
  s.ring[slot->seq & s.mask] = slot;
  if (!slot->marker) ++s.waiting;
  take_ready(s, markers, starts);
  s.lock.unlock();
  send_on(carrier, stage, markers, starts);
  return false;
}

void Run::drop(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept {
  StageState& s = state(stage);
  if (s.overflow == Overflow::Fail) {
    fail(error_of<weft::inbox_full>(owner(), ": stage '", stages_[stage].name, "' of pipeline '", pipeline_.name(),
                                    "' found its inbox full (capacity ", std::to_string(s.capacity),
                                    ", Overflow::Fail): the run is cancelled"));
    return;  // the item stays in its slot: ~Run destroys it
  }
  destroy_content(slot);
  slot->holder = kNone;
  slot->marker = true;
  // Its number still passes the Order::Input stages: this one (if it is one) and those after it.
  deliver(carrier, slot, s.ordered ? stage : state(stage).next_ordered);
}

void Run::release(Carrier& carrier, std::uint32_t stage) noexcept {
  StageState& s = state(stage);
  if (s.kind == StageKind::sequence) [[unlikely]] {
    release_sequence(carrier, stage);
    return;
  }
  if (s.kind == StageKind::priority) [[unlikely]] {
    release_priority(carrier, stage);
    return;
  }
  if (!s.ordered) {
    s.lock.lock();
    --s.running;
    Slot* next = s.inbox.pop();  // non-empty only while every slot was taken: one is free now
    std::uint32_t held = kNone;  // the producer's slot held by a parked item that takes the room just made
    if (next != nullptr) {
      ++s.running;
      if (Slot* entered = s.parked.pop()) {
        held = std::exchange(entered->held, kNone);  // under the lock: once in the inbox, others may take it
        s.inbox.push(entered);
      }
    }
    s.lock.unlock();
    if (next != nullptr) offer(carrier, Step{Step::Kind::stage, stage, next, nullptr});
    if (held != kNone) unpark(carrier, held);
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

void Run::unpark(Carrier& carrier, std::uint32_t held) noexcept {
  if (held == 0) {
    offer(carrier, Step{Step::Kind::source, 0, nullptr, nullptr});  // the source's turn comes back
  } else {
    release(carrier, held);
  }
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
  while (Slot* slot = markers.pop()) deliver(carrier, slot, state(stage).next_ordered);
}
void Run::fail(std::exception_ptr error) noexcept {
  {
    // Recorded in the run under the lock too: two stages failing at once must leave the same exception first
    // in the pipeline (the sink's job) and in the run (wait()).
    const std::lock_guard<std::mutex> hold(error_lock_);
    if (!error_) error_ = error;
    // The run's first exception: it cancels the scope's other jobs, and wait() rethrows it.
    SubflowAccess::record_exception(*subflow_, std::move(error));
  }
  stop_.store(true, std::memory_order_relaxed);
}

}  // namespace weft::detail::pipeline
