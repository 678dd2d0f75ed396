// Relacy model test of the wait primitives' word (scheduler/sync/word_protocol.hpp): no wake-up is lost, what a
// notifier did before is visible after the wait, and a waiter may free the primitive as soon as its wait returns
// although the notifier that released it has not returned yet.
//
// The primitive lives on the heap and the waiter that sees it ready deletes it; Relacy reports a notifier that
// touches it afterwards (a use of freed memory through an atomic). The futex is modelled by what the kernel does:
// one lock (the kernel's hash bucket) under which a park compares the word and sleeps, and under which a wake
// takes the sleepers; the wake uses only the word's address. A waiter that sleeps with nobody left to wake it is a
// deadlock, which Relacy reports.
//
// Run as is (must pass) and with each planted bug (--plant=, tests/model/plant.hpp; must fail):
// - LOOK_AFTER_CHANGE: the notifier reads the word again after its RMW (the use-after-free this protocol exists to
//   prevent; weft's first Event and WaitGroup did this with a separate count of sleepers).
// - PARK_UNANNOUNCED: a waiter parks without setting kWordWaiters (its wake-up is lost).
// - RELAXED_RELEASE: the RMW that makes the value ready is relaxed (the notifier's writes race with the waiter).
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "scheduler/sync/word_protocol.hpp"
#include "tests/wait/futex_model.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Word = Model::atomic<std::uint32_t>;
namespace word = weft::sync::word;
using weft::detail::kWordValue;

using weft::model::ModelParking;
// The running scenario's kernel (tests/wait/futex_model.hpp).
using Kernel = weft::model::FutexKernel;
Kernel*& kernel = weft::model::futex_kernel;

// A primitive: its word, on the heap so that a waiter can free it.
struct Primitive {
  explicit Primitive(std::uint32_t value) : w(value) {}
  Word w;
};

// Waits as weft::sync::wait_until does off a worker: check with acquire, then sleep on the word, until ready().
template <class Ready, class ReadyAt>
void wait(Word& w, Ready ready, ReadyAt ready_at) {
  while (!ready()) word::sleep<ModelParking>(w, ready_at, std::chrono::nanoseconds::max());
}

bool count_is_zero(std::uint32_t value) { return value == 0; }

// WaitGroup: two workers each publish a result and call done(); the waiter reads both results and frees the group.
struct GroupFreedByWaiter : rl::test_suite<GroupFreedByWaiter, 3> {
  Kernel futex;
  Primitive* group = new Primitive(2);
  Model::var<int> result[2];

  GroupFreedByWaiter() { kernel = &futex; }

  void thread(unsigned index) {
    if (index < 2) {
      result[index].store(int(index) + 1);
      RL_ASSERT(word::group_done<ModelParking>(group->w));
      return;
    }
    wait(
        group->w, [&] { return (group->w.load(std::memory_order_acquire) & kWordValue) == 0; }, count_is_zero);
    RL_ASSERT(result[0].load() + result[1].load() == 3);
    delete group;
  }
};

// WaitGroup with add(): the count starts at one; a worker adds one for a second worker's item before its own
// done(). Two waiters; the last to leave frees the group.
struct GroupAddTwoWaiters : rl::test_suite<GroupAddTwoWaiters, 4> {
  Kernel futex;
  Primitive* group = new Primitive(1);
  Model::atomic<int> handed{0};
  Model::atomic<int> leaving{0};
  Model::var<int> result;

  GroupAddTwoWaiters() { kernel = &futex; }

  void thread(unsigned index) {
    if (index == 0) {
      std::uint32_t count = 0;
      RL_ASSERT(word::group_add(group->w, 1, count));
      handed.store(1, std::memory_order_release);
      RL_ASSERT(word::group_done<ModelParking>(group->w));
      return;
    }
    if (index == 1) {
      while (handed.load(std::memory_order_acquire) == 0) rl::yield(1, $);
      result.store(7);
      RL_ASSERT(word::group_done<ModelParking>(group->w));
      return;
    }
    wait(
        group->w, [&] { return (group->w.load(std::memory_order_acquire) & kWordValue) == 0; }, count_is_zero);
    RL_ASSERT(result.load() == 7);
    if (leaving.fetch_add(1, std::memory_order_acq_rel) == 1) delete group;
  }
};

bool is_set(std::uint32_t value) { return (value & word::kEventSet) != 0; }

// Manual Event: one signal releases two waiters; the last to leave frees the event.
struct EventTwoWaiters : rl::test_suite<EventTwoWaiters, 3> {
  Kernel futex;
  Primitive* event = new Primitive(0);
  Model::atomic<int> leaving{0};
  Model::var<int> config;

  EventTwoWaiters() { kernel = &futex; }

  void thread(unsigned index) {
    if (index == 0) {
      config.store(42);
      word::event_set<ModelParking>(event->w);
      return;
    }
    wait(
        event->w, [&] { return (event->w.load(std::memory_order_acquire) & word::kEventSet) != 0; }, is_set);
    RL_ASSERT(config.load() == 42);
    if (leaving.fetch_add(1, std::memory_order_acq_rel) == 1) delete event;
  }
};

// Auto Event ping-pong: each side takes the other's signal once; the second taker frees both events.
struct AutoEventPingPong : rl::test_suite<AutoEventPingPong, 2> {
  Kernel futex;
  Primitive* ping = new Primitive(0);
  Primitive* pong = new Primitive(0);
  Model::var<int> ball;

  AutoEventPingPong() { kernel = &futex; }

  void thread(unsigned index) {
    if (index == 0) {
      ball.store(1);
      word::event_set<ModelParking>(ping->w);
      wait(
          pong->w, [&] { return word::event_take(pong->w); }, is_set);
      RL_ASSERT(ball.load() == 2);
      delete ping;
      delete pong;
    } else {
      wait(
          ping->w, [&] { return word::event_take(ping->w); }, is_set);
      RL_ASSERT(ball.load() == 1);
      ball.store(2);
      word::event_set<ModelParking>(pong->w);
    }
  }
};

// ConditionVariable's generation: the waiter saw generation 0 and waits for a bump, then frees the variable. A
// clear of kWordWaiters by the bump must not hide a second waiter's announcement: two notifiers bump.
struct GenerationBumps : rl::test_suite<GenerationBumps, 3> {
  Kernel futex;
  Primitive* cv = new Primitive(0);
  Model::var<int> item;

  GenerationBumps() { kernel = &futex; }

  void thread(unsigned index) {
    if (index == 0) {
      item.store(5);
      word::generation_bump<ModelParking>(cv->w);
      return;
    }
    if (index == 1) {
      word::generation_bump<ModelParking>(cv->w);
      return;
    }
    wait(
        cv->w, [&] { return (cv->w.load(std::memory_order_acquire) & kWordValue) == 2; },
        [](std::uint32_t value) { return value == 2; });
    RL_ASSERT(item.load() == 5);
    delete cv;
  }
};

}  // namespace

int main(int argc, char** argv) {
  weft::model::choose_plant(argc, argv, {"word"});
  bool ok = true;
  ok = weft::model::check_scenario<GroupFreedByWaiter>("group: freed by its waiter", 20'000) && ok;
  ok = weft::model::check_scenario<GroupAddTwoWaiters>("group: add, two waiters", 20'000) && ok;
  ok = weft::model::check_scenario<EventTwoWaiters>("manual event: two waiters", 20'000) && ok;
  ok = weft::model::check_scenario<AutoEventPingPong>("auto event: ping-pong", 20'000) && ok;
  ok = weft::model::check_scenario<GenerationBumps>("generation: two bumps", 20'000) && ok;
  return weft::model::plant_exit(ok);
}
