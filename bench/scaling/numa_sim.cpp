// numa_sim: a discrete-event model of weft's steal rule on machines weft does not run on, comparing the engine's
// flat sweep from a random start (what an unpinned pool does) with the steal order by distance that pinned workers
// get (scheduler/topology/steal_order.hpp, computed here by the library's own code from the library's own placement).
//
// The model (docs/scaling.md says what it leaves out):
// - W workers, one per core (Pinning::Cores), each with a deque: it pops its newest task; a thief takes the oldest.
// - A task has a cost in time units. When it finishes, the tasks it makes ready go on its worker's deque, their data
//   homed on that worker's node. Run on another node, a task's cost is multiplied by kRemoteWork.
// - An idle worker sweeps the other workers in its order (flat: all of them from a random start; by distance: tier by
//   tier, each from a random start), paying kProbe (local) or kProbeRemote (other node) for each victim it looks
//   at, and kSteal or kStealRemote for the steal that succeeds. A sweep that finds nothing is repeated.
// - With the spin bound (scheduler/topology/spin_groups.hpp, the library's own groups), a worker whose sweep found
//   nothing while its node already has as many idle sweepers as its bound parks instead, and costs nothing until a
//   wake-up: the engine's two, a worker that publishes work while nobody sweeps anywhere wakes one parked worker,
//   and a sweeper that stole from a deque with more left hands over to one. A woken worker sweeps after kWake. Which
//   parked worker wakes is the longest parked (the event count's order is not by distance). Without the bound,
//   nobody parks (an idle worker spins for ever; the engine's spin_before_park timeout is not modelled).
// - Each sweep is evaluated at the time it starts (what it sees does not change while it looks).
// Workloads: fib (a binary tree of tasks), wavefront (a grid, each cell after its upper and left neighbours) and
// pipeline (items through serial stages of unequal cost).
//
// Prints one row per machine, workload and order: the simulated time, idle share, steals, the share of steals that
// crossed nodes, the share of probes that crossed nodes, and the share of work run away from its data's node. Fixed
// seeds: the same table on every run.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "scheduler/topology/spin_groups.hpp"
#include "scheduler/topology/steal_order.hpp"
#include "weft/topology.hpp"

namespace {

constexpr double kProbe = 0.05;       // looking at a victim's deque on this node (one cache line read)
constexpr double kProbeRemote = 0.2;  // ... on another node
constexpr double kSteal = 0.5;        // a successful steal from this node (the CAS, the task's first lines)
constexpr double kStealRemote = 2.0;  // ... from another node
constexpr double kRemoteWork = 1.3;   // a task run away from its data's node takes this much longer
constexpr double kWake = 5.0;         // a parked worker's wake-up, until its first sweep (a futex wake, a schedule)

struct Task {
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  std::uint32_t home = 0;  // the node its data is on
};

// What a workload is: its first tasks, each task's cost, and what a finished task makes ready.
class Workload {
 public:
  virtual ~Workload() = default;
  [[nodiscard]] virtual const char* name() const = 0;
  virtual void roots(std::vector<Task>& out) = 0;
  [[nodiscard]] virtual double cost(const Task& task) const = 0;
  virtual void finish(const Task& task, std::vector<Task>& ready) = 0;
};

// fib(n): each task makes fib(n-1) and fib(n-2) ready; unit cost.
class Fib final : public Workload {
 public:
  explicit Fib(std::uint32_t n) : n_(n) {}
  [[nodiscard]] const char* name() const override { return "fib"; }
  void roots(std::vector<Task>& out) override { out.push_back({n_, 0, 0}); }
  [[nodiscard]] double cost(const Task& /*task*/) const override { return 1.0; }
  void finish(const Task& task, std::vector<Task>& ready) override {
    if (task.a < 2) return;
    ready.push_back({task.a - 2, 0, 0});
    ready.push_back({task.a - 1, 0, 0});
  }

 private:
  std::uint32_t n_;
};

// A side x side grid: cell (i, j) after (i-1, j) and (i, j-1); cost 20 a cell.
class Wavefront final : public Workload {
 public:
  explicit Wavefront(std::uint32_t side) : side_(side), waiting_(std::size_t{side} * side) {
    for (std::uint32_t i = 0; i < side; ++i) {
      for (std::uint32_t j = 0; j < side; ++j) waiting_[std::size_t{i} * side + j] = (i > 0 ? 1 : 0) + (j > 0 ? 1 : 0);
    }
  }
  [[nodiscard]] const char* name() const override { return "wavefront"; }
  void roots(std::vector<Task>& out) override { out.push_back({0, 0, 0}); }
  [[nodiscard]] double cost(const Task& /*task*/) const override { return 20.0; }
  void finish(const Task& task, std::vector<Task>& ready) override {
    release(task.a + 1, task.b, ready);
    release(task.a, task.b + 1, ready);
  }

 private:
  void release(std::uint32_t i, std::uint32_t j, std::vector<Task>& ready) {
    if (i >= side_ || j >= side_) return;
    if (--waiting_[std::size_t{i} * side_ + j] == 0) ready.push_back({i, j, 0});
  }
  std::uint32_t side_;
  std::vector<int> waiting_;
};

// `items` items through `stages` serial stages: (item k, stage s) after (k, s-1) and (k-1, s); stage s costs
// 5, 15 or 25 units in turn.
class Pipeline final : public Workload {
 public:
  Pipeline(std::uint32_t items, std::uint32_t stages)
      : items_(items), stages_(stages), waiting_(std::size_t{items} * stages) {
    for (std::uint32_t k = 0; k < items; ++k) {
      for (std::uint32_t s = 0; s < stages; ++s)
        waiting_[std::size_t{k} * stages + s] = (k > 0 ? 1 : 0) + (s > 0 ? 1 : 0);
    }
  }
  [[nodiscard]] const char* name() const override { return "pipeline"; }
  void roots(std::vector<Task>& out) override { out.push_back({0, 0, 0}); }
  [[nodiscard]] double cost(const Task& task) const override { return 5.0 + 10.0 * (task.b % 3); }
  void finish(const Task& task, std::vector<Task>& ready) override {
    release(task.a, task.b + 1, ready);
    release(task.a + 1, task.b, ready);
  }

 private:
  void release(std::uint32_t k, std::uint32_t s, std::vector<Task>& ready) {
    if (k >= items_ || s >= stages_) return;
    if (--waiting_[std::size_t{k} * stages_ + s] == 0) ready.push_back({k, s, 0});
  }
  std::uint32_t items_;
  std::uint32_t stages_;
  std::vector<int> waiting_;
};

struct Result {
  double time = 0;
  double idle = 0;  // share of worker time not running tasks
  std::uint64_t steals = 0;
  std::uint64_t remote_steals = 0;
  std::uint64_t probes = 0;
  std::uint64_t remote_probes = 0;
  double work = 0;
  double remote_work = 0;  // work run away from its data's node (its cost before kRemoteWork)
  std::uint64_t parks = 0;
};

struct Worker {
  std::deque<Task> deque;
  unsigned node = 0;
  std::uint64_t random = 0;
  std::uint64_t next() {
    random ^= random >> 12U;
    random ^= random << 25U;
    random ^= random >> 27U;
    return random * 0x2545F4914F6CDD1DULL;
  }
};

// Runs `workload` on the workers placed on `topology`, stealing in `orders` (empty: the flat sweep), idle sweepers
// bounded per node by `groups` (empty: no bound).
Result simulate(const weft::Topology& topology, const std::vector<std::vector<unsigned>>& placement,
                const std::vector<weft::topology::StealOrder>& orders, const weft::topology::SpinGroups& groups,
                Workload& workload, std::uint64_t seed) {
  const auto count = static_cast<unsigned>(placement.size());
  std::vector<Worker> workers(count);
  for (unsigned w = 0; w < count; ++w) {
    workers[w].node = topology.find(placement[w].front())->numa_node;
    workers[w].random = seed * 0x9E3779B97F4A7C15ULL + w + 1;
  }
  Result result;
  std::vector<Task> ready;
  workload.roots(ready);
  for (Task& task : ready) workers[0].deque.push_back(task);
  ready.clear();

  // (time the worker is next free, worker), earliest first; the task it is running finishes then.
  using Event = std::pair<double, unsigned>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::vector<std::optional<Task>> running(count);
  for (unsigned w = 0; w < count; ++w) events.emplace(0.0, w);
  std::uint64_t outstanding = 1;  // tasks ready or running
  double now = 0;
  // The spin bound: who sweeps (idle and not parked) per group and in all, who is parked (longest first).
  const bool bounded = !groups.bound.empty();
  std::vector<unsigned> sweeping(groups.bound.size(), 0);
  unsigned sweepers = 0;
  std::vector<bool> is_sweeping(count, false);
  std::deque<unsigned> parked;
  const auto stop_sweeping = [&](unsigned w) {
    if (!is_sweeping[w]) return;
    is_sweeping[w] = false;
    --sweeping[groups.group_of[w]];
    --sweepers;
  };
  const auto wake_one = [&] {
    if (parked.empty()) return;
    const unsigned woken = parked.front();
    parked.pop_front();
    events.emplace(now + kWake, woken);
  };
  while (outstanding > 0) {
    const auto [time, w] = events.top();
    events.pop();
    now = time;
    Worker& self = workers[w];
    if (running[w]) {
      workload.finish(*running[w], ready);
      running[w].reset();
      --outstanding;
      for (Task& task : ready) {
        task.home = self.node;
        self.deque.push_back(task);
      }
      outstanding += ready.size();
      // A producer wakes a parked worker only when nobody sweeps (parking.hpp's notify()).
      if (bounded && !ready.empty() && sweepers == 0) wake_one();
      ready.clear();
      if (outstanding == 0) break;
    }
    std::optional<Task> task;
    double delay = 0;
    if (!self.deque.empty()) {
      task = self.deque.back();
      self.deque.pop_back();
    } else {
      // One sweep, in the engine's order.
      auto look = [&](unsigned victim) -> bool {
        const bool remote = workers[victim].node != self.node;
        delay += remote ? kProbeRemote : kProbe;
        ++result.probes;
        result.remote_probes += remote ? 1 : 0;
        if (workers[victim].deque.empty()) return false;
        task = workers[victim].deque.front();
        workers[victim].deque.pop_front();
        delay += remote ? kStealRemote : kSteal;
        ++result.steals;
        result.remote_steals += remote ? 1 : 0;
        // A sweeper that found work with more visible hands the search over to a parked worker.
        if (bounded && !workers[victim].deque.empty()) wake_one();
        return true;
      };
      if (orders.empty()) {
        const auto start = static_cast<unsigned>(self.next() % count);
        for (unsigned i = 0; i < count && !task; ++i) {
          const unsigned victim = (start + i) % count;
          if (victim != w) (void)look(victim);
        }
      } else {
        const auto& order = orders[w];
        unsigned begin = 0;
        for (const unsigned end : order.tier_ends) {
          const unsigned size = end - begin;
          const auto start = static_cast<unsigned>(self.next() % size);
          for (unsigned i = 0; i < size && !task; ++i) (void)look(order.victims[begin + (start + i) % size]);
          if (task) break;
          begin = end;
        }
      }
    }
    if (bounded) {
      if (task) {
        stop_sweeping(w);
      } else if (!is_sweeping[w]) {
        const unsigned group = groups.group_of[w];
        if (sweeping[group] >= groups.bound[group]) {
          // Its node has its sweepers: this worker parks, and is no event until a wake-up.
          parked.push_back(w);
          ++result.parks;
          continue;
        }
        is_sweeping[w] = true;
        ++sweeping[group];
        ++sweepers;
      }
    }
    if (task) {
      const double base = workload.cost(*task);
      const bool away = task->home != self.node;
      result.work += base;
      result.remote_work += away ? base : 0;
      delay += away ? base * kRemoteWork : base;
      running[w] = *task;
    }
    events.emplace(now + delay, w);
  }
  result.time = now;
  result.idle = 1.0 - result.work / (result.time * count);
  return result;
}

void report(const char* machine, const char* order, const char* workload, const Result& r) {
  std::printf("| %s | %s | %s | %.0f | %.1f%% | %llu | %llu | %.1f%% | %.1f%% | %.1f%% |\n", machine, workload, order,
              r.time, 100.0 * r.idle, static_cast<unsigned long long>(r.steals),
              static_cast<unsigned long long>(r.probes),
              r.steals == 0 ? 0.0 : 100.0 * static_cast<double>(r.remote_steals) / static_cast<double>(r.steals),
              r.probes == 0 ? 0.0 : 100.0 * static_cast<double>(r.remote_probes) / static_cast<double>(r.probes),
              r.work == 0 ? 0.0 : 100.0 * r.remote_work / r.work);
}

// `packages` packages of one node of `cores` single-thread cores each.
weft::Topology machine_of(unsigned packages, unsigned cores) {
  std::vector<weft::CpuInfo> cpus;
  for (unsigned p = 0; p < packages; ++p) {
    for (unsigned c = 0; c < cores; ++c) {
      const unsigned cpu = p * cores + c;
      cpus.push_back({.cpu = cpu, .package = p, .numa_node = p, .core = cpu});
    }
  }
  return weft::Topology(std::move(cpus));
}

}  // namespace

int main() {
  std::printf(
      "| machine | workload | steal order | time | idle | steals | probes | cross-node steals | cross-node probes | "
      "work away from its node |\n|---|---|---|---|---|---|---|---|---|---|\n");
  struct Machine {
    const char* name;
    unsigned packages;
    unsigned cores;
  };
  for (const Machine m : {Machine{"2 x 64", 2, 64}, Machine{"8 x 16", 8, 16}}) {
    const auto topology = machine_of(m.packages, m.cores);
    const unsigned workers = m.packages * m.cores;
    const auto placement = weft::placement(topology, {.pinning = weft::Pinning::Cores}, workers);
    const auto tiered = weft::topology::steal_orders(topology, placement);
    const auto groups = weft::topology::spin_groups(topology, placement);
    const std::vector<std::function<std::unique_ptr<Workload>()>> workloads = {
        [] { return std::make_unique<Fib>(24); },
        [] { return std::make_unique<Wavefront>(256); },
        [] { return std::make_unique<Pipeline>(2000, 16); },
    };
    for (const auto& make : workloads) {
      // Random victims; by distance; by distance with the spin bound per node.
      for (const int variant : {0, 1, 2}) {
        // The median of three seeds, by time.
        std::vector<Result> runs;
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
          auto workload = make();
          runs.push_back(simulate(topology, placement,
                                  variant == 0 ? std::vector<weft::topology::StealOrder>{} : tiered,
                                  variant == 2 ? groups : weft::topology::SpinGroups{}, *workload, seed));
        }
        std::sort(runs.begin(), runs.end(), [](const Result& a, const Result& b) { return a.time < b.time; });
        const char* names[] = {"random", "by distance", "by distance, spin bound"};
        report(m.name, names[variant], make()->name(), runs[1]);
      }
    }
  }
  return 0;
}
