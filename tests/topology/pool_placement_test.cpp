// Pools under every placement policy on this machine: each worker runs where weft::placement put it, describe()
// says so, tasks spawned from tasks (stolen by distance where the order has tiers) each run exactly once, and
// bad options are refused naming them.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/platform.hpp"
#include "tests/support/sanitizers.hpp"
#include "tests/support/stress.hpp"
#include "tests/support/watchdog.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/task_group.hpp"
#include "weft/topology.hpp"

namespace {

using namespace std::chrono_literals;

// Each worker's CPUs as the OS sees them, by worker index (each probe sent by affinity, with a patience nobody
// outlasts).
std::vector<std::vector<unsigned>> worker_cpus(weft::Pool& pool) {
  std::vector<weft::Future<std::vector<unsigned>>> futures;
  for (unsigned w = 0; w < pool.size(); ++w) {
    weft::TaskOptions options;
    options.affinity = w;
    futures.push_back(pool.submit_with(options, [&pool, w] {
      CHECK(pool.current_worker() == std::optional<unsigned>(w));
      return weft::test::thread_cpus();
    }));
  }
  std::vector<std::vector<unsigned>> out;
  for (auto& future : futures) out.push_back(future.get());
  return out;
}

// A binary tree of tasks, each spawned from its parent's task: the idle workers steal the subtrees.
void tree(weft::Pool& pool, unsigned depth, std::atomic<std::uint64_t>& leaves) {
  if (depth == 0) {
    leaves.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  weft::TaskGroup group(pool);
  group.run([&pool, depth, &leaves] { tree(pool, depth - 1, leaves); });
  tree(pool, depth - 1, leaves);
  group.wait();
}

const char* policy_name(weft::Pinning pinning) {
  switch (pinning) {
    case weft::Pinning::OnePerCpu:
      return "OnePerCpu";
    case weft::Pinning::Cores:
      return "Cores";
    case weft::Pinning::Compact:
      return "Compact";
    case weft::Pinning::Spread:
      return "Spread";
    default:
      return "?";
  }
}

}  // namespace

TEST_CASE("every policy pins each worker where placement says, and runs spawned tasks exactly once") {
  const auto machine = weft::Topology::current();
  if (!machine.has_facts()) {
    MESSAGE("skipped: weft knows no cores or nodes of this machine (flat topology)");
    return;
  }
  const unsigned depth = weft::test::reduced_runs() ? 8 : 12;
  for (const weft::Pinning policy :
       {weft::Pinning::OnePerCpu, weft::Pinning::Cores, weft::Pinning::Compact, weft::Pinning::Spread}) {
    for (const unsigned workers : {1U, 2U, 4U, 8U}) {
      const std::string name = std::string(policy_name(policy)) + " x" + std::to_string(workers);
      INFO(name);
      const weft::test::Watchdog watchdog(name, weft::test::patience(30));
      const weft::PoolOptions options{.threads = workers, .pinning = policy, .affinity_patience = 10s};
      const auto expected = weft::placement(machine, options, workers);
      weft::Pool pool{options};
      CHECK(pool.placement() == expected);
      CHECK(worker_cpus(pool) == expected);
      const std::string description = pool.describe();
      CHECK(description.find("pinning " + std::string(policy_name(policy))) != std::string::npos);
      CHECK(description.find("worker " + std::to_string(workers - 1) + ": CPU " +
                             std::to_string(expected.back().front())) != std::string::npos);
      for (int round = 0; round < 3; ++round) {
        std::atomic<std::uint64_t> leaves{0};
        pool.submit([&] { tree(pool, depth, leaves); }).get();
        CHECK(leaves.load() == (std::uint64_t{1} << depth));
      }
    }
  }
}

TEST_CASE("a pool on one NUMA node runs on that node's CPUs, one worker per CPU by default") {
  const auto machine = weft::Topology::current();
  if (!machine.has_facts()) {
    MESSAGE("skipped: weft knows no cores or nodes of this machine (flat topology)");
    return;
  }
  const weft::test::Watchdog watchdog("numa_node", weft::test::patience(30));
  const auto node = machine.node_cpus(0);
  weft::Pool floating{weft::PoolOptions{.numa_node = 0, .affinity_patience = 10s}};
  CHECK(floating.size() == node.size());
  for (const auto& cpus : worker_cpus(floating)) CHECK(cpus == node);
  CHECK(floating.describe().find("NUMA node 0") != std::string::npos);

  weft::Pool pinned{
      weft::PoolOptions{.threads = 3, .pinning = weft::Pinning::Cores, .numa_node = 0, .affinity_patience = 10s}};
  for (const auto& cpus : worker_cpus(pinned)) {
    REQUIRE(cpus.size() == 1);
    CHECK(machine.find(cpus.front())->numa_node == 0);
  }
}

TEST_CASE("an unpinned pool says so and reports no CPUs") {
  if (const char* policy = std::getenv("WEFT_PINNING"); policy != nullptr && *policy != '\0') {
    MESSAGE("skipped: WEFT_PINNING pins every pool that chose no pinning");
    return;
  }
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  CHECK(pool.placement() == std::vector<std::vector<unsigned>>(2));
  CHECK(pool.describe().find("workers unpinned, stealing at random") != std::string::npos);
}

TEST_CASE("a pool refuses a node out of range and CpuList with a node, naming them") {
  const auto machine = weft::Topology::current();
  const unsigned nodes = machine.numa_nodes();
  auto refusal = [](const weft::PoolOptions& options) -> std::string {
    try {
      weft::Pool pool{options};
    } catch (const weft::invalid_option& error) {
      return error.what();
    }
    return "no error";
  };
  const std::string out_of_range = refusal({.threads = 1, .numa_node = nodes});
  INFO(out_of_range);
  if (machine.has_facts()) {
    CHECK(out_of_range.find("weft::PoolOptions::numa_node = " + std::to_string(nodes) + ": this machine has") !=
          std::string::npos);
    const std::string list = refusal(
        {.threads = 1, .pinning = weft::Pinning::CpuList, .cpus = {machine.cpus().front().cpu}, .numa_node = 0});
    CHECK(list.find("with pinning = Pinning::CpuList") != std::string::npos);
  } else {
    CHECK(out_of_range.find("weft knows no NUMA nodes") != std::string::npos);
  }
  const std::string bad = refusal({.threads = 1, .pinning = static_cast<weft::Pinning>(9)});
  CHECK(bad.find("pinning = 9: not a weft::Pinning") != std::string::npos);
}
