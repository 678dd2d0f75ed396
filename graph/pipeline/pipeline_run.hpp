// The runs of a pipeline (a TaskScope's, run once; a StreamGraph's, run again and again): item slots, each
// stage's inbox, the budget of items alive, and the carriers (pool tasks) that take items through the stages.
//
// A Run is laid out once (the constructor: segments, budgets, each stage's state, rings) for a pool of a given
// size, and runs any number of times, one at a time: run() binds the execution it serves, runs, then reset()
// destroys what a stopped run left in the slots and sets every count, list and ring back to its empty state.
// The slots allocated stay for the next run, so a reused pipeline allocates nothing once warm.
//
// Invariants:
// - The stages form a tree from the source: each stage consumes one output of an earlier stage (next_ holds the
//   consumer of each stage's first output); a fork stage (broadcast, split) has one output per branch.
// - An item lives in a slot (a Slot header followed by storage for any of the pipeline's types). The slots
//   alive in a segment (the stages between the source, a fan-out stage or a fork stage, and the next fan-out or
//   fork stage or sink, every branch of a fork included) never exceed that segment's budget: the sum of capacity +
//   concurrency of the stages consuming its items (plus 1, the source, in the first), capped at the source's
//   StageOptions::live_tokens (so a slot is an item's token: taken before the source's call or a fan-out's next
//   element, given back when the slot is freed: by the sink, or for an item filtered out or dropped once its marker has
//   passed the Order::Input stages after it). A producer that finds the budget spent registers itself and returns; the
//   next slot freed in the segment is handed to it (no thread waits).
// - A stage runs at most `concurrency` bodies at once: `running` counts its taken slots. An item arriving at a
//   stage with a free slot (and, for Order::Input, being the next in order) takes one and its carrier goes on
//   with it; otherwise it waits in the inbox. A slot freed starts the next waiting item. So an Order::Any
//   stage's inbox is non-empty only while all its slots are taken.
// - Block: an item from the source or a map stage that finds an Order::Any stage's inbox full parks there
//   holding its producer's slot (the source's turn), so the producer makes nothing more until the item enters
//   the inbox, when a slot of the stage starts an item from it. Items for an Order::Input stage, and a fan-out
//   stage's elements, wait in the inbox beyond its capacity instead: the item an Order::Input stage needs next
//   could otherwise sit behind producers parked on later ones. The segment's budget bounds both.
// - A sequence stage numbers each item by its key (key(item)) and holds it, in a heap of the items alive (never
//   more than its segments' budgets), until every smaller key has passed; it hands items on one at a time, in key
//   order, numbered by key, so Order::Input stages after it follow the keys. A key below the next one (a repeat)
//   fails the run at once; items still held once every task ended (a key that never came, or held items filling
//   the room the missing one needs) fail it in check_end.
// - A priority buffer is an Order::Any stage whose waiting items sit in a heap ordered by the body's comparison
//   instead of a FIFO: a slot freed starts the highest; it numbers its items anew as they leave it.
// - Order::Input stages take items by sequence number (given by the segment's producer in the order it
//   produced them). An item filtered out or dropped becomes a marker that goes on to the following
//   Order::Input stages of its segment, so they skip its number. The waiting items of such a stage are those
//   with a number at or after its next one, all alive, so fewer than the segment's budget: a ring of that size
//   indexed by number never collides.
// - Every inbox, count and list of a stage is guarded by that stage's lock; budgets and free slots by the
//   pool lock. No lock is held while a body runs or while another lock is taken, so locks never nest.
// - Solo mode: while carrying an item through the stages takes less than a hand-off to another worker would
//   cost, and no item is alive but the source's, the carrier holding the source's turn runs every item through
//   every stage itself, without locks (nobody else can reach a stage: every item comes from the source). It
//   leaves the mode when items get slower, setting each Order::Input stage's next number to the source's.
//   Pipelines with a fan-out or fork stage always use the shared mode.
// - A fork stage works as a fan-out stage does: its input becomes a fan state (the item), which hands out a copy
//   per branch (broadcast; the last branch gets the item itself) or the item to one branch (split), each in a
//   slot of the fork's own segment, numbered in that branch's order (Order::Input stages of a branch follow it).
// - A carrier checks for a stop (an exception, an Overflow::Fail, a cancelled run) before each body. Once
//   stopped, carriers leave their items where they are; after the last task ended, the run's owner destroys
//   every item still in a slot, exactly once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "scheduler/atomics/cache_line.hpp"
#include "scheduler/atomics/cpu_relax.hpp"
#include "scheduler/sync/signal.hpp"
#include "scheduler/tracing/trace_impl.hpp"
#include "weft/detail/pipeline.hpp"
#include "weft/subflow.hpp"

namespace weft::graph {
class RunState;  // graph/run_state.hpp
}  // namespace weft::graph

namespace weft::detail::pipeline {

inline constexpr std::uint32_t kNone = ~std::uint32_t{0};

// For tests, read once per run: `shared` never uses the solo mode and always hands the source's turn off, so
// that the shared mode's paths run even when items are cheap; `solo` never hands off, so that a cheap pipeline
// stays in the solo mode whatever the timing.
enum class TestMode : std::uint8_t { automatic, shared, solo };
extern std::atomic<TestMode> test_mode;

// A lock for the few instructions a stage's bookkeeping takes: spins briefly, then yields, so a holder that
// was preempted gets the CPU back.
class SpinLock {
 public:
  void lock() noexcept;
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// The header of an item slot; the item's storage follows at Run::storage_offset().
struct Slot {
  Slot* next = nullptr;          // in an inbox, the free list or a budget's waiters
  std::uint64_t seq = 0;         // its number in its segment's order
  std::uint32_t holder = kNone;  // the stage whose output (or fan state) the storage holds; kNone: empty
  std::uint32_t segment = 0;
  std::uint32_t held = kNone;  // parked on a full Block inbox: the stage whose slot it holds (0: the source's turn)
  std::uint32_t origin = 0;    // the stage that gave it `seq`: the source, a fan-out, fork, merge or join stage
  std::uint32_t port = 0;      // after a fork stage: the branch it went to
  bool fan_state = false;      // the storage holds the holder's fan state, not an item
  bool marker = false;         // an item filtered out or dropped: only its number goes on
};

// Where an item got its number: the stage and (a fork's) branch. A join tells its inputs apart by it.
struct Origin {
  std::uint32_t stage = 0;
  std::uint32_t port = 0;
};

// A FIFO of slots linked through Slot::next.
struct SlotList {
  Slot* head = nullptr;
  Slot* tail = nullptr;
  std::size_t size = 0;
  void push(Slot* slot) noexcept;
  Slot* pop() noexcept;
  [[nodiscard]] bool empty() const noexcept { return head == nullptr; }
};

// What a carrier does next: run `stage` on `slot` (a slot of it already taken), call the source, or go on
// handing out a fan state's elements (with `fresh`, a slot of the next segment already granted, or null).
struct Step {
  enum class Kind : std::uint8_t { stage, source, fan };
  Kind kind = Kind::stage;
  std::uint32_t stage = 0;
  Slot* slot = nullptr;
  Slot* fresh = nullptr;
};

class Run {
 public:
  // Lays the pipeline out for a pool of `workers` workers (the budgets count a kUnlimited stage as workers + 1).
  Run(Pipeline& pipeline, std::size_t workers);
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;
  ~Run();

  // Runs the pipeline to its end inside the execution `subflow` (the pipeline's node), then resets the run for
  // the next; returns the first error, or null. `completed`: every item went through. One at a time.
  std::exception_ptr run(Subflow& subflow, bool& completed) noexcept;
  // The pool size the layout was made for.
  [[nodiscard]] std::size_t workers() const noexcept { return workers_; }

 private:
  struct StageState;
  struct Segment;
  // One thread's work: the step it goes on with, if any. offer() gives it the step if it has none, else spawns
  // a pool task for it. `source_turn`: it keeps the source's turn, to call the source again once it is free.
  struct Carrier {
    Step next{};
    bool has = false;
    bool source_turn = false;
    Slot* spare = nullptr;         // with source_turn: a slot of the first segment the sink freed, for the next call
    std::uint64_t timed_from = 0;  // when the source's item started on this carrier (0: not timed)
  };
  // The pool task of a spawned step; if the pool destroys it unrun (a DropPending shutdown), the run fails.
  class Task;

  void carry(Step step) noexcept;
  void offer(Carrier& carrier, Step step) noexcept;
  void spawn(Step step) noexcept;
  void task_ended() noexcept;
  void task_dropped() noexcept;
  // Whether the source's turn should go to another task while this carrier takes the item on: only when carrying
  // an item took long enough for a hand-off to pay (see cycles_per_item_).
  [[nodiscard]] bool hand_off_pays() const noexcept;
  void run_source(Carrier& carrier, Slot* slot) noexcept;
  // Calls the source into `slot` (numbering it); false if the stream ended (the slot then freed) or the source
  // threw (the run then failed).
  [[nodiscard]] bool call_source(Carrier& carrier, Slot* slot) noexcept;
  // Adds how long an item's trip through the stages took to cycles_per_item_.
  void note_item_time(std::uint64_t took) noexcept;
  // True if no item is alive but the one in the source's slot: nobody else can be in a stage, as every item
  // comes from the source, whose turn the caller holds.
  [[nodiscard]] bool alone() noexcept;
  // Runs the pipeline on this thread alone, item after item through every stage, without locks (the caller
  // holds the source's turn, `slot` and nothing else is alive: see alone()). Returns true when items came to
  // take long enough to hand them off (the caller goes on in the shared mode with `slot`), false when the source
  // ended or the run stopped.
  [[nodiscard]] bool run_solo(Slot* slot) noexcept;
  void run_stage(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept;
  void run_fan(Carrier& carrier, Slot* fan, std::uint32_t stage, Slot* fresh) noexcept;
  // The fan state in `fan` handed out its last element: destroys it, frees its slot, ends the stage's body.
  void end_fan(Carrier& carrier, Slot* fan, std::uint32_t stage) noexcept;
  // Hands `slot` (an item, or a marker) to `stage` (kNone: out of the pipeline). `producer`: the stage whose
  // slot (0: the source's turn) the caller holds for this item, or kNone. Returns true if the item found an
  // Order::Any stage's Block inbox full and parked holding that slot: the caller must not release it, the stage
  // does once the item enters the inbox.
  bool deliver(Carrier& carrier, Slot* slot, std::uint32_t stage, std::uint32_t producer = kNone) noexcept;
  // What became of an item at an Order::Any stage (a FIFO inbox, or a priority buffer's heap) under admit().
  enum class Arrival : std::uint8_t { wait, started, parked, dropped };
  // With the stage's lock held and `waiting` items in its inbox or heap: starts `slot` now if a concurrency slot of
  // the stage is free; else, the inbox full, parks it holding `producer`'s slot (Overflow::Block) or drops it (or
  // fails the run: Overflow::Fail). Returns wait, the lock still held, when the caller is to queue the item;
  // otherwise the lock is released.
  Arrival admit(Carrier& carrier, Slot* slot, std::uint32_t stage, std::uint32_t producer,
                std::size_t waiting) noexcept;
  // An item (or a marker) reached a join stage: records it, and builds and sends on the tuple it completes.
  void arrive_join(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept;
  // An item reached a sequence stage: numbers it by its key and holds it until the key's turn (or fails the run
  // for a key that came twice or too late, or whose key function threw).
  void arrive_sequence(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept;
  // A sequence stage's body ended: starts the item whose key's turn came, if it is there.
  void release_sequence(Carrier& carrier, std::uint32_t stage) noexcept;
  // With the stage's lock held: takes the items that may start now from the front of the sequence's heap, in key
  // order; sets `repeated` (and stops) at an item whose key was handed on already.
  static void take_sequenced(StageState& state, SlotList& starts, bool& repeated) noexcept;
  // Once every task ended: fails the run if a sequence still holds items (a key never came, or the items it holds
  // fill the room the one it waits for needs). True if it did.
  bool check_sequences() noexcept;
  // An item reached a priority buffer: starts at once if a slot of the stage is free, else waits in the stage's
  // heap, or (heap full) parks holding its producer's slot, is dropped or fails the run, by the stage's overflow.
  // Returns true if it parked (as deliver()).
  bool arrive_priority(Carrier& carrier, Slot* slot, std::uint32_t stage, std::uint32_t producer) noexcept;
  // A priority buffer's body ended: starts its highest waiting item, and lets a parked item into the heap.
  void release_priority(Carrier& carrier, std::uint32_t stage) noexcept;
  // Destroys an item at a join whose partner was lost, and frees its slot.
  void lose(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept;
  // Once every task ended: fails the run if a join still holds items (its inputs ended unequally) or if items
  // are left with nobody to take them on (a stall: items wait for partners the bound leaves no room to make).
  void check_end() noexcept;
  // A parked item entered its inbox: gives back the producer's slot it held.
  void unpark(Carrier& carrier, std::uint32_t held) noexcept;
  // Drops the item in `slot` at `stage` (Overflow::Drop): it goes on as a marker.
  void drop(Carrier& carrier, Slot* slot, std::uint32_t stage) noexcept;
  // A body of `stage` ended: starts its next waiting item, if it may.
  void release(Carrier& carrier, std::uint32_t stage) noexcept;
  // For an Order::Input stage, with its lock held: takes the markers and the items that may start now from the
  // ring's front, in order. The caller sends them on once it released the lock.
  void take_ready(StageState& state, SlotList& markers, SlotList& starts) noexcept;
  void send_on(Carrier& carrier, std::uint32_t stage, SlotList& markers, SlotList& starts) noexcept;
  // A slot of `segment`, or null if its budget is spent: the caller is then registered (`waiter`: a fan state;
  // null: the source) and will be offered the next slot freed in the segment.
  Slot* acquire(std::uint32_t segment, Slot* waiter) noexcept;
  // Empties `slot` (destroying nothing: its storage must be empty) and returns it to its segment.
  void free_slot(Carrier& carrier, Slot* slot) noexcept;
  void destroy_content(Slot* slot) noexcept;
  // After a run, every task ended: destroys every item left in a slot, frees every slot and empties every
  // inbox, ring, count and body record (StageBody::reset), so that the next run starts as a new one would.
  void reset() noexcept;
  // The error-message prefix of the pipeline's owner ("weft::TaskScope", "weft::StreamGraph").
  [[nodiscard]] const char* owner() const noexcept { return pipeline_.owner(); }
  void fail(std::exception_ptr error) noexcept;
  // True once the run stops: an error, a cancelled run, or a DropPending shutdown of the pool (which fails it).
  [[nodiscard]] bool stopping() noexcept;
  [[nodiscard]] void* storage(Slot* slot) const noexcept {
    return reinterpret_cast<std::byte*>(slot) + storage_offset_;
  }

  Pipeline& pipeline_;
  // The execution the run in progress serves (bound by run()).
  Subflow* subflow_ = nullptr;
  graph::RunState* run_state_ = nullptr;
  std::size_t workers_;
  const std::vector<Pipeline::Stage>& stages_;
  std::uint32_t last_;  // the last stage added (a pipeline without forks: its sink)
  std::size_t storage_offset_;
  std::size_t stride_;
  std::size_t align_;
  std::unique_ptr<StageState[]> states_;  // one per stage, each on its own cache lines
  [[nodiscard]] StageState& state(std::uint32_t stage) const noexcept;
  std::vector<std::uint32_t> segment_of_;  // the segment of the items a stage produces
  std::vector<std::uint32_t> next_;        // the stage consuming a stage's (first) output, or kNone
  // Tracing (RunState::tracer): the recorder, or null; and each stage's name interned in it.
  tracing::TraceImpl* tracer_ = nullptr;
  std::vector<std::uint32_t> trace_names_;
  // When a traced body call starts (TraceImpl::now), or -1 when not tracing.
  [[nodiscard]] std::int64_t trace_from() const noexcept {
    return tracer_ != nullptr && tracer_->recording() ? tracer_->now() : -1;
  }
  // A body call of `stage` on `item` (its number in its segment's order) that started at `from` ended now.
  void trace_stage(std::uint32_t stage, std::uint64_t item, std::int64_t from) const noexcept {
    if (from >= 0) [[unlikely]]
      tracer_->complete(tracing::TraceCategory::stage, trace_names_[stage], from, item, stage);
  }
  bool solo_layout_ = true;   // no fan-out, fork or join stage: run_solo takes one slot through every stage
  bool solo_allowed_ = true;  // solo_layout_, and this run not forced to the shared mode
  TestMode test_mode_ = TestMode::automatic;

  // Guarded by pool_lock_.
  SpinLock pool_lock_;
  std::vector<Segment> segments_;
  Slot* free_ = nullptr;
  std::vector<std::byte*> chunks_;
  std::size_t chunk_used_ = 0;  // slots handed out of chunks_.back()

  // Touched only by the carrier holding the source's turn.
  std::uint64_t source_seq_ = 0;
  bool source_ended_ = false;
  // How long (in ticks of the cycle clock, include/weft/detail/cycle_clock.hpp, a moving average) a carrier holding
  // the source's turn took to take an item through the stages. Below hand_off_cycles() (about a microsecond), the
  // source's turn stays with the carrier (no task per item): a hand-off to another worker (a spawn, a steal, the
  // item's cache lines moving) would cost more than it saves. Above it, the next source call is spawned while the
  // carrier works, so items run in parallel.
  // Written by carriers on any thread; relaxed: a heuristic's input, nothing is ordered by it.
  std::atomic<std::uint64_t> cycles_per_item_{0};

  // Tasks spawned and not ended; the run's owner waits for zero on the run state's subflow signal.
  alignas(atomics::kCacheLine) std::atomic<std::uint64_t> tasks_{0};

  std::atomic<bool> stop_{false};
  std::mutex error_lock_;
  std::exception_ptr error_;
};

}  // namespace weft::detail::pipeline
