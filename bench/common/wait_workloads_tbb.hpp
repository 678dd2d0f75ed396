// oneTBB's side of the fan-out of wait_workloads.hpp, written the idiomatic oneTBB way: inside an arena (this
// thread takes one slot), task_group::run of each small task, then task_group::wait (which runs tasks too).
// oneTBB has no task-level blocking primitive, so the other waits workloads have no oneTBB side.
#pragma once

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/common/wait_workloads.hpp"

namespace weft::bench {

// The fan-out of weft_fan_out: `tasks` small tasks each filling its own slot, a wait for all of them, the sum.
// `Arena`: a tbb::task_arena, or anything with its execute (TbbSide).
template <class Arena>
std::uint64_t tbb_fan_out(Arena& arena, std::size_t tasks) {
  return arena.execute([tasks] {
    std::vector<std::uint64_t> slots(tasks);
    tbb::task_group group;
    for (std::size_t i = 0; i < tasks; ++i) group.run([&slots, i] { slots[i] = fan_out_item(i); });
    group.wait();
    std::uint64_t sum = 0;
    for (const std::uint64_t value : slots) sum += value;
    return sum;
  });
}

}  // namespace weft::bench
