// Relacy model test of ChaseLevDeque: every scenario runs under the random scheduler and the context-bound
// search (bound 2), for the fence variant (the paper's) and the fence-free variant used under TSan.
// Each scenario checks exactly-once delivery: every pushed item is obtained by exactly one pop or steal (or
// by the final drain), no item is invented, and after the drain every retired array has been freed.
//
// Usage: deque_model [--plant=deque.<bug>] <fence|fence_free|both> [scenario...]   (no scenario = all)
// Planted bugs (tests/model/plant.hpp): the WEFT_PLANTED("deque.*") lines of the production header, chosen on the
// command line. Without a plant the run exits 0 only if every requested run passed. With one it exits 1 only if
// every requested run (each scenario, random AND bounded search) caught the bug, 0 otherwise; it is registered
// should_fail, so a bug that slips through fails the suite. A usage error, a misspelt scenario or plant, or a
// plant whose line never ran exits 99, which meson reports as an error whatever should_fail says.
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "scheduler/lockfree/chase_lev_deque.hpp"

namespace {

using Item = std::uintptr_t;  // items are ids 1..n; 0 (the value of an empty slot) is never pushed

// The TSan variant: same Relacy checking, but the deque takes its fences_invisible branches.
struct FenceFreeRelacyModel : weft::model::RelacyMemoryModel {
  static constexpr bool fences_invisible = true;
};

template <class M, std::size_t Batch>
using Deque = weft::lockfree::ChaseLevDeque<Item, M, Batch>;

constexpr unsigned max_threads = 3;
constexpr unsigned max_items = 8;

// Per-thread log of obtained items (each thread writes only its own row) and the exactly-once check.
template <class Derived, class M, unsigned Threads, std::size_t Batch = 1>
struct DequeScenario : rl::test_suite<Derived, Threads> {
  Deque<M, Batch>* deque = nullptr;
  Item got[max_threads][max_items] = {};
  unsigned got_count[max_threads] = {};
  Item pushed = 0;  // written by the owner (thread 0) only; read in after()

  void before() {
    deque = new Deque<M, Batch>(Derived::initial_capacity);
    pushed = 0;
    for (unsigned& n : got_count) n = 0;
  }
  void push() { deque->push(++pushed); }
  void record(unsigned thread, Item item) {
    RL_ASSERT(item != 0);  // invented: 0 is the value of a slot that never held an item
    RL_ASSERT(got_count[thread] < max_items);
    got[thread][got_count[thread]++] = item;
  }
  void pop(unsigned thread) {
    if (auto item = deque->pop()) record(thread, *item);
  }
  void steal(unsigned thread) {
    if (auto result = deque->steal()) record(thread, result.item);
  }
  void steal_batch(unsigned thread) {
    Item out[Batch] = {};
    const std::size_t taken = deque->steal_batch(out).count;
    RL_ASSERT(taken <= Batch);
    for (std::size_t i = 0; i < taken; ++i) record(thread, out[i]);
  }
  void after() {
    unsigned seen[max_items + 1] = {};
    for (unsigned th = 0; th != Threads; ++th) {
      for (unsigned i = 0; i != got_count[th]; ++i) {
        const Item item = got[th][i];
        RL_ASSERT(item >= 1 && item <= pushed);  // never invented
        ++seen[item];
      }
    }
    while (auto item = deque->pop()) {  // the drain is an owner operation: it also reclaims
      RL_ASSERT(*item >= 1 && *item <= pushed);
      ++seen[*item];
    }
    for (Item item = 1; item <= pushed; ++item) RL_ASSERT(seen[item] == 1);  // exactly once
    RL_ASSERT(deque->empty());
    RL_ASSERT(deque->retired_arrays() == 0);  // quiescent owner operation freed every retired array
    delete deque;
  }
};

// Owner pop and thief steal race for the only item.
template <class M>
struct LastElement : DequeScenario<LastElement<M>, M, 2> {
  static constexpr std::size_t initial_capacity = 2;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->pop(th);
    } else {
      this->steal(th);
    }
  }
};

// The owner grows the array twice (1 -> 2 -> 4) while a thief reads it.
template <class M>
struct GrowthWithThief : DequeScenario<GrowthWithThief<M>, M, 2> {
  static constexpr std::size_t initial_capacity = 1;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();
      this->push();
    } else {
      this->steal(th);
      this->steal(th);
    }
  }
};

// pop() on a deque that was never pushed to (bottom 0), then the last-item race.
template <class M>
struct EmptyTake : DequeScenario<EmptyTake<M>, M, 2> {
  static constexpr std::size_t initial_capacity = 2;
  void thread(unsigned th) {
    if (th == 0) {
      this->pop(th);
      this->push();
      this->pop(th);
    } else {
      this->steal(th);
    }
  }
};

// Two thieves and the owner compete for two items.
template <class M>
struct TwoThieves : DequeScenario<TwoThieves<M>, M, 3> {
  static constexpr std::size_t initial_capacity = 2;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();
      this->pop(th);
    } else {
      this->steal(th);
    }
  }
};

// Pops and steals interleaved over several items, wrapping around a ring of 2.
template <class M>
struct Interleaved : DequeScenario<Interleaved<M>, M, 2> {
  static constexpr std::size_t initial_capacity = 2;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();
      this->pop(th);
      this->push();
      this->pop(th);
    } else {
      this->steal(th);
      this->steal(th);
    }
  }
};

// Growth retires the first array while a thief may be reading it; the owner's next operations try to free
// it. Two thieves, so one may announce while the other withdraws.
template <class M>
struct Reclaim : DequeScenario<Reclaim<M>, M, 3> {
  static constexpr std::size_t initial_capacity = 1;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();   // grows 1 -> 2, retires the first array
      this->pop(th);  // tries to free it
      this->push();
      this->push();  // grows 2 -> 4 unless a thief took an item: a second retirement
    } else {
      this->steal(th);
    }
  }
};

// Batch steals (MaxBatch 2): two thieves each take up to 2 of the oldest items (half of what they see,
// rounded up) while the owner pops twice. A thief that saw 3 items takes [0, 2); the owner may take item 1
// without a CAS only if no batch from the top it read reaches it, which it does here: the second pop claims
// with a CAS (through claim_from, since the owner's last look at top already shows fewer than 2 items).
template <class M>
struct BatchPop : DequeScenario<BatchPop<M>, M, 3, 2> {
  static constexpr std::size_t initial_capacity = 4;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();
      this->push();
      this->pop(th);
      this->pop(th);
    } else {
      this->steal_batch(th);
    }
  }
};

// A batch from a top the owner has not looked at: one thief takes [0, 2), then sees [2, 5) and reads [2, 4)
// for its second batch. The owner's second pop (b = 3) still goes the fenced way, as its last look at top
// was 0, and there reads top 2: b - t is 1, so a batch from 2 may cover b and it must CAS (the planted
// single-steal test takes item 3 without one, and the thief's batch takes it too).
template <class M>
struct BatchPopStale : DequeScenario<BatchPopStale<M>, M, 2, 2> {
  static constexpr std::size_t initial_capacity = 8;
  void thread(unsigned th) {
    if (th == 0) {
      for (int i = 0; i < 5; ++i) this->push();
      this->pop(th);
      this->pop(th);
    } else {
      this->steal_batch(th);
      this->steal_batch(th);
    }
  }
};

// The owner's put-back across a wrapping ring: a pop of 2 items claims both and puts the older one back one
// position on, where a slow thief may still read the old slot (it must then lose its CAS); later pushes wrap
// the ring of 4 and batches see the moved item.
template <class M>
struct BatchWrap : DequeScenario<BatchWrap<M>, M, 2, 2> {
  static constexpr std::size_t initial_capacity = 4;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();
      this->pop(th);
      this->push();
      this->push();
      this->push();
      this->pop(th);
    } else {
      this->steal_batch(th);
      this->steal_batch(th);
    }
  }
};

// Batch thieves while the owner grows the array.
template <class M>
struct BatchGrowth : DequeScenario<BatchGrowth<M>, M, 2, 2> {
  static constexpr std::size_t initial_capacity = 1;
  void thread(unsigned th) {
    if (th == 0) {
      this->push();
      this->push();
      this->push();
      this->pop(th);
    } else {
      this->steal_batch(th);
      this->steal_batch(th);
    }
  }
};

struct Totals {
  unsigned runs = 0;
  unsigned failures = 0;
};

// Executions of each scenario's random search (check_all): 5x the latest execution at which it caught a planted bug
// (tests/deque/meson.build), 20,000 at least (docs/perf-log.md, "the models' random searches"; Relacy seeds the
// random scheduler with the execution's number, so a count catches the same each run). batch_pop_stale catches
// batch_ignored by 70,260 (without fences), two_thieves no_take_fence by 6,231, the others theirs by 3,920. The
// bounded search takes no count: it runs every schedule within its bound (reclaim with fences: 8.3 million
// executions, most of this model's time).
constexpr rl::iteration_t kRandomFloor = 20'000;

template <template <class> class Scenario, class M>
void check(const char* name, const char* variant, Totals& totals, rl::iteration_t random_executions = kRandomFloor) {
  struct Search {
    rl::scheduler_type_e type;
    const char* label;
  };
  for (const Search search :
       {Search{rl::random_scheduler_type, "random"}, Search{rl::fair_context_bound_scheduler_type, "bound2"}}) {
    rl::test_params params;
    params.search_type = search.type;
    params.iteration_count = search.type == rl::random_scheduler_type ? random_executions : 0;
    params.context_bound = 2;
    const std::clock_t start = std::clock();
    const bool ok = rl::simulate<Scenario<M>>(params);
    const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
    std::printf("[deque_model] %-16s %-10s %-6s %s: %llu executions, %.1f s\n", name, variant, search.label,
                ok ? "passed" : "FAILED", static_cast<unsigned long long>(params.stop_iteration), seconds);
    std::fflush(stdout);
    ++totals.runs;
    if (!ok) ++totals.failures;
  }
}

template <class M>
void check_all(const char* variant, const std::vector<std::string_view>& only, Totals& totals) {
  const auto wanted = [&](std::string_view name) {
    if (only.empty()) return true;
    for (std::string_view o : only) {
      if (o == name) return true;
    }
    return false;
  };
  if (wanted("last_element")) check<LastElement, M>("last_element", variant, totals);
  if (wanted("growth")) check<GrowthWithThief, M>("growth", variant, totals);
  if (wanted("empty_take")) check<EmptyTake, M>("empty_take", variant, totals);
  if (wanted("two_thieves")) check<TwoThieves, M>("two_thieves", variant, totals, 35'000);
  if (wanted("interleaved")) check<Interleaved, M>("interleaved", variant, totals);
  if (wanted("reclaim")) check<Reclaim, M>("reclaim", variant, totals);
  if (wanted("batch_pop")) check<BatchPop, M>("batch_pop", variant, totals);
  if (wanted("batch_pop_stale")) check<BatchPopStale, M>("batch_pop_stale", variant, totals, 360'000);
  if (wanted("batch_wrap")) check<BatchWrap, M>("batch_wrap", variant, totals);
  if (wanted("batch_growth")) check<BatchGrowth, M>("batch_growth", variant, totals);
}

}  // namespace

constexpr int usage_error = 99;  // meson reports an error, whatever should_fail says

int main(int argc, char** argv) {
  argc = weft::model::choose_plant(argc, argv, {"deque"});
  const bool planted = weft::model::chosen_plant() != nullptr;
  const std::string_view variant = argc > 1 ? argv[1] : "both";
  if (variant != "fence" && variant != "fence_free" && variant != "both") {
    std::fprintf(stderr, "usage: deque_model <fence|fence_free|both> [scenario...]\n");
    return usage_error;
  }
  std::vector<std::string_view> only(argv + (argc > 1 ? 2 : 1), argv + argc);
  Totals totals;
  if (variant != "fence_free") check_all<weft::model::RelacyMemoryModel>("fence", only, totals);
  if (variant != "fence") check_all<FenceFreeRelacyModel>("fence_free", only, totals);
  std::printf("[deque_model] %u of %u runs failed%s\n", totals.failures, totals.runs,
              planted ? " (planted bug: every run must fail)" : "");
  if (totals.runs == 0) return usage_error;  // a misspelt scenario must not pass silently
  return weft::model::plant_exit(totals.failures == 0, totals.failures == totals.runs);
}
