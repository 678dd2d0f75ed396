// The engine's start-up and bookkeeping: options checked, workers started with their names, pinning and nice
// value, and stopped again. The worker loop, submission, shutdown, idle detection, tasks run off the loop and the
// statistics live in worker_loop.cpp, steal.cpp, submit.cpp, shutdown.cpp, idle.cpp, inline_run.cpp and stats.cpp; the
// parts with their own state in the types engine.hpp lists.
#include "scheduler/engine/engine.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>

#include "scheduler/engine/engine_internal.hpp"
#include "scheduler/fiber/fiber_stack.hpp"
#if WEFT_FIBERS
#include "scheduler/fiber/fiber_overflow.hpp"
#endif
#include "scheduler/topology/steal_order.hpp"
#include "src/os_thread.hpp"
#include "src/process_barrier.hpp"

namespace weft::engine {
using namespace engine_internal;

namespace {

constexpr unsigned kMaxThreads = 4096;

[[noreturn]] void invalid(const std::string& what) { throw invalid_option("weft::PoolOptions::" + what); }

// Whether the workers' parking should use the asymmetric barriers (scheduler/engine/parking.hpp): a fence saved on
// every post and spawn, for a system call on every park that interrupts each CPU running one of the process's
// threads. Measured a gain on 2 CPUs (docs/perf-log.md); with many CPUs a straggler at the end of a parallel
// phase would be interrupted by each worker that parks before it, so past kAsymmetricParkingCpus the pool keeps
// the fences. Not measured above 2 CPUs.
constexpr unsigned kAsymmetricParkingCpus = 8;

bool asymmetric_parking(const PoolOptions& options) noexcept {
  const unsigned cpus = os::usable_cpu_count();
  const unsigned workers = options.threads == 0 ? cpus : options.threads;
  return std::min(workers, cpus) <= kAsymmetricParkingCpus && os::process_barrier_available();
}

std::string list(const std::vector<unsigned>& cpus) {
  std::string out;
  for (const unsigned cpu : cpus) {
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(cpu));
  }
  return out;
}

// Pinning from the environment (WEFT_PINNING), for a pool whose options leave pinning at None and set no CPU list
// or node: so that a program, or weft's test suite, runs under another policy without changing its code. Unset or
// empty: none. Anything else but a policy's name: weft::invalid_option naming the variable and its value.
void pinning_from_environment(PoolOptions& options) {
  const char* text = std::getenv("WEFT_PINNING");  // NOLINT(concurrency-mt-unsafe): read-only, like getenv anywhere
  if (text == nullptr || *text == '\0' || options.pinning != Pinning::None || !options.cpus.empty() ||
      options.numa_node)
    return;
  const std::string_view value(text);
  if (value == "none") return;
  if (value == "one-per-cpu") {
    options.pinning = Pinning::OnePerCpu;
  } else if (value == "cores") {
    options.pinning = Pinning::Cores;
  } else if (value == "compact") {
    options.pinning = Pinning::Compact;
  } else if (value == "spread") {
    options.pinning = Pinning::Spread;
  } else {
    throw invalid_option("WEFT_PINNING=" + std::string(value) +
                         ": the environment variable may be none, one-per-cpu, cores, compact or spread");
  }
}

// The options' checks (weft::invalid_option naming the field), and where the workers go: `placement` gets each
// worker's CPUs (weft::placement) and `topology` the machine, when the options pin or choose a node (else both are
// left empty: no topology is read). Returns how many workers to start.
unsigned checked_options(PoolOptions& options, Topology& topology, std::vector<std::vector<unsigned>>& placement) {
  if (const std::string_view setting = os::process_barrier_unknown_setting(); !setting.empty()) {
    throw invalid_option("WEFT_PROCESS_BARRIER=" + std::string(setting) +
                         ": the environment variable may only be \"off\" (a fence on both sides of the pool's "
                         "handshakes); unset it to let weft use the process-wide barrier");
  }
  pinning_from_environment(options);
  if (options.threads > kMaxThreads)
    invalid("threads = " + std::to_string(options.threads) + ": at most " + std::to_string(kMaxThreads));
  unsigned count = options.threads == 0 ? os::usable_cpu_count() : options.threads;
  if (options.name.empty()) invalid("name is empty: workers need a name prefix");
  if (options.nice && (*options.nice < -20 || *options.nice > 19))
    invalid("nice = " + std::to_string(*options.nice) + ": must be in -20..19");
  if (options.spin_before_park < std::chrono::microseconds::zero() ||
      options.spin_before_park > std::chrono::seconds(1))
    invalid("spin_before_park = " + std::to_string(options.spin_before_park.count()) + "us: must be in 0..1s");
  if (options.affinity_patience < std::chrono::microseconds::zero() ||
      options.affinity_patience > std::chrono::seconds(10))
    invalid("affinity_patience = " + std::to_string(options.affinity_patience.count()) + "us: must be in 0..10s");
  if (options.pinning > Pinning::Spread)
    invalid("pinning = " + std::to_string(static_cast<unsigned>(options.pinning)) +
            ": not a weft::Pinning (None, OnePerCpu, CpuList, Cores, Compact or Spread)");
  const auto allowed = os::allowed_cpus();
  if (options.pinning == Pinning::CpuList) {
    if (options.cpus.empty()) invalid("cpus is empty, but pinning is Pinning::CpuList");
    for (const unsigned cpu : options.cpus) {
      if (!std::binary_search(allowed.begin(), allowed.end(), cpu))
        invalid("cpus contains CPU " + std::to_string(cpu) +
                ", which this process may not use (allowed: " + list(allowed) + ")");
    }
  } else if (!options.cpus.empty()) {
    invalid("cpus is set, but pinning is not Pinning::CpuList: the CPU list would be ignored");
  }
  if (options.pinning != Pinning::None || options.numa_node) {
    // OnePerCpu and CpuList keep their meaning over the process's mask whatever the topology reports; the others
    // need the machine's facts.
    const bool by_mask = (options.pinning == Pinning::OnePerCpu || options.pinning == Pinning::CpuList) &&
                         !options.numa_node;
    topology = Topology::current();
    if (by_mask) {
      // A CPU of the mask the topology left out would be refused by placement(); then the mask alone decides.
      const bool covers = std::all_of(allowed.begin(), allowed.end(),
                                      [&](unsigned cpu) { return topology.find(cpu) != nullptr; });
      if (!covers || topology.cpus().size() != allowed.size()) topology = Topology::flat(allowed);
    }
    if (options.threads == 0 && options.numa_node && *options.numa_node < topology.numa_nodes())
      count = static_cast<unsigned>(topology.node_cpus(*options.numa_node).size());
    placement = weft::placement(topology, options, count);
  }

  if (options.fiber_stack_size < PoolOptions::min_fiber_stack_size ||
      options.fiber_stack_size > fiber::kMaxFiberStackSize)
    invalid("fiber_stack_size = " + std::to_string(options.fiber_stack_size) + ": must be in " +
            std::to_string(PoolOptions::min_fiber_stack_size) + ".." + std::to_string(fiber::kMaxFiberStackSize) +
            " bytes");
  if (options.max_fibers < 1 || options.max_fibers > fiber::kMaxFiberStacks)
    invalid("max_fibers = " + std::to_string(options.max_fibers) + ": must be in 1.." +
            std::to_string(fiber::kMaxFiberStacks));
  return count;
}

}  // namespace

// Never inlined (engine.hpp), its address made opaque as WEFT_FIBER_SAFE_TLS does (scheduler/fiber/safe_tls.hpp): a
// unity build (or LTO) that inlined this into a wait would read the worker of the thread the task ran on before it
// suspended. One call, not an accessor's call inside this one: every wait on a worker asks.
Worker* Engine::this_thread_worker() noexcept {
  Worker** slot = &tls_worker;
  asm volatile("" : "+r"(slot));
  return *slot;
}

Engine::Engine(PoolOptions options)
    : options_(std::move(options)), hooks_(options_), parking_(asymmetric_parking(options_)) {
  const unsigned count = checked_options(options_, topology_, placement_);
  steal_orders_ = topology::steal_orders(topology_, placement_);
  spin_quota_ = SpinQuota(topology::spin_groups(topology_, placement_));
  make_workers(count);
  start_workers();
}

void Engine::make_workers(unsigned count) {
  for (auto& queue : injected_) queue = std::make_unique<TaskQueue>(domain_);
  workers_.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    workers_.push_back(std::make_unique<Worker>(*this, i, domain_));
    workers_.back()->watches.resize(count);
  }
#if WEFT_FIBERS
  if (options_.fibers) {
    // Keeps a few free stacks per worker for the next suspensions; more are unmapped when released.
    fiber_stacks_ = std::make_unique<fiber::FiberStackPool>(
        fiber::FiberStackOptions{.stack_size = options_.fiber_stack_size,
                                 .max_stacks = options_.max_fibers,
                                 .keep_free = std::min<std::size_t>(options_.max_fibers, 4 * std::size_t{count})});
    for (auto& worker : workers_) {
      fiber_workers_.push_back(std::make_unique<FiberWorker>(*this, *fiber_stacks_));
      worker->fibers = fiber_workers_.back().get();
    }
    fiber::install_fiber_overflow_report();  // again if someone replaced the handler since the last pool started
  }
#endif
}

void Engine::start_workers() {
  const auto count = static_cast<unsigned>(workers_.size());
  starting_.store(count, std::memory_order_relaxed);
  unsigned launched = 0;
  try {
    for (auto& worker : workers_) {
      worker->thread = std::thread([this, &self = *worker] { worker_thread(self); });
      ++launched;
    }
  } catch (...) {
    // The OS refused a thread: stop the ones already started, and report.
    starting_.fetch_sub(count - launched, std::memory_order_acq_rel);
    begin_shutdown(State::dropping);
    finish_shutdown();
    throw;
  }
  started_changed_.await([this] { return starting_.load(std::memory_order_acquire) == 0; });
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

void Engine::worker_thread(Worker& self) {
  tls_worker = &self;
  self.registration.emplace(domain_.register_thread());
  std::string problem = apply_thread_options(self);
  if (!problem.empty()) {
    const std::lock_guard lock(startup_mutex_);
    if (startup_failure_.empty()) startup_failure_ = std::move(problem);
  }
#if WEFT_FIBERS
  if (self.fibers != nullptr) self.fibers->take_loop_stack();  // before any task may take the last stacks
#endif
  // acq_rel: the constructor, which acquires the count, sees the failure written above. Everything
  // touched here is a member, which outlives this thread (it is joined before they are destroyed).
  starting_.fetch_sub(1, std::memory_order_acq_rel);
  started_changed_.notify_all();
#if WEFT_FIBERS
  if (self.fibers != nullptr) {
    // An overflow of a fiber's stack is reported, naming this worker (scheduler/fiber/fiber_overflow.hpp).
    const fiber::FiberOverflowScope overflow(options_.name.c_str(), self.index, fiber_stacks_->guard_size());
    self.fibers->run(self);
  } else {
    worker_main(self);
  }
#else
  worker_main(self);
#endif
  self.registration.reset();
  tls_worker = nullptr;
}

Engine::~Engine() {
  bool finished_here = false;
  {
    const std::lock_guard lock(shutdown_mutex_);
    if (!joined_) {
      (void)timers_.stop();  // as in shutdown(): timers not yet due are dropped, never waited for
      begin_shutdown(State::draining);
      // After a shutdown that failed part-way (out of memory) the state may already be dropping: do not wait
      // for tasks that nobody will run.
      idle_.wait([this] { return lifecycle_.state() != State::draining || idle(); });
      finish_shutdown();
      finished_here = true;
    }
  }
  if (finished_here) resume_parked_coroutines();
  // The slots are marked dead by slots_'s destructor (slot_table.hpp).
}

std::string Engine::apply_thread_options(Worker& self) {
  os::set_current_thread_name(options_.name + "-" + std::to_string(self.index));
  if (!placement_.empty() && !placement_[self.index].empty()) {
    const auto& cpus = placement_[self.index];
    if (!os::pin_current_thread(cpus))
      return "pinning: worker " + std::to_string(self.index) + " could not be pinned to CPU" +
             (cpus.size() == 1 ? " " : "s ") + list(cpus);
  }
  if (options_.nice) {
    if (auto error = os::set_current_thread_nice(*options_.nice))
      return "nice = " + std::to_string(*options_.nice) + ": worker " + std::to_string(self.index) +
             " could not set it: " + *error;
  }
  return {};
}

std::optional<unsigned> Engine::current_worker() const noexcept {
  if (tls_worker != nullptr && &tls_worker->engine == this) return tls_worker->index;
  return std::nullopt;
}

void Engine::note_unsuspended_wait() noexcept {
  waits_unsuspended_.fetch_add(1, std::memory_order_relaxed);
  // relaxed: only which caller writes the message is decided here; it orders nothing else.
  if (unsuspended_told_.exchange(true, std::memory_order_relaxed)) return;
  std::size_t live = 0;
#if WEFT_FIBERS
  if (fiber_stacks_ != nullptr) live = fiber_stacks_->stats().live;
#endif
  std::fprintf(stderr,
               "weft: pool '%s': a waiting task could not suspend: %zu fiber stacks exist (PoolOptions::max_fibers "
               "= %zu, exceeded as needed up to %zu, or until the OS refuses the memory). It waits by running other "
               "tasks on its own stack instead, which never ends if the tasks that would release it are queued "
               "behind other such waits. Let fewer tasks wait at once, or use fewer or smaller fiber stacks "
               "(PoolOptions::fiber_stack_size). PoolStats::fiber_waits_unsuspended counts these waits.\n",
               options_.name.c_str(), live, options_.max_fibers, fiber::kMaxFiberStacks);
}

}  // namespace weft::engine
