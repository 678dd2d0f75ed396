// Relacy model test of Future::then's hand-over (weft::detail::BasicContinuationWord, the very text the
// library uses): a finisher publishes a result and settles the word while an attacher constructs a
// continuation and attaches it. Properties: exactly one of the two schedules the continuation; whoever does
// sees both the result and the continuation's construction (a data race on either is reported by Relacy).
// Run as is (must pass) and with one of the two orders planted as relaxed (--plant=future_then.*, listed in
// tests/model/plant.hpp; must fail). The orders are the word's template arguments, so the plant picks the
// instantiation instead of a WEFT_PLANTED line.
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "weft/detail/future_state.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;

template <std::memory_order kSettleOrder, std::memory_order kAttachFailureOrder>
using Word = weft::detail::BasicContinuationWord<Model::template atomic, kSettleOrder, kAttachFailureOrder>;

// `Word` is the hand-over under test. Thread 0 finishes the task; thread 1 attaches a continuation.
template <class Word>
struct HandOver : rl::test_suite<HandOver<Word>, 2> {
  Word word;
  Model::var<int> result;        // the antecedent's value, written by the finisher before it settles
  Model::var<int> continuation;  // the continuation's state, constructed by the attacher before it attaches
  int scheduled = 0;             // written by whichever side schedules (exactly one, so never a race)

  void before() {
    result.store(0);
    continuation.store(0);
  }
  // What scheduling the continuation does: read its construction, then (when it runs) the result.
  void schedule() {
    RL_ASSERT(continuation.load() == 7);
    RL_ASSERT(result.load() == 42);
    ++scheduled;
  }
  void thread(unsigned index) {
    if (index == 0) {
      result.store(42);
      if (word.settle() != 0) schedule();
    } else {
      continuation.store(7);
      if (!word.try_attach(64)) schedule();
    }
  }
  void after() { RL_ASSERT(scheduled == 1); }
};

// A second attach never happens in the library (then() consumes the future), but a settle that comes first
// must still make the attacher schedule, with nothing attached for the finisher: covered by the interleavings
// above. A settle with nothing ever attached leaves the word settled:
template <class Word>
struct SettleAlone : rl::test_suite<SettleAlone<Word>, 1> {
  Word word;
  void thread(unsigned) {
    RL_ASSERT(word.settle() == 0);
    RL_ASSERT(!word.try_attach(64));
  }
};

}  // namespace

int main(int argc, char** argv) {
  constexpr auto acq_rel = std::memory_order_acq_rel;
  constexpr auto acquire = std::memory_order_acquire;
  constexpr auto relaxed = std::memory_order_relaxed;
  argc = weft::model::choose_plant(argc, argv, {"future_then"});
  if (argc > 1) {
    std::fprintf(stderr, "usage: future_then_model [--plant=future_then.<bug>]\n");
    return 99;
  }
  bool passed = false;
  if (weft::model::chosen_plant() == nullptr) {
    passed = weft::model::check_scenario<HandOver<Word<acq_rel, acquire>>>("then hand-over", 20'000) &&
             weft::model::check_scenario<SettleAlone<Word<acq_rel, acquire>>>("then settle alone", 20'000);
  } else if (weft::atomics::planted("future_then.relaxed_settle")) {
    // The finisher neither publishes the result to a late attacher nor acquires the continuation.
    passed = weft::model::check_scenario<HandOver<Word<relaxed, acquire>>>("then hand-over, relaxed settle", 20'000);
  } else if (weft::atomics::planted("future_then.relaxed_attach_failure")) {
    // An attacher that finds the word settled does not acquire the result it will run on.
    passed = weft::model::check_scenario<HandOver<Word<acq_rel, relaxed>>>("then hand-over, relaxed attach", 20'000);
  }
  return weft::model::plant_exit(passed);
}
