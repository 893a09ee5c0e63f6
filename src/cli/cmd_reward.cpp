// `grpo reward [CONFIG] --input F.jsonl|F.parquet --out F.jsonl`: scores responses offline with a run's reward
// set-up (CONFIG and --set overrides: reward.functions, custom_reward_function, reward_manager), or, with
// no CONFIG, as verl does by each row's data_source (verl's built-in rules). Input rows carry
// `response`, the reference answer (verl's reward_model.ground_truth, or `answer`), and optionally
// `data_source`, `extra_info`, `id`, `prompt`; each output line is the input row plus `score` (the weighted
// sum) and the reward functions' extra results (math_dapo's `acc`, a Python function's other dict
// keys). It prints the mean score for each data_source, so that a reward can be checked before a
// training run is spent on it. Bad rows are named (file:line and the field).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/files.h"
#include "data/dataset.h"
#include "data/parquet/parquet_file.h"
#include "config/config.h"
#include "config/reward_setup.h"
#include "reward/rewards.h"

namespace grpo::cli {
namespace {

struct RewardArgs {
  std::string config, input, out;
  std::vector<std::string> sets;
};

struct ScoredRow {
  nlohmann::json row;
  RewardInput input;
};

std::string text_of(const nlohmann::json& row, const char* field, const std::string& where, bool numbers_too) {
  const auto& v = row[field];
  GRPO_CHECK(v.is_string() || (numbers_too && v.is_number()), where, ": field \"", field, "\" must be ",
             numbers_too ? "text or a number" : "text", ", got ", v.type_name());
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// One input row (a JSONL line or a Parquet row) as a row to score; `where` names it in errors.
ScoredRow scored_row(nlohmann::json row, const std::string& where, const std::string& default_id) {
  ScoredRow r;
  r.row = std::move(row);
  GRPO_CHECK(r.row.is_object(), where, ": expected a JSON object, got ", r.row.type_name());
  GRPO_CHECK(r.row.contains("response"), where, ": needs \"response\" (the text to score)");
  r.input.response = text_of(r.row, "response", where, false);
  const bool has_answer = r.row.contains("answer"), has_verl = r.row.contains("reward_model");
  GRPO_CHECK(has_answer != has_verl, where, has_answer ? ": has both \"answer\" and \"reward_model\"; expected one"
                                                       : ": needs the reference answer: field \"reward_model.ground_truth\" (or \"answer\")");
  if (has_answer) {
    r.input.answer = text_of(r.row, "answer", where, true);
  } else {
    const auto& rm = r.row["reward_model"];
    GRPO_CHECK(rm.is_object() && rm.contains("ground_truth") && !rm["ground_truth"].is_null(), where,
               ": field \"reward_model.ground_truth\" is missing (expected {\"ground_truth\": ...})");
    const auto& gt = rm["ground_truth"];
    r.input.answer = gt.is_string() ? gt.get<std::string>() : gt.dump();
  }
  if (r.row.contains("data_source")) r.input.data_source = text_of(r.row, "data_source", where, false);
  if (r.row.contains("prompt") && r.row["prompt"].is_string()) r.input.prompt = r.row["prompt"].get<std::string>();
  if (r.row.contains("extra_info")) r.input.extra_info = r.row["extra_info"];
  r.input.id = r.row.contains("id") ? (r.row["id"].is_string() ? r.row["id"].get<std::string>() : r.row["id"].dump())
                                    : default_id;
  return r;
}

// The rows of a JSONL or Parquet file (Parquet: read one row group range at a time).
std::vector<ScoredRow> read_rows(const std::string& path) {
  std::vector<ScoredRow> rows;
  if (is_parquet_file(path)) {
    const parquet::ParquetFile file(path);
    int64_t index = 0;
    for (int g = 0; g < file.num_row_groups(); ++g) {
      const int64_t n = file.row_group_rows(g);
      for (int64_t b = 0; b < n; b += parquet::ParquetFile::kRowsPerRead) {
        const int64_t e = std::min(n, b + parquet::ParquetFile::kRowsPerRead);
        for (auto& row : file.read_rows(g, b, e)) {
          const std::string id = cat(path, " row ", index);
          rows.push_back(scored_row(std::move(row), "[reward] " + id, id));
          ++index;
        }
      }
    }
  } else {
    for_each_line(path, [&](int64_t line, const std::string& text) {
      if (text.find_first_not_of(" \t\r") == std::string::npos) return;
      const std::string where = cat("[reward] ", path, ":", line);
      nlohmann::json row;
      try {
        row = nlohmann::json::parse(text);
      } catch (const std::exception& e) {
        fail(where, ": not valid JSON (", e.what(), ")");
      }
      rows.push_back(scored_row(std::move(row), where, cat(path, ":", line)));
    });
  }
  GRPO_CHECK(!rows.empty(), "[reward] ", path, ": no rows to score");
  return rows;
}

void run_reward(const RewardArgs& a) {
  RewardConfig reward;
  if (!a.config.empty() || !a.sets.empty()) {
    GRPO_CHECK(!a.config.empty(), "[reward] --set needs a CONFIG (the run's YAML)");
    reward = load_config(a.config, a.sets).reward;
  }
  std::vector<ScoredRow> rows = read_rows(a.input);
  std::vector<std::string> sources;
  for (const auto& r : rows)
    if (std::find(sources.begin(), sources.end(), r.input.data_source) == sources.end())
      sources.push_back(r.input.data_source);
  std::vector<WeightedReward> rewards = make_rewards(run_reward_functions(reward, sources, a.input));
  std::vector<RewardInput> inputs;
  for (const auto& r : rows) inputs.push_back(r.input);
  const RewardScores scores = score_batch(rewards, inputs);

  std::string out;
  std::map<std::string, std::pair<double, int64_t>> by_source;
  for (size_t i = 0; i < rows.size(); ++i) {
    nlohmann::json row = rows[i].row;
    row["score"] = scores.total[i];
    if (scores.names.size() > 1)
      for (size_t f = 0; f < scores.names.size(); ++f) row["score_" + scores.names[f]] = scores.per_function[f][i];
    for (const RewardExtra& e : scores.extras)
      if (!std::isnan(e.values[i])) row[e.key] = e.values[i];
    out += row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    auto& s = by_source[rows[i].input.data_source.empty() ? "(no data_source)" : rows[i].input.data_source];
    s.first += scores.total[i];
    s.second += 1;
  }
  if (a.out == "-")
    std::fwrite(out.data(), 1, out.size(), stdout);
  else
    write_file_atomic(a.out, out);
  std::FILE* report = a.out == "-" ? stderr : stdout;
  std::fprintf(report, "reward functions: ");
  for (size_t f = 0; f < scores.names.size(); ++f)
    std::fprintf(report, "%s%s (failed on %lld)", f ? ", " : "", scores.names[f].c_str(),
                 static_cast<long long>(scores.failures[f]));
  std::fprintf(report, "\n%-40s %8s %12s\n", "data_source", "rows", "mean score");
  for (const auto& [source, s] : by_source)
    std::fprintf(report, "%-40s %8lld %12.4f\n", source.c_str(), static_cast<long long>(s.second),
                 s.first / static_cast<double>(s.second));
}

void setup_reward(CLI::App& app) {
  auto a = std::make_shared<RewardArgs>();
  CLI::App* c = app.add_subcommand(
      "reward", "Score responses offline with a run's reward set-up, or by data_source as verl does");
  c->add_option("config", a->config, "The run's YAML config (its reward section); none: verl's rules by data_source");
  c->add_option("--input", a->input,
                "JSONL rows: response, reward_model.ground_truth (or answer), data_source, extra_info")
      ->required();
  c->add_option("--out", a->out, "JSONL output: each row plus score and extra results (- for stdout)")->required();
  c->add_option("--set", a->sets, "Override a config key (repeatable)");
  c->callback([a] { run_reward(*a); });
}

GRPO_REGISTER_COMMAND(setup_reward);

}  // namespace
}  // namespace grpo::cli
