// Charts as standalone inline SVG (no scripts, no external files) for the HTML run report: line charts
// and stacked bars over a shared frame (axes with "nice" 1-2-5 ticks, whole-number ticks on a step axis,
// optional fixed ranges, tick labels, axis labels, a title, a legend).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace grpo {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order; non-finite values are skipped
};

struct ChartOptions {
  std::string title, x_label, y_label;
  int width = 640, height = 320;
  bool integer_x = false;  // x counts steps: ticks at whole numbers only
  // Ranges the axes cover at least (the data's own range is added): one x range for every chart of a
  // report, 0..100 for a percentage.
  std::optional<std::pair<double, double>> x_range, y_range;
};

// An <svg> element. Without any finite point the chart shows its axes' frame and "no data".
std::string svg_line_chart(const ChartOptions& options, const std::vector<ChartSeries>& series);

// Stacked bars: at each x, the parts' values (a part without a value there counts 0) stacked bottom up
// in the order given; `totals` (optional, empty name = none) is drawn over them as a line, so that a reader
// sees the parts add up to it. A negative part cannot be stacked: it is drawn as 0 (the report's table
// still shows its value). The y axis starts at 0.
std::string svg_stacked_bars(const ChartOptions& options, const std::vector<ChartSeries>& parts,
                             const ChartSeries& totals);

// Tick positions covering [lo, hi] with about `target` steps of 1, 2 or 5 x 10^k; `integer`: steps of at
// least 1, on whole numbers (a step axis never shows 1.5).
std::vector<double> nice_ticks(double lo, double hi, int target = 5, bool integer = false);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace grpo
