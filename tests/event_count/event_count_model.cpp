// Relacy model test of the EventCount protocol: a waiter that checks the condition after prepare_wait() and
// finds nothing is always followed by an epoch bump, so its wait() cannot sleep through the notify.
// Nothing sleeps in the model: "would sleep" is recorded and judged in after().
// Run as is (must pass) and with each planted bug (--plant=, tests/model/plant.hpp; must fail):
// - PREPARE_WITHOUT_FENCE, NOTIFY_WITHOUT_FENCE: a side of the plain protocol without its fence.
// - LOOK_BEFORE_BARRIER: an asymmetric notifier looks for waiters before its light barrier.
// Every scenario runs twice: with the asymmetric barriers (the model treats the pair as two seq_cst fences,
// src/process_barrier.hpp) and with the plain fences.
#include <chrono>
#include <cstdio>
#include <optional>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "scheduler/engine/event_count.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Events = weft::engine::BasicEventCount<Model>;

// Which protocol the scenarios' counts run (see the file comment); set by main() before each check.
bool asymmetric_mode = false;

// Waiter side of the protocol: returns the key the waiter would sleep on, or nothing if it found work.
std::optional<Events::Key> try_park(Events& events, Model::atomic<int>& flag, int want) {
  if (flag.load(std::memory_order_acquire) >= want) return std::nullopt;
  const auto key = events.prepare_wait();
  if (flag.load(std::memory_order_acquire) >= want) {
    events.cancel_wait();
    return std::nullopt;
  }
  return key;
}

// A waiter that decided to sleep must find the epoch moved on (wait_for with no time left reports it).
bool woken(Events& events, const std::optional<Events::Key>& parked) {
  return !parked || events.wait_for(*parked, std::chrono::nanoseconds::zero());
}

// One notifier publishes and calls notify_one; one waiter parks.
struct OneWaiter : rl::test_suite<OneWaiter, 2> {
  Events events{asymmetric_mode};
  Model::atomic<int> flag{0};
  std::optional<Events::Key> parked;

  void thread(unsigned index) {
    if (index == 0) {
      flag.store(1, std::memory_order_release);
      events.notify_one();
    } else {
      parked = try_park(events, flag, 1);
    }
  }
  void after() { RL_ASSERT(woken(events, parked)); }
};

// One notify_all must reach both waiters.
struct TwoWaitersNotifyAll : rl::test_suite<TwoWaitersNotifyAll, 3> {
  Events events{asymmetric_mode};
  Model::atomic<int> flag{0};
  std::optional<Events::Key> parked[2];

  void thread(unsigned index) {
    if (index == 0) {
      flag.store(1, std::memory_order_release);
      events.notify_all();
    } else {
      parked[index - 1] = try_park(events, flag, 1);
    }
  }
  void after() {
    RL_ASSERT(woken(events, parked[0]));
    RL_ASSERT(woken(events, parked[1]));
  }
};

// Two notifiers each publish one unit; the waiter needs both, and parks twice if it must.
struct TwoNotifiers : rl::test_suite<TwoNotifiers, 3> {
  Events events{asymmetric_mode};
  Model::atomic<int> flag{0};
  std::optional<Events::Key> parked;

  void thread(unsigned index) {
    if (index < 2) {
      flag.fetch_add(1, std::memory_order_release);
      events.notify_one();
    } else {
      parked = try_park(events, flag, 2);
    }
  }
  void after() { RL_ASSERT(woken(events, parked)); }
};

}  // namespace

int main(int argc, char** argv) {
  weft::model::choose_plant(argc, argv, {"event_count"});
  bool ok = true;
  for (const bool asymmetric : {true, false}) {
    asymmetric_mode = asymmetric;
    std::printf("event count with %s\n", asymmetric ? "asymmetric barriers" : "plain fences");
    ok = weft::model::check_scenario<OneWaiter>("one waiter, notify_one", 20'000) && ok;
    ok = weft::model::check_scenario<TwoWaitersNotifyAll>("two waiters, notify_all", 20'000) && ok;
    ok = weft::model::check_scenario<TwoNotifiers>("two notifiers, one waiter", 20'000) && ok;
  }
  return weft::model::plant_exit(ok);
}
