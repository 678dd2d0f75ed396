// The word a weft wait primitive's waiters sleep on (weft::Event, WaitGroup, ConditionVariable): an epoch that
// notifiers bump, and a count of waiters so that a notify with nobody waiting costs a fence and a load.
// Internal: the algorithms are in the library (scheduler/signal.hpp).
#pragma once

#include <atomic>
#include <cstdint>

namespace weft::detail {

struct WaitSignal {
  std::atomic<std::uint32_t> epoch{0};
  std::atomic<std::uint32_t> sleepers{0};
};

}  // namespace weft::detail
