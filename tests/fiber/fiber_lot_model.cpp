// Relacy model test of the fiber lot's protocol (scheduler/fiber/fiber_lot.hpp): a waiter that parks on a word is
// always taken out by a waker that changed the word after the waiter read it, whatever the interleaving; and a waiter
// leaves the lot exactly once when a wake-up and its deadline race; and a waiter whose owner starts dropping as it
// parks either sees the drop or is taken out by it. Nothing is resumed in the model: who took the waiter out is
// recorded and judged in after().
// Run five times: as is (must pass), and with a planted bug (--plant=fiber_lot.*; must fail): either half of
// the waiter/waker Dekker pairing removed (PARK_WITHOUT_FENCE, WAKE_WITHOUT_FENCE), the owner's half of the drop
// pairing removed (OWNED_WITHOUT_FENCE), or a waiter that parks without asking refused() (PARK_IGNORES_REFUSAL).
// The last two only "park against the owner's drop" catches.
#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>  // before Relacy, whose macros (sem_init, ...) break <thread>'s own includes
#include <type_traits>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "scheduler/fiber/fiber_lot.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Lot = weft::fiber::BasicFiberLot<Model>;
using Clock = std::chrono::steady_clock;

// How many times `waiter` appears in a list the lot handed out.
int count_in(const Lot::Waiter* list, const Lot::Waiter* waiter) {
  int n = 0;
  for (; list != nullptr; list = list->next) n += list == waiter ? 1 : 0;
  return n;
}

// A waker changes the word and wakes; a waiter parks if the word is unchanged. A parked waiter must be taken.
struct ParkAgainstWake : rl::test_suite<ParkAgainstWake, 2> {
  Lot lot;
  Model::atomic<std::uint32_t> word{0};
  Lot::Waiter waiter;
  bool parked = false;
  const Lot::Waiter* taken = nullptr;

  void thread(unsigned index) {
    if (index == 0) {
      word.store(1, std::memory_order_release);
      taken = lot.take(&word, true);
    } else {
      waiter.word = &word;
      parked = lot.enqueue_if(word, 0, waiter);
    }
  }
  void after() {
    // Parked and never taken: the waiter would sleep through the change (a lost wake-up).
    RL_ASSERT(!parked || count_in(taken, &waiter) == 1);
    RL_ASSERT(parked || taken == nullptr);
  }
};

// The waiter parks with a deadline; a wake-up on its word and its owner's expiry race. Exactly one takes it.
struct WakeAgainstDeadline : rl::test_suite<WakeAgainstDeadline, 3> {
  Lot lot;
  Model::atomic<std::uint32_t> word{0};
  Lot::Waiter waiter;
  int owner = 0;
  bool parked = false;
  const Lot::Waiter* woken = nullptr;
  const Lot::Waiter* expired = nullptr;

  void thread(unsigned index) {
    if (index == 0) {
      waiter.word = &word;
      waiter.owner = &owner;
      waiter.deadline = Clock::time_point(Clock::duration(1));
      parked = lot.enqueue_if(word, 0, waiter);
    } else if (index == 1) {
      word.store(1, std::memory_order_release);
      woken = lot.take(&word, false);
    } else {
      expired = lot.take_owned(&owner, Clock::time_point(Clock::duration(2)));
    }
  }
  void after() {
    const int times = count_in(woken, &waiter) + count_in(expired, &waiter);
    RL_ASSERT(parked ? times == 1 : times == 0);
    RL_ASSERT(lot.parked() == 0);
  }
};

// The owner starts dropping (a flag the waiter's `refused` reads) and takes out all its waiters; a waiter parks
// unless its word changed or its owner refuses. A parked waiter must be taken: a pool's shutdown wakes its fibers
// once, and one that parked after that pass without seeing the drop would hold the shutdown forever.
struct ParkAgainstOwnerDrop : rl::test_suite<ParkAgainstOwnerDrop, 2> {
  Lot lot;
  Model::atomic<std::uint32_t> word{0};
  Model::atomic<bool> dropping{false};
  Lot::Waiter waiter;
  int owner = 0;
  bool parked = false;
  const Lot::Waiter* taken = nullptr;

  void thread(unsigned index) {
    if (index == 0) {
      dropping.store(true, std::memory_order_release);
      taken = lot.take_owned(&owner);
    } else {
      waiter.word = &word;
      waiter.owner = &owner;
      parked = lot.enqueue_if(word, 0, waiter, [this] { return dropping.load(std::memory_order_acquire); });
    }
  }
  void after() {
    RL_ASSERT(!parked || count_in(taken, &waiter) == 1);
    RL_ASSERT(parked || taken == nullptr);
  }
};

}  // namespace

int main(int argc, char** argv) {
  weft::model::choose_plant(argc, argv, {"fiber_lot"});
  bool ok = weft::model::check_scenario<ParkAgainstWake>("park against wake", 20'000);
  ok = weft::model::check_scenario<WakeAgainstDeadline>("wake against deadline", 20'000) && ok;
  ok = weft::model::check_scenario<ParkAgainstOwnerDrop>("park against the owner's drop", 20'000) && ok;
  return weft::model::plant_exit(ok);
}
