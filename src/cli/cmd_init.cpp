// `grpo init`: creates a randomly initialised Hugging Face checkpoint from a preset or a config.json,
// initialised like transformers (normal(0, initializer_range) for linear and embedding weights, ones for
// norm weights, zeros for biases), plus tokenizer files (the byte tokenizer or a copy of existing ones) and,
// for Qwen3-VL, preprocessor_config.json; the tokenizer's vision tokens must have config.json's ids, and a
// text model's chat template (which cannot place pictures) is replaced by the vision-language one.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/error.h"
#include "core/files.h"
#include "model/checkpoint.h"
#include "model/init.h"
#include "model/presets.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vl_chat_template.h"

namespace grpo::cli {

namespace {

namespace fs = std::filesystem;

struct InitOptions {
  std::string arch, preset, config_file, out, tokenizer = "bytes", dtype;
  uint64_t seed = 0;
  bool force = false;
  bool config_only = false;  // config.json (and preprocessor_config.json) only: no weights, no tokenizer
};

// The vision tokens of a Qwen3-VL tokenizer must carry the ids config.json gives them.
void check_vision_ids(const Tokenizer& tok, const ModelConfig& c, const std::string& what) {
  const std::pair<const char*, int64_t> ids[] = {{"<|vision_start|>", c.vision_start_token_id},
                                                 {"<|vision_end|>", c.vision_end_token_id},
                                                 {"<|image_pad|>", c.image_token_id},
                                                 {"<|video_pad|>", c.video_token_id}};
  for (const auto& [token, id] : ids)
    if (tok.token_to_id(token) != id)
      fail("[init] tokenizer ", what, ": ", token, " has id ", tok.token_to_id(token), " but config.json says ", id,
           c.vocab_size > 100000 ? " (use --tokenizer with a Qwen3-VL tokenizer.json, e.g. ../shared/models/qwen3-tokenizer)"
                                 : "");
}

// Tokenizer files to copy into the checkpoint; `scratch` receives generated ones.
std::vector<std::string> tokenizer_files(const InitOptions& o, const ModelConfig& c, const std::string& scratch) {
  if (o.tokenizer == "bytes") {
    const int64_t need = c.has_vision() ? kByteTokenizerVisionVocab : kByteTokenizerVocab;
    if (c.vocab_size < need)
      fail("[init] vocab_size ", c.vocab_size, " is smaller than the byte tokenizer's ", need,
           " ids (use a larger vocab_size or --tokenizer PATH)");
    write_byte_tokenizer(scratch, c.has_vision());
    if (c.has_vision()) check_vision_ids(Tokenizer::load(scratch), c, "bytes");
    return {scratch + "/tokenizer.json", scratch + "/tokenizer_config.json"};
  }
  Tokenizer tok = Tokenizer::load(o.tokenizer);  // validates the files before they are copied
  if (tok.vocab_size() > c.vocab_size)
    fail("[init] tokenizer ", o.tokenizer, " has ", tok.vocab_size(), " ids but the model's vocab_size is ",
         c.vocab_size);
  if (c.has_vision()) check_vision_ids(tok, c, o.tokenizer);
  std::vector<std::string> files{o.tokenizer + "/tokenizer.json"};
  const std::string config_path = o.tokenizer + "/tokenizer_config.json";
  if (c.has_vision()) {
    // A text model's tokenizer (e.g. Qwen3's) has the vision tokens but a chat template that renders a
    // message's content as a string only: the copy gets the vision-language template, which places pictures.
    nlohmann::json config = fs::exists(config_path) ? nlohmann::json::parse(read_file(config_path)) : nlohmann::json::object();
    const auto t = config.find("chat_template");
    if (t == config.end() || t->dump().find("<|vision_start|>") == std::string::npos) {
      config["chat_template"] = vl_chat_template();
      make_dirs(scratch);
      write_file_atomic(scratch + "/tokenizer_config.json", config.dump(2) + "\n");
      std::fprintf(stderr, "[init] %s: its chat template does not place pictures; the checkpoint's "
                   "tokenizer_config.json gets the vision-language template (tokenizer/vl_chat_template.h)\n",
                   config_path.c_str());
      files.push_back(scratch + "/tokenizer_config.json");
      return files;
    }
  }
  if (fs::exists(config_path)) files.push_back(config_path);
  return files;
}

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

void run_init(const InitOptions& o) {
  ModelConfig c;
  std::string what;
  if (!o.config_file.empty()) {
    if (!o.arch.empty() || !o.preset.empty()) fail("[init] give either --config or --arch/--preset, not both");
    c = load_model_config(o.config_file);
    what = o.config_file;
  } else {
    if (o.arch.empty() || o.preset.empty()) fail("[init] --arch and --preset are required (or --config FILE)");
    if (!preset_exists(o.arch, o.preset))
      fail("[init] --preset ", o.preset, " is not a shape of --arch ", o.arch,
           o.arch == "qwen3-vl" ? " (tiny, small, qwen3-vl-2b or qwen3-vl-8b)" : " (tiny, small or qwen3-0.6b)");
    c = preset_config(o.arch, o.preset);
    what = "preset " + o.preset;
  }
  if (o.dtype == "f32") c.dtype = DType::F32;
  else if (o.dtype == "bf16") c.dtype = DType::BF16;
  if (fs::exists(o.out) && !(fs::is_directory(o.out) && fs::is_empty(o.out)) && !o.force)
    fail("[init] ", o.out, " already exists (use --force to replace a checkpoint there)");
  if (!o.tokenizer.empty() && o.tokenizer != "bytes" && !fs::is_directory(o.tokenizer))
    fail("[init] --tokenizer: expected \"bytes\" or a folder with tokenizer.json, got ", o.tokenizer);

  if (o.config_only) {  // what `grpo plan --no-data` needs: the shapes, without writing the weights
    make_dirs(o.out);
    write_file_atomic(o.out + "/config.json", model_config_to_json(c).dump(2) + "\n");
    if (c.has_vision()) write_preprocessor_config(o.out + "/preprocessor_config.json", c);
    std::printf("wrote %s/config.json (%s, %s parameters, no weights)\n", o.out.c_str(), what.c_str(),
                with_commas(parameter_count(c)).c_str());
    return;
  }
  const std::string scratch = o.out + ".tokenizer-" + std::to_string(::getpid());
  std::vector<std::string> extra;
  try {
    extra = tokenizer_files(o, c, scratch);
    if (c.has_vision()) {
      make_dirs(scratch);
      write_preprocessor_config(scratch + "/preprocessor_config.json", c);
      extra.push_back(scratch + "/preprocessor_config.json");
    }
    std::vector<TensorSpec> specs = expected_tensors(c);
    std::vector<std::vector<float>> data(specs.size());
    std::vector<NamedF32> named;
    for (size_t i = 0; i < specs.size(); ++i) {
      data[i].resize(static_cast<size_t>(st_numel(specs[i].shape)));
      init_parameter(specs[i].name, i, data[i].size(), o.seed, parameter_init_std(c, specs[i].name), data[i].data());
      named.push_back({specs[i].name, specs[i].shape, data[i].data()});
    }
    save_checkpoint(o.out, c, named, c.dtype, 0, extra);
  } catch (...) {
    fs::remove_all(scratch);
    throw;
  }
  fs::remove_all(scratch);
  const int64_t params = parameter_count(c);
  std::printf("initialised %s (%s, seed %llu) -> %s\n", c.architecture.c_str(), what.c_str(),
              static_cast<unsigned long long>(o.seed), o.out.c_str());
  std::printf("parameters: %s (%.2f M), saved as %s, tokenizer: %s\n", with_commas(params).c_str(), params / 1e6,
              c.dtype == DType::BF16 ? "bf16" : "f32", o.tokenizer.c_str());
}

void setup_init(CLI::App& app) {
  auto o = std::make_shared<InitOptions>();
  CLI::App* cmd = app.add_subcommand("init", "Create a randomly initialised Hugging Face checkpoint");
  auto* arch = cmd->add_option("--arch", o->arch, "Architecture")->check(CLI::IsMember(preset_archs()));
  auto* preset = cmd->add_option("--preset", o->preset,
                                 "Model size: tiny (~1M parameters), small (~25M), qwen3-0.6b (the real shape; text archs), "
                                 "qwen3-vl-2b, qwen3-vl-8b (the real Qwen3-VL shapes; --arch qwen3-vl)")
                     ->check(CLI::IsMember(preset_names()));
  auto* config = cmd->add_option("--config", o->config_file, "A config.json to initialise instead of a preset")
                     ->check(CLI::ExistingFile);
  config->excludes(arch)->excludes(preset);
  cmd->add_option("--out", o->out, "Output folder")->required();
  cmd->add_option("--tokenizer", o->tokenizer,
                  "\"bytes\" (256 byte tokens + ChatML specials) or a folder to copy tokenizer.json and "
                  "tokenizer_config.json from")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "Saved dtype (default: the config's)")->check(CLI::IsMember({"f32", "bf16"}));
  cmd->add_flag("--force", o->force, "Replace an existing checkpoint at --out");
  cmd->add_flag("--config-only", o->config_only,
                "Write config.json (and preprocessor_config.json) only, no weights: enough for grpo plan --no-data");
  cmd->callback([o] { run_init(*o); });
}

}  // namespace

GRPO_REGISTER_COMMAND(setup_init);

}  // namespace grpo::cli
