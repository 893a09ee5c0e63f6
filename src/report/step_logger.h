// Where step metrics go, as trainer.logger lists them, each on exactly when listed:
//   console      one line per step on stderr (the caller composes it; console_fields helps)
//   jsonl        <run>/metrics.jsonl, one JSON object a line (metrics.h); report.html and resume read it
//   tensorboard  event files (tensorboard.h) in $TENSORBOARD_DIR when set (as verl), else in
//                <run>/tensorboard_log/<project_name>/<experiment_name>
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/names.h"
#include "report/metrics.h"
#include "report/tensorboard.h"

namespace grpo {

enum class Logger { Console, Jsonl, Tensorboard };
inline constexpr auto kLoggerNames =
    name_table<Logger>({{Logger::Console, "console"}, {Logger::Jsonl, "jsonl"}, {Logger::Tensorboard, "tensorboard"}});

struct StepLoggerOptions {
  std::vector<Logger> loggers = {Logger::Console, Logger::Jsonl};  // trainer.logger
  std::string run_dir;
  std::string project_name = "grpo.cpp", experiment_name = "grpo";
  bool truncate_jsonl = false;  // start metrics.jsonl empty (else append: resume)
  bool quiet = false;           // no console lines whatever the loggers (tests, benchmarks)
};

class StepLogger {
 public:
  explicit StepLogger(const StepLoggerOptions& options);
  // Sends `metrics` (a JSON object) to every logger; the console logger prints `console_line`.
  void log(int64_t step, const nlohmann::json& metrics, const std::string& console_line);
  bool console() const { return console_; }
  bool jsonl() const { return jsonl_ != nullptr; }
  std::string jsonl_path() const { return jsonl_ ? jsonl_->path() : ""; }
  std::string tensorboard_path() const { return tensorboard_ ? tensorboard_->path() : ""; }

 private:
  bool console_ = false;
  std::unique_ptr<MetricsWriter> jsonl_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

// The TensorBoard folder of a run (see above).
std::string tensorboard_dir(const StepLoggerOptions& options);

// "label value | label value" for the fields present in `m` as numbers (others are left out). `format` is
// a printf format for one double, e.g. "%.3f".
struct ConsoleField {
  const char* label;
  const char* key;
  const char* format;
};
std::string console_fields(const nlohmann::json& m, std::initializer_list<ConsoleField> fields);

}  // namespace grpo
