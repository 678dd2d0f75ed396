// Relacy model test of BoundedQueue (graph/inbox/bounded_queue.hpp) at capacity 1 and 2 with 2-3 threads. Every
// explored execution is checked for data races on the items (and on each slot's storage across laps), for
// exactly-once delivery of every accepted item, FIFO order per producer at each consumer, never more than
// `capacity` items constructed in the ring at any moment, and an exact capacity after the run.
//
// Usage: bounded_queue_model [scenario...]   (no scenario = all). Each runs under the random scheduler and
// the context-bound search (bound 2).
// Planted bugs (tests/model/plant.hpp): `--plant=bounded_queue.<bug>` takes that WEFT_PLANTED line of the
// production header. Without a plant the run exits 0 only if every run passed; with one it exits 1 only if every
// requested run caught the bug (it is registered should_fail, so a bug that slips through fails the suite). A
// misspelt scenario or plant, or a plant whose line never ran, exits 99: an error whatever should_fail says.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "graph/inbox/bounded_queue.hpp"

namespace {

using weft::model::RelacyVar;

constexpr int kMaxSlots = 2;
constexpr int kMaxThreads = 3;
constexpr int kMaxOps = 4;

// A shadow cell per slot's storage, outliving the items built in it: the items' own checked variables are
// re-created with each item, so only a persistent cell shows a race between a pop's move-out of lap k and the
// construction of lap k + 1 in the same storage.
struct Shadow {
  const void* address[kMaxSlots] = {};
  RelacyVar<int>* cell[kMaxSlots] = {};
  int slots = 0;
  bool registering = false;  // before(): the moves into the ring record the slots' addresses
  int in_ring = 0;           // items constructed in slot storage and not yet destroyed (fibers: no race)
  int capacity = 0;

  RelacyVar<int>* find(const void* p) {
    for (int i = 0; i < slots; ++i) {
      if (address[i] == p) return cell[i];
    }
    return nullptr;
  }
};
Shadow* shadow = nullptr;

struct Item {
  explicit Item(int v) : value(v) {}
  Item(Item&& other) noexcept : value(other.value.load()) {
    if (RelacyVar<int>* from = shadow->find(&other)) RL_ASSERT(from->load() == value.load());
    if (shadow->registering && shadow->find(this) == nullptr) shadow->address[shadow->slots++] = this;
    if (RelacyVar<int>* cell = shadow->find(this)) {
      cell->store(value.load());
      RL_ASSERT(++shadow->in_ring <= shadow->capacity);  // never more than capacity items in the ring
    }
  }
  ~Item() {
    if (RelacyVar<int>* cell = shadow->find(this)) {
      cell->store(-1);
      --shadow->in_ring;
    }
  }
  RelacyVar<int> value;
};

using Queue = weft::inbox::BoundedQueue<Item, weft::model::RelacyMemoryModel>;

// Scripts: 'p' = try_push the thread's next item, 'c' = try_pop. Items are 10 * (thread + 1) + sequence.
template <int Capacity, int Threads>
struct Scenario : rl::test_suite<Scenario<Capacity, Threads>, Threads> {
  static inline const char* scripts[Threads] = {};

  Shadow shade;
  RelacyVar<int> cells[kMaxSlots];
  Queue* queue = nullptr;
  int popped[Threads][kMaxOps] = {};
  bool accepted[Threads][kMaxOps] = {};
  int pushes[Threads] = {};

  void before() {
    shade = Shadow{};
    shade.capacity = Capacity;
    for (int i = 0; i < kMaxSlots; ++i) shade.cell[i] = &cells[i];
    shadow = &shade;
    queue = new Queue(Capacity);
    // One lap to learn the slots' addresses; the scenario then starts on lap 1.
    shade.registering = true;
    for (int i = 0; i < Capacity; ++i) RL_ASSERT(queue->try_push(Item(1000 + i)));
    shade.registering = false;
    for (int i = 0; i < Capacity; ++i) RL_ASSERT(queue->try_pop().has_value());
    RL_ASSERT(shade.slots == Capacity && shade.in_ring == 0);
    for (auto& row : popped) {
      for (int& v : row) v = 0;
    }
    for (auto& row : accepted) {
      for (bool& a : row) a = false;
    }
    for (int& n : pushes) n = 0;
  }

  void thread(unsigned index) {
    int pops = 0;
    for (const char* op = scripts[index]; *op != '\0'; ++op) {
      if (*op == 'p') {
        const int seq = pushes[index]++;
        accepted[index][seq] = queue->try_push(Item(static_cast<int>(10 * (index + 1)) + seq));
      } else if (auto v = queue->try_pop()) {
        popped[index][pops++] = v->value.load();
      }
    }
  }

  void after() {
    int received[Threads][kMaxOps] = {};
    auto take = [&](int v) {
      const int producer = v / 10 - 1;
      const int seq = v % 10;
      RL_ASSERT(producer >= 0 && producer < Threads && seq < pushes[producer] && accepted[producer][seq]);
      ++received[producer][seq];
    };
    for (int c = 0; c < Threads; ++c) {
      int last[Threads];
      for (int& l : last) l = -1;
      for (int i = 0; i < kMaxOps && popped[c][i] != 0; ++i) {
        take(popped[c][i]);
        const int producer = popped[c][i] / 10 - 1;
        RL_ASSERT(popped[c][i] % 10 > last[producer]);  // FIFO per producer at each consumer
        last[producer] = popped[c][i] % 10;
      }
    }
    int left = 0;
    int last[Threads];
    for (int& l : last) l = -1;
    while (auto v = queue->try_pop()) {
      take(v->value.load());
      const int producer = v->value.load() / 10 - 1;
      RL_ASSERT(v->value.load() % 10 > last[producer]);  // the leftovers are in order too
      last[producer] = v->value.load() % 10;
      ++left;
    }
    RL_ASSERT(left <= Capacity);
    for (int p = 0; p < Threads; ++p) {
      for (int s = 0; s < pushes[p]; ++s) RL_ASSERT(received[p][s] == (accepted[p][s] ? 1 : 0));  // exactly once
    }
    // Quiescent again: the capacity is still exact and FIFO still holds.
    for (int i = 0; i < Capacity; ++i) RL_ASSERT(queue->try_push(Item(900 + i)));
    RL_ASSERT(!queue->try_push(Item(999)));
    for (int i = 0; i < Capacity; ++i) RL_ASSERT(queue->try_pop()->value.load() == 900 + i);
    RL_ASSERT(!queue->try_pop().has_value());
    delete queue;
    RL_ASSERT(shade.in_ring == 0);
    shadow = nullptr;
  }
};

struct Totals {
  unsigned runs = 0;
  unsigned failures = 0;
};

template <int Capacity, int Threads>
void check(const char* name, std::initializer_list<const char*> scripts, Totals& totals) {
  using S = Scenario<Capacity, Threads>;
  int i = 0;
  for (const char* s : scripts) S::scripts[i++] = s;
  struct Search {
    rl::scheduler_type_e type;
    const char* label;
  };
  for (const Search search :
       {Search{rl::random_scheduler_type, "random"}, Search{rl::fair_context_bound_scheduler_type, "bound2"}}) {
    rl::test_params params;
    params.search_type = search.type;
    // The random search: 5x the latest execution at which it caught a planted bug, 20,000 at least (docs/perf-log.md,
    // "the models' random searches"); every plant here is caught by the 81st. The bounded search takes no count.
    params.iteration_count = search.type == rl::random_scheduler_type ? 20'000 : 0;
    params.context_bound = 2;
    params.output_history = false;
    const std::clock_t start = std::clock();
    const auto wall_start = std::chrono::steady_clock::now();
    const bool ok = rl::simulate<S>(params);
    const double cpu = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    std::printf("[bounded_queue_model] %-14s %-6s %s: %llu executions, %.1f s cpu, %.1f s wall\n", name, search.label,
                ok ? "passed" : "FAILED", static_cast<unsigned long long>(params.stop_iteration), cpu, wall);
    std::fflush(stdout);
    ++totals.runs;
    if (!ok) ++totals.failures;
  }
}

}  // namespace

constexpr int usage_error = 99;  // meson reports an error, whatever should_fail says

int main(int argc, char** argv) {
  argc = weft::model::choose_plant(argc, argv, {"bounded_queue"});
  const bool planted = weft::model::chosen_plant() != nullptr;
  const std::vector<std::string_view> only(argv + 1, argv + argc);
  const auto wanted = [&](std::string_view name) {
    if (only.empty()) return true;
    for (std::string_view o : only) {
      if (o == name) return true;
    }
    return false;
  };
  Totals totals;
  // Capacity 1: every push after the first needs the pop before it (the case Vyukov's ring gets wrong).
  if (wanted("c1_pair")) check<1, 2>("c1_pair", {"pp", "cc"}, totals);
  if (wanted("c1_two_prod")) check<1, 3>("c1_two_prod", {"pp", "p", "cc"}, totals);
  if (wanted("c1_mixed")) check<1, 3>("c1_mixed", {"pc", "pc", "c"}, totals);
  // Capacity 2: wrap-around onto a slot a slower popper may still be emptying.
  if (wanted("c2_laps")) check<2, 2>("c2_laps", {"pppp", "ccc"}, totals);
  if (wanted("c2_two_prod")) check<2, 3>("c2_two_prod", {"pp", "p", "cc"}, totals);
  if (wanted("c2_two_cons")) check<2, 3>("c2_two_cons", {"ppp", "c", "cc"}, totals);
  std::printf("[bounded_queue_model] %u of %u runs failed%s\n", totals.failures, totals.runs,
              planted ? " (planted bug: every run must fail)" : "");
  if (totals.runs == 0) return usage_error;  // a misspelt scenario must not pass silently
  return weft::model::plant_exit(totals.failures == 0, totals.failures == totals.runs);
}
