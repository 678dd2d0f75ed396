// How a multi-token node's tokens flow through its Limiter: the producer pushes them into the inbox and starts
// an executor whenever a push finds a slot free; executors pop and run them until the inbox is empty; a producer
// that finds the inbox full under Overflow::Block parks (graph/inbox/producer_park.hpp) and the next pop takes its
// role over. One copy of the protocol, used by the run (graph/executor.cpp) and by the stress test that counts
// every token outside a graph (tests/limiter/token_flow_stress_test.cpp).
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <optional>

#include "graph/inbox/limiter.hpp"
#include "weft/node_options.hpp"

namespace weft::inbox {

// What the flow asks of the run it belongs to. None of these may throw: the flow runs in pool tasks that
// cannot report an exception, and a token half-accounted would hang the node.
template <class R>
concept TokenRun = requires(R& run, std::uint64_t n) {
  { run.cancelled() } noexcept -> std::convertible_to<bool>;  // no token starts once true
  { run.post_executor() } noexcept;  // start an executor task that calls run_executor(); it holds a slot already
  { run.execute(n) } noexcept;       // run token n (the flow counts it finished afterwards)
  { run.skipped(n) } noexcept;       // n tokens will never run: the run was cancelled or failed
  { run.dropped() } noexcept;        // Overflow::Drop dropped one token (the flow keeps the limiter's count)
  { run.inbox_full() } noexcept;     // Overflow::Fail found the inbox full: fail the run naming the node
  { run.node_done() } noexcept;      // every token of the activation finished, was dropped or skipped
};

// `count` tokens of the activation will not be looked at again: the last one finishes the node.
template <TokenRun R>
void finish_tokens(Limiter& limiter, R& run, std::uint64_t count) noexcept {
  // acq_rel: the last finisher sees what every other token's execution wrote before the node's successors run.
  if (limiter.remaining.fetch_sub(count, std::memory_order_acq_rel) == count) run.node_done();
}

// Pushes tokens [token, limiter.tokens) into the inbox, posting executors as slots allow, until done or the
// inbox is full under Block: then it parks its position, and an executor's next pop goes on from there.
template <TokenRun R>
void produce_tokens(Limiter& limiter, R& run, std::uint64_t token) noexcept {
  const std::uint64_t tokens = limiter.tokens;
  while (token < tokens) {
    if (run.cancelled()) {
      run.skipped(tokens - token);
      finish_tokens(limiter, run, tokens - token);
      return;
    }
    if (!limiter.inbox.try_push(token)) {
      if (limiter.overflow == Overflow::Drop) {
        // relaxed: a statistic, read after the run ended (the run's pending count orders it).
        limiter.dropped.fetch_add(1, std::memory_order_relaxed);
        run.dropped();
        ++token;
        finish_tokens(limiter, run, 1);
        continue;
      }
      if (limiter.overflow == Overflow::Fail) {
        run.inbox_full();
        run.skipped(tokens - token);
        finish_tokens(limiter, run, tokens - token);
        return;
      }
      // Overflow::Block: an executor is in flight (every push below claimed one if a slot was free, and one
      // that leaves looks at the inbox again), so a pop will come. Park here rather than wait: the next pop
      // takes the producer's role over. The producer is the only pusher, so room park() sees is the slot the
      // retried push takes.
      if (!limiter.park.park(token, [&] { return limiter.inbox.push_would_succeed_hint(); })) return;
      continue;
    }
    ++token;
    if (limiter.slots.claim_after_push()) run.post_executor();
  }
}

// Starts an activation: all its tokens are to come. No executor of the node may be running.
template <TokenRun R>
void start_activation(Limiter& limiter, R& run) noexcept {
  // relaxed: executors see it through the inbox (a push releases, a pop acquires). The park is left empty by
  // every activation (each park is taken over by a later pop, a lost executor drains like a live one); reset
  // anyway, as remaining is.
  limiter.remaining.store(limiter.tokens, std::memory_order_relaxed);
  limiter.park.reset();
  produce_tokens(limiter, run, 0);
}

// The body of an executor task: runs tokens while the inbox has some, then gives its slot back.
template <TokenRun R>
void run_executor(Limiter& limiter, R& run) noexcept {
  for (;;) {
    while (std::optional<std::uint64_t> token = limiter.inbox.try_pop()) {
      // Feed the inbox before running the token, so that other executors have work meanwhile.
      std::uint64_t from = 0;
      if (limiter.producer_may_park && limiter.park.take_after_pop(from)) produce_tokens(limiter, run, from);
      run.execute(*token);
      finish_tokens(limiter, run, 1);
    }
    // Give the slot back, unless a token arrived meanwhile (graph/inbox/execution_slots.hpp has the protocol).
    if (!limiter.slots.release_or_continue([&] { return limiter.inbox.empty_hint(); })) return;
  }
}

// An executor task that will never run (the pool refused or dropped it), once the run has been failed: counts
// the tokens it would have run as skipped, without finishing them (the run has lost a task; its node never
// finishes). A producer parked on the full inbox is taken over as after any pop (it sees the failure and skips
// what it had left). It leaves as an executor does: a token pushed while it drained, whose producer saw this
// slot still taken, would otherwise stay in the inbox into the graph's next run.
template <TokenRun R>
void drain_lost_executor(Limiter& limiter, R& run) noexcept {
  do {
    while (limiter.inbox.try_pop()) {
      run.skipped(1);
      std::uint64_t from = 0;
      if (limiter.producer_may_park && limiter.park.take_after_pop(from)) produce_tokens(limiter, run, from);
    }
  } while (limiter.slots.release_or_continue([&] { return limiter.inbox.empty_hint(); }));
}

}  // namespace weft::inbox
