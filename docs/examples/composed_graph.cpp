// Composed graphs: a "build" graph made of module nodes. `compile_unit` (a small graph of its own: parse,
// then two passes in parallel, then emit) is a node of `library`, which is a node of `build`, three levels
// deep; a second graph, `tests`, is a module beside it. Each inner graph keeps its own compiled layout and runs
// once per execution of its module node. Exits with 1 if anything ran out of order or the wrong number of
// times.
#include <atomic>
#include <cstdio>
#include <sstream>

#include <weft/pool.hpp>
#include <weft/task_graph.hpp>

int main() {
  weft::Pool pool;
  std::atomic<int> parsed{0}, optimised{0}, checked{0}, emitted{0}, linked{0}, tested{0}, out_of_order{0};

  weft::TaskGraph compile_unit;
  auto parse = compile_unit.add_node([&] { parsed.fetch_add(1); }, weft::NodeOptions{.name = "parse"});
  auto optimise = compile_unit.add_node([&] { optimised.fetch_add(1); }, weft::NodeOptions{.name = "optimise"});
  auto lint = compile_unit.add_node([&] { checked.fetch_add(1); }, weft::NodeOptions{.name = "lint"});
  auto emit = compile_unit.add_node(
      [&] {
        if (optimised.load() != parsed.load() || checked.load() != parsed.load()) out_of_order.fetch_add(1);
        emitted.fetch_add(1);
      },
      weft::NodeOptions{.name = "emit"});
  compile_unit.add_edges(parse, {optimise, lint});
  compile_unit.add_edge(optimise, emit);
  compile_unit.add_edge(lint, emit);

  weft::TaskGraph library;
  auto compile = library.add_graph(compile_unit, weft::NodeOptions{.name = "compile"});
  auto link = library.add_node(
      [&] {
        if (emitted.load() != linked.load() + 1) out_of_order.fetch_add(1);
        linked.fetch_add(1);
      },
      weft::NodeOptions{.name = "link"});
  library.add_edge(compile, link);

  weft::TaskGraph tests;
  tests.add_node([&] { tested.fetch_add(1); }, weft::NodeOptions{.name = "unit tests"});

  weft::TaskGraph build;
  auto lib = build.add_graph(library, weft::NodeOptions{.name = "library"});
  auto test = build.add_graph(tests, weft::NodeOptions{.name = "tests"});
  build.add_edge(lib, test);  // the tests need the library

  build.run(pool).wait();
  build.run_n(pool, 3).wait();  // and again, three times: every layout is reused
  if (emitted.load() != 4 || linked.load() != 4 || tested.load() != 4 || out_of_order.load() != 0) {
    std::fprintf(stderr, "composed_graph: FAILED (emitted %d, linked %d, tested %d, out of order %d)\n", emitted.load(),
                 linked.load(), tested.load(), out_of_order.load());
    return 1;
  }
  std::ostringstream dot;  // module nodes are drawn as 3-D boxes
  build.dump(dot);
  std::printf("composed_graph: OK; the outer graph in DOT:\n%s", dot.str().c_str());
  return 0;
}
