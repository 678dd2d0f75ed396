// weft::Semaphore on TaskScope jobs (NodeOptions::semaphores): submitted jobs, continuations and parallel_for
// jobs of one scope, and the jobs of two scopes at once, never hold more units than a semaphore's count. A
// parallel_for job takes its units once, for the whole job: its chunks run inside them.
#include <doctest/doctest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "weft/semaphore.hpp"

namespace {

using namespace weft::test;

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

TEST_CASE("TaskScope jobs sharing a semaphore: at most count at once, each job once, units given back") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("scope semaphore", workers), patience(60));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::Semaphore db{2};
    InFlight in_flight;
    constexpr int kJobs = 100;
    std::atomic<int> ran{0};
    const weft::NodeOptions options{.semaphores = {&db}};
    // Two scopes run at once on the same semaphore.
    weft::TaskScope first{pool};
    weft::TaskScope second{pool};
    std::vector<weft::Job<int>> jobs;
    for (int i = 0; i < kJobs; ++i) {
      weft::TaskScope& scope = i % 2 == 0 ? first : second;
      jobs.push_back(scope.submit(
          [&, i] {
            in_flight.enter();
            busy_work(500);
            in_flight.leave();
            ran.fetch_add(1);
            return i;
          },
          options));
    }
    // A continuation taking both units: it runs alone.
    auto both = first.then(
        jobs[0],
        [&](int x) {
          in_flight.enter();
          in_flight.enter();
          in_flight.leave();
          in_flight.leave();
          return x + 1;
        },
        weft::NodeOptions{.semaphores = {&db, &db}});
    // A parallel_for job holds its one unit while all its chunks run: the chunks count as one.
    std::vector<int> v(10'000, 1);
    auto loop = second.parallel_for(
        v.begin(), v.end(), [](int& x) { x *= 2; }, weft::LoopOptions{.semaphores = {&db}});
    auto plain = second.submit([] {});  // a job without semaphores beside them
    first.run();
    second.run();
    CHECK(first.wait() == weft::RunStatus::Completed);
    CHECK(second.wait() == weft::RunStatus::Completed);
    CHECK(ran.load() == kJobs);
    CHECK(both.get() == 1);
    for (int i = 0; i < kJobs; ++i) CHECK(jobs[static_cast<std::size_t>(i)].get() == i);
    loop.get();
    plain.get();
    for (const int x : v) REQUIRE(x == 2);
    CHECK(in_flight.max() <= 2);
    CHECK(db.available() == 2);
    CHECK(db.waiting() == 0);
  });
}

TEST_CASE("a TaskScope job's bad semaphores list is refused naming the call and the job") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskScope scope{pool};
  weft::Semaphore one{1};
  try {
    (void)scope.submit([] {}, weft::NodeOptions{.name = "query", .semaphores = {&one, &one}});
    FAIL("not refused");
  } catch (const weft::invalid_option& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(contains(message, "weft::TaskScope::submit"));
    CHECK(contains(message, "job 'query'"));
    CHECK(contains(message, "NodeOptions::semaphores[1]"));
  }
}

}  // namespace
