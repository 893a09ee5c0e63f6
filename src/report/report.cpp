// HTML run report from step metrics (see report.h).
#include "report/report.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

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

struct ChartRule {
  const char* title;
  const char* y_label;
  bool always;  // drawn even without data
  std::function<bool(const std::string&)> wants;
};

const std::vector<ChartRule>& chart_rules() {
  static const std::vector<ChartRule> rules = {
      {"Reward", "reward", true,
       [](const std::string& k) {
         return k == "critic/rewards/mean" || k == "critic/score/mean" || (starts_with(k, "reward/") && ends_with(k, "/mean"));
       }},
      {"Accuracy", "accuracy", true, [](const std::string& k) { return k.find("accuracy") != std::string::npos; }},
      {"Response length", "tokens", true,
       [](const std::string& k) {
         return k == "response_length/mean" || k == "response_length/max" || k == "response_length/min";
       }},
      {"Step time breakdown", "seconds", true, [](const std::string& k) { return starts_with(k, "timing_s/"); }},
      {"Throughput", "tokens / s", true, [](const std::string& k) { return starts_with(k, "perf/throughput"); }},
      {"Packing efficiency", "real / paid tokens", false,
       [](const std::string& k) { return k == "perf/packing_efficiency"; }},
      {"Actor", "value", false,
       [](const std::string& k) {
         return k == "actor/pg_loss" || k == "actor/pg_clipfrac" || k == "actor/ppo_kl" || k == "actor/entropy" ||
                k == "actor/kl_loss" || k == "actor/grad_norm";
       }},
  };
  return rules;
}

std::string value_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

std::string render_report(const std::vector<nlohmann::json>& metrics, const ReportInfo& info) {
  // Every numeric metric as a series over "step" (lines without a step use their index).
  std::map<std::string, ChartSeries> all;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const auto& line = metrics[i];
    const double step = line.contains("step") && line["step"].is_number() ? line["step"].get<double>()
                                                                           : static_cast<double>(i);
    for (const auto& [k, v] : line.items())
      if (k != "step" && v.is_number()) {
        all[k].name = k;
        all[k].points.emplace_back(step, v.get<double>());
      }
  }

  std::string charts, table;
  for (const auto& rule : chart_rules()) {
    std::vector<ChartSeries> series;
    for (const auto& [k, s] : all)
      if (rule.wants(k)) series.push_back(s);
    if (series.empty() && !rule.always) continue;
    charts += "<div class=\"chart\">" + svg_line_chart({rule.title, "step", rule.y_label, 640, 320}, series) + "</div>\n";
    for (const auto& s : series)
      table += cat("<tr><td>", xml_escape(rule.title), "</td><td>", xml_escape(s.name), "</td><td>",
                   value_text(s.points.front().second), "</td><td>", value_text(s.points.back().second), "</td><td>",
                   s.points.size(), "</td></tr>\n");
  }

  double total_s = 0;
  if (all.count("timing_s/step"))
    for (auto [x, y] : all["timing_s/step"].points) total_s += y;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                     xml_escape(info.title) + "</title>\n";
  html +=
      "<style>body{font-family:sans-serif;margin:24px;color:#222}"
      ".charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #ddd}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
      "pre{background:#f6f6f6;padding:12px;overflow:auto}</style>\n</head>\n<body>\n";
  html += "<h1>" + xml_escape(info.title) + "</h1>\n";
  html += cat("<p>", metrics.size(), " metric lines", total_s > 0 ? cat(", ", value_text(total_s), " s of steps") : "",
              ".</p>\n");
  html += "<div class=\"charts\">\n" + charts + "</div>\n";
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
