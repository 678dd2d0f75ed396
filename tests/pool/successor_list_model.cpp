// Relacy model test of the hand-over behind Pool::submit_after (weft::detail::BasicSuccessorList, the very text the
// library uses): predecessors finish (write their outcome, close their list, walk it) while a submitter links a
// successor after them. Properties: every successor is released exactly once, after all its predecessors; whoever
// releases it sees every predecessor's outcome and the failure recorded into it (a data race on any of them is
// reported by Relacy); the finisher sees the links' fields. Run as is (must pass) and with each planted bug
// (--plant=successor_list.*, listed in tests/model/plant.hpp; must fail).
#include <cstdint>
#include <cstdio>

#include "tests/model/plant.hpp"
#include "tests/model/relacy_check.hpp"
#include "tests/model/relacy_memory_model.hpp"

#include "weft/detail/successor_list.hpp"

namespace {

using Model = weft::model::RelacyMemoryModel;
using List = weft::detail::BasicSuccessorList<Model::atomic, Model::var, weft::model::ModelPlants>;

// A task as weft::detail::AsyncState holds it: its list, its outcome, the failure recorded into it, its links.
struct Task {
  List list{0};
  Model::var<int> outcome;  // written by the task before it closes its list
  Model::var<int> failure;  // a failed predecessor's mark, written before that predecessor's arrive
  List::Link links[2];
  int released = 0;  // by whoever releases it (exactly one thread, so never a race)

  void init() {  // from the scenario's before(): Relacy checks a var's stores only inside the run
    outcome.store(0);
    failure.store(0);
  }
};

// The finisher of `task`, which failed if `failed`: outcome, close, then each successor's failure and arrive.
template <class Release>
void finish(Task& task, int outcome, bool failed, Release release) {
  task.outcome.store(outcome);
  for (List::Link* link = task.list.close(); link != nullptr;) {
    List::Link* const next = link->next.load();  // before the arrive: the successor may be gone after it
    auto* const successor = static_cast<Task*>(link->successor.load());
    if (failed) successor->failure.store(1);
    if (successor->list.arrive(1)) release(*successor);
    link = next;
  }
}

// The submitter of `successor` after `preds`: links an edge to each unfinished predecessor, counts the others done
// (reading their outcome, and a failure), then gives up its own unit.
template <std::size_t N, class Release>
void submit(Task& successor, Task* (&preds)[N], const bool (&failed)[N], Release release) {
  successor.list.expect(N);
  std::uint32_t linked = 0;
  for (std::size_t i = 0; i < N; ++i) {
    if (!preds[i]->list.closed() && preds[i]->list.link(successor.links[linked], &successor)) {
      ++linked;
      continue;
    }
    RL_ASSERT(preds[i]->outcome.load() != 0);  // final: its outcome is visible
    if (failed[i]) successor.failure.store(1);
  }
  if (successor.list.arrive(static_cast<std::uint32_t>(N) - linked + 1)) release(successor);
}

// Two predecessors (the first fails) finish on threads 0 and 1 while thread 2 links a successor after both.
struct TwoPredecessors : rl::test_suite<TwoPredecessors, 3> {
  Task pred[2];
  Task successor;

  void before() {
    pred[0].init();
    pred[1].init();
    successor.init();
  }
  void release(Task& task) {
    RL_ASSERT(&task == &successor);
    RL_ASSERT(pred[0].outcome.load() == 1);
    RL_ASSERT(pred[1].outcome.load() == 2);
    RL_ASSERT(task.failure.load() == 1);  // the first predecessor's failure reached it, by whichever path
    ++task.released;
  }
  void thread(unsigned index) {
    const auto on_release = [this](Task& task) { release(task); };
    if (index < 2) {
      finish(pred[index], static_cast<int>(index) + 1, index == 0, on_release);
    } else {
      Task* preds[2] = {&pred[0], &pred[1]};
      const bool failed[2] = {true, false};
      submit(successor, preds, failed, on_release);
    }
  }
  void after() { RL_ASSERT(successor.released == 1); }
};

// Two submitters link a successor each after one predecessor (two pushes racing on its list) while it finishes.
struct TwoSuccessors : rl::test_suite<TwoSuccessors, 3> {
  Task pred;
  Task successor[2];

  void before() {
    pred.init();
    successor[0].init();
    successor[1].init();
  }
  void release(Task& task) {
    RL_ASSERT(pred.outcome.load() == 5);
    ++task.released;
  }
  void thread(unsigned index) {
    const auto on_release = [this](Task& task) { release(task); };
    if (index == 0) {
      finish(pred, 5, false, on_release);
    } else {
      Task* preds[1] = {&pred};
      const bool failed[1] = {false};
      submit(successor[index - 1], preds, failed, on_release);
    }
  }
  void after() { RL_ASSERT(successor[0].released == 1 && successor[1].released == 1); }
};

}  // namespace

int main(int argc, char** argv) {
  argc = weft::model::choose_plant(argc, argv, {"successor_list"});
  if (argc > 1) {
    std::fprintf(stderr, "usage: successor_list_model [--plant=successor_list.<bug>] [--scenario=NAME]\n");
    return 99;
  }
  bool ok = true;
  ok = weft::model::check_scenario<TwoPredecessors>("two predecessors", 20'000) && ok;
  ok = weft::model::check_scenario<TwoSuccessors>("two successors", 20'000) && ok;
  return weft::model::plant_exit(ok);
}
