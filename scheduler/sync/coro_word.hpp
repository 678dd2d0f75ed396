// Coroutines suspended on a weft::Event or WaitGroup (scheduler/sync/coro.cpp): the notifiers' half.
#pragma once

#include <atomic>
#include <cstdint>

namespace weft::sync {

// Wakes the coroutines parked on a primitive's word (co_await on an Event or WaitGroup). Called by the word's
// notifier after its RMW, when it read kWordWaiters; uses the word's address only, as the thread wake-up does.
// Costs a seq_cst fence and a load when no coroutine is parked anywhere.
void coro_wake_word(std::atomic<std::uint32_t>& word) noexcept;

}  // namespace weft::sync
