// oneTBB's sequencer_node in a weft pipeline: blocks of a file are compressed in parallel, finishing in any order,
// and written out in the order of their block numbers. The port of a flow graph
//   function_node<Block, Packed>(g, unlimited, compress) -> sequencer_node<Packed>(g, [](const Packed& p) { return
//   p.index; }) -> function_node<Packed>(g, serial, write)
// as a TaskScope pipeline with sequence(), then a repeated block number, refused with an error naming it. Exits
// with 1 if the output is out of order or the error is missing.
#include <cstddef>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <weft/pool.hpp>
#include <weft/task_scope.hpp>

namespace {

struct Packed {
  std::size_t index = 0;  // the block's number: 0, 1, 2, ...
  std::string bytes;
};

// Stands for the real compression: the work varies from block to block, so blocks finish out of order.
Packed compress(std::size_t index) {
  std::string bytes;
  for (std::size_t i = 0; i < 100 + (index * 7919) % 2000; ++i) bytes += static_cast<char>('a' + (i * index) % 26);
  return Packed{index, bytes.substr(0, 8)};
}

}  // namespace

int main() {
  weft::Pool pool;
  int wrong = 0;
  const std::size_t blocks = 1000;
  {
    weft::TaskScope scope(pool);
    auto numbers = scope.source([](std::size_t i) -> std::optional<std::size_t> {
      if (i == blocks) return std::nullopt;
      return i;
    });
    auto packed = scope.stage(numbers, compress, {.concurrency = weft::kUnlimited});  // any order
    auto in_order = scope.sequence(packed, [](const Packed& p) { return p.index; }, {.name = "in order"});
    std::vector<std::size_t> written;
    scope.sink(in_order, [&](const Packed& p) { written.push_back(p.index); });  // the writer: 0, 1, 2, ...
    scope.run_and_wait();
    for (std::size_t i = 0; i < blocks; ++i) {
      if (i >= written.size() || written[i] != i) ++wrong;
    }
    std::printf("%zu blocks written in order\n", written.size());
  }
  {
    // Block 3 numbered twice: the run fails, naming the stage and the key.
    weft::TaskScope scope(pool);
    auto numbers = scope.source([](std::size_t i) -> std::optional<std::size_t> {
      if (i == 10) return std::nullopt;
      return i == 7 ? 3 : i;
    });
    auto packed = scope.stage(numbers, compress, {.concurrency = weft::kUnlimited});
    auto in_order = scope.sequence(packed, [](const Packed& p) { return p.index; }, {.name = "in order"});
    scope.sink(in_order, [](const Packed&) {});
    try {
      scope.run_and_wait();
      ++wrong;
    } catch (const std::out_of_range& e) {
      std::printf("refused: %s\n", e.what());  // ... sequence 'in order' of pipeline ...: key 3 came twice ...
      if (std::string(e.what()).find("key 3 came twice") == std::string::npos) ++wrong;
    }
  }
  return wrong == 0 ? 0 : 1;
}
