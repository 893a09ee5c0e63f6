// HTML run report from step metrics (see report.h).
#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>

#include "core/error.h"
#include "core/files.h"
#include "report/metrics.h"
#include "report/svg_chart.h"

namespace grpo {

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

using KeyTest = std::function<bool(const std::string&)>;

KeyTest one_of(std::vector<std::string> keys) {
  return [keys = std::move(keys)](const std::string& k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
}

enum class Style { Lines, StepTime };

struct ChartSpec {
  std::string title, y_label;
  KeyTest wants;
  bool always = false;  // drawn (with "no data") even when the metrics lack it
  bool small = false;   // one of the small charts (each metric on its own scale)
  bool percent = false;     // a fraction drawn as a percentage
  bool full_range = false;  // ... on a 0-100% axis
  Style style = Style::Lines;
};

bool is_accuracy(const std::string& k) { return k.find("accuracy") != std::string::npos; }

const std::vector<ChartSpec>& grpo_charts() {
  static const std::vector<ChartSpec> specs = {
      {"Reward", "reward",
       [](const std::string& k) {
         return k == "critic/rewards/mean" || k == "critic/score/mean" || k == "val/reward/mean" ||
                (starts_with(k, "reward/") && ends_with(k, "/mean"));
       },
       true},
      {"Held-out accuracy", "% correct", is_accuracy, true, false, true, true},
      {"Response length", "tokens", one_of({"response_length/mean", "response_length/max", "response_length/min"}),
       true},
      {"Step time", "seconds", nullptr, true, false, false, false, Style::StepTime},
      {"Throughput", "tokens / s", one_of({"perf/throughput", "perf/rollout_tokens_per_s"}), true},
      {"Policy loss", "loss", one_of({"actor/pg_loss"}), false, true},
      {"KL loss (vs reference)", "KL", one_of({"actor/kl_loss"}), false, true},
      {"Entropy", "nats / token", one_of({"actor/entropy"}), false, true},
      {"Clip fraction", "% of tokens", one_of({"actor/pg_clipfrac"}), false, true, true},
      {"Policy KL (vs old policy)", "KL", one_of({"actor/ppo_kl"}), false, true},
      {"Grad norm", "norm", one_of({"actor/grad_norm"}), false, true},
      {"Learning rate", "lr", one_of({"actor/lr"}), false, true},
      {"Packing efficiency", "% of computed tokens", one_of({"perf/packing_efficiency"}), false, true, true, true},
      {"Communication share", "% of the step", one_of({"perf/comm_share"}), false, true, true},
      {"Vision tower time", "seconds", one_of({"timing_s/vision_gen", "timing_s/vision_train"}), false, true},
  };
  return specs;
}

const std::vector<ChartSpec>& sft_charts() {
  static const std::vector<ChartSpec> specs = {
      {"Loss", "cross-entropy / token", one_of({"train/loss"}), true},
      {"Learning rate", "lr", one_of({"train/lr"}), true},
      {"Held-out accuracy", "% correct", is_accuracy, true, false, true, true},
      {"Grad norm", "norm", one_of({"actor/grad_norm"}), false, true},
      {"Entropy", "nats / token", one_of({"actor/entropy"}), false, true},
      {"Throughput", "tokens / s", one_of({"perf/throughput"}), false, true},
      {"Step time", "seconds", one_of({"timing_s/step"}), false, true},
      {"Packing efficiency", "% of computed tokens", one_of({"perf/packing_efficiency"}), false, true, true, true},
  };
  return specs;
}

std::string value_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

ChartSeries scaled(ChartSeries s, double factor) {
  for (auto& p : s.points) p.second *= factor;
  return s;
}

bool all_zero(const ChartSeries& s) {
  return std::all_of(s.points.begin(), s.points.end(), [](const auto& p) { return p.second == 0; });
}

// The first and the last value of a series, or nothing.
std::optional<std::pair<double, double>> first_last(const std::map<std::string, ChartSeries>& all, const std::string& k) {
  auto it = all.find(k);
  if (it == all.end() || it->second.points.empty()) return std::nullopt;
  return std::make_pair(it->second.points.front().second, it->second.points.back().second);
}

std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

// A few numbers a reader looks for first.
std::string headline(const std::map<std::string, ChartSeries>& all, const ReportInfo& info, double last_step) {
  std::vector<std::string> items;
  if (std::isfinite(last_step)) items.push_back(cat(static_cast<int64_t>(last_step), " steps"));
  double total_s = 0;
  if (auto it = all.find("timing_s/step"); it != all.end())
    for (auto [x, y] : it->second.points) total_s += y;
  if (total_s > 0) items.push_back(cat(value_text(total_s), " s of steps"));
  if (info.kind == ReportKind::Sft) {
    if (auto l = first_last(all, "train/loss")) items.push_back(cat("loss ", value_text(l->first), " &rarr; ", value_text(l->second)));
  } else if (auto r = first_last(all, "critic/rewards/mean")) {
    items.push_back(cat("mean reward ", value_text(r->first), " &rarr; ", value_text(r->second)));
  }
  if (auto a = first_last(all, "val/accuracy")) {
    const auto& points = all.at("val/accuracy").points;
    items.push_back(points.size() > 1
                        ? cat("held-out accuracy ", percent_text(a->first), " (step ", points.front().first, ") &rarr; ",
                              percent_text(a->second), " (step ", points.back().first, ")")
                        : cat("held-out accuracy ", percent_text(a->second), " (step ", points.back().first, ")"));
  }
  std::string html = "<ul class=\"headline\">";
  for (const auto& item : items) html += "<li>" + item + "</li>";
  return html + "</ul>\n";
}

}  // namespace

const std::vector<std::string>& step_time_parts() {
  static const std::vector<std::string> parts = {"gen",          "reward",         "adv",  "old_log_prob", "ref",
                                                 "update_actor", "update_weights", "comm", "other"};
  return parts;
}

std::string render_report(const std::vector<nlohmann::json>& metrics, const ReportInfo& info) {
  // Every numeric metric as a series over "step" (lines without a step use their index).
  std::map<std::string, ChartSeries> all;
  double first_step = INFINITY, last_step = -INFINITY;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const auto& line = metrics[i];
    const double step = line.contains("step") && line["step"].is_number() ? line["step"].get<double>()
                                                                           : static_cast<double>(i);
    first_step = std::min(first_step, step), last_step = std::max(last_step, step);
    for (const auto& [k, v] : line.items())
      if (k != "step" && v.is_number()) {
        all[k].name = k;
        all[k].points.emplace_back(step, v.get<double>());
      }
  }

  std::string wide, small, table;
  auto add_rows = [&](const std::string& title, const std::vector<ChartSeries>& series) {
    for (const auto& s : series)
      table += cat("<tr><td>", xml_escape(title), "</td><td>", xml_escape(s.name), "</td><td>",
                   value_text(s.points.front().second), "</td><td>", value_text(s.points.back().second), "</td><td>",
                   s.points.size(), "</td></tr>\n");
  };
  for (const ChartSpec& spec : info.kind == ReportKind::Sft ? sft_charts() : grpo_charts()) {
    ChartOptions o;
    o.title = spec.title;
    o.x_label = "step";
    o.y_label = spec.y_label;
    o.width = spec.small ? 420 : 640;
    o.height = spec.small ? 250 : 320;
    o.integer_x = true;
    if (std::isfinite(first_step)) o.x_range = std::make_pair(first_step, last_step);
    if (spec.full_range) o.y_range = std::make_pair(0.0, 100.0);
    std::string svg;
    if (spec.style == Style::StepTime) {
      std::vector<ChartSeries> parts;
      for (const std::string& p : step_time_parts())
        if (auto it = all.find("timing_s/" + p); it != all.end() && !all_zero(it->second)) parts.push_back(it->second);
      const auto total = all.find("timing_s/step");
      if (parts.empty() && total == all.end() && !spec.always) continue;
      const ChartSeries totals = total != all.end() ? total->second : ChartSeries{};
      svg = svg_stacked_bars(o, parts, totals);
      add_rows(spec.title, parts);
      if (total != all.end()) add_rows(spec.title, {totals});
    } else {
      std::vector<ChartSeries> series, drawn;
      for (const auto& [k, s] : all)
        if (spec.wants(k)) series.push_back(s), drawn.push_back(spec.percent ? scaled(s, 100) : s);
      if (series.empty() && !spec.always) continue;
      svg = svg_line_chart(o, drawn);
      add_rows(spec.title, series);
    }
    (spec.small ? small : wide) += "<div class=\"chart\">" + svg + "</div>\n";
  }

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     xml_escape(info.title) + "</title>\n";
  html +=
      "<style>body{font-family:sans-serif;margin:24px;color:#222}"
      ".charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #ddd}"
      ".headline li{margin:2px 0}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
      "pre{background:#f6f6f6;padding:12px;overflow:auto}</style>\n</head>\n<body>\n";
  html += "<h1>" + xml_escape(info.title) + "</h1>\n";
  html += headline(all, info, last_step);
  html += "<div class=\"charts\">\n" + wide + "</div>\n";
  if (!small.empty())
    html += cat("<h2>", info.kind == ReportKind::Sft ? "Optimisation" : "Actor and system",
                "</h2>\n<div class=\"charts\">\n", small, "</div>\n");
  html += "<h2>First and last values</h2>\n<table>\n<tr><th>chart</th><th>metric</th><th>first</th><th>last</th>"
          "<th>points</th></tr>\n" + table + "</table>\n";
  if (!info.config_yaml.empty()) html += "<h2>Configuration</h2>\n<pre>" + xml_escape(info.config_yaml) + "</pre>\n";
  html += "</body>\n</html>\n";
  return html;
}

void write_report(const std::string& metrics_path, const std::string& html_path, const ReportInfo& info) {
  write_file_atomic(html_path, render_report(read_metrics(metrics_path), info));
}

}  // namespace grpo
