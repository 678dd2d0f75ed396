// TaskScope::dump (and TaskGraph::dump): jobs and dependencies as Graphviz DOT. The output is parsed back
// (every job by name, every dependency as an edge between the right names, nothing more), and rendered with
// `dot -Tsvg` when Graphviz is installed (WEFT_DOT names the program; the test says it skipped that part
// otherwise).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/scope/scope_test_support.hpp"
#include "weft/semaphore.hpp"
#include "weft/task_graph.hpp"

namespace {

using namespace weft::test;

struct Dot {
  std::map<std::string, std::string> label_of;          // node id -> label
  std::set<std::pair<std::string, std::string>> edges;  // by label
  bool well_formed = false;
};

// "n<digits>" at the start of `text`: its length, or 0. (std::regex is avoided: g++ 12 warns inside it under
// ASan, and the build treats warnings as errors.)
std::size_t node_id_length(std::string_view text) {
  if (text.empty() || text[0] != 'n') return 0;
  std::size_t i = 1;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  return i > 1 ? i : 0;
}

// Reads the DOT TaskGraph::dump writes: a "digraph" header, node lines `  n<i> [label="..."];` (quotes and
// backslashes escaped in the label), edge lines `  n<i> -> n<j>;`, a closing brace; anything else makes it
// ill-formed.
Dot parse(const std::string& text) {
  Dot dot;
  std::istringstream in(text);
  std::string line;
  std::vector<std::pair<std::string, std::string>> edge_ids;
  if (!std::getline(in, line) || line != "digraph weft {") return dot;
  bool closed = false;
  while (std::getline(in, line)) {
    if (closed) return dot;  // text after the closing brace
    if (line == "}") {
      closed = true;
      continue;
    }
    std::string_view rest(line);
    if (!rest.starts_with("  ")) return dot;
    rest.remove_prefix(2);
    const std::size_t id = node_id_length(rest);
    if (id == 0) return dot;
    const std::string from(rest.substr(0, id));
    rest.remove_prefix(id);
    if (rest.starts_with(" -> ")) {
      rest.remove_prefix(4);
      const std::size_t to = node_id_length(rest);
      if (to == 0 || rest.substr(to) != ";") return dot;
      edge_ids.emplace_back(from, std::string(rest.substr(0, to)));
      continue;
    }
    constexpr std::string_view kOpen = " [label=\"";
    constexpr std::string_view kClose = "\"];";
    if (!rest.starts_with(kOpen) || !rest.ends_with(kClose)) return dot;
    rest.remove_prefix(kOpen.size());
    rest.remove_suffix(kClose.size());
    for (std::size_t i = 0; i < rest.size(); ++i) {  // every quote inside is escaped
      if (rest[i] == '\\') {
        ++i;
      } else if (rest[i] == '"') {
        return dot;
      }
    }
    if (!dot.label_of.emplace(from, std::string(rest)).second) return dot;  // a node id twice
  }
  for (const auto& [from, to] : edge_ids) {
    if (!dot.label_of.contains(from) || !dot.label_of.contains(to)) return dot;  // an edge to no node
    dot.edges.emplace(dot.label_of[from], dot.label_of[to]);
  }
  dot.well_formed = closed;
  return dot;
}

std::set<std::string> labels(const Dot& dot) {
  std::set<std::string> out;
  for (const auto& [id, label] : dot.label_of) out.insert(label);
  return out;
}

TEST_CASE("dump writes every job by name and every dependency as an edge, before and after the run") {
  for_each_scope_worker_count([](unsigned workers) {
    const Watchdog watchdog(named("scope dump", workers), patience(30));
    weft::Pool pool{weft::PoolOptions{.threads = workers}};
    weft::TaskScope scope{pool};
    auto load = scope.submit([] { return 20; }, weft::NodeOptions{.name = "load \"config\""});
    auto parse_job = scope.then(
        load, [](int x) { return x + 1; }, weft::NodeOptions{.name = "parse"});
    auto unnamed = scope.then(load, [](int x) { return x * 2; });
    auto both = scope.when_all(
        {parse_job, unnamed}, [](std::vector<int> v) { return v[0] + v[1]; },
        weft::NodeOptions{.name = "join", .priority = weft::Priority::High});
    std::vector<int> data(100, 1);
    auto doubled = scope.parallel_for(
        weft::after(both), data.begin(), data.end(), [](int& x) { x *= 2; }, weft::LoopOptions{.name = "double"});
    int next = 0;
    auto numbers = scope.source(
        [&next]() -> std::optional<int> {
          if (next == 10) return std::nullopt;
          return next++;
        },
        weft::StageOptions{.name = "numbers"});
    int sum = 0;
    auto drain = scope.sink(numbers, [&sum](int v) { sum += v; });
    (void)doubled;
    (void)drain;

    std::ostringstream before;
    scope.dump(before);
    scope.run_and_wait();
    std::ostringstream after;
    scope.dump(after);
    CHECK(before.str() == after.str());
    CHECK(both.get() == 61);
    CHECK(sum == 45);

    const Dot dot = parse(before.str());
    INFO(before.str());
    REQUIRE(dot.well_formed);
    CHECK(dot.label_of.size() == scope.size());
    // A label carries the job's non-default options after a (DOT-escaped) line break.
    const std::set<std::string> expected_labels = {"load \\\"config\\\"",  "parse",  "job 2",
                                                   "join\\npriority High", "double", "numbers"};
    CHECK(labels(dot) == expected_labels);
    const std::set<std::pair<std::string, std::string>> expected_edges = {
        {"load \\\"config\\\"", "parse"},  {"load \\\"config\\\"", "job 2"},   {"parse", "join\\npriority High"},
        {"job 2", "join\\npriority High"}, {"join\\npriority High", "double"},
    };
    CHECK(dot.edges == expected_edges);
  });
}

TEST_CASE("an empty scope dumps an empty digraph") {
  weft::Pool pool{weft::PoolOptions{.threads = 1}};
  weft::TaskScope scope{pool};
  std::ostringstream out;
  scope.dump(out);
  CHECK(out.str() == "digraph weft {\n}\n");
}

// The program named by WEFT_DOT (Graphviz's dot, when meson found it and this program can start it), or null: the
// caller then skips, saying so (and why, from WEFT_DOT_SKIPPED when meson set it).
const char* dot_program() {
  const char* dot = std::getenv("WEFT_DOT");
  if (dot == nullptr || *dot == '\0') {
    if (const char* why = std::getenv("WEFT_DOT_SKIPPED"); why != nullptr && *why != '\0') {
      MESSAGE("skipped: " << why);
    } else {
      MESSAGE("skipped: Graphviz's dot was not found when the tests were configured (WEFT_DOT unset)");
    }
    return nullptr;
  }
  return dot;
}

// What `dot -Tsvg` makes of what `dump` writes; CHECKs that dot succeeded.
template <class Dump>
std::string render_svg(const char* dot, Dump dump) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto stem = "weft_dump_" + std::to_string(std::random_device{}());
  const auto input = dir / (stem + ".dot");
  const auto output = dir / (stem + ".svg");
  {
    std::ofstream file(input);
    dump(file);
  }
  const std::string command = std::string("'") + dot + "' -Tsvg '" + input.string() + "' -o '" + output.string() + "'";
  const int status = std::system(command.c_str());
  CHECK(status == 0);
  std::ifstream svg(output);
  std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  std::filesystem::remove(input);
  std::filesystem::remove(output);
  return text;
}

TEST_CASE("the dump renders with Graphviz's dot -Tsvg (when installed)") {
  const char* dot = dot_program();
  if (dot == nullptr) return;
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskScope scope{pool};
  auto a = scope.submit([] { return 1; }, weft::NodeOptions{.name = "a \"quoted\" \\ name"});
  auto b = scope.then(
      a, [](int x) { return x; }, weft::NodeOptions{.name = "b", .concurrency = 2});
  scope.when_all({a, b}, [](std::vector<int>) {});
  const std::string text = render_svg(dot, [&](std::ostream& out) { scope.dump(out); });
  CHECK(text.find("<svg") != std::string::npos);
  CHECK(text.find("a &quot;quoted&quot; \\ name") != std::string::npos);
  scope.run_and_wait();
}

TEST_CASE("a TaskGraph's dump, with options, a condition and a module node, renders with dot (when installed)") {
  const char* dot = dot_program();
  if (dot == nullptr) return;
  weft::TaskGraph inner;
  (void)inner.add_node([] {}, weft::NodeOptions{.name = "inner step"});
  weft::Semaphore connection{1};
  weft::TaskGraph g;
  const weft::Node load = g.add_node([] {}, weft::NodeOptions{.name = "load", .priority = weft::Priority::High});
  const weft::Node parse = g.add_node(
      [](std::size_t) {}, weft::NodeOptions{.name = "parse", .concurrency = 2, .capacity = 8, .tokens = 16});
  const weft::Node again = g.add_condition([] { return 1; }, weft::NodeOptions{.name = "again?"});
  const weft::Node store = g.add_node([] {}, weft::NodeOptions{.name = "store", .semaphores = {&connection}});
  const weft::Node module = g.add_graph(inner, weft::NodeOptions{.name = "report"});
  g.add_edge(load, parse);
  g.add_edge(parse, again);
  g.add_edge(again, parse);  // weak: a loop through the condition
  g.add_edge(again, store);  // weak
  g.add_edge(store, module);
  const std::string text = render_svg(dot, [&](std::ostream& out) { g.dump(out); });
  CHECK(text.find("<svg") != std::string::npos);
  for (const char* expected : {"load", "priority High", "parse", "concurrency 2, capacity 8, tokens 16", "again?",
                               "store", "1 semaphore unit", "report", "module: 1 node"})
    CHECK_MESSAGE(text.find(expected) != std::string::npos, expected);
  CHECK(text.find("stroke-dasharray") != std::string::npos);  // the weak edges, dashed
}

}  // namespace
