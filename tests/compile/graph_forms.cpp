// TaskGraph node and condition bodies that must not compile, each refused by a static_assert that says what to
// write instead (WEFT_CASE 1 and up), and the accepted forms beside them (WEFT_CASE 0), which must compile
// cleanly. Compiled by check_compile.py, never linked.
#include <cstddef>
#include <functional>

#include "weft/task_graph.hpp"

#ifndef WEFT_CASE
#error "compile with -DWEFT_CASE=<n> (see tests/compile/meson.build)"
#endif

namespace {
void by_size_t(std::size_t) {}
[[maybe_unused]] void by_int(int) {}
}  // namespace

void build(weft::Pool& pool) {
  weft::TaskGraph g;
  [[maybe_unused]] int seen = 0;
#if WEFT_CASE == 0
  // Accepted: nothing, the token as std::size_t (by value or const reference), Subflow&, both; a function and
  // a std::function taking std::size_t; a condition returning an integer (taking nothing or Subflow&).
  g.add_node([] {});
  g.add_node([&](std::size_t token) { seen += static_cast<int>(token); }, {.tokens = 2});
  g.add_node([&](const std::size_t& token) { seen += static_cast<int>(token); });
  g.add_node([](weft::Subflow&) {});
  g.add_node([&](weft::Subflow&, std::size_t token) { seen += static_cast<int>(token); });
  g.add_node(&by_size_t);
  g.add_node(std::function<void(std::size_t)>([](std::size_t) {}));
  g.add_node([&](std::size_t token) mutable noexcept { seen += static_cast<int>(token); });
  g.add_condition([&] { return seen < 10 ? 0 : 1; });
  g.add_condition([](weft::Subflow&) { return std::size_t{1}; });
#elif WEFT_CASE == 1
  g.add_node([&](int i) { seen += i; });  // the token converts to int silently
#elif WEFT_CASE == 2
  g.add_node([&](unsigned i) { seen += static_cast<int>(i); });
#elif WEFT_CASE == 3
  g.add_node([&](weft::Subflow&, int i) { seen += i; });
#elif WEFT_CASE == 4
  g.add_node(&by_int);
#elif WEFT_CASE == 5
  g.add_node(std::function<void(int)>([](int) {}));
#elif WEFT_CASE == 6
  g.add_condition([&] { return seen < 10; });  // false and true would pick the first and second successor
#elif WEFT_CASE == 7
  g.add_condition([&](weft::Subflow&) { return seen < 10; });
#elif WEFT_CASE == 8
  g.add_condition([](int) { return 0; });  // takes an argument a condition is not given
#else
#error "no such WEFT_CASE"
#endif
  g.run(pool).wait();
}
