// Tasks with dependencies on the fly, for bench/pool/pool_bench: kDependentTasks tasks, each after 2 random earlier
// ones, submitted from 2 threads while the earlier ones run. weft: Pool::submit_after. oneTBB: a flow graph built on
// the fly, the fairest oneTBB form of the same program: one continue_node per task, made with one extra
// predecessor (a gate), make_edge from each predecessor not finished yet (a per-node spin_mutex and flag close the
// race with a predecessor finishing meanwhile), then the gate's message. Both sides run the same plan (the same
// seed), the same task body, and the caller checks the same result (DependentPlan::check, untimed).
//
// Threads: the calling thread submits the even tasks, a helper std::thread (made each iteration, on both sides) the
// odd ones. A task's two predecessors are drawn among all earlier tasks; one the other thread has not submitted
// yet is replaced by this thread's own previous task. weft's pool has `threads` workers, and the calling thread
// then waits on the handles; oneTBB's arena has `threads` slots (tbb_side.hpp), the calling thread submits inside
// it and joins it in graph::wait_for_all, as in the other oneTBB rows of the binary.
#pragma once

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/spin_mutex.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "bench/common/tbb_side.hpp"
#include "bench/common/weft_side.hpp"
#include "weft/async_task.hpp"
#include "weft/pool.hpp"

namespace weft::bench {

inline constexpr std::size_t kDependentTasks = 100'000;

// What both sides share for one run: the predecessors chosen (by the submitting thread, as it goes), each task's
// value (written by the task, read by its successors), and which tasks are submitted.
class DependentPlan {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};

  DependentPlan()
      : preds_(kDependentTasks), values_(kDependentTasks), submitted_(new std::atomic<bool>[kDependentTasks]) {}

  void reset() {
    for (std::size_t i = 0; i < kDependentTasks; ++i) {
      values_[i] = 0;
      submitted_[i].store(false, std::memory_order_relaxed);
    }
  }

  // Thread `t`'s task `id` (id % 2 == t): its predecessors, drawn with `random`.
  struct Preds {
    std::uint32_t a = kNone;
    std::uint32_t b = kNone;
  };
  Preds choose(std::uint32_t id, std::mt19937& random) {
    Preds p;
    if (id >= 2) {
      const auto pick = [&] {
        const std::uint32_t j = static_cast<std::uint32_t>(random() % id);
        // acquire: the handle or node the other thread stored before marking it.
        return submitted_[j].load(std::memory_order_acquire) ? j : id - 2;
      };
      p.a = pick();
      p.b = pick();
      if (p.b == p.a) p.b = kNone;
    }
    preds_[id] = p;
    return p;
  }
  void mark_submitted(std::uint32_t id) { submitted_[id].store(true, std::memory_order_release); }

  // The task body: its value from its predecessors' (which must have finished).
  void run(std::uint32_t id) noexcept {
    const Preds p = preds_[id];
    std::uint64_t v = id + 1;
    if (p.a != kNone) v += values_[p.a] * 3;
    if (p.b != kNone) v += values_[p.b] * 5;
    values_[id] = v;
  }
  // Recomputes every value in order; false if a task ran before a predecessor (or not at all).
  [[nodiscard]] bool check() const {
    std::vector<std::uint64_t> expected(kDependentTasks);
    for (std::size_t id = 0; id < kDependentTasks; ++id) {
      const Preds p = preds_[id];
      std::uint64_t v = id + 1;
      if (p.a != kNone) v += expected[p.a] * 3;
      if (p.b != kNone) v += expected[p.b] * 5;
      expected[id] = v;
      if (values_[id] != v) return false;
    }
    return true;
  }

 private:
  std::vector<Preds> preds_;
  std::vector<std::uint64_t> values_;
  std::unique_ptr<std::atomic<bool>[]> submitted_;
};

// Runs submit(thread, id, preds) for every task: even ids here, odd ids on a helper thread.
template <class Submit>
void submit_from_two_threads(DependentPlan& plan, Submit submit) {
  const auto half = [&plan, &submit](std::uint32_t t) {
    std::mt19937 random(12345 + t);
    for (std::uint32_t id = t; id < kDependentTasks; id += 2) {
      submit(id, plan.choose(id, random));
      plan.mark_submitted(id);
    }
  };
  std::thread helper(half, 1);
  half(0);
  helper.join();
}

// weft: Pool::submit_after, the handles kept (a successor names them), then waited.
inline void dependent_weft(weft::Pool& pool, DependentPlan& plan) {
  plan.reset();
  std::vector<weft::AsyncTask> handles(kDependentTasks);
  submit_from_two_threads(plan, [&](std::uint32_t id, DependentPlan::Preds p) {
    const auto body = [&plan, id] { plan.run(id); };
    if (p.b != DependentPlan::kNone) {
      handles[id] = pool.submit_after({handles[p.a], handles[p.b]}, body);
    } else if (p.a != DependentPlan::kNone) {
      handles[id] = pool.submit_after({handles[p.a]}, body);
    } else {
      handles[id] = pool.submit_after({}, body);
    }
  });
  for (const weft::AsyncTask& h : handles) h.wait();
}

// oneTBB: a flow graph built on the fly (see the file comment).
inline void dependent_tbb(TbbSide& side, DependentPlan& plan) {
  using Msg = tbb::flow::continue_msg;
  struct Task {
    Task(tbb::flow::graph& g, DependentPlan& plan, std::uint32_t id)
        : node(g, 1, [this, &plan, id](const Msg&) {
            plan.run(id);
            const tbb::spin_mutex::scoped_lock lock(mutex);
            finished = true;  // successors linked from now on are not edges: the node is past its body
          }) {}
    tbb::flow::continue_node<Msg> node;
    tbb::spin_mutex mutex;
    bool finished = false;
  };
  plan.reset();
  std::vector<std::unique_ptr<Task>> tasks(kDependentTasks);
  side.execute([&] {
    tbb::flow::graph g;
    const auto after = [&](Task& t, std::uint32_t pred) {
      Task& p = *tasks[pred];
      const tbb::spin_mutex::scoped_lock lock(p.mutex);
      if (!p.finished) tbb::flow::make_edge(p.node, t.node);
    };
    submit_from_two_threads(plan, [&](std::uint32_t id, DependentPlan::Preds p) {
      tasks[id] = std::make_unique<Task>(g, plan, id);
      Task& t = *tasks[id];
      if (p.a != DependentPlan::kNone) after(t, p.a);
      if (p.b != DependentPlan::kNone) after(t, p.b);
      t.node.try_put(Msg{});  // the gate: runs once every edge made has delivered
    });
    g.wait_for_all();
    tasks.clear();  // before the graph
  });
}

}  // namespace weft::bench
