// Runs one Relacy scenario the way every model test here does: a random search, then an exhaustive search
// bounded to 2 preemptions (fewer for a scenario of many threads, whose search at 2 would take minutes; with
// `context_bound` 0, the random search only). Prints one line per search (name, search, result, executions, CPU time)
// and returns whether both passed. Include after tests/model/plant.hpp and tests/model/relacy_memory_model.hpp.
//
// A plant run (tests/model/plant.hpp) stops at the first search that reports its bug: every search after it, in this
// scenario and the next ones, is skipped and counts as passed (the run has failed already). A scenario left out by
// `--scenario=` is skipped the same way. `random_iterations` is the scenario's random search; each model's counts
// follow the rule in docs/perf-log.md ("the models' random searches"): 5x the latest execution at which that search
// caught a plant, and 20,000 at least (200,000 when it is the scenario's only search). tests/model/plant_table.py
// prints where each plant is caught.
#pragma once

#include <cstdio>
#include <ctime>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_memory_model.hpp"

namespace weft::model {

template <class Scenario>
bool check_scenario(const char* name, rl::iteration_t random_iterations, unsigned context_bound = 2) {
  if (!scenario_chosen(name)) return true;
  bool all_passed = true;
  for (const auto type : {rl::random_scheduler_type, rl::fair_context_bound_scheduler_type}) {
    if (type == rl::fair_context_bound_scheduler_type && context_bound == 0) break;
    if (plant_caught()) {
      std::printf("%-40s %-16s skipped (the plant is caught)\n", name,
                  type == rl::random_scheduler_type ? "random" : "bounded");
      continue;
    }
    rl::test_params params;
    params.search_type = type;
    params.iteration_count = type == rl::random_scheduler_type ? random_iterations : 0;
    params.context_bound = context_bound;
    params.output_history = false;
    const std::clock_t start = std::clock();
    const bool passed = rl::simulate<Scenario>(params);
    const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
    std::printf("%-40s %-16s %-6s %llu executions, %.1f s\n", name,
                type == rl::random_scheduler_type ? "random"
                : context_bound == 2              ? "context bound 2"
                                                  : "context bound 1",
                passed ? "ok" : "FAILED", static_cast<unsigned long long>(params.stop_iteration), seconds);
    std::fflush(stdout);
    all_passed = all_passed && passed;
    if (!passed) note_failed_search();
  }
  return all_passed;
}

}  // namespace weft::model
