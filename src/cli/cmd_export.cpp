// `grpo export`: merges a PEFT LoRA adapter into its base model (W + s B A for every adapted linear) and
// writes the result as a complete Hugging Face folder (config.json, safetensors, the base's tokenizer and
// preprocessor files), loadable by transformers, vLLM and this engine without the adapter.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/files.h"
#include "core/threads.h"
#include "model/checkpoint.h"
#include "model/lora.h"
#include "model/weights.h"

namespace grpo::cli {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string model, adapter, out, dtype = "f32";
  int threads = 0;
};

// --model, or the adapter's base_model_name_or_path (as written, else relative to the adapter folder).
std::string base_model_of(const ExportArgs& a) {
  if (!a.model.empty()) return a.model;
  const std::string cfg = a.adapter + "/adapter_config.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(cfg));
  } catch (const nlohmann::json::exception& e) {
    fail("[export] ", cfg, ": not valid JSON (", e.what(), ")");
  }
  GRPO_CHECK(j.is_object() && j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string(),
             "[export] ", cfg, " names no base_model_name_or_path: give the base model with --model");
  const std::string base = j["base_model_name_or_path"].get<std::string>();
  if (file_exists(base + "/config.json")) return base;
  const std::string beside = (fs::path(a.adapter) / base).string();
  GRPO_CHECK(file_exists(beside + "/config.json"), "[export] ", cfg, ": base_model_name_or_path \"", base,
             "\" is not a model folder here (nor relative to the adapter); give the base model with --model");
  return beside;
}

void run_export(const ExportArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  const std::string base = base_model_of(a);
  GRPO_CHECK(fs::absolute(a.out).lexically_normal() != fs::absolute(base).lexically_normal(), "[export] --out ", a.out,
             " is the base model's folder; write the merged model elsewhere");
  auto weights = ModelWeights::load(base);
  auto lora = LoraAdapters::load(weights->config(), a.adapter);
  lora->merge_into(*weights);
  std::vector<std::string> extra;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json", "generation_config.json"})
    if (file_exists(base + "/" + f)) extra.push_back(base + "/" + f);
  const DType dtype = a.dtype == "bf16" ? DType::BF16 : DType::F32;
  save_checkpoint(a.out, weights->config(), weights->named_tensors(), dtype, 0, extra);
  std::fprintf(stderr, "[export] %s + %s (%zu adapted linears, r %lld, scale %g) -> %s\n", base.c_str(),
               a.adapter.c_str(), lora->modules().size(), static_cast<long long>(lora->rank()), lora->scale(),
               a.out.c_str());
}

void setup_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* c = app.add_subcommand("export", "Merge a LoRA adapter into its base model and write a Hugging Face folder");
  c->add_option("--adapter", a->adapter, "PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors)")
      ->required();
  c->add_option("--model", a->model, "Base model folder (default: the adapter's base_model_name_or_path)");
  c->add_option("--out", a->out, "Output folder (written atomically)")->required();
  c->add_option("--dtype", a->dtype, "Saved dtype: f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->callback([a] { run_export(*a); });
}

GRPO_REGISTER_COMMAND(setup_export);

}  // namespace
}  // namespace grpo::cli
