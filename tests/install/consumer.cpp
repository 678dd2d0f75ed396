// A program outside weft's build: compiled against an installed weft by install_test.sh (through pkg-config, with
// compilers other than the one that built the library, and through the CMake package) and against weft as a
// subproject by subproject_test.sh. It touches the Pool, a Future and a TaskGraph so that the link needs code
// from each part of the library, and exits non-zero if any result is wrong. It includes <weft/weft.hpp>, all of
// weft, so that every public header compiles in each of those builds (warnings as errors), and prints the version
// that <weft/version.hpp> (included by it) gives, which install_test.sh compares with the project's. It awaits a
// chain of coroutines a million deep, which runs in constant stack only if weft's compile flags reached this build
// (most of those builds are at their compiler's default level: g++ needs -foptimize-sibling-calls there, meson.build).
#include <weft/weft.hpp>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string_view>

namespace {

weft::Task<int> chain(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await chain(depth - 1);
}

}  // namespace

int main() {
  // Without the tail call each level takes stack: 100,000 levels overflowed 8 MB at -O0.
  if (int depth = weft::sync_wait(chain(1'000'000)); depth != 1'000'000) {
    std::fprintf(stderr, "consumer: a chain of co_awaits a million deep gave %d\n", depth);
    return 1;
  }

  weft::Pool pool{weft::PoolOptions{.threads = 2}};

  weft::Future<int> doubled = pool.submit([](int a) { return a * 2; }, 21);
  if (int v = doubled.get(); v != 42) {
    std::fprintf(stderr, "consumer: Future::get gave %d, expected 42\n", v);
    return 1;
  }

  std::atomic<int> order{0};
  int first_seen = -1;
  int second_seen = -1;
  weft::TaskGraph graph;
  auto first = graph.add_node([&] { first_seen = order.fetch_add(1); });
  auto second = graph.add_node([&] { second_seen = order.fetch_add(1); });
  graph.add_edge(first, second);
  graph.run(pool).wait();
  if (first_seen != 0 || second_seen != 1) {
    std::fprintf(stderr, "consumer: graph ran its nodes as %d, %d; expected 0, 1\n", first_seen, second_seen);
    return 1;
  }

  // An exception crosses from a worker back to the caller through the library's code.
  weft::TaskGraph failing;
  (void)failing.add_node([] { throw std::runtime_error("planted"); });
  try {
    failing.run(pool).wait();
    std::fprintf(stderr, "consumer: Run::wait did not rethrow the node's exception\n");
    return 1;
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()) != "planted") {
      std::fprintf(stderr, "consumer: Run::wait rethrew '%s', expected 'planted'\n", e.what());
      return 1;
    }
  }

  pool.wait_idle();
  std::printf("consumer: ok (weft %s)\n", WEFT_VERSION_STRING);
  return 0;
}
