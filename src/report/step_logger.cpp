// Step metric loggers (see step_logger.h).
#include "report/step_logger.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace grpo {

std::string tensorboard_dir(const StepLoggerOptions& o) {
  const char* env = std::getenv("TENSORBOARD_DIR");
  if (env && *env) return env;
  return o.run_dir + "/tensorboard_log/" + o.project_name + "/" + o.experiment_name;
}

StepLogger::StepLogger(const StepLoggerOptions& o) {
  auto listed = [&](Logger l) { return std::find(o.loggers.begin(), o.loggers.end(), l) != o.loggers.end(); };
  console_ = listed(Logger::Console) && !o.quiet;
  if (listed(Logger::Jsonl)) jsonl_ = std::make_unique<MetricsWriter>(o.run_dir + "/metrics.jsonl", o.truncate_jsonl);
  if (listed(Logger::Tensorboard)) tensorboard_ = std::make_unique<TensorBoardWriter>(tensorboard_dir(o));
}

void StepLogger::log(int64_t step, const nlohmann::json& metrics, const std::string& console_line) {
  if (jsonl_) jsonl_->write(step, metrics);
  if (tensorboard_) tensorboard_->write_scalars(step, metrics);
  if (console_ && !console_line.empty()) std::fprintf(stderr, "%s\n", console_line.c_str());
}

std::string console_fields(const nlohmann::json& m, std::initializer_list<ConsoleField> fields) {
  std::string out;
  for (const ConsoleField& f : fields) {
    auto it = m.find(f.key);
    if (it == m.end() || !it->is_number()) continue;
    char value[64];
    std::snprintf(value, sizeof value, f.format, it->get<double>());
    out += (out.empty() ? "" : " | ") + std::string(f.label) + (*f.label ? " " : "") + value;
  }
  return out;
}

}  // namespace grpo
