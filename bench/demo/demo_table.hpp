// The demo's result table: one row per workload with both libraries' medians, their ratio, the goal
// for that ratio and whether it is met.
#pragma once

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace weft::demo {

// The median of `samples` (the mean of the middle two for an even count); nothing if there are none.
[[nodiscard]] inline std::optional<double> median(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  const std::size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

// What the issue asks of a row: weft/oneTBB at most `max_ratio` (or strictly below it, for memory).
struct Goal {
  double max_ratio = 0;
  bool strict = false;          // "less than" rather than "at most"
  const char* text = "";        // as printed, e.g. "<= 0.5x"
  bool report_only = false;     // no goal: the figure is shown for information
};

struct Row {
  std::string workload;
  std::string unit;
  std::optional<double> weft;
  std::optional<double> tbb;
  Goal goal;

  [[nodiscard]] std::optional<double> ratio() const {
    if (!weft || !tbb || *tbb <= 0) return std::nullopt;
    return *weft / *tbb;
  }
  // Nothing when there is no goal or no oneTBB figure to compare with.
  [[nodiscard]] std::optional<bool> met() const {
    const auto r = ratio();
    if (goal.report_only || !r) return std::nullopt;
    return goal.strict ? *r < goal.max_ratio : *r <= goal.max_ratio;
  }
};

inline std::string format_value(const std::optional<double>& value, const std::string& unit) {
  if (!value) return "-";
  char text[64];
  std::snprintf(text, sizeof text, *value >= 100 ? "%.0f %s" : *value >= 10 ? "%.1f %s" : "%.2f %s", *value,
                unit.c_str());
  return text;
}

struct GoalCount {
  int met = 0;
  int missed = 0;
};

// Prints the rows that have a figure (rows of workloads not run are left out); counts the goals met and missed.
inline GoalCount print_table(const std::vector<Row>& rows) {
  std::printf("\n%-34s %13s %13s %11s %9s  %s\n", "workload", "weft", "oneTBB", "weft/oneTBB", "goal", "met?");
  std::printf("%s\n", std::string(34 + 13 + 13 + 11 + 9 + 12, '-').c_str());
  GoalCount count;
  for (const Row& row : rows) {
    if (!row.weft && !row.tbb) continue;
    char ratio[32] = "-";
    if (const auto r = row.ratio()) std::snprintf(ratio, sizeof ratio, "%.2fx", *r);
    const auto met = row.met();
    const char* verdict = row.goal.report_only ? "(report only)" : !met ? "n/a (no oneTBB)" : *met ? "yes" : "NO";
    if (met) ++(*met ? count.met : count.missed);
    std::printf("%-34s %13s %13s %11s %9s  %s\n", row.workload.c_str(), format_value(row.weft, row.unit).c_str(),
                format_value(row.tbb, row.unit).c_str(), ratio, row.goal.report_only ? "-" : row.goal.text,
                verdict);
  }
  return count;
}

}  // namespace weft::demo
