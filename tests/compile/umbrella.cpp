// <weft/weft.hpp> alone is enough for a program that names something from the public headers: it compiles
// cleanly, with warnings as errors. check_compile.py --umbrella also checks that it includes each public header.
#include <utility>
#include <vector>

#include <weft/weft.hpp>

int use_weft(weft::Pool& pool) {
  weft::small_function<int()> f = [] { return 1; };      // small_function.hpp
  weft::Future<int> future = pool.submit(std::move(f));  // pool.hpp, future.hpp
  std::vector<int> v(8, 1);
  weft::parallel_for(pool, v.begin(), v.end(), [](int& x) { x *= 2; });              // parallel_for.hpp
  weft::TaskGraph graph;                                                             // task_graph.hpp
  (void)graph.add_node([](weft::Subflow&) {}, weft::NodeOptions{.concurrency = 1});  // subflow, node_options
  weft::TaskScope scope{pool};                                                       // task_scope.hpp
  weft::Job<int> job = scope.submit([] { return 2; });
  scope.run_and_wait();
  try {
    graph.run(pool).wait();
  } catch (const weft::would_deadlock&) {  // errors.hpp
    return -1;
  }
  return future.get() + job.get() + static_cast<int>(weft::PoolOptions{}.threads);  // pool_options.hpp
}
