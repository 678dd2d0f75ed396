// Looking at what was built: TaskGraph::dump and TaskScope::dump write Graphviz DOT (render it with
// `dot -Tsvg graph.dot -o graph.svg`). Nodes by name, with their options that are not the defaults; condition
// nodes as diamonds, their weak edges dashed; module nodes as 3-D boxes. The program checks what it wrote.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include <weft/weft.hpp>

int main() {
  weft::TaskGraph graph;
  weft::Node fetch = graph.add_node([] {}, {.name = "fetch", .priority = weft::Priority::High});
  weft::Node parse = graph.add_node([](std::size_t) {}, {.name = "parse", .concurrency = 4, .tokens = 64});
  weft::Node retry = graph.add_condition([] { return 1; }, {.name = "retry?"});
  weft::Node store = graph.add_node([] {}, {.name = "store"});
  graph.add_edge(fetch, parse);
  graph.add_edge(parse, retry);
  graph.add_edge(retry, fetch);  // successor 0 of the condition: go round again
  graph.add_edge(retry, store);  // successor 1: done
  std::ostringstream graph_dot;
  graph.dump(graph_dot);  // or graph.dump(std::cout)

  weft::Pool pool;
  weft::TaskScope scope{pool};
  weft::Job<int> a = scope.submit([] { return 1; }, {.name = "a"});
  weft::Job<int> b = scope.then(a, [](int x) { return x + 1; }, {.name = "b"});
  std::ostringstream scope_dot;
  scope.dump(scope_dot);
  scope.run_and_wait();

  std::cout << graph_dot.str() << scope_dot.str();
  const std::string text = graph_dot.str() + scope_dot.str();
  for (const char* expected : {"fetch\\npriority High", "parse\\nconcurrency 4, tokens 64", "shape=diamond",
                               "style=dashed", "\"a\"", "\"b\""}) {
    if (text.find(expected) == std::string::npos) {
      std::fprintf(stderr, "dump: FAILED: no %s in the dump\n", expected);
      return 1;
    }
  }
  return b.get() == 2 ? 0 : 1;
}
