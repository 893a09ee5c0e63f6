// SVG line charts (see svg_chart.h).
#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace grpo {

namespace {

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

constexpr size_t kMarkedPoints = 20;

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

std::vector<double> nice_ticks(double lo, double hi, int target) {
  GRPO_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi && target >= 1, "[chart] bad tick range [", lo, ", ",
             hi, "]");
  if (hi == lo) {  // a flat series: a unit range around it
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.5;
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
  const double left = 64, right = 16, top = 32, legend_h = 18.0 * ((series.size() + 2) / 3), bottom = 44 + legend_h;
  const double plot_w = o.width - left - right, plot_h = o.height - top - bottom;
  GRPO_CHECK(plot_w > 50 && plot_h > 50, "[chart] ", o.width, "x", o.height, " is too small for \"", o.title, "\"");

  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const auto& s : series)
    for (auto [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) {
        x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
        y_lo = std::min(y_lo, y), y_hi = std::max(y_hi, y);
      }
  const bool empty = !std::isfinite(x_lo);

  std::string svg = cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", o.width, "\" height=\"", o.height,
                        "\" viewBox=\"0 0 ", o.width, " ", o.height, "\" font-family=\"sans-serif\" font-size=\"11\">\n");
  svg += cat("<title>", xml_escape(o.title), "</title>\n");
  svg += cat("<rect x=\"0\" y=\"0\" width=\"", o.width, "\" height=\"", o.height, "\" fill=\"white\"/>\n");
  svg += cat("<text x=\"", o.width / 2, "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">",
             xml_escape(o.title), "</text>\n");
  svg += cat("<rect x=\"", num(left), "\" y=\"", num(top), "\" width=\"", num(plot_w), "\" height=\"", num(plot_h),
             "\" fill=\"none\" stroke=\"#333\"/>\n");
  svg += cat("<text x=\"", num(left + plot_w / 2), "\" y=\"", num(top + plot_h + 34),
             "\" text-anchor=\"middle\">", xml_escape(o.x_label), "</text>\n");
  svg += cat("<text transform=\"translate(14 ", num(top + plot_h / 2), ") rotate(-90)\" text-anchor=\"middle\">",
             xml_escape(o.y_label), "</text>\n");
  if (empty) {
    svg += cat("<text x=\"", num(left + plot_w / 2), "\" y=\"", num(top + plot_h / 2),
               "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n</svg>\n");
    return svg;
  }

  const auto xt = nice_ticks(x_lo, x_hi, 6), yt = nice_ticks(y_lo, y_hi, 5);
  const double x0 = xt.front(), x1 = xt.back(), y0 = yt.front(), y1 = yt.back();
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * plot_w; };
  auto py = [&](double y) { return top + plot_h - (y - y0) / (y1 - y0) * plot_h; };
  const double x_step = xt.size() > 1 ? xt[1] - xt[0] : 1, y_step = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double t : xt) {
    svg += cat("<line x1=\"", num(px(t)), "\" y1=\"", num(top + plot_h), "\" x2=\"", num(px(t)), "\" y2=\"",
               num(top + plot_h + 5), "\" stroke=\"#333\"/>");
    svg += cat("<text x=\"", num(px(t)), "\" y=\"", num(top + plot_h + 17), "\" text-anchor=\"middle\">",
               tick_label(t, x_step), "</text>\n");
  }
  for (double t : yt) {
    svg += cat("<line x1=\"", num(left), "\" y1=\"", num(py(t)), "\" x2=\"", num(left + plot_w), "\" y2=\"",
               num(py(t)), "\" stroke=\"#ddd\"/>");
    svg += cat("<line x1=\"", num(left - 5), "\" y1=\"", num(py(t)), "\" x2=\"", num(left), "\" y2=\"", num(py(t)),
               "\" stroke=\"#333\"/>");
    svg += cat("<text x=\"", num(left - 8), "\" y=\"", num(py(t) + 4), "\" text-anchor=\"end\">",
               tick_label(t, y_step), "</text>\n");
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kPalette[i % std::size(kPalette)];
    std::vector<std::pair<double, double>> xy;  // pixel coordinates of the finite points
    for (auto [x, y] : series[i].points)
      if (std::isfinite(x) && std::isfinite(y)) xy.emplace_back(px(x), py(y));
    if (xy.size() > 1) {
      std::string pts;
      for (auto [x, y] : xy) pts += cat(pts.empty() ? "" : " ", num(x), ",", num(y));
      svg += cat("<polyline fill=\"none\" stroke=\"", color, "\" stroke-width=\"1.8\" points=\"", pts, "\"/>\n");
    }
    if (xy.size() <= kMarkedPoints)  // sparse series (e.g. validation every N steps) get point markers
      for (auto [x, y] : xy)
        svg += cat("<circle cx=\"", num(x), "\" cy=\"", num(y), "\" r=\"2.5\" fill=\"", color, "\"/>\n");
    const double lx = left + static_cast<double>(i % 3) * (plot_w / 3), ly = top + plot_h + 48 + 18.0 * (i / 3);
    svg += cat("<rect x=\"", num(lx), "\" y=\"", num(ly - 9), "\" width=\"12\" height=\"10\" fill=\"", color, "\"/>");
    svg += cat("<text x=\"", num(lx + 16), "\" y=\"", num(ly), "\">", xml_escape(series[i].name), "</text>\n");
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace grpo
