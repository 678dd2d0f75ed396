// Relacy model test of a multi-token node's producer parking (graph/inbox/producer_park.hpp) together with its inbox
// (graph/inbox/bounded_queue.hpp): a producer that finds the inbox full parks its position and leaves, and the next
// pop takes its role over. The properties: every token is pushed exactly once, and when everything has
// stopped, tokens not pushed yet are held by a parked producer that a queued token will wake; room that park()
// reports is the slot the retried push takes. Run four times: as is (must pass); with either fence removed
// (a producer parked behind an empty inbox, its tokens stranded) and with the take-back done on any park
// rather than on its own (a stale producer takes a newer park back and pushes a token twice): each must fail.
#include <cstdint>
#include <cstdio>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "graph/inbox/bounded_queue.hpp"
#include "graph/inbox/producer_park.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Inbox = weft::inbox::BoundedQueue<int, Model>;
using Park = weft::inbox::BasicProducerPark<Model>;

constexpr int kTokens = 3;

struct State {
  Inbox inbox{1};
  Park park;
  // Per token, as Relacy variables: only the holder of the producer's role touches them, so the hand-off of
  // that role must order them (a race here is a hand-off without happens-before).
  Model::var<int> pushes[kTokens];
};

// The producer's loop as graph/inbox/token_flow.hpp runs it under Overflow::Block.
void produce(State& s, std::uint64_t token) {
  bool room_seen = false;
  while (token < kTokens) {
    if (s.inbox.try_push(static_cast<int>(token))) {
      s.pushes[token].store(s.pushes[token].load() + 1);
      ++token;
      room_seen = false;
      continue;
    }
    RL_ASSERT(!room_seen);  // the room park() saw is the slot this push takes: no spinning
    if (!s.park.park(token, [&] { return s.inbox.push_would_succeed_hint(); })) return;
    room_seen = true;
  }
}

// An executor that pops until it finds the inbox empty, taking a parked producer over after each pop.
void execute(State& s) {
  for (int round = 0; round < 2 * kTokens; ++round) {
    if (!s.inbox.try_pop()) return;
    std::uint64_t from = 0;
    if (s.park.take_after_pop(from)) produce(s, from);
  }
}

// Token 0 is queued and its executor starts as the producer goes on with tokens 1 and 2 (capacity 1: the
// producer parks at once, and the executor that takes it over may park again, at a later position).
struct OneProducerOneExecutor : rl::test_suite<OneProducerOneExecutor, 2> {
  State s;

  void before() {
    for (auto& n : s.pushes) n.store(0);
    RL_ASSERT(s.inbox.try_push(0));
    s.pushes[0].store(1);
  }
  void thread(unsigned index) {
    if (index == 0) {
      produce(s, 1);
    } else {
      execute(s);
    }
  }
  void after() {
    int pushed = 0;
    for (const auto& n : s.pushes) {
      RL_ASSERT(n.load() <= 1);  // never twice: a stale producer must not take a newer park back
      pushed += n.load();
    }
    if (pushed == kTokens) return;
    // Tokens left: a parked producer, and a queued token whose pop will take it over.
    RL_ASSERT(s.park.parked());
    RL_ASSERT(!s.inbox.empty_hint());
  }
};

}  // namespace

int main(int argc, char** argv) {
  weft::model::choose_plant(argc, argv, {"producer_park"});
  return weft::model::plant_exit(
      weft::model::check_scenario<OneProducerOneExecutor>("producer park, capacity 1", 20'000));
}
