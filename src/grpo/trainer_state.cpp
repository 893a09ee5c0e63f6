// Run checkpoints (see trainer_state.h).
#include "grpo/trainer_state.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace grpo {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStepPrefix = "global_step_";

// The step of a folder named global_step_<N>, or -1 for any other name.
int64_t step_of(const std::string& name) {
  if (name.rfind(kStepPrefix, 0) != 0) return -1;
  const std::string digits = name.substr(std::char_traits<char>::length(kStepPrefix));
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

void write_optimizer_state(const std::string& dir, const train::AdamW& adam, const TrainerState& st) {
  nlohmann::json j = {{"global_step", st.global_step}, {"epoch", st.epoch}, {"epoch_position", st.epoch_position},
                      {"skipped_steps", st.skipped_steps}, {"consecutive_skips", st.consecutive_skips},
                      {"optimizer_steps", adam.steps()}};
  write_file_atomic(dir + "/trainer_state.json", j.dump(2) + "\n");
  std::vector<StTensorOut> moments;
  for (const auto& [prefix, arena] : {std::pair<const char*, const Arena*>{"m.", &adam.m()}, {"v.", &adam.v()}})
    for (const auto& [name, view] : arena->entries())
      moments.push_back({prefix + name, StDType::F32,
                         {view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim}, view.data});
  write_safetensors(dir + "/optimizer.safetensors", moments);
}

}  // namespace

std::vector<std::string> run_checkpoints(const std::string& run_dir) {
  const fs::path ckdir = fs::path(run_dir) / "checkpoints";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(ckdir, ec)) return {};
  for (const fs::directory_entry& e : fs::directory_iterator(ckdir)) {
    const int64_t step = step_of(e.path().filename().string());
    if (step >= 0 && e.is_directory()) found.emplace_back(step, e.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const train::AdamW& adam,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir,
                                int64_t max_to_keep) {
  GRPO_CHECK(max_to_keep >= 0, "[checkpoint] trainer.max_actor_ckpt_to_keep must be >= 0 (0: keep all), got ",
             max_to_keep);
  const std::string ckdir = run_dir + "/checkpoints";
  make_dirs(ckdir);
  const std::string name = kStepPrefix + std::to_string(st.global_step);
  const std::string dir = ckdir + "/" + name;
  std::vector<std::string> extra;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"})
    if (file_exists(tokenizer_dir + "/" + f)) extra.push_back(tokenizer_dir + "/" + f);
  save_checkpoint(dir, w.config(), w.named_tensors(), save_dtype, 0, extra,
                  [&](const std::string& partial) { write_optimizer_state(partial, adam, st); });
  write_file_atomic(ckdir + "/latest", name + "\n");
  if (max_to_keep > 0) {  // oldest first; `latest` (just written) is the newest and always kept
    std::vector<std::string> all = run_checkpoints(run_dir);
    const std::string newest = fs::path(dir).lexically_normal().string();
    for (size_t i = 0; i + static_cast<size_t>(max_to_keep) < all.size(); ++i)
      if (fs::path(all[i]).lexically_normal().string() != newest) fs::remove_all(all[i]);
  }
  return dir;
}

std::string latest_run_checkpoint(const std::string& run_dir) {
  const std::string marker = run_dir + "/checkpoints/latest";
  if (!file_exists(marker)) return "";
  std::string name = read_file(marker);
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  const std::string dir = run_dir + "/checkpoints/" + name;
  GRPO_CHECK(file_exists(dir + "/trainer_state.json"), "[resume] ", marker, " names ", name,
             " but that folder has no trainer_state.json");
  return dir;
}

TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, train::AdamW& adam) {
  Checkpoint ck = Checkpoint::open(dir);
  w.load_from(ck);
  SafetensorsFile opt = SafetensorsFile::open(dir + "/optimizer.safetensors");
  for (const auto& [prefix, arena] : {std::pair<std::string, Arena*>{"m.", &adam.m()}, {"v.", &adam.v()}})
    for (const auto& [name, view] : arena->entries()) {
      const StTensor* t = opt.find(prefix + name);
      GRPO_CHECK(t, "[resume] ", dir, "/optimizer.safetensors: missing tensor \"", prefix, name, "\"");
      tensor_to_f32(*t, view.f32(), view.numel(), opt.path());
    }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(dir + "/trainer_state.json"));
  } catch (const nlohmann::json::exception& e) {
    fail("[resume] ", dir, "/trainer_state.json: not valid JSON (", e.what(), ")");
  }
  TrainerState st;
  try {
    st.global_step = j.at("global_step").get<int64_t>();
    st.epoch = j.at("epoch").get<int64_t>();
    st.epoch_position = j.at("epoch_position").get<int64_t>();
    st.skipped_steps = j.at("skipped_steps").get<int64_t>();
    st.consecutive_skips = j.value("consecutive_skips", int64_t{0});  // absent in older checkpoints
    adam.set_steps(j.at("optimizer_steps").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    fail("[resume] ", dir, "/trainer_state.json: ", e.what());
  }
  return st;
}

}  // namespace grpo
