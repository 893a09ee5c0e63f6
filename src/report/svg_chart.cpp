// SVG charts (see svg_chart.h).
#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/error.h"

namespace grpo {

namespace {

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const char* const kTotalColor = "#222";

constexpr size_t kMarkedPoints = 20;
constexpr double kLegendColumnWidth = 210;

std::string num(double v) {  // compact coordinate / label text
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tick_label(double v, double step) {
  char buf[32];
  if (std::abs(v) < step * 1e-6) v = 0;  // no "-0" or 1e-17
  const double a = std::abs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) {
    std::snprintf(buf, sizeof buf, "%.2g", v);
  } else {
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 6), v);
  }
  return buf;
}

struct Bounds {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  bool empty() const { return !std::isfinite(x_lo); }
  void add(double x, double y) {
    if (!std::isfinite(x) || !std::isfinite(y)) return;
    x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
    y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
  }
};

// The plot area of a chart, its ticks and the data -> pixel mapping.
struct Frame {
  double left = 64, right = 16, top = 32, bottom = 0, plot_w = 0, plot_h = 0;
  int legend_columns = 1;
  std::vector<double> xt, yt;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  double px(double x) const { return left + (x - x0) / (x1 - x0) * plot_w; }
  double py(double y) const { return top + plot_h - (y - y0) / (y1 - y0) * plot_h; }
};

Frame layout(const ChartOptions& o, size_t legend_entries) {
  Frame f;
  f.legend_columns = std::max(1, static_cast<int>((o.width - f.left - f.right) / kLegendColumnWidth));
  const double legend_h = 18.0 * static_cast<double>((legend_entries + f.legend_columns - 1) / f.legend_columns);
  f.bottom = 44 + legend_h;
  f.plot_w = o.width - f.left - f.right;
  f.plot_h = o.height - f.top - f.bottom;
  GRPO_CHECK(f.plot_w > 50 && f.plot_h > 50, "[chart] ", o.width, "x", o.height, " is too small for \"", o.title,
             "\" with ", legend_entries, " legend entries");
  return f;
}

// The <svg> opening, background, title, plot frame and axis labels.
std::string open_svg(const ChartOptions& o, const Frame& f) {
  std::string svg = cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", o.width, "\" height=\"", o.height,
                        "\" viewBox=\"0 0 ", o.width, " ", o.height, "\" font-family=\"sans-serif\" font-size=\"11\">\n");
  svg += cat("<title>", xml_escape(o.title), "</title>\n");
  svg += cat("<rect x=\"0\" y=\"0\" width=\"", o.width, "\" height=\"", o.height, "\" fill=\"white\"/>\n");
  svg += cat("<text x=\"", o.width / 2, "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">",
             xml_escape(o.title), "</text>\n");
  svg += cat("<rect x=\"", num(f.left), "\" y=\"", num(f.top), "\" width=\"", num(f.plot_w), "\" height=\"",
             num(f.plot_h), "\" fill=\"none\" stroke=\"#333\"/>\n");
  svg += cat("<text x=\"", num(f.left + f.plot_w / 2), "\" y=\"", num(f.top + f.plot_h + 34),
             "\" text-anchor=\"middle\">", xml_escape(o.x_label), "</text>\n");
  svg += cat("<text transform=\"translate(14 ", num(f.top + f.plot_h / 2), ") rotate(-90)\" text-anchor=\"middle\">",
             xml_escape(o.y_label), "</text>\n");
  return svg;
}

std::string no_data(const Frame& f) {
  return cat("<text x=\"", num(f.left + f.plot_w / 2), "\" y=\"", num(f.top + f.plot_h / 2),
             "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n</svg>\n");
}

// Sets the frame's ticks from the data's bounds and the options' ranges; returns the grid and tick labels.
// The x axis spans the data (widened by x_pad on each side, room for bars) with the ticks inside it; the y
// axis runs from tick to tick.
std::string axes(const ChartOptions& o, Bounds b, Frame& f, double x_pad = 0) {
  if (o.x_range) b.x_lo = std::min(b.x_lo, o.x_range->first), b.x_hi = std::max(b.x_hi, o.x_range->second);
  if (o.y_range) b.y_lo = std::min(b.y_lo, o.y_range->first), b.y_hi = std::max(b.y_hi, o.y_range->second);
  f.xt = nice_ticks(b.x_lo, b.x_hi, 6, o.integer_x);
  f.yt = nice_ticks(b.y_lo, b.y_hi, 5);
  f.y0 = f.yt.front(), f.y1 = f.yt.back();
  if (b.x_hi > b.x_lo) {
    f.x0 = b.x_lo - x_pad, f.x1 = b.x_hi + x_pad;
    const double eps = (f.x1 - f.x0) * 1e-9;
    std::erase_if(f.xt, [&](double t) { return t < f.x0 - eps || t > f.x1 + eps; });
  } else {  // one x: the ticks' range around it
    f.x0 = f.xt.front(), f.x1 = f.xt.back();
  }
  const double x_step = f.xt.size() > 1 ? f.xt[1] - f.xt[0] : 1, y_step = f.yt.size() > 1 ? f.yt[1] - f.yt[0] : 1;
  std::string svg;
  for (double t : f.xt) {
    svg += cat("<line x1=\"", num(f.px(t)), "\" y1=\"", num(f.top + f.plot_h), "\" x2=\"", num(f.px(t)), "\" y2=\"",
               num(f.top + f.plot_h + 5), "\" stroke=\"#333\"/>");
    svg += cat("<text class=\"xtick\" x=\"", num(f.px(t)), "\" y=\"", num(f.top + f.plot_h + 17),
               "\" text-anchor=\"middle\">", tick_label(t, x_step), "</text>\n");
  }
  for (double t : f.yt) {
    svg += cat("<line x1=\"", num(f.left), "\" y1=\"", num(f.py(t)), "\" x2=\"", num(f.left + f.plot_w), "\" y2=\"",
               num(f.py(t)), "\" stroke=\"#ddd\"/>");
    svg += cat("<line x1=\"", num(f.left - 5), "\" y1=\"", num(f.py(t)), "\" x2=\"", num(f.left), "\" y2=\"",
               num(f.py(t)), "\" stroke=\"#333\"/>");
    svg += cat("<text class=\"ytick\" x=\"", num(f.left - 8), "\" y=\"", num(f.py(t) + 4), "\" text-anchor=\"end\">",
               tick_label(t, y_step), "</text>\n");
  }
  return svg;
}

// Legend entry i: a swatch (a box, or a short line for a line drawn over bars) and the name.
std::string legend_entry(const Frame& f, size_t i, const char* color, const std::string& name, bool line) {
  const double column_w = f.plot_w / f.legend_columns;
  const double lx = f.left + static_cast<double>(i % f.legend_columns) * column_w;
  const double ly = f.top + f.plot_h + 48 + 18.0 * static_cast<double>(i / f.legend_columns);
  std::string svg =
      line ? cat("<line x1=\"", num(lx), "\" y1=\"", num(ly - 4), "\" x2=\"", num(lx + 12), "\" y2=\"", num(ly - 4),
                 "\" stroke=\"", color, "\" stroke-width=\"2\"/>")
           : cat("<rect x=\"", num(lx), "\" y=\"", num(ly - 9), "\" width=\"12\" height=\"10\" fill=\"", color, "\"/>");
  return svg + cat("<text x=\"", num(lx + 16), "\" y=\"", num(ly), "\">", xml_escape(name), "</text>\n");
}

// A series as a polyline (2 points or more) and, when sparse, a marker per point.
std::string series_path(const Frame& f, const ChartSeries& s, const char* color) {
  std::vector<std::pair<double, double>> xy;  // pixel coordinates of the finite points
  for (auto [x, y] : s.points)
    if (std::isfinite(x) && std::isfinite(y)) xy.emplace_back(f.px(x), f.py(y));
  std::string svg;
  if (xy.size() > 1) {
    std::string pts;
    for (auto [x, y] : xy) pts += cat(pts.empty() ? "" : " ", num(x), ",", num(y));
    svg += cat("<polyline fill=\"none\" stroke=\"", color, "\" stroke-width=\"1.8\" points=\"", pts, "\"/>\n");
  }
  if (xy.size() <= kMarkedPoints)  // sparse series (e.g. validation every N steps) get point markers
    for (auto [x, y] : xy) svg += cat("<circle cx=\"", num(x), "\" cy=\"", num(y), "\" r=\"2.5\" fill=\"", color, "\"/>\n");
  return svg;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target, bool integer) {
  GRPO_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && target >= 1, "[chart] bad tick range [", lo, ", ",
             hi, "]");
  if (hi == lo && lo == 0 && !integer) {  // all zero (a KL term that is off, no clipping): 0 to 1
    hi = 1;
  } else if (hi == lo) {  // a flat series: a range around it
    const double pad = integer || lo == 0 ? 1.0 : std::abs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  if (integer) step = std::max(1.0, std::round(step));
  std::vector<double> ticks;
  const double first = std::floor(lo / step) * step;
  for (int k = 0;; ++k) {
    const double t = first + k * step;
    ticks.push_back(t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string svg_line_chart(const ChartOptions& o, const std::vector<ChartSeries>& series) {
  Frame f = layout(o, series.size());
  std::string svg = open_svg(o, f);
  Bounds b;
  for (const auto& s : series)
    for (auto [x, y] : s.points) b.add(x, y);
  if (b.empty()) return svg + no_data(f);
  svg += axes(o, b, f);
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kPalette[i % std::size(kPalette)];
    svg += series_path(f, series[i], color);
    svg += legend_entry(f, i, color, series[i].name, /*line=*/false);
  }
  return svg + "</svg>\n";
}

std::string svg_stacked_bars(const ChartOptions& o, const std::vector<ChartSeries>& parts, const ChartSeries& totals) {
  const bool has_totals = !totals.name.empty();
  Frame f = layout(o, parts.size() + (has_totals ? 1 : 0));
  std::string svg = open_svg(o, f);
  // x -> each part's value there (finite, negative drawn as 0)
  std::map<double, std::vector<double>> stacks;
  for (size_t p = 0; p < parts.size(); ++p)
    for (auto [x, y] : parts[p].points)
      if (std::isfinite(x) && std::isfinite(y)) {
        auto& v = stacks[x];
        v.resize(parts.size(), 0.0);
        v[p] = std::max(0.0, y);
      }
  Bounds b;
  for (const auto& [x, v] : stacks) {
    double top = 0;
    for (double y : v) top += y;
    b.add(x, 0);
    b.add(x, top);
  }
  if (has_totals)
    for (auto [x, y] : totals.points) b.add(x, std::max(0.0, y)), b.add(x, 0);
  if (b.empty()) return svg + no_data(f);
  // Half the closest two bars' distance (in x) on either side of the data, so that the end bars fit.
  double x_gap = o.integer_x ? 1.0 : INFINITY;
  for (auto it = stacks.begin(); it != stacks.end() && std::next(it) != stacks.end(); ++it)
    x_gap = std::min(x_gap, std::next(it)->first - it->first);
  svg += axes(o, b, f, std::isfinite(x_gap) ? x_gap / 2 : 0);
  // Bars as wide as 70% of the closest two x positions allow, 1 to 28 pixels.
  const double gap = std::isfinite(x_gap) ? f.px(x_gap) - f.px(0) : f.plot_w;
  const double w = std::clamp(0.7 * gap, 1.0, 28.0);
  for (const auto& [x, v] : stacks) {
    double base = 0;
    for (size_t p = 0; p < v.size(); ++p) {
      if (v[p] <= 0) continue;
      const double y_top = f.py(base + v[p]), y_bottom = f.py(base);
      svg += cat("<rect x=\"", num(f.px(x) - w / 2), "\" y=\"", num(y_top), "\" width=\"", num(w), "\" height=\"",
                 num(y_bottom - y_top), "\" fill=\"", kPalette[p % std::size(kPalette)], "\"><title>",
                 xml_escape(parts[p].name), " ", tick_label(v[p], 1e-4), "</title></rect>\n");
      base += v[p];
    }
  }
  for (size_t p = 0; p < parts.size(); ++p)
    svg += legend_entry(f, p, kPalette[p % std::size(kPalette)], parts[p].name, /*line=*/false);
  if (has_totals) {
    svg += series_path(f, totals, kTotalColor);
    svg += legend_entry(f, parts.size(), kTotalColor, totals.name, /*line=*/true);
  }
  return svg + "</svg>\n";
}

}  // namespace grpo
