// oneTBB's overwrite_node and write_once_node beside a weft pipeline: a sink leaves each reading in an
// OverwriteCell, which a task posted before the pipeline waits for and shows, and the first reading above a
// threshold in a WriteOnceCell. Exits with 1 if a cell holds the wrong value.
#include <cstdio>
#include <optional>

#include <weft/cell.hpp>
#include <weft/pool.hpp>
#include <weft/task_scope.hpp>

namespace {

double shown = -1;
void show(double reading) { shown = reading; }

}  // namespace

int main() {
  weft::Pool pool;
  weft::WriteOnceCell<double> first_high;
  {
    weft::TaskScope scope(pool);
    auto raw = scope.source([](std::size_t i) -> std::optional<double> {
      if (i == 100) return std::nullopt;
      return static_cast<double>(i) / 4;
    });
    auto readings = scope.stage(raw, [&first_high](double r) {
      if (r > 10) (void)first_high.try_put(r);  // only the first one above 10 stays
      return r;
    });
    weft::OverwriteCell<double> latest;
    scope.sink(readings, latest.writer());   // each reading replaces the one before
    pool.post([&] { show(latest.get()); });  // waits for the first reading, then shows the latest
    scope.run_and_wait();
    pool.wait_idle();  // the task showing the reading ended too
    if (shown < 0) return 1;
    std::printf("last reading %.2f, first above 10: %.2f\n", latest.value(), first_high.get());
    if (latest.value() != 99.0 / 4) return 1;
  }
  return first_high.get() == 10.25 ? 0 : 1;
}
