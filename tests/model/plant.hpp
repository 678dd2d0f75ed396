// The planted bugs of the Relacy models: their one list, their names, and the command line that chooses one.
//
// Each model source compiles into one executable. Run as is, it must pass; run with `--plant=<structure>.<bug>`,
// the code under test takes the broken line at that plant's WEFT_PLANTED site (scheduler/atomics/plant.hpp) and
// the model must report the bug (tests/meson.build registers these runs should_fail). Two guards keep a plant
// test honest, since should_fail passes on any non-zero exit:
//  - a name not in the list below (a typo) is refused before anything runs: exit 99, which meson reports as an
//    error whatever should_fail says;
//  - a plant whose site was never executed during the run (a dead plant, or one given to the wrong model) is
//    not "caught": the run ends with exit 99 too.
// A plant in an installed header (include/weft/) cannot read WEFT_PLANTED: its structure takes a plant policy as
// a template argument instead, and the model instantiates it with ModelPlants below.
//
// Include after tests/model/relacy_memory_model.hpp and before the structure under test. Names: the structure,
// a dot, the bug, lower case with underscores.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string_view>

namespace weft::model {

struct PlantInfo {
  const char* name;
  const char* bug;
};

// Every planted bug, by structure; the header named first holds its WEFT_PLANTED site.
inline constexpr PlantInfo plants[] = {
    // scheduler/lockfree/chase_lev_deque.hpp (tests/deque/deque_model.cpp)
    {"deque.no_take_fence", "pop reads top without the Dekker fence (or seq_cst load)"},
    {"deque.relaxed_publish", "push publishes bottom relaxed: the slot write is not published"},
    {"deque.early_free", "a retired array is freed while thieves may still read it"},
    {"deque.unsigned_index", "pop compares positions as unsigned: bottom - 1 on an empty deque wraps"},
    {"deque.no_reload", "push keeps writing into the array it just retired by growing"},
    {"deque.batch_ignored", "pop takes the single-steal test, which a batch steal overruns"},
    {"deque.claim_past_bottom", "the owner's claim CASes top past an empty deque"},
    // graph/inbox/bounded_queue.hpp (tests/bounded_queue/bounded_queue_model.cpp)
    {"bounded_queue.relaxed_publish", "a producer publishes its cell's turn relaxed"},
    {"bounded_queue.relaxed_release", "a consumer hands its cell back relaxed"},
    {"bounded_queue.relaxed_claim_load", "a consumer reads the cell's turn relaxed"},
    {"bounded_queue.vyukov_turn", "Vyukov's turn (= position): at capacity 1, full at p is empty at p + 1"},
    // scheduler/lockfree/hazard_pointers.hpp (tests/queue/queue_model.cpp)
    {"hazard.no_scan_fence", "the reclaimer scans the hazards without its fence"},
    {"hazard.no_protect_fence", "protect publishes the hazard without its fence"},
    {"hazard.no_revalidate", "protect trusts the pointer without reading it again"},
    {"hazard.early_free", "the scan frees every retired node, hazards or not"},
    // scheduler/lockfree/node_pool.hpp (tests/queue/node_pool_model.cpp)
    {"node_pool.unlocked_take", "a take pops the batch stack without the mutex (ABA)"},
    {"node_pool.relaxed_push", "a push publishes its batch relaxed"},
    // scheduler/engine/event_count.hpp (tests/event_count/event_count_model.cpp)
    {"event_count.prepare_without_fence", "prepare_wait announces without its fence"},
    {"event_count.notify_without_fence", "notify looks for waiters without its fence"},
    {"event_count.look_before_barrier", "a notifier looks for waiters before its light barrier"},
    // scheduler/engine/parking.hpp (tests/parking/parking_model.cpp)
    {"parking.look_before_barrier", "a producer looks for sleepers before its light barrier"},
    {"parking.no_second_look", "a searcher that stops searching does not look once more"},
    {"parking.park_ignores_promise", "a parking worker ignores the wake in flight"},
    {"parking.put_back_unannounced", "work taken out and put back is not announced again"},
    // scheduler/fiber/fiber_lot.hpp (tests/fiber/fiber_lot_model.cpp)
    {"fiber_lot.park_without_fence", "a parking fiber counts itself without its fence"},
    {"fiber_lot.park_ignores_refusal", "a fiber parks although its wait was refused (the owner dropped)"},
    {"fiber_lot.wake_without_fence", "a waker looks at the park count without its fence"},
    {"fiber_lot.owned_without_fence", "an owner's drop looks at the park count without its fence"},
    // graph/inbox/execution_slots.hpp (tests/limiter/limiter_model.cpp)
    {"execution_slots.push_without_fence", "a producer claims a slot after its push without the fence"},
    {"execution_slots.leave_without_fence", "a leaving executor looks at the inbox again without the fence"},
    // graph/inbox/producer_park.hpp (tests/limiter/producer_park_model.cpp)
    {"producer_park.park_without_fence", "a parked producer looks for room without its fence"},
    {"producer_park.pop_without_fence", "an executor looks for a parked producer after its pop without the fence"},
    {"producer_park.take_back_any", "a producer takes back any park, not only its own"},
    // scheduler/sync/word_protocol.hpp (tests/wait/primitive_word_model.cpp, tests/wait/event_auto_model.cpp)
    {"word.look_after_change", "a waiter reads the word again after its RMW"},
    {"word.park_unannounced", "a waiter parks without setting the waiter bit"},
    {"word.relaxed_release", "the notifiers publish nothing"},
    {"word.signal_keeps_unreleased", "a released wait stays counted"},
    {"word.timeout_loses_release", "a timed-out wait drops the release due to it"},
    {"word.drop_loses_release", "a dropped wait eats its release"},
    // include/weft/detail/future_state.hpp, by the word's template arguments (tests/model/future_then_model.cpp)
    {"future_then.relaxed_settle", "the finisher settles relaxed: neither publishes nor acquires"},
    {"future_then.relaxed_attach_failure", "an attacher that finds the word settled does not acquire"},
    // include/weft/detail/child_count.hpp, through its plant policy (tests/graph/child_count_model.cpp)
    {"child_count.relaxed_finish", "the child publishes nothing"},
    {"child_count.fold_forgotten", "the fold sets the bit and keeps the plain count"},
    {"child_count.plain_while_announced", "a child counts plainly after the fold"},
    // include/weft/detail/successor_list.hpp, through its plant policy (tests/pool/successor_list_model.cpp)
    {"successor_list.relaxed_close", "the finisher closes its list relaxed: neither publishes nor acquires"},
    {"successor_list.relaxed_link", "a submitter pushes its link relaxed: the finisher reads it unpublished"},
    {"successor_list.relaxed_arrive", "a predecessor counts itself done relaxed: its outcome is not published"},
    // scheduler/engine/timer_phase.hpp (tests/pool/timer_phase_model.cpp)
    {"timer.cancel_check_then_set", "cancel() looks at the phase, then stores cancelled: a firing in between wins too"},
    {"timer.relaxed_rearm", "a periodic run rearms its timer relaxed: the next owner reads the work unpublished"},
};

namespace plant_detail {
inline const char* chosen = nullptr;  // this run's plant, or none
inline bool reached = false;          // whether its site ran
inline bool caught = false;           // whether a search of this run has reported it
// The scenarios named by `--scenario=NAME` (none: every scenario), and whether each was met.
inline constexpr int max_scenarios = 8;
inline const char* scenarios[max_scenarios] = {};
inline bool scenario_met[max_scenarios] = {};
inline int scenario_count = 0;
}  // namespace plant_detail

// The plant chosen for this run, or nullptr.
[[nodiscard]] inline const char* chosen_plant() noexcept { return plant_detail::chosen; }

// Whether a search of this run has reported the chosen plant's bug: the run has shown what it exists to show, and
// the searches after it are skipped (a plant run that went on would only spend time).
[[nodiscard]] inline bool plant_caught() noexcept { return plant_detail::caught; }
// Called by a search that failed: with a plant chosen, that is the plant caught.
inline void note_failed_search() noexcept { plant_detail::caught = plant_detail::chosen != nullptr; }

// Whether the scenario NAME is to run: every scenario when no `--scenario=` was given, else only those named.
// Each model asks once per scenario it would run, so that plant_exit can tell a misspelt name.
[[nodiscard]] inline bool scenario_chosen(std::string_view name) noexcept {
  if (plant_detail::scenario_count == 0) return true;
  bool chosen = false;
  for (int i = 0; i < plant_detail::scenario_count; ++i) {
    if (name == plant_detail::scenarios[i]) chosen = plant_detail::scenario_met[i] = true;
  }
  return chosen;
}

// Takes the `--plant=NAME` and `--scenario=NAME` arguments out of argv (the model's own arguments keep their
// places) and returns the new argc. The plant's NAME must be in `plants` and begin with one of `structures`
// followed by a dot; anything else exits 99. `--scenario=` (repeatable, for models that run check_scenario) runs
// only the scenarios so named: a plant's registration names the scenario that catches it (tests/meson.build).
inline int choose_plant(int argc, char** argv, std::initializer_list<std::string_view> structures) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--scenario=")) {
      if (plant_detail::scenario_count == plant_detail::max_scenarios) {
        std::fprintf(stderr, "more than %d --scenario= arguments\n", plant_detail::max_scenarios);
        std::exit(99);
      }
      plant_detail::scenarios[plant_detail::scenario_count++] = argv[i] + 11;
      continue;
    }
    if (!arg.starts_with("--plant=")) {
      argv[out++] = argv[i];
      continue;
    }
    const std::string_view name = arg.substr(8);
    bool known = false;
    for (const auto& p : plants) known = known || name == p.name;
    bool here = false;
    for (const auto s : structures) here = here || (name.starts_with(s) && name.substr(s.size()).starts_with("."));
    if (!known || !here || plant_detail::chosen != nullptr) {
      std::fprintf(stderr, "unknown plant for this model (or a second one): %s; this model's plants:\n", argv[i]);
      for (const auto& p : plants) {
        for (const auto s : structures) {
          const std::string_view n = p.name;
          if (n.starts_with(s) && n.substr(s.size()).starts_with(".")) std::fprintf(stderr, "  %s\n", p.name);
        }
      }
      std::exit(99);
    }
    plant_detail::chosen = argv[i] + 8;
  }
  argv[out] = nullptr;
  if (plant_detail::chosen != nullptr) std::printf("plant: %s\n", plant_detail::chosen);
  return out;
}

// main's exit code. Without a plant: 0 when the model passed, 1 otherwise. With one: 1 when the model caught it
// (`caught`), 0 when it missed it (the should_fail test then fails), 99 when its site never ran.
// A `--scenario=` name that met no scenario (misspelt, or renamed in the model) exits 99 too, plant or none.
[[nodiscard]] inline int plant_exit(bool passed, bool caught) noexcept {
  for (int i = 0; i < plant_detail::scenario_count; ++i) {
    if (!plant_detail::scenario_met[i]) {
      std::fprintf(stderr, "--scenario=%s: this model has no such scenario\n", plant_detail::scenarios[i]);
      return 99;
    }
  }
  if (plant_detail::chosen == nullptr) return passed ? 0 : 1;
  if (!plant_detail::reached) {
    std::fprintf(stderr, "plant %s: its code never ran, so it proves nothing\n", plant_detail::chosen);
    return 99;
  }
  std::printf("plant %s: %s\n", plant_detail::chosen, caught ? "caught" : "MISSED");
  return caught ? 1 : 0;
}
[[nodiscard]] inline int plant_exit(bool passed) noexcept { return plant_exit(passed, !passed); }

// The plant policy for structures in installed headers (see include/weft/detail/child_count.hpp).
struct ModelPlants {
  static bool planted(const char* name) noexcept;
};

}  // namespace weft::model

namespace weft::atomics {
inline bool planted(const char* name) noexcept {
  const char* chosen = model::plant_detail::chosen;
  if (chosen == nullptr || std::strcmp(chosen, name) != 0) return false;
  model::plant_detail::reached = true;
  return true;
}
}  // namespace weft::atomics

inline bool weft::model::ModelPlants::planted(const char* name) noexcept { return atomics::planted(name); }
