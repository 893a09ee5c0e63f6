// Test helper for comparing GRPO runs: a metrics.jsonl line without the values that depend on the clock
// or the machine rather than on the computation (timings, throughputs, peak RSS).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace grpo::test {

inline bool machine_dependent(const std::string& key) {
  return key.rfind("timing_s/", 0) == 0 || key == "perf/throughput" || key == "perf/rollout_tokens_per_s" ||
         key == "perf/peak_rss_bytes" || key == "perf/cpu_time_s" || key == "perf/comm_share";
}

inline nlohmann::json without_machine_dependent(nlohmann::json line) {
  for (auto it = line.begin(); it != line.end();) it = machine_dependent(it.key()) ? line.erase(it) : std::next(it);
  return line;
}

}  // namespace grpo::test
