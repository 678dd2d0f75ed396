// A small build with ErrorPolicy::KeepGoing: one target fails to compile, the targets that need it are skipped,
// every other target is still built. The program prints each target's outcome (and, for a skipped one, the
// failed target that caused it) and checks them, exiting with 1 if any is not what the build's shape implies.
//
//   util.o   --+
//   parser.o --+-- libcore --+-- app     (skipped: needs libcore, which needs the failed parser.o)
//   log.o    --+             +-- tests   (skipped too)
//   docs                                 (independent: built)
//   net.o ------- libnet                 (independent of the failure: built)
//
// Built and run by weft's test suite (suite 'examples').
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <weft/pool.hpp>
#include <weft/task_graph.hpp>

namespace {

const char* state_name(weft::NodeState state) {
  switch (state) {
    case weft::NodeState::NotRun:
      return "not run";
    case weft::NodeState::Ran:
      return "built";
    case weft::NodeState::Failed:
      return "FAILED";
    case weft::NodeState::Skipped:
      return "skipped";
    case weft::NodeState::Cancelled:
      return "cancelled";
    case weft::NodeState::Dropped:
      return "dropped";
  }
  return "?";
}

// One line of the build's report: what became of the target and, for a skipped one, which failure caused it.
std::string report_line(const weft::TaskGraph& build, const weft::Run& run, const std::string& name, weft::Node node) {
  const weft::NodeOutcome outcome = run.outcome(node);
  std::string line = name + ": " + state_name(outcome.state);
  if (outcome.failed_ancestor) line += " (because " + build.name(*outcome.failed_ancestor) + " failed)";
  if (outcome.start && outcome.end) {
    const auto took = std::chrono::duration_cast<std::chrono::microseconds>(*outcome.end - *outcome.start);
    line += ", " + std::to_string(took.count()) + " us";
  }
  return line;
}

}  // namespace

int main() {
  weft::Pool pool{weft::PoolOptions{.threads = 2}};
  weft::TaskGraph build;
  std::map<std::string, weft::Node> targets;
  const auto target = [&](const std::string& name, bool fails = false) {
    targets[name] = build.add_node(
        [name, fails] {
          if (fails) throw std::runtime_error(name + ": syntax error on line 42");
        },
        weft::NodeOptions{.name = name});
    return targets[name];
  };
  const weft::Node util = target("util.o");
  const weft::Node parser = target("parser.o", /*fails=*/true);
  const weft::Node log = target("log.o");
  const weft::Node libcore = target("libcore");
  const weft::Node app = target("app");
  const weft::Node tests = target("tests");
  const weft::Node docs = target("docs");
  const weft::Node net = target("net.o");
  const weft::Node libnet = target("libnet");
  build.add_edges(util, {libcore});
  build.add_edges(parser, {libcore});
  build.add_edges(log, {libcore});
  build.add_edges(libcore, {app, tests});
  build.add_edge(net, libnet);
  (void)docs;

  weft::Run run = build.run(pool, weft::RunOptions{.on_error = weft::ErrorPolicy::KeepGoing, .record_times = true});
  std::string first_error;
  try {
    (void)run.wait();  // rethrows the first failure, once every independent target has been built
  } catch (const std::exception& e) {
    first_error = e.what();
  }
  std::printf("first error: %s\n", first_error.c_str());

  const std::map<std::string, std::string> expected = {
      {"util.o", "built"},  {"parser.o", "FAILED"}, {"log.o", "built"}, {"libcore", "skipped"}, {"app", "skipped"},
      {"tests", "skipped"}, {"docs", "built"},      {"net.o", "built"}, {"libnet", "built"},
  };
  int wrong = first_error == "parser.o: syntax error on line 42" ? 0 : 1;
  for (const auto& [name, node] : targets) {
    const weft::NodeOutcome outcome = run.outcome(node);
    std::printf("  %s\n", report_line(build, run, name, node).c_str());
    if (expected.at(name) != state_name(outcome.state)) ++wrong;
    if (outcome.state == weft::NodeState::Skipped && outcome.failed_ancestor != parser) ++wrong;
  }
  if (wrong != 0) {
    std::printf("%d outcome(s) not as expected\n", wrong);
    return 1;
  }
  return 0;
}
