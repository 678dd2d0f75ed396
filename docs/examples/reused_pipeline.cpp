// A pipeline built once and run once per request: the port of a Taskflow program in which a tf::Pipeline (a
// serial, a parallel and a serial pipe) is made a task by `taskflow.composed_of(pl)`, between a task that takes
// the next request and one that answers it, and the taskflow is run again for every request. Here the pipeline
// is a weft::StreamGraph, composed into a weft::TaskGraph the same way; it is also run on its own. Exits with 1
// if an answer is wrong.
#include <cstdio>
#include <optional>
#include <vector>

#include <weft/pool.hpp>
#include <weft/stream_graph.hpp>
#include <weft/task_graph.hpp>

namespace {

// The request of round `round`: its numbers (sizes vary, one is empty).
std::vector<int> request(int round) {
  std::vector<int> numbers;
  for (int i = 0; i < (round * 7) % 40; ++i) numbers.push_back(round + i);
  return numbers;
}

long expected_answer(const std::vector<int>& numbers) {
  long sum = 0;
  for (const int n : numbers) sum += long{n} * n;
  return sum;
}

}  // namespace

int main() {
  weft::Pool pool;
  int wrong = 0;

  std::vector<int> batch;  // the request being answered: the source reads it
  long sum = 0;
  weft::StreamGraph pl;  // tf::Pipeline pl(num_lines, pipes...);
  weft::Stream<int> numbers = pl.source(
      [&batch](std::size_t token) -> std::optional<int> {  // the first pipe, SERIAL; token: pf.token()
        if (token == batch.size()) return std::nullopt;    // pf.stop()
        return batch[token];                               // buffer[pf.line()] = batch[pf.token()]
      },
      {.name = "pipeline"});
  weft::Stream<long> squares = pl.stage(numbers, [](int v) { return long{v} * v; },
                                        {.concurrency = weft::kUnlimited});       // PARALLEL
  pl.sink(squares, [&sum](long s) { sum += s; }, {.order = weft::Order::Input});  // SERIAL

  int round = 0;
  long answer = -1;
  weft::TaskGraph taskflow;
  weft::Node take = taskflow.add_node([&] {  // taskflow.emplace(...): the next request
    batch = request(round);
    sum = 0;
  });
  weft::Node pipeline = pl.compose_into(taskflow);  // taskflow.composed_of(pl)
  weft::Node reply = taskflow.add_node([&] { answer = sum; });
  taskflow.add_edge(take, pipeline);   // take.precede(pipeline)
  taskflow.add_edge(pipeline, reply);  // pipeline.precede(reply)
  for (round = 0; round < 100; ++round) {
    taskflow.run(pool).wait();  // executor.run(taskflow).wait(): the pipeline runs anew
    if (answer != expected_answer(request(round))) ++wrong;
  }

  // The pipeline alone, without a graph around it: one run per batch, the same layout every time.
  for (round = 0; round < 100; ++round) {
    batch = request(round);
    sum = 0;
    pl.run(pool).wait();
    if (sum != expected_answer(batch)) ++wrong;
  }

  std::printf("%d wrong answers in 200 runs of one pipeline\n", wrong);
  return wrong == 0 ? 0 : 1;
}
