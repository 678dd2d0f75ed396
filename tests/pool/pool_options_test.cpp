// PoolOptions: every bad field is refused naming the field; thread names, pinning and nice take effect on the
// workers; stats() adds up.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#if !defined(_WIN32)
#include <sys/resource.h>
#endif

#include "tests/pool/pool_test_support.hpp"
#include "tests/support/platform.hpp"

namespace {

using namespace weft::test;
using namespace std::chrono_literals;

std::vector<unsigned> allowed_cpus() {
  std::vector<unsigned> cpus = thread_cpus();
  REQUIRE(!cpus.empty());
  return cpus;
}

// Runs probe() once on every worker (by affinity, with a patience nobody outlasts) and returns the results
// by worker index.
template <class Probe>
auto on_every_worker(weft::Pool& pool, Probe probe) {
  using R = decltype(probe());
  std::vector<weft::Future<std::pair<std::optional<unsigned>, R>>> futures;
  for (unsigned w = 0; w < pool.size(); ++w) {
    weft::TaskOptions options;
    options.affinity = w;
    futures.push_back(pool.submit_with(options, [&pool, probe] { return std::pair(pool.current_worker(), probe()); }));
  }
  std::vector<R> results;
  for (unsigned w = 0; w < pool.size(); ++w) {
    auto [worker, value] = futures[w].get();
    CHECK(worker == std::optional<unsigned>(w));
    results.push_back(std::move(value));
  }
  return results;
}

// The invalid_option message for these options ("" if the pool was built).
std::string refusal(weft::PoolOptions options) {
  try {
    weft::Pool pool{std::move(options)};
  } catch (const weft::invalid_option& e) {
    return e.what();
  }
  return "";
}

static_assert(std::is_copy_constructible_v<weft::PoolOptions> && std::is_copy_assignable_v<weft::PoolOptions>);
static_assert(std::is_nothrow_move_constructible_v<weft::PoolOptions>);

TEST_CASE("one PoolOptions is the base of two pools: the copies share its hooks, and each pool's fire") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("copied PoolOptions", workers), patience(30));
    std::atomic<int> starts{0};
    std::atomic<int> base_ends{0};
    std::atomic<int> other_ends{0};
    std::atomic<int> errors{0};
    auto weight = std::make_unique<int>(1);  // a move-only hook stays a valid hook
    const weft::PoolOptions base{
        .threads = workers,
        .on_error = [&errors](std::exception_ptr) { errors.fetch_add(1); },
        .on_task_start = [&starts, w = std::move(weight)](const weft::TaskEvent&) { starts.fetch_add(*w); },
        .on_task_end = [&base_ends](const weft::TaskEvent&) { base_ends.fetch_add(1); },
    };
    weft::PoolOptions other = base;
    CHECK(other.on_task_start.shares_with(base.on_task_start));
    other.name = "other";
    other.on_task_end = [&other_ends](const weft::TaskEvent&) { other_ends.fetch_add(1); };  // this copy only
    CHECK_FALSE(other.on_task_end.shares_with(base.on_task_end));
    constexpr int kFirst = 30;
    constexpr int kSecond = 20;
    {
      weft::Pool first{base};
      weft::Pool second{other};
      for (int i = 0; i < kFirst; ++i) first.post([] {});
      for (int i = 0; i < kSecond; ++i) second.post([] {});
      first.post([] { throw std::runtime_error("first"); });
      second.post([] { throw std::runtime_error("second"); });
      first.wait_idle();
      second.wait_idle();
      CHECK(first.take_errors().empty());  // handed to the shared on_error
      CHECK(second.take_errors().empty());
    }
    CHECK(starts.load() == kFirst + kSecond + 2);
    CHECK(base_ends.load() == kFirst + 1);
    CHECK(other_ends.load() == kSecond + 1);
    CHECK(errors.load() == 2);
    CHECK(base.on_task_start);  // the base still holds its hooks: a pool made from it copied them
  });
}

TEST_CASE("every bad PoolOptions field is refused with invalid_option naming it") {
  const Watchdog watchdog("bad options", patience(30));
  const auto contains = [](const std::string& text, const char* part) {
    INFO("message: " << text);
    CHECK(text.find(part) != std::string::npos);
  };
  contains(refusal({.threads = 4097}), "threads = 4097");
  contains(refusal({.nice = -21}), "nice = -21");
  contains(refusal({.nice = 20}), "nice = 20");
  contains(refusal({.name = ""}), "name");
  contains(refusal({.spin_before_park = -1us}), "spin_before_park");
  contains(refusal({.spin_before_park = 2s}), "spin_before_park");
  contains(refusal({.affinity_patience = -1us}), "affinity_patience");
  contains(refusal({.affinity_patience = 10s + 1us}), "affinity_patience = 10000001us: must be in 0..10s");
  contains(refusal({.pinning = weft::Pinning::CpuList}), "cpus is empty");
  contains(refusal({.pinning = static_cast<weft::Pinning>(7)}), "pinning = 7");
  const auto allowed = allowed_cpus();
  const unsigned not_ours = allowed.back() + 1;  // above every CPU of the mask
  const std::string outside = refusal({.pinning = weft::Pinning::CpuList, .cpus = {allowed.front(), not_ours}});
  contains(outside, "cpus");
  contains(outside, ("CPU " + std::to_string(not_ours)).c_str());
  contains(refusal({.cpus = {allowed.front()}}), "cpus is set, but pinning is not Pinning::CpuList");
  contains(refusal({.pinning = weft::Pinning::OnePerCpu, .cpus = {allowed.front()}}), "cpus is set");

  weft::Pool pool{weft::PoolOptions{.threads = 4}};
  weft::TaskOptions far;
  far.affinity = 7;
  std::string message;
  try {
    pool.post([] {}, far);
  } catch (const weft::invalid_option& e) {
    message = e.what();
  }
  contains(message, "affinity = 7");
  CHECK_THROWS_AS((void)pool.submit_with(far, [] { return 1; }), weft::invalid_option);
  CHECK_THROWS_AS((void)pool.try_post([] {}, far), weft::invalid_option);
  pool.wait_idle();
  CHECK(pool.stats().in_flight == 0);  // nothing refused was half-accepted
}

TEST_CASE("workers are named <name>-<index>, visible to the OS") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("thread names", workers), patience(30));
    {
      weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = 10s}};
      const auto names = on_every_worker(pool, thread_name);
      for (unsigned w = 0; w < workers; ++w) CHECK(names[w] == "weft-" + std::to_string(w));
    }
    weft::Pool pool{weft::PoolOptions{.threads = workers, .name = "averylongname", .affinity_patience = 10s}};
    const auto names = on_every_worker(pool, thread_name);
    // Linux keeps 15 characters.
    CHECK(names.back() == ("averylongname-" + std::to_string(workers - 1)).substr(0, 15));
  });
}

TEST_CASE("pinning OnePerCpu and CpuList restrict each worker to its CPU") {
  const auto allowed = allowed_cpus();
  for_each_worker_count([&allowed](unsigned workers) {
    const Watchdog watchdog(named("pinning", workers), patience(30));
    {
      weft::Pool pool{
          weft::PoolOptions{.threads = workers, .pinning = weft::Pinning::OnePerCpu, .affinity_patience = 10s}};
      const auto cpus = on_every_worker(pool, thread_cpus);
      for (unsigned w = 0; w < workers; ++w) CHECK(cpus[w] == std::vector<unsigned>{allowed[w % allowed.size()]});
    }
    const std::vector<unsigned> list = {allowed.back(), allowed.front()};
    weft::Pool pool{weft::PoolOptions{
        .threads = workers, .pinning = weft::Pinning::CpuList, .cpus = list, .affinity_patience = 10s}};
    const auto cpus = on_every_worker(pool, thread_cpus);
    for (unsigned w = 0; w < workers; ++w) CHECK(cpus[w] == std::vector<unsigned>{list[w % list.size()]});
  });
}

TEST_CASE("nice is applied to every worker, or refused naming it") {
  const Watchdog watchdog("nice", patience(30));
#if defined(_WIN32)
  // Windows has no nice value: src/windows/os_thread.cpp maps it onto the nearest of the seven thread priorities.
  weft::Pool pool{weft::PoolOptions{.threads = 4, .nice = 3, .affinity_patience = 10s}};
  const auto values = on_every_worker(pool, [] { return GetThreadPriority(GetCurrentThread()); });
  for (const int v : values) CHECK(v == THREAD_PRIORITY_BELOW_NORMAL);
  CHECK(GetThreadPriority(GetCurrentThread()) == THREAD_PRIORITY_NORMAL);  // this thread is untouched
#else
  const int current = getpriority(PRIO_PROCESS, 0);
  const int nicer = std::min(current + 3, 19);  // raising nice needs no privilege
  weft::Pool pool{weft::PoolOptions{.threads = 4, .nice = nicer, .affinity_patience = 10s}};
  const auto values = on_every_worker(pool, [] { return getpriority(PRIO_PROCESS, 0); });
  for (const int v : values) CHECK(v == nicer);
  CHECK(getpriority(PRIO_PROCESS, 0) == current);  // this thread is untouched

  // Lowering it needs CAP_SYS_NICE: either it works, or the failure names the option and the OS's reason.
  try {
    weft::Pool greedy{weft::PoolOptions{.threads = 2, .nice = -20, .affinity_patience = 10s}};
    for (const int v : on_every_worker(greedy, [] { return getpriority(PRIO_PROCESS, 0); })) CHECK(v == -20);
  } catch (const weft::invalid_option& e) {
    CHECK(std::string(e.what()).find("nice = -20") != std::string::npos);
  }
#endif
}

TEST_CASE("stats: executed adds up, steals are counted, nothing queued once idle") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("stats", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    Gate gate;
    occupy_all_workers(pool, gate);
    constexpr std::size_t kQueued = 1000;
    for (std::size_t i = 0; i < kQueued; ++i) pool.post([] {});
    auto stats = pool.stats();
    CHECK(stats.queued == kQueued);
    CHECK(stats.in_flight == kQueued + workers);
    gate.open();
    pool.wait_idle();

    // One task spawns 100 children into its own deque and then spins until they are done: only thieves can
    // run them, so with more than one worker every one of them is a steal.
    std::atomic<int> children{0};
    constexpr int kChildren = 100;
    if (workers > 1) {
      pool.post([&pool, &children] {
        for (int i = 0; i < kChildren; ++i) pool.post([&children] { children.fetch_add(1); });
        while (children.load() < kChildren) std::this_thread::yield();
      });
      pool.wait_idle();
    }
    stats = pool.stats();
    REQUIRE(stats.workers.size() == workers);
    std::uint64_t stolen = 0;
    for (const auto& w : stats.workers) {
      stolen += w.stolen;
      CHECK(w.steal_attempts >= w.stolen);
      CHECK(w.wakeups <= w.parks);
      CHECK(w.parks <= w.wakeups + 1);  // at most the current sleep is unfinished
    }
    const std::uint64_t expected = workers + kQueued + (workers > 1 ? kChildren + 1 : 0);
    CHECK(total_executed(stats) == expected);
    CHECK(stolen == (workers > 1 ? static_cast<std::uint64_t>(kChildren) : 0));
    CHECK(stats.queued == 0);
    CHECK(stats.in_flight == 0);
    CHECK(stats.dropped == 0);
    CHECK(stats.errors == 0);
  });
}

}  // namespace
