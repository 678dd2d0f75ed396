// Node priorities against work a run does in place. A worker runs a ready successor of default options in
// place, and claims default roots and join-group members in batches, past the pool's own priority order: a High
// task waiting in the pool must still go first, as it does at a task boundary (plain posts give HHHNNNLLL).
#include <doctest/doctest.h>

#include <mutex>
#include <string>

#include "tests/graph/graph_test_support.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"

using weft::test::await_or_die;
using weft::test::patience;

namespace {

// The priority letters of the nodes in the order they ran (one worker runs them all).
class Order {
 public:
  void add(char letter) {
    const std::lock_guard lock(mutex_);
    letters_.push_back(letter);
  }
  std::string letters() {
    const std::lock_guard lock(mutex_);
    return letters_;
  }

 private:
  std::mutex mutex_;
  std::string letters_;
};

weft::NodeOptions at(weft::Priority priority) { return weft::NodeOptions{.priority = priority}; }

}  // namespace

TEST_CASE("on one worker, a successor run in place waits behind ready High nodes") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  Order order;
  weft::TaskGraph graph;
  const weft::Node source = graph.add_node([&] { order.add('S'); });
  // Successors with the same predecessor: default ones (run in place, or claimed as a join group's members)
  // interleaved with High and Low ones.
  for (int i = 0; i < 3; ++i) {
    graph.add_edge(source, graph.add_node([&] { order.add('N'); }));
    graph.add_edge(source, graph.add_node([&] { order.add('H'); }, at(weft::Priority::High)));
    graph.add_edge(source, graph.add_node([&] { order.add('L'); }, at(weft::Priority::Low)));
  }
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    weft::Run run = graph.run(pool);
    await_or_die(run, "in-place successor behind High", patience(30));  // timed: the test thread never helps
    run.wait();
    CHECK(order.letters().substr(static_cast<std::size_t>(round) * 10, 10) == "SHHHNNNLLL");
  }
}

TEST_CASE("on one worker, a successor of a chain run in place waits behind ready High nodes") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  Order order;
  weft::TaskGraph graph;
  // A chain a -> b -> c of default nodes; a also makes two High nodes ready.
  const weft::Node a = graph.add_node([&] { order.add('a'); });
  const weft::Node b = graph.add_node([&] { order.add('b'); });
  const weft::Node c = graph.add_node([&] { order.add('c'); });
  graph.add_edge(a, b);
  graph.add_edge(b, c);
  graph.add_edge(a, graph.add_node([&] { order.add('H'); }, at(weft::Priority::High)));
  graph.add_edge(a, graph.add_node([&] { order.add('H'); }, at(weft::Priority::High)));
  weft::Run run = graph.run(pool);
  await_or_die(run, "chain behind High", patience(30));
  run.wait();
  CHECK(order.letters() == "aHHbc");
}

TEST_CASE("on one worker, default roots claimed in a batch wait behind High roots") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  Order order;
  weft::TaskGraph graph;
  for (int i = 0; i < 3; ++i) (void)graph.add_node([&] { order.add('H'); }, at(weft::Priority::High));
  for (int i = 0; i < 6; ++i) (void)graph.add_node([&] { order.add('N'); });
  for (int i = 0; i < 2; ++i) (void)graph.add_node([&] { order.add('L'); }, at(weft::Priority::Low));
  weft::Run run = graph.run(pool);
  await_or_die(run, "roots behind High", patience(30));
  run.wait();
  CHECK(order.letters() == "HHHNNNNNNLL");
}
