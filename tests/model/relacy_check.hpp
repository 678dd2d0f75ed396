// Runs one Relacy scenario the way every model test here does: a random search, then an exhaustive search
// bounded to 2 preemptions (fewer for a scenario of many threads, whose search at 2 would take minutes; with
// `context_bound` 0, the random search only). Prints one line per search (name, search, result, executions, CPU time)
// and returns whether both passed. Include after tests/model/relacy_memory_model.hpp.
#pragma once

#include <cstdio>
#include <ctime>

#include "tests/model/relacy_memory_model.hpp"

namespace weft::model {

template <class Scenario>
bool check_scenario(const char* name, rl::iteration_t random_iterations = 1'000'000, unsigned context_bound = 2) {
  bool all_passed = true;
  for (const auto type : {rl::random_scheduler_type, rl::fair_context_bound_scheduler_type}) {
    if (type == rl::fair_context_bound_scheduler_type && context_bound == 0) break;
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
  }
  return all_passed;
}

}  // namespace weft::model
