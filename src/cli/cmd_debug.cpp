// `grpo debug forward-backward`: evaluates a reference case (../shared/reference format) and writes
// what the engine computes under the same tensor names, for comparison with PyTorch. Cases with
// pixel_values and image_grid_thw (Qwen3-VL's vl_case / grpo_case) run the vision tower too and also write
// position_ids, rope_deltas, vision_pos_embeds, vision_block_input, image_embeds and deepstack_embeds.k.
// --adapter DIR attaches a PEFT LoRA adapter: the base is frozen and the gradients are `grad.<adapter key>`.
// `grpo debug algorithm`: runs a folder of algorithm cases (advantage estimators, policy losses, KL
// penalties; ../shared/reference/algorithms format) through the training code and writes OUT/<case>.safetensors
// with the same output names, or OUT/<case>.error with the message of a refused case.
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/files.h"
#include "core/threads.h"
#include "train/algorithm_cases.h"
#include "train/case_eval.h"

namespace grpo::cli {
namespace {

struct DebugArgs {
  std::string model, adapter, case_path, grpo, out, dtype = "f32";
  bool checkpoint = false;
  int threads = 0;
};

void run_forward_backward(const DebugArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  auto weights = ModelWeights::load(a.model);
  SafetensorsFile cf = SafetensorsFile::open(a.case_path);
  nlohmann::json j;
  if (!a.grpo.empty()) {
    try {
      j = nlohmann::json::parse(read_file(a.grpo));
    } catch (const nlohmann::json::exception& e) {
      fail("[debug] ", a.grpo, ": not valid JSON (", e.what(), ")");
    }
    GRPO_CHECK(j.is_object(), "[debug] ", a.grpo, ": expected a JSON object");
  }
  std::unique_ptr<LoraAdapters> lora;
  if (!a.adapter.empty()) lora = LoraAdapters::load(weights->config(), a.adapter);
  train::CaseOptions opt;
  opt.lora = lora.get();
  opt.mode = parse_compute_mode(a.dtype);
  opt.checkpoint_activations = a.checkpoint;
  train::CaseOutputs out = train::evaluate_case(*weights, cf, a.grpo.empty() ? nullptr : &j, opt);
  std::vector<StTensorOut> tensors;
  for (const auto& [name, t] : out) tensors.push_back({name, StDType::F32, t.shape, t.data.data()});
  write_safetensors(a.out, tensors);
  std::fprintf(stderr, "wrote %zu tensors to %s\n", tensors.size(), a.out.c_str());
}

void run_algorithm(const std::string& cases_dir, const std::string& out_dir) {
  const nlohmann::json cases = train::read_algorithm_cases(cases_dir);
  make_dirs(out_dir);
  int written = 0, refused = 0;
  for (const auto& [name, c] : cases.items()) {
    const train::AlgorithmCaseResult r = train::run_algorithm_case(cases_dir, name, c);
    if (r.refused) {
      write_file_atomic(out_dir + "/" + name + ".error", r.error + "\n");
      ++refused;
      continue;
    }
    std::vector<StTensorOut> tensors;
    for (const auto& [n, t] : r.outputs) tensors.push_back({n, StDType::F32, t.shape, t.data.data()});
    write_safetensors(out_dir + "/" + name + ".safetensors", tensors);
    ++written;
  }
  std::fprintf(stderr, "%d cases: %d written, %d refused (.error) in %s\n", written + refused, written, refused,
               out_dir.c_str());
}

void setup_debug(CLI::App& app) {
  CLI::App* debug = group_command(app, "debug", "Debugging tools");
  auto a = std::make_shared<DebugArgs>();
  CLI::App* c = debug->add_subcommand("forward-backward",
                                      "Compute logits, log-probs, entropy, losses and gradients of a reference case");
  c->add_option("--model", a->model, "Hugging Face model folder")->required();
  c->add_option("--adapter", a->adapter, "PEFT LoRA adapter folder (adapter_config.json + adapter_model.safetensors)");
  c->add_option("--case", a->case_path, "Case file (lm_case / vl_case / grpo_case .safetensors)")->required();
  c->add_option("--grpo", a->grpo, "GRPO coefficients (grpo_case.json); without it: cross-entropy loss");
  c->add_option("--out", a->out, "Output .safetensors")->required();
  c->add_option("--dtype", a->dtype, "Compute mode: f32 or bf16")->check(CLI::IsMember({"f32", "bf16"}));
  c->add_flag("--checkpoint-activations", a->checkpoint, "Recompute each layer during backward");
  c->add_option("--threads", a->threads, "Threads (default: all cores)");
  c->callback([a] { run_forward_backward(*a); });

  auto alg = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* ac = debug->add_subcommand(
      "algorithm", "Run a folder of algorithm cases (cases.json: advantages, policy losses, KL penalties) through "
                   "the training code; writes OUT/<case>.safetensors, or OUT/<case>.error for a refused case");
  ac->add_option("--cases", alg->first, "Folder with cases.json and its inputs")->required();
  ac->add_option("--out", alg->second, "Output folder (created)")->required();
  ac->callback([alg] { run_algorithm(alg->first, alg->second); });
}

GRPO_REGISTER_COMMAND(setup_debug);

}  // namespace
}  // namespace grpo::cli
