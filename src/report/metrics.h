// Step metrics: one JSON object a line in metrics.jsonl ({"step": N, "<verl metric name>": value, ...}),
// each line written with a single append and flushed, so a crash leaves at most a torn last line, which
// read_metrics skips. Names follow verl (grpo-math.md): timing_s/gen, perf/throughput,
// response_length/mean, critic/rewards/mean, actor/pg_loss, ... plus perf/packing_efficiency.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace grpo {

class MetricsWriter {
 public:
  // Opens (creating) `path` for appending; `truncate` starts it empty.
  explicit MetricsWriter(const std::string& path, bool truncate = false);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Appends {"step": step, ...metrics} (metrics must be an object; non-finite numbers become null).
  void write(int64_t step, const nlohmann::json& metrics);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// All lines of a metrics file in order. A torn (unparsable) LAST line is skipped; any other bad line is
// an error naming the file and line.
std::vector<nlohmann::json> read_metrics(const std::string& path);

// Adds prefix/mean, prefix/max, prefix/min of values to m (nothing for an empty span).
void add_summary(nlohmann::json& m, const std::string& prefix, std::span<const double> values);

}  // namespace grpo
