// oneTBB's side of the pipeline workloads (pipeline_workloads.hpp), written the idiomatic oneTBB way: one
// tbb::parallel_pipeline call with the case's token limit, run in the arena every oneTBB workload of bench/
// shares (TbbGraphSide: `threads` slots, one of them taken by the calling thread).
#pragma once

#include <oneapi/tbb/parallel_pipeline.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "bench/common/graph_workloads_tbb.hpp"
#include "bench/common/pipeline_workloads.hpp"

namespace weft::bench {

class TbbPipeline {
 public:
  TbbPipeline(TbbGraphSide& side, const PipelineCase& c, std::uint64_t steps)
      : side_(side), case_(c), data_(c, steps) {}

  // serial_in_order input filter, then the stages in between (parallel for parallel4, serial_in_order for
  // linear8), then a serial_in_order output filter.
  void run() {
    PipelineData& data = data_;
    const tbb::filter_mode middle = case_.shape == PipelineShape::linear8 ? tbb::filter_mode::serial_in_order
                                                                          : tbb::filter_mode::parallel;
    side_.execute([&] {
      tbb::filter<void, PipelineItem> chain = tbb::make_filter<void, PipelineItem>(
          tbb::filter_mode::serial_in_order, [&data](tbb::flow_control& control) {
            const std::optional<PipelineItem> item = data.next_input();
            if (!item) control.stop();
            return item.value_or(PipelineItem{});
          });
      for (std::size_t k = 0; k < work_stages(case_.shape); ++k)
        chain = chain & tbb::make_filter<PipelineItem, PipelineItem>(middle, [&data](PipelineItem item) {
                  return data.work(item);
                });
      tbb::parallel_pipeline(case_.tokens,
                             chain & tbb::make_filter<PipelineItem, void>(tbb::filter_mode::serial_in_order,
                                                                          [&data](PipelineItem item) {
                                                                            data.consume(item);
                                                                          }));
    });
  }
  [[nodiscard]] bool check() noexcept { return data_.check(); }
  [[nodiscard]] PipelineData& data() noexcept { return data_; }
  [[nodiscard]] std::size_t bound() const noexcept { return case_.tokens; }

 private:
  TbbGraphSide& side_;
  const PipelineCase& case_;
  PipelineData data_;
};

}  // namespace weft::bench
