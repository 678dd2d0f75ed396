// Relacy model test of a timer's phase word (scheduler/engine/timer_phase.hpp, the very text the timer queue,
// Timer::cancel and the periodic run task use), over Relacy's atomics:
//  - "one-shot": the timer thread fires a one-shot timer (hands its work to the pool) while two threads cancel it.
//    Exactly one of the three wins: the work is run or destroyed by a cancel, never both, never neither.
//  - "periodic": one thread plays the timer thread and the run task for two periods (fire, begin the run, mutate
//    the work, rearm, fire again...) while another cancels. The work is let go of exactly once if cancelled, by
//    whoever the protocol names; whoever lets go of it sees every write of the runs before (a data race on the
//    work is reported by Relacy); and no run begins after a cancel() returned true.
// Run as is (must pass) and with each planted bug (--plant=timer.*, listed in tests/model/plant.hpp; must fail).
#include <cstdint>
#include <cstdio>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "scheduler/engine/timer_phase.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Phase = weft::engine::timer_phase::Phase;
namespace timer_phase = weft::engine::timer_phase;

// One-shot: thread 0 fires, threads 1 and 2 cancel.
struct OneShot : rl::test_suite<OneShot, 3> {
  Model::atomic<std::uint8_t> phase{Phase::waiting};
  Model::var<int> work;  // the callable: 1 alive, 0 handed to the pool, -1 destroyed by a cancel
  int fired = 0;         // written by the firing thread only
  Model::var<int> cancels;

  void before() {
    work.store(1);
    cancels.store(0);
  }
  void thread(unsigned index) {
    if (index == 0) {
      if (timer_phase::claim(phase, Phase::waiting, Phase::fired) == Phase::waiting) {
        RL_ASSERT(work.load() == 1);
        work.store(0);  // moved into the pool's task
        ++fired;
      }
      return;
    }
    if (timer_phase::cancel(phase) == Phase::waiting) {
      RL_ASSERT(work.load() == 1);
      work.store(-1);                     // discard_cancelled: destroyed by the winning cancel
      cancels.store(cancels.load() + 1);  // two winners would race here too
    }
  }
  void after() { RL_ASSERT(fired + cancels.load() == 1); }
};

// Periodic: thread 0 is the timer thread and the run task, two periods; thread 1 cancels.
struct Periodic : rl::test_suite<Periodic, 2> {
  Model::atomic<std::uint8_t> phase{Phase::waiting};
  Model::atomic<int> cancel_returned{0};  // set by the canceller after cancel() returned true
  Model::var<int> work;                   // the callable: its runs count up; -1 once let go of
  Model::var<int> released;               // how many times the work was let go of
  bool cancelled = false;                 // cancel() returned true (the canceller's own flag)

  void before() {
    work.store(0);
    released.store(0);
  }
  void let_go() {
    RL_ASSERT(work.load() >= 0);
    work.store(-1);
    released.store(released.load() + 1);
  }
  void thread(unsigned index) {
    if (index == 1) {
      const std::uint8_t from = timer_phase::cancel(phase);
      if (from == Phase::cancelled) return;
      cancelled = true;
      if (from == Phase::waiting) let_go();  // Timer::cancel's discard_cancelled
      cancel_returned.store(1, std::memory_order_release);
      return;
    }
    for (int period = 0; period < 2; ++period) {
      // TimerQueue::fire.
      if (timer_phase::claim(phase, Phase::waiting, Phase::queued) != Phase::waiting) return;  // cancelled first
      // TimerQueue::run_periodic. A run that begins after a cancel() returned true (seen returned before the
      // run's begin) would be a run the user was promised would not happen.
      const bool cancel_seen = cancel_returned.load(std::memory_order_acquire) == 1;
      if (timer_phase::claim(phase, Phase::queued, Phase::running) != Phase::queued) {
        let_go();  // cancelled while queued
        return;
      }
      RL_ASSERT(!cancel_seen);
      work.store(work.load() + 1);  // the run: the callable mutates what it holds
      if (!timer_phase::end_run(phase)) {
        let_go();  // cancelled during the run
        return;
      }
    }
  }
  void after() { RL_ASSERT(released.load() == (cancelled ? 1 : 0)); }
};

}  // namespace

int main(int argc, char** argv) {
  argc = weft::model::choose_plant(argc, argv, {"timer"});
  if (argc > 1) {
    std::fprintf(stderr, "usage: timer_phase_model [--plant=timer.<bug>] [--scenario=NAME]\n");
    return 99;
  }
  bool ok = true;
  ok = weft::model::check_scenario<OneShot>("one-shot", 20'000) && ok;
  ok = weft::model::check_scenario<Periodic>("periodic", 20'000) && ok;
  return weft::model::plant_exit(ok);
}
