// The demo's result table: one row per workload with both libraries' medians, their ratio, the goal
// for that ratio and whether it is met.
#pragma once

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft::demo {

// One row's figure for one library: the median of repeated runs and their spread.
struct Figure {
  double median = 0;
  double iqr = 0;  // interquartile range over the median (0.1: the middle half of the runs within 10%)
  int runs = 0;
};
using Value = std::optional<Figure>;

// The q-quantile of sorted samples, interpolated between neighbours.
[[nodiscard]] inline double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto low = static_cast<std::size_t>(at);
  const std::size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (at - static_cast<double>(low));
}

// The median and spread of `samples`; nothing if there are none.
[[nodiscard]] inline Value median(std::vector<double> samples) {
  if (samples.empty()) return std::nullopt;
  std::sort(samples.begin(), samples.end());
  const double mid = quantile(samples, 0.5);
  const double iqr = quantile(samples, 0.75) - quantile(samples, 0.25);
  return Figure{mid, mid > 0 ? iqr / mid : 0, static_cast<int>(samples.size())};
}

// `value` with its median (and so its spread's absolute size) multiplied by `factor`.
[[nodiscard]] inline Value scaled(Value value, double factor) {
  if (value) value->median *= factor;
  return value;
}

// What the issue asks of a row: weft/oneTBB at most `max_ratio` (or strictly below it, for memory); with
// `absolute`, weft's own median at most `max_ratio` in the row's unit. A report-only goal with a text is shown
// with its verdict in parentheses, and not counted.
struct Goal {
  double max_ratio = 0;
  bool strict = false;       // "less than" rather than "at most"
  const char* text = "";     // as printed, e.g. "<= 0.5x"
  bool report_only = false;  // no goal: the figure is shown for information
  bool absolute = false;     // max_ratio bounds weft's median, not weft/oneTBB
};

// A compute-bound row whose goal is "at most 1.0x oneTBB" counts as met at parity when both libraries sit on the
// hardware floor (the serial time over the threads, demo_floor.hpp): each within kFloorSlack of it and weft
// within kParityNoise of oneTBB. At the floor, what is left between them is the machine's noise, not the
// scheduler's.
inline constexpr double kFloorSlack = 1.10;
inline constexpr double kParityNoise = 1.05;

struct Row {
  Row(std::string workload_, std::string unit_, Value weft_, Value tbb_, Goal goal_, Value queue_pool_ = {},
      Value async_ = {})
      : workload(std::move(workload_)),
        unit(std::move(unit_)),
        weft(weft_),
        tbb(tbb_),
        goal(goal_),
        queue_pool(queue_pool_),
        async(async_) {}

  std::string workload;
  std::string unit;
  Value weft;
  Value tbb;
  Goal goal;
  Value queue_pool;  // the baselines (baseline_sides.hpp), on the pool rows only
  Value async;
  std::optional<double> floor;  // compute-bound rows: the serial time over the threads (demo_floor.hpp)
  // What the oneTBB column holds on this row: oneTBB, or the nearest equivalent where oneTBB has none (the
  // waits rows); the library's name in results.csv and results.json. The table names it under a footnote.
  std::string peer = "oneTBB";
  std::string note;  // printed under the table, as the row's footnote
  // Tasks, nodes or items one run of the row goes through (per unit for a ns-per-task row: 1): the record's
  // items per second. Nothing where a count means nothing (memory, latency).
  std::optional<double> items;
  [[nodiscard]] std::optional<double> items_per_second(const Value& v) const {
    if (!items || !v || v->median <= 0) return std::nullopt;
    const double seconds = unit == "ms" ? 1e-3 : unit == "us" ? 1e-6 : unit == "ns" ? 1e-9 : 0;
    if (seconds == 0) return std::nullopt;
    return *items / (v->median * seconds);
  }

  [[nodiscard]] std::optional<double> ratio() const {
    if (!weft || !tbb || tbb->median <= 0) return std::nullopt;
    return weft->median / tbb->median;
  }
  // Whether every baseline that ran took longer than weft; nothing if none ran.
  [[nodiscard]] std::optional<bool> baselines_slower() const {
    if (!weft || (!queue_pool && !async)) return std::nullopt;
    return (!queue_pool || queue_pool->median > weft->median) && (!async || async->median > weft->median);
  }
  // Nothing when there is no goal or no oneTBB figure to compare with.
  [[nodiscard]] std::optional<bool> met() const {
    if (goal.report_only) return std::nullopt;
    return verdict();
  }
  // met(), a report-only goal with a text included: nothing only without a goal or without the figures.
  [[nodiscard]] std::optional<bool> verdict() const {
    if (goal.report_only && *goal.text == '\0') return std::nullopt;
    if (goal.absolute) {
      if (!weft) return std::nullopt;
      return goal.strict ? weft->median < goal.max_ratio : weft->median <= goal.max_ratio;
    }
    const auto r = ratio();
    if (!r) return std::nullopt;
    return (goal.strict ? *r < goal.max_ratio : *r <= goal.max_ratio) || at_floor();
  }
  // Both libraries on the hardware floor and within noise of each other (see kFloorSlack).
  [[nodiscard]] bool at_floor() const {
    const auto r = ratio();
    return floor && r && *r <= kParityNoise && weft->median <= *floor * kFloorSlack &&
           tbb->median <= *floor * kFloorSlack;
  }
};

inline std::string format_value(const Value& value, const std::string& unit) {
  if (!value) return "-";
  char text[64];
  const double v = value->median;
  std::snprintf(text, sizeof text, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit.c_str());
  std::string out = text;
  if (value->runs > 1) {
    std::snprintf(text, sizeof text, " ±%.0f%%", value->iqr * 50);  // half the IQR: median ± that
    out += text;
  }
  return out;
}

// `text` broken at spaces into lines of at most `width` columns (a longer word gets a line of its own), every
// line after the first indented by `indent`; each line ends in a newline.
inline std::string wrapped(const std::string& text, std::size_t width, const std::string& indent) {
  std::string out;
  std::string line;
  bool empty = true;  // no word on `line` yet
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    if (!empty && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = indent;
      empty = true;
    }
    if (!empty) line += ' ';
    line += word;
    empty = false;
  }
  return out + line + "\n";
}

struct GoalCount {
  int met = 0;
  int missed = 0;
  int baselines_slower = 0;
  int baselines_not_slower = 0;
};

// Prints the rows that have a figure (rows of workloads not run are left out) in at most 118 columns, then the
// floors of the compute-bound rows; counts the goals met and missed. A value reads "median ±h%": h is half the
// interquartile range of the runs, over the median. The verdict: yes, NO, "yes*" (parity at the floor), "-"
// (no goal), "n/a" (no oneTBB figure), "(yes)"/"(no)" (a report-only goal, not counted); "!" after it: a
// baseline was faster than weft. A row whose oneTBB column holds another peer, or that has a note, gets a
// numbered footnote under the table.
inline GoalCount print_table(const std::vector<Row>& rows) {
  constexpr int kName = 34;
  constexpr int kCell = 13;
  std::printf("\n%-*s %*s %*s %*s %*s %6s %7s %s\n", kName, "workload", kCell, "weft", kCell, "oneTBB", kCell,
              "mutex pool", kCell, "std::async", "ratio", "goal", "met?");
  std::printf("%s\n", std::string(kName + 4 * (kCell + 1) + 7 + 8 + 5, '-').c_str());
  GoalCount count;
  std::string floors;
  std::string footnotes;
  int footnote = 0;
  for (const Row& row : rows) {
    if (!row.weft && !row.tbb) continue;
    char ratio[32] = "-";
    if (const auto r = row.ratio()) std::snprintf(ratio, sizeof ratio, *r < 0.01 ? "<0.01x" : "%.2fx", *r);
    const auto met = row.met();
    const auto slower = row.baselines_slower();
    const bool parity = met && *met && row.at_floor() && *row.ratio() > row.goal.max_ratio;
    std::string verdict = row.goal.report_only ? "-" : !met ? "n/a" : parity ? "yes*" : *met ? "yes" : "NO";
    if (const auto indicative = row.verdict(); row.goal.report_only && indicative)
      verdict = *indicative ? "(yes)" : "(no)";
    std::string name = row.workload;
    if (row.peer != "oneTBB" || !row.note.empty()) {
      name += " (" + std::to_string(++footnote) + ")";
      std::string entry = "(" + std::to_string(footnote) + ") " + row.workload;
      if (row.peer != "oneTBB") entry += " [oneTBB column: " + row.peer + "]";
      footnotes += wrapped(entry + ": " + row.note, 118, "    ");
    }
    if (slower && !*slower) verdict += " !";
    if (row.floor) {
      char text[160];
      std::snprintf(text, sizeof text, "  %s: floor %.4g %s (weft %.2fx of it, oneTBB %.2fx)\n", row.workload.c_str(),
                    *row.floor, row.unit.c_str(), row.weft ? row.weft->median / *row.floor : 0.0,
                    row.tbb ? row.tbb->median / *row.floor : 0.0);
      floors += text;
    }
    if (met) ++(*met ? count.met : count.missed);
    if (slower) ++(*slower ? count.baselines_slower : count.baselines_not_slower);
    // The ± sign is 2 bytes of UTF-8 for one column: widen the fields that hold one.
    const auto cell = [&](const Value& v) {
      const std::string text = format_value(v, row.unit);
      const int pad = kCell - static_cast<int>(text.size()) + (v && v->runs > 1 ? 1 : 0);
      return std::string(static_cast<std::size_t>(std::max(0, pad)), ' ') + text;
    };
    std::printf("%-*s %s %s %s %s %6s %7s %s\n", kName, name.c_str(), cell(row.weft).c_str(), cell(row.tbb).c_str(),
                cell(row.queue_pool).c_str(), cell(row.async).c_str(), ratio,
                row.goal.report_only && *row.goal.text == '\0' ? "-" : row.goal.text, verdict.c_str());
  }
  std::printf(
      "yes*: parity at the hardware floor (both within %.0f%% of it, weft within %.0f%% of oneTBB); "
      "!: a baseline\nwas faster than weft; (yes)/(no): a report-only goal, not counted.\n",
      (kFloorSlack - 1) * 100, (kParityNoise - 1) * 100);
  if (!floors.empty()) std::printf("Floors (the same work serially, over the threads):\n%s", floors.c_str());
  if (!footnotes.empty()) std::printf("Notes:\n%s", footnotes.c_str());
  return count;
}

}  // namespace weft::demo
