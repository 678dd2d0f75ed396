// Relacy model test of a Subflow's child count (include/weft/detail/child_count.hpp): the joiner sees every
// child's work once the count says none is left, and a joiner that announced itself and would sleep is always
// woken by the last child. Nothing sleeps in the model: "would sleep" is recorded and judged in after().
//
// Thread 0 is the owner: it spawns on its own stack, runs some children nested there, and joins as the scheduler's
// wait does (look; announce; look once more; sleep). The other threads are thieves that run the children they
// are handed.
// Run as is (must pass) and with each planted bug (--plant=, tests/model/plant.hpp; must fail):
// - RELAXED_FINISH: a child's count is relaxed (its writes race with the joiner's reads).
// - PLAIN_WHILE_ANNOUNCED: a nested child counts in the plain field after the joiner announced (lost wake-up).
// - FOLD_FORGOTTEN: the announcement leaves the plain count out of the shared one (lost wake-up).
#include <cstdint>
#include <cstdio>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "weft/detail/child_count.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using Count =
    weft::detail::BasicChildCount<Model::atomic<std::uint64_t>, Model::var<std::int64_t>, weft::model::ModelPlants>;

// A child handed to a thief: the thief spins until it is queued (acquire: the queue's publication).
void await_queued(Model::atomic<int>& queued) {
  while (queued.load(std::memory_order_acquire) == 0) rl::yield(1, $);
}

// What a joiner did: returned having seen every child finished, or would sleep.
enum class Joined { Returned, WouldSleep };

// The join as sync::wait_until runs it: look; announce; look again (the sleep's own check); else sleep.
Joined join(Count& count) {
  if (!count.unfinished()) return Joined::Returned;
  if (!count.announce()) return Joined::Returned;
  if (!count.unfinished()) return Joined::Returned;
  return Joined::WouldSleep;
}

// Two children spawned on the owner's stack: one runs nested there, the other on a thief.
struct NestedAndStolen : rl::test_suite<NestedAndStolen, 2> {
  Count count;
  Model::atomic<int> queued{0};
  Model::atomic<int> woken{0};
  Model::var<int> work[2];
  Joined joined = Joined::Returned;

  void thread(unsigned index) {
    if (index == 0) {
      count.spawned(true);
      count.spawned(true);
      queued.store(1, std::memory_order_release);
      work[0].store(1);
      if (count.finished(true)) woken.store(1, std::memory_order_relaxed);
      joined = join(count);
      if (joined == Joined::Returned) {
        RL_ASSERT(work[0].load() + work[1].load() == 3);
        count.reset();
      }
    } else {
      await_queued(queued);
      work[1].store(2);
      if (count.finished(false)) woken.store(1, std::memory_order_relaxed);
    }
  }
  void after() { RL_ASSERT(joined == Joined::Returned || woken.load(std::memory_order_relaxed) == 1); }
};

// Three children: two on thieves, and one the owner runs nested after it announced itself (a wait that timed
// out, ran more of its own deque, and sleeps again).
struct NestedAfterAnnounce : rl::test_suite<NestedAfterAnnounce, 3> {
  Count count;
  Model::atomic<int> queued{0};
  Model::atomic<int> woken{0};
  Model::var<int> work[3];
  Joined joined = Joined::Returned;

  void thread(unsigned index) {
    if (index == 0) {
      count.spawned(true);
      count.spawned(true);
      count.spawned(true);
      queued.store(1, std::memory_order_release);
      if (!count.unfinished()) return;
      if (!count.announce()) return;
      work[0].store(1);
      if (count.finished(true)) woken.store(1, std::memory_order_relaxed);
      if (!count.unfinished()) {
        RL_ASSERT(work[0].load() + work[1].load() + work[2].load() == 6);
        count.reset();
        return;
      }
      joined = Joined::WouldSleep;
    } else {
      await_queued(queued);
      work[index].store(int(index) + 1);
      if (count.finished(false)) woken.store(1, std::memory_order_relaxed);
    }
  }
  void after() { RL_ASSERT(joined == Joined::Returned || woken.load(std::memory_order_relaxed) == 1); }
};

// A child running on a thief spawns into its parent (a remote spawn), and a second thief runs that one.
struct RemoteSpawn : rl::test_suite<RemoteSpawn, 3> {
  Count count;
  Model::atomic<int> queued_first{0};
  Model::atomic<int> queued_second{0};
  Model::atomic<int> woken{0};
  Model::var<int> work[2];
  Joined joined = Joined::Returned;

  void thread(unsigned index) {
    if (index == 0) {
      count.spawned(true);
      queued_first.store(1, std::memory_order_release);
      joined = join(count);
      if (joined == Joined::Returned) {
        RL_ASSERT(work[0].load() + work[1].load() == 3);
        count.reset();
      }
    } else if (index == 1) {
      await_queued(queued_first);
      work[0].store(1);
      count.spawned(false);
      queued_second.store(1, std::memory_order_release);
      if (count.finished(false)) woken.store(1, std::memory_order_relaxed);
    } else {
      await_queued(queued_second);
      work[1].store(2);
      if (count.finished(false)) woken.store(1, std::memory_order_relaxed);
    }
  }
  void after() { RL_ASSERT(joined == Joined::Returned || woken.load(std::memory_order_relaxed) == 1); }
};

}  // namespace

int main(int argc, char** argv) {
  weft::model::choose_plant(argc, argv, {"child_count"});
  bool ok = true;
  ok = weft::model::check_scenario<NestedAndStolen>("nested and stolen", 20'000) && ok;
  ok = weft::model::check_scenario<NestedAfterAnnounce>("nested after the announcement", 20'000) && ok;
  ok = weft::model::check_scenario<RemoteSpawn>("a child spawns into its parent", 20'000) && ok;
  return weft::model::plant_exit(ok);
}
