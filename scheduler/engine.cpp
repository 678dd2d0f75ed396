#include "scheduler/engine.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <thread>

#include "scheduler/cpu_relax.hpp"
#include "weft/detail/deadline.hpp"
#include "src/os_thread.hpp"

namespace weft::sched {
namespace {

// The worker the calling thread is (in any engine), so that a task spawned on a worker goes to its deque.
thread_local Worker* tls_worker = nullptr;
// The innermost RunningFrame on the calling thread, or null.
thread_local RunningFrame* tls_running = nullptr;
// Set by a dropped closure's destructor that had nothing left to do (Engine::note_drop_was_empty).
thread_local bool tls_drop_was_empty = false;

constexpr std::size_t kKeptErrors = 64;
// A searching worker's looks at full speed before it starts yielding its CPU between looks.
constexpr unsigned kHotLooks = 16;
constexpr unsigned kMaxThreads = 4096;

std::size_t slot(Priority p) noexcept { return static_cast<std::size_t>(p); }

// Steals from `deque` (any thread) until it takes a task, or null once the deque looks empty. A lost race means
// another thread took an item, so retrying stays lock-free.
template <class Deque>
Task* steal_until_taken_or_empty(Deque& deque) noexcept {
  for (;;) {
    const auto result = deque.steal();
    if (result) return result.item;
    if (result.status == StealStatus::empty) return nullptr;
  }
}

[[noreturn]] void invalid(const std::string& what) { throw invalid_option("weft::PoolOptions::" + what); }

std::string list(const std::vector<unsigned>& cpus) {
  std::string out;
  for (const unsigned cpu : cpus) {
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(cpu));
  }
  return out;
}

}  // namespace

Worker* Engine::this_thread_worker() noexcept { return tls_worker; }

RunningFrame::RunningFrame(const Engine& engine) noexcept : engine_(engine), outer_(tls_running) {
  tls_running = this;
}

RunningFrame::~RunningFrame() { tls_running = outer_; }

bool RunningFrame::inside(const Engine& engine) noexcept {
  for (const RunningFrame* frame = tls_running; frame != nullptr; frame = frame->outer_) {
    if (&frame->engine_ == &engine) return true;
  }
  return false;
}

unsigned Engine::worker_index_here() const noexcept {
  return tls_worker != nullptr && &tls_worker->engine == this ? tls_worker->index : TaskEvent::not_a_worker;
}

void Engine::call_hook(small_function<void(const TaskEvent&)>& hook, const TaskEvent& event) noexcept {
  if (!hook) return;
  try {
    hook(event);
  } catch (...) {
    report_error(std::current_exception());
  }
}

void Engine::run_hooked(TaskDomain::ThreadRef ref, Task* task, unsigned worker) noexcept {
  const TaskEvent event{worker, task->priority};
  if (task->is_future_state) {
    auto* const state = static_cast<weft::detail::FutureStateBase*>(task);
    // Only the winner of the claim runs the task, so only it runs the hooks: a waiter that ran it inline
    // already did (run_inline), and this queued copy is then an empty shell.
    if (state->try_claim()) {
      call_hook(options_.on_task_start, event);
      state->run_claimed();
      call_hook(options_.on_task_end, event);
    }
    state->release();
    return;
  }
  call_hook(options_.on_task_start, event);
  run_and_release(ref, task);
  call_hook(options_.on_task_end, event);
}

bool Engine::run_inline(weft::detail::FutureStateBase& state) noexcept {
  // seq_cst: counted before the claim; a worker that loses the claim to us happens-after it (see try_claim),
  // so idle() cannot see the queued copy finished without seeing this run started.
  inline_runs_.started.fetch_add(1, std::memory_order_seq_cst);
  const bool won = state.try_claim();
  if (won) run_here(state.priority, [&] { state.run_claimed(); });
  // release: idle() acquires it; everything the task did happens-before an idle() that sees it finished.
  inline_runs_.finished.fetch_add(1, std::memory_order_release);
  inline_run_finished();
  return won;
}

Engine::Engine(PoolOptions options) : options_(std::move(options)), id_(slot_lease::next_engine_id()) {
  if (options_.threads > kMaxThreads)
    invalid("threads = " + std::to_string(options_.threads) + ": at most " + std::to_string(kMaxThreads));
  const unsigned count = options_.threads == 0 ? os::usable_cpu_count() : options_.threads;
  if (options_.name.empty()) invalid("name is empty: workers need a name prefix");
  if (options_.nice && (*options_.nice < -20 || *options_.nice > 19))
    invalid("nice = " + std::to_string(*options_.nice) + ": must be in -20..19");
  if (options_.spin_before_park < std::chrono::microseconds::zero() ||
      options_.spin_before_park > std::chrono::seconds(1))
    invalid("spin_before_park = " + std::to_string(options_.spin_before_park.count()) + "us: must be in 0..1s");
  if (options_.affinity_patience < std::chrono::microseconds::zero() ||
      options_.affinity_patience > std::chrono::seconds(10))
    invalid("affinity_patience = " + std::to_string(options_.affinity_patience.count()) +
            "us: must be in 0..10s");
  if (options_.pinning > Pinning::cpu_list)
    invalid("pinning = " + std::to_string(static_cast<unsigned>(options_.pinning)) +
            ": not a weft::Pinning (none, one_per_cpu or cpu_list)");
  const auto allowed = os::allowed_cpus();
  if (options_.pinning == Pinning::cpu_list) {
    if (options_.cpus.empty()) invalid("cpus is empty, but pinning is Pinning::cpu_list");
    for (const unsigned cpu : options_.cpus) {
      if (!std::binary_search(allowed.begin(), allowed.end(), cpu))
        invalid("cpus contains CPU " + std::to_string(cpu) + ", which this process may not use (allowed: " +
                list(allowed) + ")");
    }
  } else if (!options_.cpus.empty()) {
    invalid("cpus is set, but pinning is not Pinning::cpu_list: the CPU list would be ignored");
  }
  if (options_.pinning == Pinning::one_per_cpu) options_.cpus = allowed;

  for (auto& queue : injected_) queue = std::make_unique<TaskQueue>(domain_);
  workers_.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    workers_.push_back(std::make_unique<Worker>(*this, i, domain_));
    workers_.back()->watches.resize(count);
  }

  starting_.store(count, std::memory_order_relaxed);
  unsigned launched = 0;
  try {
    for (auto& worker : workers_) {
      worker->thread = std::thread([this, &self = *worker] {
        tls_worker = &self;
        self.registration.emplace(domain_.register_thread());
        std::string problem = apply_thread_options(self);
        if (!problem.empty()) {
          const std::lock_guard lock(startup_mutex_);
          if (startup_failure_.empty()) startup_failure_ = std::move(problem);
        }
        // acq_rel: the constructor, which acquires the count, sees the failure written above. Everything
        // touched here is a member, which outlives this thread (it is joined before they are destroyed).
        starting_.fetch_sub(1, std::memory_order_acq_rel);
        started_changed_.notify_all();
        worker_main(self);
        self.registration.reset();
        tls_worker = nullptr;
      });
      ++launched;
    }
  } catch (...) {
    // The OS refused a thread: stop the ones already started, and report.
    starting_.fetch_sub(count - launched, std::memory_order_acq_rel);
    begin_shutdown(State::dropping);
    finish_shutdown();
    throw;
  }
  while (starting_.load(std::memory_order_acquire) != 0) {
    const auto key = started_changed_.prepare_wait();
    if (starting_.load(std::memory_order_acquire) == 0) {
      started_changed_.cancel_wait();
      break;
    }
    started_changed_.wait(key);
  }
  std::string failure;
  {
    const std::lock_guard lock(startup_mutex_);
    failure = startup_failure_;
  }
  if (!failure.empty()) {
    begin_shutdown(State::dropping);
    finish_shutdown();
    throw invalid_option("weft::PoolOptions::" + failure);
  }
}

Engine::~Engine() {
  const std::lock_guard lock(shutdown_mutex_);
  if (!joined_) {
    begin_shutdown(State::draining);
    // After a shutdown that failed part-way (out of memory) the state may already be dropping: do not wait
    // for tasks that nobody will run.
    while (state_.load(std::memory_order_acquire) == State::draining && !idle()) {
      const auto key = idle_changed_.prepare_wait();
      if (idle()) {
        idle_changed_.cancel_wait();
        break;
      }
      idle_changed_.wait(key);
    }
    finish_shutdown();
  }
  // Threads that still hold a lease on one of our slots prune it at their next look-up. relaxed: read only to
  // prune; the slot's memory stays valid through the shared_ptr either way.
  const unsigned slots = slot_count_.load(std::memory_order_acquire);
  for (unsigned i = 0; i < slots; ++i) slots_[i].load(std::memory_order_relaxed)->engine_alive.store(false, std::memory_order_relaxed);
}

std::string Engine::apply_thread_options(Worker& self) {
  os::set_current_thread_name(options_.name + "-" + std::to_string(self.index));
  if (options_.pinning != Pinning::none) {
    const unsigned cpu = options_.cpus[self.index % options_.cpus.size()];
    const unsigned one[1] = {cpu};
    if (!os::pin_current_thread(one))
      return "pinning: worker " + std::to_string(self.index) + " could not be pinned to CPU " + std::to_string(cpu);
  }
  if (options_.nice) {
    if (auto error = os::set_current_thread_nice(*options_.nice))
      return "nice = " + std::to_string(*options_.nice) + ": worker " + std::to_string(self.index) +
             " could not set it: " + *error;
  }
  return {};
}

void Engine::worker_main(Worker& self) {
  bool ran_since_dry = false;
  // Set after a wake-up: the next search is made as a counted searcher (below), never as a plain find_task.
  bool woken = false;
  for (;;) {
    // Checked before every task, not only when dry: once a DropPending shutdown (or shutdown_for's deadline)
    // has begun, a worker starts nothing more, so the pending tasks are left for finish_shutdown to drop.
    // (A task already running finishes; a Future::get inside it still runs the tasks it needs meanwhile.)
    // acquire: pairs with the shutdown stores.
    const State now = state_.load(std::memory_order_acquire);
    if (now == State::dropping || now == State::stopped) return;
    if (!woken) {
      if (Task* task = find_task(self)) {
        execute(self, task);
        ran_since_dry = true;
        continue;
      }
      if (ran_since_dry) {
        // This worker just ran dry: whoever waits for the pool to go idle should look again.
        ran_since_dry = false;
        idle_changed_.notify_all();
      }
    }
    // Search as a counted searcher (scheduler/parking.hpp), so that producers can skip the wake-up syscall.
    parking_.begin_search(woken);
    woken = false;
    Task* found = nullptr;
    const auto spin_until = std::chrono::steady_clock::now() + options_.spin_before_park;
    unsigned looks = 0;
    do {
      if (++looks <= kHotLooks) {
        for (int i = 0; i < 32; ++i) cpu_relax();
      } else {
        // Past the first looks, give the CPU away between looks: a pool has as many workers as cores, so a
        // thread outside it that produces the work (a submitter in a burst) shares a core with a searching
        // worker, and a worker that spun through its time slice slowed the very producer it waited for.
        std::this_thread::yield();
      }
      found = find_task(self);
    } while (found == nullptr && std::chrono::steady_clock::now() < spin_until);
    const bool last_searcher = parking_.end_search();
    if (found != nullptr) {
      // The last searcher found work, and producers skipped waking anyone while we searched. If more work is
      // visible, hand the searching over to a sleeper (end_search() fenced: a producer that saw us searching
      // published before its own fence, so this look sees its work).
      if (last_searcher && has_visible_work(self)) signal_work();
      execute(self, found);
      ran_since_dry = true;
      continue;
    }
    park(self);
    // A worker woken by that hand-over must search as a counted searcher too, so that if it finds work it
    // hands over in turn. Were it to take a task with a plain find_task and run it (possibly for long), the
    // rest of the work published while the first searcher spun would have nobody to wake a sleeper for it:
    // producers skipped the notify because a searcher was counted (a lost wake-up, seen with 8 workers held
    // in long tasks and 2 asleep beside 2 pending tasks).
    woken = true;
  }
}

Task* Engine::find_task(Worker& self) {
  // Priority first: a ready High task beats the worker's own Normal work.
  if (!injected_[slot(Priority::High)]->empty_hint()) {
    if (Task* task = take_injected(self, Priority::High)) return task;
  }
  if (auto task = self.deque.pop()) return *task;
  if (self.mailbox_pending.load(std::memory_order_relaxed) > 0) {
    if (auto task = self.mailbox.try_pop(self.ref())) {
      self.mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // a hint only: no ordering needed
      return *task;
    }
  }
  if (!injected_[slot(Priority::Normal)]->empty_hint()) {
    if (Task* task = take_injected(self, Priority::Normal)) return task;
  }
  // Outside threads' slots hold what the shared Normal queue used to: taken before other workers' spawns.
  if (Task* task = steal_from_slots(self)) return task;
  if (Task* task = steal(self)) return task;
  if (!injected_[slot(Priority::Low)]->empty_hint()) {
    if (Task* task = take_injected(self, Priority::Low)) return task;
  }
  return nullptr;
}

Task* Engine::take_injected(Worker& self, Priority priority) {
  auto task = injected_[slot(priority)]->try_pop(self.ref());
  if (!task) return nullptr;
  self.counters.taken_injected.bump();
  return *task;
}

Task* Engine::steal(Worker& self) {
  const auto count = static_cast<unsigned>(workers_.size());
  if (count > 1) {
    // Two sweeps over the other workers from a random start: a victim that lost a race is likely to have
    // more, so it gets a second chance in the second sweep.
    const auto start = static_cast<unsigned>(self.next_random() % count);
    for (unsigned i = 0; i < 2 * count; ++i) {
      Worker& victim = *workers_[(start + i) % count];
      // The relaxed emptiness hint skips the steal's fence on an empty victim; a push it misses is found by
      // the next search, and a worker about to park re-checks after its fence (park()).
      if (&victim == &self || victim.deque.empty()) continue;
      self.counters.steal_attempts.bump();
      const auto result = victim.deque.steal();
      if (result) {
        self.counters.stolen.bump();
        return result.item;
      }
    }
  }
  return steal_from_mailboxes(self);
}

Task* Engine::steal_from_slots(Worker& self) {
  // acquire: pairs with the release store in slot_for_submission(), so every slots_[i] below it is set.
  const unsigned count = slot_count_.load(std::memory_order_acquire);
  if (count == 0) return nullptr;
  // First what this worker took from the slots earlier (a relaxed hint skips the pop's fence when empty).
  if (!self.from_outside.empty()) {
    if (auto task = self.from_outside.pop()) return *task;
  }
  const auto start = static_cast<unsigned>(self.next_random() % count);
  for (unsigned i = 0; i < count; ++i) {
    // relaxed: set before slot_count_ was published (acquired above) and never changed.
    OutsideSlot& victim = *slots_[(start + i) % count].load(std::memory_order_relaxed);
    if (victim.deque.empty()) continue;  // a hint, as in steal()
    // Not counted in stolen/steal_attempts: those are about other workers; this is the outside threads'
    // work coming in, as from the shared queues.
    // Until it is empty, as a pop from the shared queue would: a lost race means another thread took an item,
    // so this stays lock-free, and outside work is never skipped for a worker's spawns while any is left.
    for (;;) {
      // A batch: this task and up to kStealBatch - 1 more (never more than half the slot), which go into our
      // from_outside deque, where other workers still find them before any spawn. Only as many as fit there
      // without growing, so the pushes cannot throw and nothing taken can be lost. One at a time while this
      // worker waits (inside wait_on_worker): it should get back to its waiting task, not gather more.
      // And one at a time from a short backlog: between the batch's CAS and the pushes below, the extras are
      // in no deque, and a worker that searched just then would find no outside work and take a spawn
      // instead, against the rule that outside work goes first. From a backlog of 2 * kStealBatch or more,
      // what our batch leaves behind is still in the slot for others. (This was first thought to cause
      // pool_shutdown's nested-waits hang; that was the test's own ordering assumption, fixed there.)
      std::array<Task*, OutsideSlot::kStealBatch> batch;
      const bool deep = victim.deque.size_hint() >= 2 * OutsideSlot::kStealBatch;
      const std::size_t limit =
          self.wait_depth == 0 && deep ? std::min(batch.size(), 1 + self.from_outside.room()) : 1;
      const auto result = victim.deque.steal_batch(std::span<Task*>(batch.data(), limit));
      if (result) {
        // Each task was written by its submitter on another core: start fetching them all now, together.
        for (std::size_t k = 1; k < result.count; ++k) __builtin_prefetch(batch[k]);
        // Newest first, so that our pops (newest first) run them in the order they were submitted.
        for (std::size_t k = result.count; k-- > 1;) self.from_outside.push(batch[k]);
        self.counters.outside_batched.bump(result.count - 1);
        // Work moved where sleepers have not been told about it: a sleeper may take some of it.
        if (result.count > 1) signal_work();
        return batch[0];
      }
      if (result.status == StealStatus::empty) break;
    }
  }
  // Then what other workers took from the slots and have not started, still before any spawn.
  const auto workers = static_cast<unsigned>(workers_.size());
  const auto first = static_cast<unsigned>(self.next_random() % workers);
  for (unsigned i = 0; i < workers; ++i) {
    Worker& victim = *workers_[(first + i) % workers];
    if (&victim == &self || victim.from_outside.empty()) continue;  // a hint, as in steal()
    if (Task* task = steal_until_taken_or_empty(victim.from_outside)) return task;
  }
  return nullptr;
}

OutsideSlot* Engine::slot_for_submission() {
  if (OutsideSlot* slot = slot_lease::find(id_)) return slot;
  // First submission from this thread (or its slot was never granted): adopt a slot whose owner exited, else
  // make one. acquire on the count: see Engine::slots_.
  unsigned count = slot_count_.load(std::memory_order_acquire);
  for (unsigned i = 0; i < count; ++i) {
    OutsideSlot* slot = slots_[i].load(std::memory_order_relaxed);
    bool expected = false;
    // acquire: the previous owner's deque and counter writes (released when it exited) are visible to us.
    if (slot->owned.load(std::memory_order_relaxed) ||
        !slot->owned.compare_exchange_strong(expected, true, std::memory_order_acquire, std::memory_order_relaxed))
      continue;
    const std::lock_guard lock(slots_mutex_);
    return slot_lease::remember(id_, slot_holders_[i]) ? slot : nullptr;
  }
  const std::lock_guard lock(slots_mutex_);
  count = slot_count_.load(std::memory_order_relaxed);  // relaxed: only written under this mutex
  if (count >= kMaxSlots) return nullptr;
  std::shared_ptr<OutsideSlot> made;
  try {
    made = std::make_shared<OutsideSlot>();
  } catch (...) {
    return nullptr;  // no memory for a slot: the shared queues still work
  }
  OutsideSlot* slot = made.get();
  slot_holders_[count] = made;
  slots_[count].store(slot, std::memory_order_relaxed);  // relaxed: published by the release store below
  // release: a reader that acquires the new count sees the slot constructed and its pointer stored. seq_cst
  // for begin_shutdown's scan of the `entering` flags (see there).
  slot_count_.store(count + 1, std::memory_order_seq_cst);
  return slot_lease::remember(id_, std::move(made)) ? slot : nullptr;
}

void Engine::run_outside(OutsideSlot& slot, Task* task) noexcept {
  if (options_.max_queued != 0) release_queued_slot();
  {
    const RunningFrame frame(*this);
    if (has_hooks()) [[unlikely]] {
      run_hooked(domain_.current(), task, TaskEvent::not_a_worker);
    } else {
      run_and_release(domain_.current(), task);
    }
  }
  // Last, as in execute(): everything the task did is counted before it counts as finished.
  slot.finished.bump();
}

Task* Engine::steal_from_mailboxes(Worker& self) {
  std::optional<std::chrono::steady_clock::time_point> now;
  for (auto& victim_ptr : workers_) {
    Worker& victim = *victim_ptr;
    if (&victim == &self || victim.mailbox_pending.load(std::memory_order_relaxed) <= 0) continue;
    if (!now) now = std::chrono::steady_clock::now();
    const std::uint64_t executed = victim.counters.executed.read();
    auto& watch = self.watches[victim.index];
    if (watch.executed != executed) {
      watch = {executed, *now};  // the victim made progress since we last looked: give it more time
      continue;
    }
    if (*now - watch.since < options_.affinity_patience) continue;
    if (auto task = victim.mailbox.try_pop(self.ref())) {
      victim.mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // a hint only
      self.counters.stolen.bump();
      return *task;
    }
  }
  return nullptr;
}

void Engine::execute(Worker& self, Task* task) noexcept {
  if (options_.max_queued != 0) release_queued_slot();
  if (has_hooks()) [[unlikely]] {
    run_hooked(self.registration->ref(), task, self.index);
  } else {
    run_and_release(self.registration->ref(), task);
  }
  self.counters.executed.bump();
  // Last: everything the task did, the tasks it spawned included, is counted before it counts as finished.
  self.counters.finished.bump();
}

void Engine::run_and_release(TaskDomain::ThreadRef ref, Task* task) noexcept {
  if (task->is_future_state) {
    weft::detail::FutureStateBase::finish_queued(task, true);  // keeps its own exceptions
    return;
  }
  try {
    closure_task(task).work();
  } catch (...) {
    report_error(std::current_exception());
  }
  destroy_task(ref, task);
}

void Engine::note_drop_was_empty() noexcept { tls_drop_was_empty = true; }

std::uint64_t Engine::drop(Task* task, TaskDomain::ThreadRef ref) noexcept {
  // A closure destroyed unrun, or a future's state told so (destroy_task): either way the future, if
  // any, reports task_dropped.
  tls_drop_was_empty = false;
  destroy_task(ref, task);
  abandoned_.fetch_add(1, std::memory_order_release);  // release: read by idle() with acquire
  return std::exchange(tls_drop_was_empty, false) ? 0 : 1;
}

bool Engine::has_visible_work(const Worker& self) const noexcept {
  for (const auto& queue : injected_) {
    if (!queue->empty_hint()) return true;
  }
  if (self.mailbox_pending.load(std::memory_order_relaxed) > 0) return true;
  for (const auto& worker : workers_) {
    if (!worker->deque.empty() || !worker->from_outside.empty()) return true;
  }
  const unsigned slots = slot_count_.load(std::memory_order_acquire);  // acquire: see slots_
  for (unsigned i = 0; i < slots; ++i) {
    if (!slots_[i].load(std::memory_order_relaxed)->deque.empty()) return true;
  }
  return false;
}

bool Engine::mailbox_waiting_elsewhere(const Worker& self) const noexcept {
  for (const auto& worker : workers_) {
    if (worker.get() != &self && worker->mailbox_pending.load(std::memory_order_relaxed) > 0) return true;
  }
  return false;
}

void Engine::park(Worker& self) {
  // The checks run after the announcement (scheduler/parking.hpp): a producer either sees this worker as a
  // sleeper and wakes it, or published before the checks, which then see its work.
  const auto key = parking_.prepare_park([&] {
    const State state = state_.load(std::memory_order_acquire);
    return has_visible_work(self) || state == State::dropping || state == State::stopped;
  });
  if (!key) return;
  self.counters.parks.bump();
  // Another worker holds a mailbox task: wake up in time to take it over if that worker stays busy.
  const auto timeout = mailbox_waiting_elsewhere(self) ? std::chrono::nanoseconds(options_.affinity_patience)
                                                       : std::chrono::nanoseconds::max();
  (void)parking_.sleep(*key, timeout);
  self.counters.wakeups.bump();
}

Worker* Engine::spawning_worker(const TaskOptions& options) const noexcept {
  Worker* const self = tls_worker;
  const bool plain = !options.affinity && options.priority == Priority::Normal && options_.max_queued == 0;
  return self != nullptr && &self->engine == this && plain ? self : nullptr;
}

SubmitStatus Engine::enqueue(small_function<void()>&& closure, TaskOptions options, weft::detail::Admission admission,
                             std::chrono::steady_clock::time_point deadline, weft::detail::InlineTag inline_tag) {
  // The common case first, in a frame of its own: the general path's frame (its gate, its error messages) and
  // six register saves were paid on every spawn while the two shared one function (fib spends a fifth of its
  // instructions in spawning).
  if (Worker* const self = spawning_worker(options); self != nullptr && closure) [[likely]]
    return spawn_on_worker(*self, std::move(closure), inline_tag);
  return enqueue_general(std::move(closure), options, admission, deadline, inline_tag);
}

SubmitStatus Engine::enqueue(Task* task, TaskOptions options, weft::detail::Admission admission,
                             std::chrono::steady_clock::time_point deadline, weft::detail::InlineTag inline_tag) {
  if (Worker* const self = spawning_worker(options)) [[likely]] return spawn_on_worker(*self, task, inline_tag);
  return enqueue_general(task, options, admission, deadline, inline_tag);
}

namespace {

// What enqueue_general and spawn_on_worker queue: a closure, wrapped here in a ClosureTask block, or a task
// that is its own block, which only gets its routing fields.
[[nodiscard]] bool is_empty(const small_function<void()>& closure) noexcept { return !closure; }
[[nodiscard]] constexpr bool is_empty(const Task*) noexcept { return false; }

[[nodiscard]] Task* to_task(TaskDomain::ThreadRef ref, small_function<void()>&& closure, Priority priority,
                            std::uint32_t affinity, weft::detail::InlineTag inline_tag) {
  return make_task(ref, std::move(closure), priority, affinity, inline_tag);
}
[[nodiscard]] Task* to_task(TaskDomain::ThreadRef, Task* task, Priority priority, std::uint32_t affinity,
                            weft::detail::InlineTag inline_tag) noexcept {
  task->priority = priority;
  task->affinity = affinity;
  task->inline_tag = inline_tag;
  return task;
}

}  // namespace

template <class Source>
SubmitStatus Engine::enqueue_general(Source&& source, TaskOptions options, weft::detail::Admission admission,
                                     std::chrono::steady_clock::time_point deadline,
                                     weft::detail::InlineTag inline_tag) {
  if (options.affinity && *options.affinity >= size())
    throw invalid_option("weft::TaskOptions::affinity = " + std::to_string(*options.affinity) +
                         ": the pool has " + std::to_string(size()) + " workers (0.." + std::to_string(size() - 1) +
                         ")");
  if (is_empty(source)) throw std::invalid_argument("weft::Pool: the task is empty (a null function)");
  // Only here: the fast path of enqueue() takes Normal tasks alone, so an out-of-range value always comes here.
  if (options.priority > Priority::Low)
    throw invalid_option("weft::TaskOptions::priority = " + std::to_string(static_cast<unsigned>(options.priority)) +
                         ": not a weft::Priority (High, Normal or Low)");
  // A worker of this pool here has a task with a priority, an affinity or max_queued: enqueue() took the rest.
  Worker* self = tls_worker != nullptr && &tls_worker->engine == this ? tls_worker : nullptr;

  // An outside thread's Normal task without affinity goes into the thread's own slot (when it can have one).
  OutsideSlot* const slot = self == nullptr && !options.affinity && options.priority == Priority::Normal
                                ? slot_for_submission()
                                : nullptr;

  // External submitters pass a gate that shutdown closes and then waits to drain: the shared count gate_ for
  // those without a slot, the slot's own `entering` flag for the others (one store instead of two RMWs).
  struct GatePass {
    std::atomic<std::uint64_t>* gate = nullptr;
    std::atomic<bool>* entering = nullptr;
    ~GatePass() {
      if (gate != nullptr) gate->fetch_sub(2, std::memory_order_release);  // release: shutdown acquires
      // release: begin_shutdown acquires it, so our push happens-before its final drop pass.
      if (entering != nullptr) entering->store(false, std::memory_order_release);
    }
  } pass;
  if (self != nullptr) {
    const State state = state_.load(std::memory_order_acquire);
    if (state == State::dropping || state == State::stopped) return SubmitStatus::closed;
  } else if (slot != nullptr) {
    // Dekker with begin_shutdown, all four operations seq_cst: we raise our flag then look at the closed bit;
    // shutdown sets the bit then looks at every flag. In the single order S one of us sees the other: either
    // we see the bit and refuse, or shutdown sees our flag and waits until we are out.
    slot->entering.store(true, std::memory_order_seq_cst);
    pass.entering = &slot->entering;
    if ((gate_.load(std::memory_order_seq_cst) & 1) != 0) return SubmitStatus::closed;
  } else {
    // acq_rel: pairs with the fetch_or in begin_shutdown; seeing the closed bit means shutdown has begun.
    if ((gate_.fetch_add(2, std::memory_order_acq_rel) & 1) != 0) {
      gate_.fetch_sub(2, std::memory_order_release);
      return SubmitStatus::closed;
    }
    pass.gate = &gate_;
  }

  if (options_.max_queued != 0) {
    const SubmitStatus admitted = admit(self, admission, deadline);
    if (admitted != SubmitStatus::accepted) return admitted;
  }

  const auto affinity = options.affinity ? *options.affinity : Task::kNoAffinity;
  Task* task = nullptr;
  // One look-up of the calling thread's registration per submission (a thread-local table for outsiders).
  const TaskDomain::ThreadRef ref = self != nullptr ? self->ref() : domain_.current();
  try {
    task = to_task(ref, std::forward<Source>(source), options.priority, affinity, inline_tag);
  } catch (...) {
    if (options_.max_queued != 0) release_queued_slot();
    throw;
  }
  if (slot != nullptr) {
    // Counted as submitted before it can run (see below); the owner's plain increment, release.
    slot->submitted.bump();
    try {
      slot->deque.push(task);
    } catch (...) {
      abandon_unqueued(ref, task);  // growth failed: the task was never queued
      throw;
    }
    signal_work();
    return SubmitStatus::accepted;
  }
  // Counted as submitted before it can run, so that idle() never sees it finished but not submitted.
  if (self != nullptr) {
    self->counters.spawned.bump();
  } else {
    external_submitted_.fetch_add(1, std::memory_order_release);  // release: idle() reads with acquire
  }
  try {
    route(self, ref, task);
  } catch (...) {
    abandon_unqueued(ref, task);  // only allocation can fail here, before the task was queued
    throw;
  }
  return SubmitStatus::accepted;
}

template <class Source>
SubmitStatus Engine::spawn_on_worker(Worker& self, Source&& source, weft::detail::InlineTag inline_tag) {
  // acquire: as in enqueue; once dropping, a worker's new task would only be dropped again.
  const State state = state_.load(std::memory_order_acquire);
  if (state == State::dropping || state == State::stopped) return SubmitStatus::closed;
  const TaskDomain::ThreadRef ref = self.ref();
  Task* task = to_task(ref, std::forward<Source>(source), Priority::Normal, Task::kNoAffinity, inline_tag);
  self.counters.spawned.bump();  // before it can run: idle() never sees it finished but not submitted
  try {
    self.deque.push(task);
  } catch (...) {
    abandon_unqueued(ref, task);  // growth failed: the task was never queued
    throw;
  }
  signal_work();
  return SubmitStatus::accepted;
}

void Engine::abandon_unqueued(TaskDomain::ThreadRef ref, Task* task) noexcept {
  // It never ran and never will, but it was counted as submitted: count it finished for idle(), and wake a
  // wait_idle that may be waiting for it. A task that is its own block goes back to its submitter, which is
  // told by the exception that follows and drops it (Pool::submit_impl).
  if (!task->is_future_state) destroy_task(ref, task);
  abandoned_.fetch_add(1, std::memory_order_release);  // release: idle() reads with acquire
  idle_changed_.notify_all();
  if (options_.max_queued != 0) release_queued_slot();
}

void Engine::route(Worker* self, TaskDomain::ThreadRef ref, Task* task) {
  if (task->affinity != Task::kNoAffinity) {
    Worker& target = *workers_[task->affinity];
    // Counted before the push, so that a parking worker that misses the push still sees the count.
    target.mailbox_pending.fetch_add(1, std::memory_order_relaxed);
    try {
      target.mailbox.push(ref, task);
    } catch (...) {
      target.mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // else that worker could never park
      throw;
    }
    parking_.notify_all();  // notify_one might wake another worker, which must not take it yet
    return;
  }
  // A worker waiting deeper than kMaxWaitDepth runs only its own deque and mailbox (wait_on_worker): what it
  // spawns from there, whatever the priority, goes to its own deque, or its wait could never reach the
  // children it waits for (a High or Low child in the shared queues was run by nobody on one worker). Others
  // still steal it; its priority then only orders it where it is taken from a shared queue.
  if (self != nullptr && (task->priority == Priority::Normal || self->wait_depth >= kMaxWaitDepth)) {
    self->deque.push(task);
    signal_work();
    return;
  }
  const std::size_t s = slot(task->priority);
  // Counted for stats only; relaxed, and on a line only submitters write, so workers never contend on it.
  injected_total_[s].value.fetch_add(1, std::memory_order_relaxed);
  try {
    injected_[s]->push(ref, task);
  } catch (...) {
    injected_total_[s].value.fetch_sub(1, std::memory_order_relaxed);  // never queued: else stats().queued stays up
    throw;
  }
  signal_work();
}

void Engine::signal_work() noexcept { parking_.notify(); }

bool Engine::closed_to(const Worker* self) const noexcept {
  if (self != nullptr) {
    const State state = state_.load(std::memory_order_acquire);
    return state == State::dropping || state == State::stopped;
  }
  return (gate_.load(std::memory_order_acquire) & 1) != 0;
}

SubmitStatus Engine::admit(Worker* self, weft::detail::Admission admission, std::chrono::steady_clock::time_point deadline) {
  const std::size_t limit = options_.max_queued;
  const bool timed = admission == weft::detail::Admission::until;
  for (;;) {
    std::size_t queued = queued_.load(std::memory_order_relaxed);
    while (queued < limit) {
      // relaxed: the count only bounds memory; the task itself is ordered by the queue it goes into.
      if (queued_.compare_exchange_weak(queued, queued + 1, std::memory_order_relaxed)) return SubmitStatus::accepted;
    }
    if (closed_to(self)) return SubmitStatus::closed;
    if (admission == weft::detail::Admission::try_once) return SubmitStatus::full;
    if (timed && std::chrono::steady_clock::now() >= deadline) return SubmitStatus::full;
    if (self != nullptr && !timed && self->wait_depth >= kMaxWaitDepth) {
      // This worker already waits kMaxWaitDepth deep: its wait could run only its own deque, never the queued
      // tasks whose start makes room, and once every worker is here no task starts again (outside
      // submitters take each freed slot first). Admit over the limit rather than deadlock; the overshoot
      // lasts until the task starts. relaxed: as above.
      queued_.fetch_add(1, std::memory_order_relaxed);
      return SubmitStatus::accepted;
    }
    const auto room = [&] { return queued_.load(std::memory_order_relaxed) < limit || closed_to(self); };
    if (self != nullptr) {
      // A worker must not simply block: the room it waits for is made by workers running tasks.
      wait_on_worker(*self, room, timed ? deadline : std::chrono::steady_clock::time_point::max(),
                     [&](std::chrono::nanoseconds slice) {
                       const auto key = room_available_.prepare_wait();
                       if (room()) {
                         room_available_.cancel_wait();
                         return;
                       }
                       (void)room_available_.wait_for(key, slice);
                     });
      continue;
    }
    const auto key = room_available_.prepare_wait();
    if (room()) {
      room_available_.cancel_wait();
      continue;
    }
    if (timed) {
      (void)room_available_.wait_for(key, deadline - std::chrono::steady_clock::now());
    } else {
      room_available_.wait(key);
    }
  }
}

void Engine::release_queued_slot() noexcept {
  queued_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: see admit()
  room_available_.notify_one();
}

bool Engine::idle() const noexcept {
  // Finished first, then submitted. Every task counted in `finished` was submitted before, and so is counted in
  // `submitted` when that is read later; so finished == submitted means no accepted task is unfinished.
  // Inline runs (a waiter running a task itself) count on both sides: started before the claim, finished after
  // the result, so one still running keeps finished < submitted.
  std::uint64_t finished = abandoned_.load(std::memory_order_acquire);
  finished += inline_runs_.finished.load(std::memory_order_acquire);
  for (const auto& worker : workers_) finished += worker->counters.finished.read();
  // A slot made after this read only adds to `submitted` below (its owner's runs are of its own submissions),
  // which errs towards "not idle". acquire: see slots_.
  const unsigned slots_seen = slot_count_.load(std::memory_order_acquire);
  for (unsigned i = 0; i < slots_seen; ++i) finished += slots_[i].load(std::memory_order_relaxed)->finished.read();
  std::uint64_t submitted = external_submitted_.load(std::memory_order_acquire);
  submitted += inline_runs_.started.load(std::memory_order_acquire);
  for (const auto& worker : workers_) submitted += worker->counters.spawned.read();
  const unsigned slots = slot_count_.load(std::memory_order_acquire);
  for (unsigned i = 0; i < slots; ++i) submitted += slots_[i].load(std::memory_order_relaxed)->submitted.read();
  return finished == submitted;
}

void Engine::wait_idle() {
  refuse_on_own_worker("wait_idle");
  while (!idle()) {
    const auto key = idle_changed_.prepare_wait();
    if (idle()) {
      idle_changed_.cancel_wait();
      return;
    }
    idle_changed_.wait(key);
  }
}

void Engine::begin_shutdown(State target) {
  // After this, every external submitter either saw the closed bit or is counted in the gate (acq_rel), or
  // has its slot's `entering` flag up (seq_cst: the Dekker pairing in enqueue()).
  gate_.fetch_or(1, std::memory_order_seq_cst);
  room_available_.notify_all();  // submitters blocked on a full queue must see the gate close
  while (gate_.load(std::memory_order_acquire) >= 2) std::this_thread::yield();
  // seq_cst: a slot made after this load published its count (seq_cst) after our fetch_or in S, so its first
  // submitter, which raises its flag after that, sees the closed bit. The flag loads are the other half of
  // the Dekker pairing, and acquire the submitter's release on leaving: its push is visible to the drops.
  const unsigned slots = slot_count_.load(std::memory_order_seq_cst);
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = *slots_[i].load(std::memory_order_relaxed);  // see slots_
    while (slot.entering.load(std::memory_order_seq_cst)) std::this_thread::yield();
  }
  // Never lowers the state (a destructor after a failed shutdown must not turn dropping back into draining).
  State current = state_.load(std::memory_order_acquire);
  while (current < target && !state_.compare_exchange_weak(current, target, std::memory_order_acq_rel)) {
  }
  parking_.notify_all();
  room_available_.notify_all();
}

std::uint64_t Engine::finish_shutdown() {
  // Registered first: nothing below allocates, so a shutdown that gets past this line always completes.
  auto handle = domain_.register_thread();
  const auto ref = handle.ref();
  std::uint64_t count = 0;
  if (state_.load(std::memory_order_acquire) == State::dropping) {
    // A worker inside a nested wait (Future::get in a task) would go on taking pending tasks. Drop them from
    // here, before joining: their futures report task_dropped, so those waits end and the workers can exit.
    count += drop_pending_while_running(ref);
  }
  state_.store(State::stopped, std::memory_order_release);
  parking_.notify_all();
  room_available_.notify_all();
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
  // The workers are gone: this thread now owns every deque, and drops whatever was never started.
  for (auto& worker : workers_) {
    while (auto task = worker->deque.pop()) {
      count += drop(*task, ref);
    }
    while (auto task = worker->from_outside.pop()) {
      count += drop(*task, ref);
    }
    while (auto task = worker->mailbox.try_pop(ref)) {
      count += drop(*task, ref);
    }
    worker->mailbox_pending.store(0, std::memory_order_relaxed);
  }
  count += drop_slots(ref);
  for (std::size_t s = 0; s < injected_.size(); ++s) {
    while (auto task = injected_[s]->try_pop(ref)) {
      count += drop(*task, ref);
      injected_dropped_.fetch_add(1, std::memory_order_relaxed);  // stats only
    }
  }
  count += dropped_by_waiters_.load(std::memory_order_relaxed);  // the joins ordered these
  dropped_.fetch_add(count, std::memory_order_relaxed);
  joined_ = true;
  idle_changed_.notify_all();
  return count;
}

std::uint64_t Engine::drop_pending_while_running(TaskDomain::ThreadRef ref) noexcept {
  // steal() and try_pop() are safe from any thread while the owners still run. Workers refuse new submissions
  // once the state is dropping, so this pass and the one after the join between them catch everything.
  std::uint64_t count = 0;
  for (auto& worker : workers_) {
    for (auto* deque : {&worker->deque, &worker->from_outside}) {
      while (Task* task = steal_until_taken_or_empty(*deque)) {
        count += drop(task, ref);
      }
    }
    while (auto task = worker->mailbox.try_pop(ref)) {
      worker->mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // a hint only
      count += drop(*task, ref);
    }
  }
  for (auto& queue : injected_) {
    while (auto task = queue->try_pop(ref)) {
      count += drop(*task, ref);
      injected_dropped_.fetch_add(1, std::memory_order_relaxed);  // stats only
    }
  }
  return count + drop_slots(ref);
}

std::uint64_t Engine::drop_slots(TaskDomain::ThreadRef ref) noexcept {
  // steal(), never pop(): the owning thread may still be alive (it only pops, and only while not dropping).
  std::uint64_t count = 0;
  const unsigned slots = slot_count_.load(std::memory_order_acquire);  // acquire: see slots_
  for (unsigned i = 0; i < slots; ++i) {
    OutsideSlot& slot = *slots_[i].load(std::memory_order_relaxed);
    while (Task* task = steal_until_taken_or_empty(slot.deque)) count += drop(task, ref);
  }
  return count;
}

std::uint64_t Engine::shutdown(Shutdown policy) {
  if (policy != Shutdown::Drain && policy != Shutdown::DropPending)
    throw invalid_option("weft::Pool::shutdown: policy = " + std::to_string(static_cast<unsigned>(policy)) +
                         ": not a weft::Shutdown (Drain or DropPending)");
  refuse_on_own_worker("shutdown");
  const std::lock_guard lock(shutdown_mutex_);
  if (joined_) return 0;
  begin_shutdown(policy == Shutdown::Drain ? State::draining : State::dropping);
  if (policy == Shutdown::Drain) wait_idle();
  return finish_shutdown();
}

ShutdownResult Engine::shutdown_for(std::chrono::nanoseconds timeout) {
  refuse_on_own_worker("shutdown_for");
  const std::lock_guard lock(shutdown_mutex_);
  if (joined_) return {true, 0};
  const auto deadline = weft::detail::deadline_after(timeout);  // saturating: nanoseconds::max() never overflows
  begin_shutdown(State::draining);
  bool drained = idle();
  while (!drained) {
    const auto key = idle_changed_.prepare_wait();
    if ((drained = idle())) {
      idle_changed_.cancel_wait();
      break;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) {
      idle_changed_.cancel_wait();
      break;
    }
    (void)idle_changed_.wait_for(key, left);
    drained = idle();
  }
  if (!drained) {
    state_.store(State::dropping, std::memory_order_release);
    parking_.notify_all();
  }
  const std::uint64_t dropped = finish_shutdown();
  return {drained && dropped == 0, dropped};
}

std::optional<unsigned> Engine::current_worker() const noexcept {
  if (tls_worker != nullptr && &tls_worker->engine == this) return tls_worker->index;
  return std::nullopt;
}

void Engine::refuse_on_own_worker(const char* what) const {
  if (const auto worker = current_worker()) {
    throw would_deadlock(std::string("weft::Pool::") + what + ": called from a task on worker " +
                         std::to_string(*worker) + " of the same pool, it would wait for itself");
  }
  if (RunningFrame::inside(*this)) {
    throw would_deadlock(std::string("weft::Pool::") + what +
                         ": called from a task of the same pool that this thread runs itself (while waiting for "
                         "it, or for a graph run), it would wait for itself");
  }
}

bool Engine::inside_own_task() const noexcept { return current_worker() || RunningFrame::inside(*this); }

PoolStats Engine::stats() const {
  PoolStats out;
  out.workers.reserve(workers_.size());
  std::uint64_t finished = abandoned_.load(std::memory_order_acquire);
  std::uint64_t submitted = external_submitted_.load(std::memory_order_acquire);
  std::size_t queued = 0;
  for (const auto& worker : workers_) {
    const auto& c = worker->counters;
    out.workers.push_back({c.executed.read(), c.stolen.read(), c.steal_attempts.read(), c.parks.read(),
                           c.wakeups.read(), c.outside_batched.read()});
    finished += c.finished.read();
    submitted += c.spawned.read();
    queued += worker->deque.size_hint() + worker->from_outside.size_hint();
    queued += static_cast<std::size_t>(std::max<std::int64_t>(0, worker->mailbox_pending.load(std::memory_order_relaxed)));
  }
  const unsigned slots = slot_count_.load(std::memory_order_acquire);  // acquire: see slots_
  for (unsigned i = 0; i < slots; ++i) {
    const OutsideSlot& slot = *slots_[i].load(std::memory_order_relaxed);
    submitted += slot.submitted.read();
    finished += slot.finished.read();
    queued += slot.deque.size_hint();
  }
  // Shared queues: what submitters pushed less what workers (or the final drop) took. Read taken first:
  // both only grow, so a snapshot never comes out negative except by a concurrent take, which is clamped.
  std::uint64_t taken = injected_dropped_.load(std::memory_order_relaxed);
  for (const auto& worker : workers_) taken += worker->counters.taken_injected.read();
  std::uint64_t pushed = 0;
  for (const auto& total : injected_total_) pushed += total.value.load(std::memory_order_relaxed);
  queued += pushed > taken ? static_cast<std::size_t>(pushed - taken) : 0;
  out.queued = queued;
  out.in_flight = submitted >= finished ? static_cast<std::size_t>(submitted - finished) : 0;
  out.errors = error_count_.load(std::memory_order_relaxed);
  out.dropped = dropped_.load(std::memory_order_relaxed);
  return out;
}

void Engine::report_error(std::exception_ptr error) noexcept {
  error_count_.fetch_add(1, std::memory_order_relaxed);
  if (options_.on_error) {
    try {
      options_.on_error(error);
      return;
    } catch (...) {
      error = std::current_exception();  // the handler's own failure is kept below, never lost
      error_count_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  try {
    const std::lock_guard lock(errors_mutex_);
    if (errors_.size() < kKeptErrors) errors_.push_back(std::move(error));
  } catch (...) {
    // Out of memory while keeping an error: it is still counted in error_count_.
  }
}

std::vector<std::exception_ptr> Engine::take_errors() {
  const std::lock_guard lock(errors_mutex_);
  return std::exchange(errors_, {});
}

}  // namespace weft::sched
