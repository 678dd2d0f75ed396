// weft::Trace: what a pool, a graph run and a pipeline record, read back from the Chrome Trace Event JSON.
// Every check parses the JSON (tests/support/json_reader.hpp, strict) and checks its structure, then that each
// task, node execution and stage call appears exactly once, on a named thread, nested where it ran.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "tests/pipeline/pipeline_test_support.hpp"
#include "tests/pool/pool_test_support.hpp"
#include "tests/support/json_reader.hpp"
#include "tests/support/platform.hpp"
#include "weft/errors.hpp"
#include "weft/pool.hpp"
#include "weft/task_graph.hpp"
#include "weft/task_scope.hpp"
#include "weft/trace.hpp"

namespace weft::test {
namespace {

// One event of a trace, as read back.
struct Event {
  std::string ph;
  std::string name;
  std::string cat;
  double tid = 0;
  double ts = 0;
  double dur = 0;
  json::Value args;
};

struct ReadTrace {
  std::vector<Event> events;                   // every non-metadata event
  std::map<double, std::string> thread_names;  // tid -> thread_name
  double kept = 0;
  double dropped = 0;

  [[nodiscard]] std::vector<Event> named(const std::string& cat, const std::string& name = "") const {
    std::vector<Event> out;
    for (const Event& e : events) {
      if (e.cat == cat && (name.empty() || e.name == name)) out.push_back(e);
    }
    return out;
  }
};

// Parses and checks the structure every trace must have; returns its events.
// `quiet`: nothing records meanwhile, so the JSON holds exactly what size() counts.
ReadTrace read(const Trace& trace, bool quiet = true) {
  const std::string text = trace.json();
  json::Value doc;
  REQUIRE_NOTHROW(doc = json::parse(text));
  REQUIRE(doc.is_object());
  REQUIRE(doc.has("traceEvents"));
  REQUIRE(doc.at("traceEvents").is_array());
  ReadTrace out;
  out.kept = doc.at("otherData").at("kept").number();
  out.dropped = doc.at("otherData").at("dropped").number();
  for (const json::Value& v : doc.at("traceEvents").array()) {
    REQUIRE(v.is_object());
    const std::string ph = v.at("ph").string();
    REQUIRE(v.at("pid").number() == 1);
    const double tid = v.at("tid").number();
    if (ph == "M") {
      if (v.at("name").string() == "thread_name") {
        REQUIRE(out.thread_names.count(tid) == 0);  // one name per thread
        out.thread_names[tid] = v.at("args").at("name").string();
      }
      continue;
    }
    Event e;
    e.ph = ph;
    e.tid = tid;
    e.name = v.at("name").string();
    e.cat = v.at("cat").string();
    e.ts = v.at("ts").number();
    REQUIRE(e.ts >= 0);
    if (ph == "X") {
      e.dur = v.at("dur").number();
      REQUIRE(e.dur >= 0);
    } else {
      REQUIRE(ph == "i");
      REQUIRE(v.at("s").string() == "t");
    }
    e.args = v.at("args");
    REQUIRE(e.args.is_object());
    out.events.push_back(std::move(e));
  }
  // Every event's thread is named (metadata come first, but the check does not rely on the order).
  for (const Event& e : out.events) REQUIRE(out.thread_names.count(e.tid) == 1);
  CHECK(out.kept == static_cast<double>(out.events.size()));
  if (quiet) CHECK(out.kept == static_cast<double>(trace.size()));
  return out;
}

// "prefix" + std::to_string(n), appended: GCC 12 at -O3 warns (-Wrestrict, falsely) on the operator+ form.
[[nodiscard]] std::string numbered(const char* prefix, std::uint64_t n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

[[nodiscard]] bool inside(const Event& inner, const Event& outer) {
  // Both rounded down to the nanosecond of one clock: containment is exact.
  return inner.tid == outer.tid && outer.ts <= inner.ts && inner.ts + inner.dur <= outer.ts + outer.dur + 1e-6;
}

TEST_CASE("a pool's trace: every task once, on the worker that ran it; steals and parks") {
  for (const unsigned workers : {1u, 2u, 4u}) {
    INFO("workers = " << workers);
    const Watchdog watchdog("trace pool", patience(60));
    auto trace = std::make_shared<Trace>();
    const std::uint64_t outer = stress_count(2'000);
    std::atomic<std::uint64_t> ran{0};
    std::vector<WorkerStats> stats;
    {
      Pool pool(PoolOptions{.threads = workers, .name = "traced", .trace = trace});
      for (std::uint64_t i = 0; i < outer; ++i) {
        pool.post([&pool, &ran] {
          // Two children each: spawned onto this worker's deque, where idle workers steal them.
          for (int c = 0; c < 2; ++c) pool.post([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
      pool.wait_idle();
      REQUIRE(ran.load() == 3 * outer);
      stats = pool.stats().workers;
      // Until every worker has slept once, so that each has a park event once the pool wakes it to stop.
      for (unsigned w = 0; w < workers; ++w) {
        while (pool.stats().workers[w].parks == 0) std::this_thread::yield();
      }
    }
    const ReadTrace got = read(*trace);
    CHECK(got.dropped == 0);
    const std::vector<Event> tasks = got.named("pool", "task");
    CHECK(tasks.size() == 3 * outer);
    // Per worker: as many task events as the tasks it executed, all on one thread named after it.
    std::map<unsigned, std::uint64_t> per_worker;
    std::map<unsigned, std::set<double>> tids_of;
    for (const Event& e : tasks) {
      REQUIRE(e.ph == "X");
      REQUIRE(e.args.at("worker").is_number());
      const auto w = static_cast<unsigned>(e.args.at("worker").number());
      REQUIRE(w < workers);
      CHECK(e.args.at("priority").string() == "Normal");
      ++per_worker[w];
      tids_of[w].insert(e.tid);
    }
    for (unsigned w = 0; w < workers; ++w) {
      INFO("worker " << w);
      CHECK(per_worker[w] == stats[w].executed);
      if (per_worker[w] == 0) continue;
      REQUIRE(tids_of[w].size() == 1);
      CHECK(got.thread_names.at(*tids_of[w].begin()) == numbered("traced-", w));
    }
    // Steals: one instant per task taken from another worker, with the victim.
    std::uint64_t stolen = 0;
    for (const WorkerStats& s : stats) stolen += s.stolen;
    const std::vector<Event> steals = got.named("pool", "steal");
    CHECK(steals.size() == stolen);
    for (const Event& e : steals) {
      CHECK(e.ph == "i");
      CHECK(e.args.at("victim").number() < workers);
    }
    // Parks: every worker slept at least once; each park says how long.
    std::set<double> parked;
    for (const Event& e : got.named("pool", "park")) {
      CHECK(e.ph == "i");
      CHECK(e.args.at("slept_us").number() >= 0);
      parked.insert(e.tid);
    }
    CHECK(parked.size() == workers);
  }
}

TEST_CASE("a run's trace: each node once per execution, by name; nested in its pool task") {
  for (const bool pool_traced : {false, true}) {
    INFO("traced through " << std::string(pool_traced ? "PoolOptions::trace" : "RunOptions::trace"));
    for_each_worker_count([pool_traced](unsigned workers) {
      const Watchdog watchdog("trace run", patience(60));
      auto trace = std::make_shared<Trace>();
      Pool pool(PoolOptions{.threads = workers, .trace = pool_traced ? trace : nullptr});
      TaskGraph g;
      // A layered DAG: 6 layers of 40, each node after two of the previous layer.
      constexpr std::uint32_t kLayers = 6;
      constexpr std::uint32_t kWidth = 40;
      std::vector<Node> nodes;
      for (std::uint32_t layer = 0; layer < kLayers; ++layer) {
        for (std::uint32_t i = 0; i < kWidth; ++i) {
          nodes.push_back(g.add_node([] {}, {.name = numbered("n", layer * kWidth + i)}));
          if (layer > 0) {
            g.add_edge(nodes[(layer - 1) * kWidth + i], nodes.back());
            g.add_edge(nodes[(layer - 1) * kWidth + (i + 7) % kWidth], nodes.back());
          }
        }
      }
      // A condition loop: "body" runs five times.
      std::atomic<int> turns{0};
      const Node body = g.add_node([&turns] { turns.fetch_add(1); }, {.name = "body"});
      const Node again = g.add_condition([&turns] { return turns.load() < 5 ? 0 : 1; }, {.name = "again"});
      g.add_edge(nodes.back(), body);
      g.add_edge(body, again);
      g.add_edge(again, body);  // weak: back to the body while the condition says 0
      const RunOptions options{.trace = pool_traced ? nullptr : trace};
      g.run(pool, options).wait();
      turns.store(0);
      g.run(pool, options).wait();
      pool.wait_idle();

      // A traced pool's workers go on recording parks while the JSON is read.
      const ReadTrace got = read(*trace, !pool_traced);
      CHECK(got.dropped == 0);
      std::map<std::string, int> count;
      std::map<std::string, std::set<double>> runs;
      for (const Event& e : got.named("node")) {
        REQUIRE(e.ph == "X");
        ++count[e.name];
        runs[e.name].insert(e.args.at("run").number());
      }
      for (std::uint32_t n = 0; n < kLayers * kWidth; ++n) {
        const std::string name = numbered("n", n);
        INFO(name);
        CHECK(count[name] == 2);        // once per run
        CHECK(runs[name].size() == 2);  // in two different runs
      }
      CHECK(count["body"] == 10);
      CHECK(count["again"] == 10);
      CHECK(count.size() == kLayers * kWidth + 2);
      if (!pool_traced) {
        CHECK(got.named("pool").empty());  // a run's own trace holds its nodes only
        return;
      }
      // Each node ran inside one pool task, on the same thread (a worker's, or the waiting thread's).
      const std::vector<Event> tasks = got.named("pool", "task");
      for (const Event& e : got.named("node")) {
        INFO(e.name);
        CHECK(std::any_of(tasks.begin(), tasks.end(), [&](const Event& t) { return inside(e, t); }));
      }
    });
  }
}

TEST_CASE("a pipeline's trace: every stage's body once per item, named after the stage") {
  for_each_mode([] {
    for (const unsigned workers : {1u, 2u, 4u}) {
      INFO("workers = " << workers);
      const Watchdog watchdog("trace pipeline", patience(60));
      auto trace = std::make_shared<Trace>();
      Pool pool(PoolOptions{.threads = workers});
      TaskScope scope{pool};
      const std::uint64_t items = stress_count(3'000);
      auto numbers = scope.source(numbers_below(items), {.name = "read"});
      auto squares = scope.stage(numbers, [](std::uint64_t x) { return x * x; }, {.name = "square", .concurrency = 3});
      std::atomic<std::uint64_t> sum{0};
      Job<void> done = scope.sink(squares, [&sum](std::uint64_t x) { sum.fetch_add(x); }, {.name = "add"});
      (void)done;
      scope.run_and_wait(RunOptions{.trace = trace});

      const ReadTrace got = read(*trace);
      for (const char* stage : {"read", "square", "add"}) {
        INFO("stage " << stage);
        std::vector<std::uint64_t> seen;
        for (const Event& e : got.named("stage", stage)) {
          REQUIRE(e.ph == "X");
          seen.push_back(static_cast<std::uint64_t>(e.args.at("item").number()));
        }
        std::sort(seen.begin(), seen.end());
        REQUIRE(seen.size() == items);
        for (std::uint64_t i = 0; i < items; ++i) REQUIRE(seen[i] == i);  // each item exactly once
      }
    }
  });
}

TEST_CASE("a fan-out stage's trace: one event for the item it takes, one per element it hands out") {
  for_each_mode([] {
    const Watchdog watchdog("trace fan-out", patience(60));
    auto trace = std::make_shared<Trace>();
    Pool pool(PoolOptions{.threads = 2});
    TaskScope scope{pool};
    constexpr std::uint64_t kItems = 200;
    auto numbers = scope.source(numbers_below(kItems), {.name = "read"});
    auto pairs = scope.fan_out(numbers,
                               [](std::uint64_t x) {
                                 return std::vector<std::uint64_t>{x, x};
                               },
                               {.name = "twice"});
    std::atomic<std::uint64_t> seen{0};
    Job<void> done = scope.sink(pairs, [&seen](std::uint64_t) { seen.fetch_add(1); }, {.name = "count"});
    (void)done;
    scope.run_and_wait(RunOptions{.trace = trace});
    REQUIRE(seen.load() == 2 * kItems);
    const ReadTrace got = read(*trace);
    CHECK(got.named("stage", "read").size() == kItems);
    CHECK(got.named("stage", "twice").size() == kItems + 2 * kItems);  // process per item, next per element
    CHECK(got.named("stage", "count").size() == 2 * kItems);
  });
}

TEST_CASE("a run on a traced pool records into RunOptions::trace instead when it has one") {
  auto pool_trace = std::make_shared<Trace>();
  auto run_trace = std::make_shared<Trace>();
  Pool pool(PoolOptions{.threads = 2, .trace = pool_trace});
  TaskGraph g;
  (void)g.add_node([] {}, {.name = "only"});
  g.run(pool, {.trace = run_trace}).wait();
  pool.wait_idle();
  CHECK(read(*run_trace).named("node", "only").size() == 1);
  // Not quiet: the pool's workers are alive, and one that wakes from a park records the park meanwhile.
  CHECK(read(*pool_trace, false).named("node").empty());
  CHECK(!read(*pool_trace, false).named("pool", "task").empty());  // the pool still records its tasks
}

TEST_CASE("pause and resume: events that start while paused are not kept") {
  auto trace = std::make_shared<Trace>();
  Pool pool(PoolOptions{.threads = 2, .trace = trace});
  TaskGraph g;
  (void)g.add_node([] {}, {.name = "while recording"});
  g.run(pool).wait();
  pool.wait_idle();
  trace->pause();
  CHECK(!trace->recording());
  // Not quiet: a worker that went to sleep before the pause records its park when it wakes (see below).
  const std::size_t tasks_before = read(*trace, false).named("pool", "task").size();
  for (int i = 0; i < 100; ++i) pool.post([] {});
  g.run(pool).wait();
  pool.wait_idle();
  // (A worker that went to sleep before the pause may still add its park event when it wakes: it started then.)
  CHECK(read(*trace, false).named("pool", "task").size() == tasks_before);
  CHECK(read(*trace, false).named("node").size() == 1);
  trace->resume();
  CHECK(trace->recording());
  g.run(pool).wait();
  pool.wait_idle();
  CHECK(read(*trace, false).named("node", "while recording").size() == 2);
}

TEST_CASE("pause and resume from another thread between batches of tasks: exactly the recorded batches kept") {
  // Another thread toggles the trace between batches of pool tasks, handing over with the test thread, so every
  // task of a batch starts after the toggle before it: a batch posted while recording is kept whole, one posted
  // while paused not at all. One task started while recording and ended after a pause() is kept too. (Toggling
  // freely instead keeps whatever the switch said as each task started: a burst of short tasks that runs while
  // the toggling thread waits for a CPU in its paused state keeps none, which is no loss.)
  const Watchdog watchdog("pause and resume from another thread", patience(120));
  auto trace = std::make_shared<Trace>();
  Pool pool(PoolOptions{.threads = 2, .trace = trace});
  constexpr int kBatches = 20;
  constexpr int kBatch = 1'000;
  std::atomic<int> asked{0};  // toggles asked for (the test thread), and done (the toggler), in turn
  std::atomic<int> done{0};
  std::thread toggler([&] {
    for (int t = 1; t <= kBatches; ++t) {
      while (asked.load(std::memory_order_acquire) < t) std::this_thread::yield();
      if (t % 2 == 1) {
        trace->pause();
      } else {
        trace->resume();
      }
      done.store(t, std::memory_order_release);
    }
  });
  const std::size_t before = read(*trace, false).named("pool", "task").size();
  // A task that starts while recording and ends after the first pause(): kept.
  std::atomic<bool> started{false};
  std::atomic<bool> paused{false};
  pool.post([&] {
    started.store(true);
    while (!paused.load()) std::this_thread::yield();
  });
  while (!started.load()) std::this_thread::yield();
  int kept_batches = 0;
  for (int t = 1; t <= kBatches; ++t) {
    asked.store(t, std::memory_order_release);
    while (done.load(std::memory_order_acquire) < t) std::this_thread::yield();
    paused.store(true);
    const bool recording = t % 2 == 0;
    CHECK(trace->recording() == recording);
    kept_batches += recording ? 1 : 0;
    for (int i = 0; i < kBatch; ++i) pool.post([] { busy_work(20); });
    pool.wait_idle();
  }
  toggler.join();
  // A task's event is appended just after the task counts as finished: wait until the last ones are in.
  const std::size_t expected = before + 1 + static_cast<std::size_t>(kept_batches) * kBatch;
  while (read(*trace, false).named("pool", "task").size() < expected) std::this_thread::yield();
  const ReadTrace read_back = read(*trace, false);
  const std::vector<Event> tasks = read_back.named("pool", "task");
  CHECK(tasks.size() == expected);
  for (const Event& e : tasks) {
    CHECK(e.ph == "X");
    CHECK(e.dur >= 0);
    CHECK(read_back.thread_names.count(e.tid) == 1);
  }
}

TEST_CASE("max_events bounds what is kept; the rest is counted as dropped") {
  constexpr std::size_t kMax = 1'500;  // more than one chunk, not a multiple of one
  auto trace = std::make_shared<Trace>(TraceOptions{.max_events = kMax});
  std::uint64_t posted = 0;
  {
    Pool pool(PoolOptions{.threads = 3, .trace = trace});
    posted = 5'000;
    for (std::uint64_t i = 0; i < posted; ++i) pool.post([] {});
    pool.wait_idle();
  }
  // At most kMax: room is granted to each thread a chunk at a time, so room another thread was granted and did not
  // fill is not used by others.
  CHECK(trace->size() <= kMax);
  CHECK(trace->size() > 0);
  CHECK(trace->dropped() > 0);
  const ReadTrace got = read(*trace);
  CHECK(got.events.size() == trace->size());
  // Every task event was either kept or dropped (steals and parks too compete for the room).
  CHECK(got.kept + got.dropped >= static_cast<double>(posted));
  CHECK(static_cast<double>(trace->dropped()) == got.dropped);
}

TEST_CASE("names are escaped: quotes, backslashes, control characters and UTF-8 read back as given") {
  const std::vector<std::string> names = {"quote \" in it",
                                          "back\\slash",
                                          "new\nline\ttab",
                                          std::string("ctl\x01\x1f"),
                                          "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82",
                                          "</script>"};
  auto trace = std::make_shared<Trace>();
  Pool pool(PoolOptions{.threads = 1});
  TaskGraph g;
  for (const std::string& name : names) (void)g.add_node([] {}, {.name = name});
  g.run(pool, {.trace = trace}).wait();
  std::multiset<std::string> got;
  for (const Event& e : read(*trace).named("node")) got.insert(e.name);
  CHECK(got == std::multiset<std::string>(names.begin(), names.end()));
}

TEST_CASE("bad input: a zero max_events, a file that cannot be written") {
  CHECK_THROWS_WITH_AS(Trace(TraceOptions{.max_events = 0}), doctest::Contains("max_events = 0"), invalid_option);
  const Trace trace;
  const std::string path = "/nonexistent-weft-dir/trace.json";
  try {
    trace.save(path);
    FAIL("save to an unwritable path did not throw");
  } catch (const std::system_error& e) {
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  // And a path that works: the file parses.
  const auto file = std::filesystem::temp_directory_path() /
                    (numbered("weft-trace-test-", weft::test::process_id()) + ".json");
  trace.save(file.string());
  CHECK(std::filesystem::file_size(file) > 0);
  std::filesystem::remove(file);
}

TEST_CASE("the JSON can be written while tasks record: it always parses") {
  const Watchdog watchdog("trace concurrent reader", patience(60));
  // A bound well below the default: the producer fills a million events within a second or two, and each read
  // then parses them all (30 reads of a full default trace took most of the watchdog's minute on a loaded
  // machine). Past the bound the reads go on seeing a trace that drops, which must parse as well.
  auto trace = std::make_shared<Trace>(TraceOptions{.max_events = 50'000});
  Pool pool(PoolOptions{.threads = 2, .trace = trace});
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    while (!stop.load()) {
      for (int i = 0; i < 100; ++i) pool.post([] {});
      std::this_thread::yield();
    }
  });
  const int reads = reduced_runs() ? 5 : 30;
  double last = 0;
  for (int i = 0; i < reads; ++i) {
    const ReadTrace got = read(*trace, false);
    CHECK(got.kept >= last);  // a later read sees at least what an earlier one did
    last = got.kept;
  }
  stop.store(true);
  producer.join();
  pool.wait_idle();
}

}  // namespace
}  // namespace weft::test
