// `grpo export`: merges a PEFT LoRA adapter into its base model (W + s B A for every adapted linear) and
// writes the result as a complete Hugging Face folder (config.json, safetensors, the base's tokenizer and
// preprocessor files), loadable by transformers, vLLM and this engine without the adapter; without an
// adapter, writes a run checkpoint as one plain Hugging Face folder (a checkpoint of several ranks under
// mixed precision from its exact f32 master shards, not its bf16 model files); or, with --format gguf,
// writes a model (the adapter merged in when given) as one GGUF file for llama.cpp and Ollama.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/files.h"
#include "core/threads.h"
#include "export/gguf_model.h"
#include "loop/trainer_state.h"
#include "model/checkpoint.h"
#include "model/lora.h"
#include "model/weights.h"

namespace grpo::cli {
namespace {

namespace fs = std::filesystem;

struct ExportArgs {
  std::string model, adapter, out, dtype = "f32", format = "hf", type = "f32";
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

// --format gguf: the model (--model, or the adapter's base with the adapter merged in) as one GGUF file.
void run_export_gguf(const ExportArgs& a) {
  const std::string base = a.adapter.empty() ? a.model : base_model_of(a);
  GRPO_CHECK(!base.empty(), "[export] --format gguf needs --model DIR (or --adapter DIR with its base)");
  GRPO_CHECK(!fs::is_directory(a.out), "[export] --out ", a.out, " is a folder; --format gguf writes one file");
  gguf::check_exportable(load_model_config(base + "/config.json"), base);  // before loading any weights
  // A run checkpoint's exact f32 masters where it has them (the model files round them to bf16).
  auto weights = std::make_unique<ModelWeights>(Checkpoint::open(base).config());
  load_checkpoint_weights(base, *weights);
  std::string merged = has_flat_shards(master_shards(), base) ? " (its f32 master shards)" : "";
  if (!a.adapter.empty()) {
    auto lora = LoraAdapters::load(weights->config(), a.adapter);
    lora->merge_into(*weights);
    merged += cat(" + ", a.adapter, " (", lora->modules().size(), " adapted linears merged)");
  }
  const gguf::GgmlType type = gguf::parse_file_type(a.type);
  const auto s = gguf::write_gguf(*weights, base, a.out, type, fs::path(a.out).stem().string());
  std::fprintf(stderr,
               "[export] %s%s -> %s (GGUF v3, %s: %lld tensors, %lld q8_0, %lld f16 where rows are not a "
               "multiple of 32; %lld metadata keys)\n",
               base.c_str(), merged.c_str(), a.out.c_str(), std::string(gguf::kGgmlTypeNames.name(type)).c_str(),
               static_cast<long long>(s.tensors), static_cast<long long>(s.quantized),
               static_cast<long long>(s.f16_fallback), static_cast<long long>(s.kv));
}

void run_export(const ExportArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  if (a.format == "gguf") return run_export_gguf(a);
  GRPO_CHECK(!a.adapter.empty() || !a.model.empty(),
             "[export] --format hf needs --adapter DIR (merged into its base) or --model DIR (a run checkpoint)");
  const std::string base = base_model_of(a);
  GRPO_CHECK(fs::absolute(a.out).lexically_normal() != fs::absolute(base).lexically_normal(), "[export] --out ", a.out,
             " is the model's own folder; write the exported model elsewhere");
  auto weights = std::make_unique<ModelWeights>(Checkpoint::open(base).config());  // (a tied head's notes applied)
  load_checkpoint_weights(base, *weights);
  std::unique_ptr<LoraAdapters> lora;
  if (!a.adapter.empty()) {
    lora = LoraAdapters::load(weights->config(), a.adapter);
    lora->merge_into(*weights);
  }
  std::vector<std::string> extra;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json", "generation_config.json"})
    if (file_exists(base + "/" + f)) extra.push_back(base + "/" + f);
  const DType dtype = a.dtype == "bf16" ? DType::BF16 : DType::F32;
  save_checkpoint(a.out, weights->config(), weights->named_tensors(), dtype, 0, extra);
  if (lora)
    std::fprintf(stderr, "[export] %s + %s (%zu adapted linears, r %lld, scale %g) -> %s\n", base.c_str(),
                 a.adapter.c_str(), lora->modules().size(), static_cast<long long>(lora->rank()), lora->scale(),
                 a.out.c_str());
  else
    std::fprintf(stderr, "[export] %s%s -> %s (%s)\n", base.c_str(),
                 has_flat_shards(master_shards(), base) ? " (its f32 master shards)" : "", a.out.c_str(),
                 a.dtype.c_str());
}

void setup_export(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  CLI::App* c = app.add_subcommand(
      "export",
      "Merge a LoRA adapter into its base model and write a Hugging Face folder, write a run checkpoint as one "
      "Hugging Face folder, or write a GGUF file");
  c->add_option("--adapter", a->adapter,
                "PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors); required for --format hf");
  c->add_option("--model", a->model,
                "Base model folder (default: the adapter's base_model_name_or_path), or the run checkpoint to export");
  c->add_option("--out", a->out, "Output folder, or the .gguf file with --format gguf (written atomically)")
      ->required();
  c->add_option("--format", a->format, "hf (a Hugging Face folder, the default) or gguf (one file for llama.cpp)")
      ->check(CLI::IsMember({"hf", "gguf"}));
  c->add_option("--dtype", a->dtype, "Saved dtype of --format hf: f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_option("--type", a->type, "Tensor type of --format gguf: f32, bf16, f16 or q8_0 (norms stay f32)")
      ->check(CLI::IsMember(gguf::kGgmlTypeNames.names()));
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->callback([a] { run_export(*a); });
}

GRPO_REGISTER_COMMAND(setup_export);

}  // namespace
}  // namespace grpo::cli
