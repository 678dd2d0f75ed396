// TaskScope::run_and_wait(RunOptions) under ErrorPolicy::KeepGoing: a failed job skips only the jobs depending
// on it (their get() names the failed job); independent jobs, a parallel_for among them, all run.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "tests/scope/scope_test_support.hpp"

namespace {

using namespace weft::test;

TEST_CASE("KeepGoing: jobs after a failed job are skipped and say which job failed; the others run") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("keep going", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskScope scope{pool};
    std::atomic<int> sum{0};
    auto compile = scope.submit([]() -> int { throw std::runtime_error("compile error"); }, {.name = "compile"});
    auto link = scope.then(compile, [](int x) { return x + 1; }, {.name = "link"});
    auto package = scope.then(link, [](int x) { return x * 2; }, {.name = "package"});
    auto docs = scope.submit([] { return 7; }, {.name = "docs"});
    auto index = scope.parallel_for(weft::after(docs), 0, 100, [&](int i) { sum.fetch_add(i); });
    auto publish = scope.when_all({docs, index}, [] { return 1; }, {.name = "publish"});
    CHECK_THROWS_WITH_AS(scope.run_and_wait({.on_error = weft::ErrorPolicy::KeepGoing}), "compile error",
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(compile.get(), "compile error", std::runtime_error);
    CHECK_THROWS_WITH_AS(link.get(),
                         "weft::Job::get: job 'link' did not run: job 'compile', which it depends on, failed "
                         "(ErrorPolicy::KeepGoing skips the jobs after a failed one)",
                         weft::job_cancelled);
    CHECK_THROWS_WITH_AS(package.get(), doctest::Contains("job 'compile', which it depends on, failed"),
                         weft::job_cancelled);
    CHECK(docs.get() == 7);
    CHECK(sum.load() == 4950);
    CHECK(publish.get() == 1);
    CHECK(scope.stats().exceptions == 1);
  });
}

TEST_CASE("the default policy still cancels: a job after a failed one reads as cancelled, naming no job") {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  const Watchdog watchdog("cancel run", patience(30));
  weft::TaskScope scope{pool};
  auto bad = scope.submit([]() -> int { throw std::runtime_error("bad"); });
  auto after = scope.then(bad, [](int x) { return x; });
  CHECK_THROWS_AS(scope.run_and_wait(weft::RunOptions{}), std::runtime_error);
  CHECK_THROWS_WITH_AS(after.get(), doctest::Contains("was cancelled or failed"), weft::job_cancelled);
}

}  // namespace
