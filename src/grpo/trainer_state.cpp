// Run checkpoints (see trainer_state.h).
#include "grpo/trainer_state.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace grpo {

namespace fs = std::filesystem;

std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const OptimizerMoments& opt,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir) {
  const std::string ckdir = run_dir + "/checkpoints";
  make_dirs(ckdir);
  const std::string dir = ckdir + "/global_step_" + std::to_string(st.global_step);
  const std::string scratch = ckdir + "/.state_tmp_" + std::to_string(st.global_step);
  make_dirs(scratch);
  nlohmann::json j = {{"global_step", st.global_step}, {"epoch", st.epoch}, {"epoch_position", st.epoch_position},
                      {"skipped_steps", st.skipped_steps}, {"consecutive_skips", st.consecutive_skips},
                      {"optimizer_steps", opt.steps}};
  write_file_atomic(scratch + "/trainer_state.json", j.dump(2) + "\n");
  std::vector<StTensorOut> moments;
  const Arena& layout = w.params();
  for (const auto& [prefix, base] : {std::pair<std::string, const float*>{"m.", opt.m}, {"v.", opt.v}})
    for (const auto& [name, view] : layout.entries())
      moments.push_back({prefix + name, StDType::F32,
                         {view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim},
                         base + layout.offset(name)});
  write_safetensors(scratch + "/optimizer.safetensors", moments);
  std::vector<std::string> extra = {scratch + "/trainer_state.json", scratch + "/optimizer.safetensors"};
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    if (file_exists(tokenizer_dir + "/" + f)) extra.push_back(tokenizer_dir + "/" + f);
  save_checkpoint(dir, w.config(), w.named_tensors(), save_dtype, 0, extra);
  fs::remove_all(scratch);
  write_file_atomic(ckdir + "/latest", "global_step_" + std::to_string(st.global_step) + "\n");
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

TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, float* m, float* v,
                                 int64_t* optimizer_steps) {
  Checkpoint ck = Checkpoint::open(dir);
  w.load_from(ck);
  SafetensorsFile opt = SafetensorsFile::open(dir + "/optimizer.safetensors");
  const Arena& layout = w.params();
  for (const auto& [prefix, base] : {std::pair<std::string, float*>{"m.", m}, {"v.", v}})
    for (const auto& [name, view] : layout.entries()) {
      const StTensor* t = opt.find(prefix + name);
      GRPO_CHECK(t, "[resume] ", dir, "/optimizer.safetensors: missing tensor \"", prefix, name, "\"");
      tensor_to_f32(*t, base + layout.offset(name), view.numel(), opt.path());
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
    *optimizer_steps = j.at("optimizer_steps").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    fail("[resume] ", dir, "/trainer_state.json: ", e.what());
  }
  return st;
}

std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const train::AdamW& adam,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir) {
  GRPO_CHECK(adam.begin() == 0 && adam.end() == w.params().numel(), "[checkpoint] the optimizer holds a shard [",
             adam.begin(), ", ", adam.end(), ") of the layout; gather the moments first");
  return save_run_checkpoint(run_dir, w, OptimizerMoments{adam.m(), adam.v(), adam.steps()}, st, save_dtype,
                             tokenizer_dir);
}

TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, train::AdamW& adam) {
  GRPO_CHECK(adam.begin() == 0 && adam.end() == w.params().numel(), "[resume] the optimizer holds a shard [",
             adam.begin(), ", ", adam.end(), ") of the layout; load the whole layout and take the shard");
  int64_t steps = 0;
  TrainerState st = load_run_checkpoint(dir, w, adam.m(), adam.v(), &steps);
  adam.set_steps(steps);
  return st;
}

}  // namespace grpo
