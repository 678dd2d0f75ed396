// weft-demo's record: the table as CSV, every figure as Google Benchmark JSON (one aggregate entry per row and
// library: the median, with the spread as a counter and, where the row counts items, items_per_second), and the
// size sweep as CSV, all in one folder that
// bench/demo/charts.py draws from.
#pragma once

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/demo/demo_scaling.hpp"
#include "bench/demo/demo_table.hpp"

namespace weft::demo {

// What the header printed about the run, for the JSON's context.
struct RunContext {
  std::string date;
  std::string host;
  int cpus = 0;
  unsigned threads = 0;
  std::string load_start;
  std::string load_end;
  std::string versions;
  std::string compiler;
  std::string mode;
};

class File {
 public:
  explicit File(const std::filesystem::path& path) : file_(std::fopen(path.c_str(), "w")) {
    if (file_ == nullptr) throw std::runtime_error("cannot write " + path.string());
  }
  ~File() { std::fclose(file_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  [[nodiscard]] std::FILE* get() const noexcept { return file_; }

 private:
  std::FILE* file_;
};

// A JSON string literal of `text` (quotes and backslashes escaped; the demo's names have no control characters).
inline std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

inline void write_results(const std::filesystem::path& dir, const RunContext& context, const std::vector<Row>& rows,
                          const std::vector<ScalingPoint>& scaling) {
  std::filesystem::create_directories(dir);
  // The oneTBB column's name comes from the row (Row::peer: oneTBB, or the equivalent standing in for it).
  const struct {
    const char* name;
    Value Row::*value;
  } libraries[] = {{"weft", &Row::weft},
                   {nullptr, &Row::tbb},
                   {"mutex pool", &Row::queue_pool},
                   {"std::async", &Row::async}};
  const auto name_of = [](const Row& row, const char* name) { return name ? std::string(name) : row.peer; };
  {
    File csv(dir / "results.csv");
    // met: yes or no; empty without a goal; "report-only: yes" (or no) for a report-only goal with a text.
    std::fprintf(csv.get(), "workload,unit,library,median,iqr_fraction,runs,goal,met,floor,items_per_second,note\n");
    for (const Row& row : rows) {
      const auto met = row.verdict();
      const std::string met_text = !met ? ""
                                        : std::string(row.goal.report_only ? "report-only: " : "") +
                                              (*met ? "yes" : "no");
      for (const auto& library : libraries) {
        const Value& v = row.*library.value;
        if (!v) continue;
        std::fprintf(csv.get(), "\"%s\",%s,\"%s\",%.6g,%.4f,%d,\"%s\",%s,", row.workload.c_str(), row.unit.c_str(),
                     name_of(row, library.name).c_str(), v->median, v->iqr, v->runs, row.goal.text, met_text.c_str());
        if (row.floor) std::fprintf(csv.get(), "%.6g", *row.floor);
        std::fprintf(csv.get(), ",");
        if (const auto rate = row.items_per_second(v)) std::fprintf(csv.get(), "%.6g", *rate);
        std::fprintf(csv.get(), ",\"%s\"\n", row.note.c_str());
      }
    }
  }
  {
    File csv(dir / "scaling.csv");
    std::fprintf(csv.get(), "shape,library,nodes,ns_per_node\n");
    for (const ScalingPoint& p : scaling)
      std::fprintf(csv.get(), "%s,%s,%zu,%.4g\n", p.shape.c_str(), p.library.c_str(), p.nodes, p.ns_per_node);
  }
  File json(dir / "results.json");
  std::FILE* f = json.get();
  std::fprintf(f, "{\n  \"context\": {\n    \"date\": %s,\n    \"host_name\": %s,\n    \"num_cpus\": %d,\n",
               quoted(context.date).c_str(), quoted(context.host).c_str(), context.cpus);
  std::fprintf(f, "    \"threads\": %u,\n    \"load_avg_start\": %s,\n    \"load_avg_end\": %s,\n", context.threads,
               quoted(context.load_start).c_str(), quoted(context.load_end).c_str());
  std::fprintf(f, "    \"versions\": %s,\n    \"compiler\": %s,\n    \"mode\": %s,\n    \"library_build_type\": %s\n",
               quoted(context.versions).c_str(), quoted(context.compiler).c_str(), quoted(context.mode).c_str(),
               quoted("release").c_str());
  std::fprintf(f, "  },\n  \"benchmarks\": [");
  const char* separator = "\n";
  for (const Row& row : rows) {
    for (const auto& library : libraries) {
      const Value& v = row.*library.value;
      if (!v) continue;
      const std::string name = row.workload + "/" + name_of(row, library.name);
      std::fprintf(f,
                   "%s    {\"name\": %s, \"run_name\": %s, \"run_type\": \"aggregate\", \"aggregate_name\": "
                   "\"median\", \"repetitions\": %d, \"real_time\": %.6g, \"time_unit\": %s, \"iqr_fraction\": "
                   "%.4f",
                   separator, quoted(name + "_median").c_str(), quoted(name).c_str(), v->runs, v->median,
                   quoted(row.unit).c_str(), v->iqr);
      if (const auto rate = row.items_per_second(v)) std::fprintf(f, ", \"items_per_second\": %.6g", *rate);
      std::fprintf(f, "}");
      separator = ",\n";
    }
  }
  std::fprintf(f, "\n  ]\n}\n");
}

}  // namespace weft::demo
