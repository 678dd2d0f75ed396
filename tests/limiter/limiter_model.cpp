// Relacy model test of a multi-token node's execution slots (graph/inbox/execution_slots.hpp) together with its inbox
// (graph/inbox/bounded_queue.hpp): a producer that pushes a token and finds every slot taken relies on a leaving
// executor to see that token. The property: when everything has stopped, no token is left in the inbox unless
// some producer claimed a slot (and so would start an executor for it), and the slots never exceed the limit.
// Run three times: as is (must pass) and with either fence removed (--plant=execution_slots.*; must fail).
#include <cstdio>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "graph/inbox/bounded_queue.hpp"
#include "graph/inbox/execution_slots.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Inbox = weft::inbox::BoundedQueue<int, Model>;
using Slots = weft::inbox::BasicExecutionSlots<Model>;

// An executor already holding a slot: runs tokens until the inbox is empty and it may leave. The model bounds
// its rounds (a token whose publication is still in flight keeps it looping), so it may stop still holding its
// slot: that counts as an executor that will run what is left.
struct Drained {
  int ran = 0;
  bool holds_slot = true;
};
Drained drain(Inbox& inbox, Slots& slots) {
  Drained result;
  for (int round = 0; round < 3; ++round) {
    while (inbox.try_pop()) ++result.ran;
    if (!slots.release_or_continue([&] { return inbox.empty_hint(); })) {
      result.holds_slot = false;
      break;
    }
    RL_ASSERT(slots.running() <= slots.limit());
  }
  return result;
}

// One producer pushes two tokens while the only executor (limit 1) is leaving.
struct OneProducerLimitOne : rl::test_suite<OneProducerLimitOne, 2> {
  Inbox inbox{2};
  Slots slots{1};
  Drained executor;
  int claims = 0;

  void before() { RL_ASSERT(slots.claim_after_push()); }  // the executor of an earlier token
  void thread(unsigned index) {
    if (index == 0) {
      for (int token = 0; token < 2; ++token) {
        RL_ASSERT(inbox.try_push(token));
        if (slots.claim_after_push()) ++claims;
      }
    } else {
      executor = drain(inbox, slots);
    }
  }
  void after() {
    // Every slot taken is the old executor's or a producer's claim; a token left behind has an executor.
    RL_ASSERT(slots.running() == static_cast<unsigned>(claims + (executor.holds_slot ? 1 : 0)));
    RL_ASSERT(executor.ran == 2 || slots.running() > 0);
  }
};

// Two producers, one token each, limit 2, one executor running: no token stranded, never three executors.
struct TwoProducersLimitTwo : rl::test_suite<TwoProducersLimitTwo, 3> {
  Inbox inbox{2};
  Slots slots{2};
  Drained executor;
  int claims[2] = {0, 0};

  void before() { RL_ASSERT(slots.claim_after_push()); }
  void thread(unsigned index) {
    if (index < 2) {
      RL_ASSERT(inbox.try_push(static_cast<int>(index)));
      if (slots.claim_after_push()) claims[index] = 1;
      RL_ASSERT(slots.running() <= 2);
    } else {
      executor = drain(inbox, slots);
    }
  }
  void after() {
    const int claimed = claims[0] + claims[1];
    RL_ASSERT(slots.running() == static_cast<unsigned>(claimed + (executor.holds_slot ? 1 : 0)));
    RL_ASSERT(executor.ran == 2 || slots.running() > 0);
  }
};

}  // namespace

// Usage: limiter_model [--plant=execution_slots.<bug>] [--scenario=NAME...]. The plant runs name "one producer,
// limit 1", which catches either missing fence (the two-producer bounded search alone takes millions of executions).
int main(int argc, char** argv) {
  weft::model::choose_plant(argc, argv, {"execution_slots"});
  bool ok = weft::model::check_scenario<OneProducerLimitOne>("one producer, limit 1", 20'000);
  ok = weft::model::check_scenario<TwoProducersLimitTwo>("two producers, limit 2", 20'000) && ok;
  return weft::model::plant_exit(ok);
}
