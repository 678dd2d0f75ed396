// Relacy model test of NodePool's shared stack of batches (scheduler/lockfree/node_pool.hpp): lock-free pushes, takes
// serialised by a mutex. Every interleaving explored is checked for a block held by two threads at once (the
// ABA of an unserialised pop hands a batch out twice), for a block lost or duplicated on the stack, and for a
// data race on the blocks' contents (a hand-over without the push's release).
//
// Run several times (tests/queue/meson.build): once correct, and once per planted bug
// (--plant=node_pool.*, tests/model/plant.hpp), each registered should_fail. Exit code 0 = every scenario passed.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"

#include "scheduler/lockfree/node_pool.hpp"

namespace {

using weft::lockfree::FreeBlock;
using weft::model::RelacyMemoryModel;
using Pool = weft::lockfree::NodePool<RelacyMemoryModel>;

constexpr std::size_t kClass = 0;
constexpr int kBlocks = 4;
constexpr int kMaxHeld = 4;

// A block as the model uses it: the pool's links, then what its holder writes. `holder` is a checked variable:
// two threads holding the block at once, or a hand-over the pool did not order, is a data race or a failed
// assertion on it.
struct Block {
  FreeBlock links;
  weft::model::RelacyVar<int> holder;  // 0 = on the stack, else the holding thread's index + 1
};

// Each thread runs a script: 't' = take a batch and hold its blocks, 'p' = give back the batch it has held longest
// (so that "ttp" takes the top and the next and gives the old top back: the pop's ABA).
// The stack starts as four one-block batches, blocks 0 (top) to 3.
template <unsigned Threads>
struct PoolScenario : rl::test_suite<PoolScenario<Threads>, Threads> {
  static inline const char* scripts[Threads] = {};

  Pool* pool = nullptr;
  Block* blocks = nullptr;
  FreeBlock* held[Threads][kMaxHeld] = {};
  int held_count[Threads] = {};

  [[nodiscard]] int index_of(const FreeBlock* b) const {
    for (int i = 0; i < kBlocks; ++i) {
      if (&blocks[i].links == b) return i;
    }
    RL_ASSERT(!"a batch holds a block that is not one of the model's");
    return 0;
  }

  void before() {
    pool = new Pool(true);
    blocks = new Block[kBlocks];
    for (int i = kBlocks - 1; i >= 0; --i) {
      blocks[i].holder.store(0);
      blocks[i].links.next = nullptr;
      blocks[i].links.ahead = nullptr;
      pool->push_batch(kClass, &blocks[i].links);
    }
    for (auto& row : held) {
      for (auto*& b : row) b = nullptr;
    }
    for (int& n : held_count) n = 0;
  }

  void thread(unsigned index) {
    const int me = static_cast<int>(index) + 1;
    for (const char* op = scripts[index]; *op != '\0'; ++op) {
      if (*op == 't') {
        FreeBlock* batch = pool->take_batch(kClass);
        if (batch == nullptr) continue;
        for (FreeBlock* b = batch; b != nullptr; b = b->next) {
          Block& block = blocks[index_of(b)];
          RL_ASSERT(block.holder.load() == 0);  // nobody else holds it
          block.holder.store(me);
        }
        held[index][held_count[index]++] = batch;
      } else if (*op == 'p' && held_count[index] > 0) {
        FreeBlock* batch = held[index][0];
        for (int h = 1; h < held_count[index]; ++h) held[index][h - 1] = held[index][h];
        --held_count[index];
        for (FreeBlock* b = batch; b != nullptr; b = b->next) {
          Block& block = blocks[index_of(b)];
          RL_ASSERT(block.holder.load() == me);
          block.holder.store(0);
        }
        pool->push_batch(kClass, batch);
      }
    }
  }

  void after() {
    // Every block exactly once: held by one thread, or in one batch on the stack.
    int seen[kBlocks] = {};
    for (unsigned t = 0; t < Threads; ++t) {
      for (int h = 0; h < held_count[t]; ++h) {
        for (FreeBlock* b = held[t][h]; b != nullptr; b = b->next) ++seen[index_of(b)];
      }
    }
    int batches = 0;
    while (FreeBlock* batch = pool->take_batch(kClass)) {
      RL_ASSERT(++batches <= kBlocks);  // a cycle on the stack would never end
      for (FreeBlock* b = batch; b != nullptr; b = b->next) ++seen[index_of(b)];
    }
    for (int i = 0; i < kBlocks; ++i) RL_ASSERT(seen[i] == 1);
    delete pool;  // its stack is empty: it frees nothing of ours
    delete[] blocks;
  }
};

template <unsigned Threads>
bool run(const char* name, std::initializer_list<const char*> scripts) {
  using Scenario = PoolScenario<Threads>;
  unsigned i = 0;
  for (const char* s : scripts) Scenario::scripts[i++] = s;
  return weft::model::check_scenario<Scenario>(name, 20'000);
}

}  // namespace

int main(int argc, char** argv) {
  argc = weft::model::choose_plant(argc, argv, {"node_pool"});
  // An optional argument runs one scenario only (for timing); by default all run, stopping at a failure.
  const int only = argc > 1 ? std::atoi(argv[1]) : -1;
  const std::function<bool()> scenarios[] = {
      // The pop's ABA: one taker reads the top and its link, another takes that top and the next, then gives
      // the top back; the first one's CAS must not succeed with the stale link.
      [] {
        return run<2>("pool: taker against take-take-give", {"tt", "ttp"});
      },
      // A batch given back by one thread and taken by another: the push must order the giver's writes.
      [] {
        return run<2>("pool: give and take between two threads", {"tp", "tpt"});
      },
      [] {
        return run<3>("pool: three threads take and give", {"tp", "tp", "tt"});
      },
  };
  bool ok = true;
  for (int i = 0; ok && i < static_cast<int>(std::size(scenarios)); ++i) {
    if (only < 0 || only == i) ok = scenarios[i]();
  }
  std::printf(ok ? "all scenarios passed\n" : "a scenario FAILED\n");
  return weft::model::plant_exit(ok);
}
