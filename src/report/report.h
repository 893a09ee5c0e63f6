// The end-of-run report: one self-contained HTML page (inline SVG, no scripts) drawn from metrics.jsonl,
// with line charts of reward, accuracy, response length, step-time breakdown and throughput (always
// present; "no data" when the metrics lack them), plus packing efficiency and actor statistics when
// logged, a table of first/last values, and the resolved config.
// Series come from metric names: critic/rewards/mean, critic/score/mean, reward/<fn>/mean; any name
// containing "accuracy"; response_length/{mean,max,min}; timing_s/*; perf/throughput*;
// perf/packing_efficiency; actor/{pg_loss,pg_clipfrac,ppo_kl,entropy,kl_loss,grad_norm}.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace grpo {

struct ReportInfo {
  std::string title = "grpo.cpp run";
  std::string config_yaml;  // shown at the end when not empty
};

std::string render_report(const std::vector<nlohmann::json>& metrics, const ReportInfo& info);
// Reads metrics_path (read_metrics) and writes html_path atomically.
void write_report(const std::string& metrics_path, const std::string& html_path, const ReportInfo& info);

}  // namespace grpo
