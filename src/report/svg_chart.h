// Line charts as standalone inline SVG (no scripts, no external files): axes with "nice" 1-2-5 ticks,
// tick labels, axis labels, a title, a legend, several series. Used by the HTML run report.
#pragma once
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
};

// An <svg> element. Without any finite point the chart shows its axes' frame and "no data".
std::string svg_line_chart(const ChartOptions& options, const std::vector<ChartSeries>& series);

// Tick positions covering [lo, hi] with about `target` steps of 1, 2 or 5 x 10^k.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace grpo
