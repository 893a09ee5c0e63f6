// The end-of-run report: one self-contained HTML page (inline SVG, no scripts) drawn from metrics.jsonl,
// showing what its run is about.
// - GRPO: reward, held-out accuracy (0-100%), response length, the step time as stacked bars of its parts
//   (step_time_parts, which add up to timing_s/step) and throughput, always (each says "no data" when the
//   metrics lack it); then the actor's statistics as small charts, each on its own scale: policy loss, KL
//   loss, entropy, clip fraction, policy KL, grad norm, learning rate; packing efficiency, communication
//   share and the vision tower's time when logged.
// - SFT: loss (train/loss), learning rate (train/lr) and held-out accuracy, always; grad norm, entropy,
//   throughput, step time and packing efficiency when logged.
// Every chart has the run's step range as its x axis, with whole-number ticks. Above them a few headline
// numbers; below them a table of each drawn metric's first and last values, and the resolved config.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace grpo {

enum class ReportKind { Grpo, Sft };

struct ReportInfo {
  std::string title = "grpo.cpp run";
  std::string config_yaml;  // shown at the end when not empty
  ReportKind kind = ReportKind::Grpo;
};

// The parts of a GRPO step's wall-clock time, as timing_s/<part>: disjoint, and with timing_s/other (the
// rest) they add up to timing_s/step. Communication on the critical path (timing_s/comm) is its own part:
// the phases it happened in do not count it.
const std::vector<std::string>& step_time_parts();

std::string render_report(const std::vector<nlohmann::json>& metrics, const ReportInfo& info);
// Reads metrics_path (read_metrics) and writes html_path atomically.
void write_report(const std::string& metrics_path, const std::string& html_path, const ReportInfo& info);

}  // namespace grpo
