// The engine behind weft::Pool: workers, the shared injection queues, parking, admission and shutdown.
// Knows tasks, never graphs.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/cpu_relax.hpp"
#include "scheduler/event_count.hpp"
#include "scheduler/worker.hpp"
#include "weft/pool.hpp"

namespace weft::detail {
// Tasks run inline by a waiter (Future::get) of this engine: started before the claim, finished after the
// result is published. idle() counts them, so wait_idle and Drain wait for an inline run still going.
struct InlineRunCounter {
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> finished{0};
  sched::Engine* engine = nullptr;
};
}  // namespace weft::detail

namespace weft::sched {

class Engine {
 public:
  // Validates the options (weft::invalid_option naming the field), starts the workers and waits until each
  // has applied its name, pinning and nice value; a failure there stops them and throws invalid_option.
  explicit Engine(PoolOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  SubmitStatus enqueue(small_function<void()>&& closure, TaskOptions options, weft::detail::Admission admission,
                       std::chrono::steady_clock::time_point deadline);
  void wait_idle();
  std::uint64_t shutdown(Shutdown policy);
  ShutdownResult shutdown_for(std::chrono::nanoseconds timeout);

  [[nodiscard]] unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()); }
  [[nodiscard]] std::optional<unsigned> current_worker() const noexcept;
  [[nodiscard]] PoolStats stats() const;
  [[nodiscard]] std::vector<std::exception_ptr> take_errors();
  [[nodiscard]] weft::detail::InlineRunCounter& inline_runs() noexcept { return inline_runs_; }
  // An inline run finished: whoever waits for idle should look again.
  void inline_run_finished() noexcept { idle_changed_.notify_all(); }

  // The worker the calling thread is, in whatever engine, or null.
  [[nodiscard]] static Worker* this_thread_worker() noexcept;

  // THE place a worker waits (Future::get, a full queue): until ready() holds, it runs other tasks; when
  // there are none it sleeps in short slices. Nested waits deeper than kMaxWaitDepth run only the worker's own
  // deque (descendants of the waiting task), so that unrelated stolen work cannot grow the stack without
  // bound. A later issue replaces the body with a fiber switch.
  // `sleep(slice)` blocks for at most `slice` on whatever signals ready() (a future's word, an EventCount).
  // Returns ready() (false only if the deadline passed first).
  template <class Ready, class Sleep>
  bool wait_on_worker(Worker& self, Ready ready, std::chrono::steady_clock::time_point deadline, Sleep sleep);

  static constexpr unsigned kMaxWaitDepth = 64;
  static constexpr std::chrono::microseconds kWaitSlice{100};

 private:
  enum class State : std::uint8_t { running, draining, dropping, stopped };

  void worker_main(Worker& self);
  [[nodiscard]] std::string apply_thread_options(Worker& self);
  [[nodiscard]] Task* find_task(Worker& self);
  [[nodiscard]] Task* take_injected(Worker& self, Priority priority);
  [[nodiscard]] Task* steal(Worker& self);
  [[nodiscard]] Task* steal_from_mailboxes(Worker& self);
  void execute(Worker& self, Task* task) noexcept;
  void drop(Task* task, TaskDomain::ThreadRef ref) noexcept;
  void park(Worker& self);
  [[nodiscard]] bool has_visible_work(const Worker& self) const noexcept;
  [[nodiscard]] bool mailbox_waiting_elsewhere(const Worker& self) const noexcept;

  [[nodiscard]] SubmitStatus admit(Worker* self, weft::detail::Admission admission,
                                   std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] bool closed_to(const Worker* self) const noexcept;
  void release_queued_slot() noexcept;
  void route(Worker* self, TaskDomain::ThreadRef ref, Task* task);
  void signal_work() noexcept;
  [[nodiscard]] bool idle() const noexcept;
  void begin_shutdown(State target);
  std::uint64_t finish_shutdown();
  std::uint64_t drop_pending_while_running(TaskDomain::ThreadRef ref) noexcept;
  void report_error(std::exception_ptr error) noexcept;
  void refuse_on_own_worker(const char* what) const;

  PoolOptions options_;
  TaskDomain domain_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // Shared FIFO queues, one per priority, for tasks from outside the workers (and High/Low tasks from
  // workers). Workers skip an empty one with MSQueue::empty_hint(), two loads and no hazard.
  std::array<std::unique_ptr<TaskQueue>, 3> injected_;
  // Pushes per queue, for stats: written by submitters only, each on its own line.
  struct alignas(kCacheLine) PaddedCount {
    std::atomic<std::uint64_t> value{0};
  };
  std::array<PaddedCount, 3> injected_total_{};
  std::atomic<std::uint64_t> injected_dropped_{0};

  EventCount work_available_;  // parked workers sleep here
  EventCount idle_changed_;    // wait_idle and shutdown sleep here; a worker that runs dry notifies
  EventCount room_available_;  // submitters blocked on max_queued sleep here

  // Workers searching for work before they park. While one is, producers need not wake anyone.
  alignas(kCacheLine) std::atomic<int> spinning_{0};
  // A producer woke a sleeper that has not started searching yet: further producers need not wake another.
  std::atomic<bool> wake_in_flight_{false};
  alignas(kCacheLine) std::atomic<State> state_{State::running};
  // External submitters inside enqueue, times two, plus 1 once closed: shutdown closes the gate and waits
  // for the count to drain, so no external submission can slip in after the final drain.
  std::atomic<std::uint64_t> gate_{0};
  std::atomic<std::uint64_t> external_submitted_{0};
  std::atomic<std::size_t> queued_{0};  // accepted, not started; maintained only when max_queued > 0
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> abandoned_{0};  // counted as submitted, then destroyed unrun: finished for idle()
  weft::detail::InlineRunCounter inline_runs_{{0}, {0}, this};

  std::mutex errors_mutex_;
  std::vector<std::exception_ptr> errors_;
  std::atomic<std::uint64_t> error_count_{0};

  // Start-up: workers count down once they applied name, pinning and nice; the first failure is kept.
  std::atomic<unsigned> starting_{0};
  EventCount started_changed_;
  std::mutex startup_mutex_;
  std::string startup_failure_;

  std::mutex shutdown_mutex_;
  bool joined_ = false;
};

template <class Ready, class Sleep>
bool Engine::wait_on_worker(Worker& self, Ready ready, std::chrono::steady_clock::time_point deadline,
                            Sleep sleep) {
  ++self.wait_depth;
  struct Leave {
    Worker& worker;
    ~Leave() { --worker.wait_depth; }
  } leave{self};
  const bool timed = deadline != std::chrono::steady_clock::time_point::max();
  unsigned fruitless = 0;
  while (!ready()) {
    Task* task = nullptr;
    const State state = state_.load(std::memory_order_acquire);
    if (state == State::dropping || state == State::stopped) {
      // Dropping: start nothing more. The awaited task is either running elsewhere or about to be dropped by
      // the shutting-down thread, which makes it ready (dropped) either way.
    } else if (self.wait_depth <= kMaxWaitDepth) {
      task = find_task(self);
    } else if (auto own = self.deque.pop()) {
      task = *own;  // deep: only descendants of the waiting task, which keeps the stack bounded
    } else if (self.mailbox_pending.load(std::memory_order_relaxed) > 0) {
      // ... and tasks sent to this worker, which nobody else may take soon (nor a waiter inline).
      if (auto mine = self.mailbox.try_pop(self.ref())) {
        self.mailbox_pending.fetch_sub(1, std::memory_order_relaxed);  // a hint only
        task = *mine;
      }
    }
    if (task != nullptr) {
      execute(self, task);
      fruitless = 0;
      continue;
    }
    if (timed && std::chrono::steady_clock::now() >= deadline) return ready();
    if (++fruitless < 64) {
      cpu_relax();
      continue;
    }
    auto slice = std::chrono::nanoseconds(kWaitSlice);
    if (timed) slice = std::min(slice, std::chrono::nanoseconds(deadline - std::chrono::steady_clock::now()));
    sleep(slice);
  }
  return true;
}

}  // namespace weft::sched
