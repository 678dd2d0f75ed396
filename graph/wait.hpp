// How graph code waits: for a run to end, for room in an inbox, for a subflow's children. The scheduler's
// (scheduler/signal.hpp) under the names graph code uses.
#pragma once

#include "scheduler/signal.hpp"

namespace weft::graph {

using Clock = sched::Clock;
using sched::kOutsideSpin;
using sched::Signal;
using sched::wait_until;

}  // namespace weft::graph
