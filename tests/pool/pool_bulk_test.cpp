// Pool::post_bulk: every task of a batch runs exactly once, lvalue batches are copied and rvalue ones moved,
// an empty element refuses the whole batch naming it, and a closed pool says how much of a batch it took.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/pool/pool_test_support.hpp"

namespace {

using namespace weft::test;

// A batch of `n` copyable tasks, the i-th marking runs[i].
std::vector<std::function<void()>> marking_batch(RunCounts& runs) {
  std::vector<std::function<void()>> batch;
  for (std::size_t i = 0; i < runs.size(); ++i) batch.emplace_back([&runs, i] { runs.ran(i); });
  return batch;
}

std::string message_of(const std::exception& error) { return error.what(); }

TEST_CASE("post_bulk runs every task of a batch exactly once, from outside and from a worker") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("post_bulk exactly once", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    const std::size_t tasks = 4'000;
    RunCounts outside(tasks);
    pool.post_bulk(marking_batch(outside));
    RunCounts inside(tasks);
    pool.post([&pool, &inside] { pool.post_bulk(marking_batch(inside)); });
    pool.wait_idle();
    check_exactly_once(outside);
    check_exactly_once(inside);
  });
}

TEST_CASE("post_bulk copies an lvalue batch and moves from an rvalue one") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("post_bulk copy and move", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    std::atomic<int> runs{0};
    std::vector<std::function<void()>> copied(3, [&runs] { runs.fetch_add(1, std::memory_order_relaxed); });
    pool.post_bulk(copied);
    pool.post_bulk(copied);  // still holds its callables: posted twice
    for (const auto& task : copied) CHECK(static_cast<bool>(task));
    // Move-only callables: only an rvalue batch can hand them over.
    std::vector<std::unique_ptr<int>> owned;
    for (int i = 0; i < 4; ++i) owned.push_back(std::make_unique<int>(1));
    struct MoveOnly {
      std::unique_ptr<int> value;
      std::atomic<int>* runs;
      void operator()() { runs->fetch_add(*value, std::memory_order_relaxed); }
    };
    std::vector<MoveOnly> moved;
    for (auto& value : owned) moved.push_back(MoveOnly{std::move(value), &runs});
    pool.post_bulk(std::move(moved));
    pool.wait_idle();
    CHECK(runs.load() == 3 + 3 + 4);
  });
}

TEST_CASE("post_bulk(count, f) calls f(i) once for every i below count") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("post_bulk count", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    RunCounts runs(4'000);
    pool.post_bulk(runs.size(), [&runs](std::size_t i) { runs.ran(i); });
    pool.post_bulk(0, [&runs](std::size_t i) { runs.ran(i); });  // nothing
    pool.post_bulk(std::vector<std::function<void()>>{});        // nothing
    pool.wait_idle();
    check_exactly_once(runs);
  });
}

TEST_CASE("post_bulk honours the batch's options") {
  for_each_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("post_bulk options", workers), patience(30));
    // A long patience: no other worker may take an affinity task, however slowly the target starts.
    weft::Pool pool{weft::PoolOptions{.threads = workers, .affinity_patience = std::chrono::seconds(10)}};
    weft::TaskOptions options;
    options.affinity = workers - 1;
    std::atomic<int> elsewhere{0};
    const auto on_target = [&pool, &elsewhere, workers](std::size_t) {
      if (pool.current_worker() != workers - 1) elsewhere.fetch_add(1, std::memory_order_relaxed);
    };
    pool.post_bulk(16, on_target, options);
    pool.wait_idle();
    CHECK(elsewhere.load() == 0);
    options.affinity = workers;  // out of range: refused before anything is posted
    CHECK_THROWS_AS(pool.post_bulk(4, on_target, options), weft::invalid_option);
  });
}

TEST_CASE("post_bulk refuses a batch with an empty task, naming it, and posts none of it") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  RunCounts runs(4);
  auto batch = marking_batch(runs);
  batch[2] = nullptr;
  try {
    pool.post_bulk(batch);
    FAIL("an empty task was accepted");
  } catch (const std::invalid_argument& error) {
    CHECK(message_of(error).find("weft::Pool::post_bulk: task 2 of 4 is empty") != std::string::npos);
  }
  std::vector<void (*)()> pointers = {+[] {}, nullptr};
  CHECK_THROWS_WITH_AS(pool.post_bulk(pointers), doctest::Contains("task 1 of 2 is empty"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(pool.post_bulk(3, std::function<void(std::size_t)>{}),
                       doctest::Contains("weft::Pool::post_bulk"), std::invalid_argument);
  pool.wait_idle();
  for (std::size_t i = 0; i < runs.size(); ++i) CHECK(runs.count(i) == 0);
}

TEST_CASE("post_bulk on a closed pool says how many of the batch it accepted") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  (void)pool.shutdown();
  RunCounts runs(3);
  CHECK_THROWS_WITH_AS(pool.post_bulk(marking_batch(runs)),
                       doctest::Contains("post_bulk: the pool is shut down (or shutting down): 0 of 3 tasks"),
                       weft::pool_closed);
  CHECK_THROWS_WITH_AS(pool.post_bulk(5, [&runs](std::size_t i) { runs.ran(i % 3); }),
                       doctest::Contains("0 of 5 tasks were accepted"), weft::pool_closed);
  for (std::size_t i = 0; i < runs.size(); ++i) CHECK(runs.count(i) == 0);
}

}  // namespace
