// Run checkpoints (see trainer_state.h).
#include "loop/trainer_state.h"

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

void write_trainer_state(const std::string& dir, const TrainerState& st, int64_t optimizer_steps) {
  nlohmann::json j = {{"global_step", st.global_step},
                      {"epoch", st.epoch},
                      {"epoch_position", st.epoch_position},
                      {"skipped_steps", st.skipped_steps},
                      {"consecutive_skips", st.consecutive_skips},
                      {"reward_kl_coef", st.reward_kl_coef},
                      {"optimizer_steps", optimizer_steps}};
  write_file_atomic(dir + "/trainer_state.json", j.dump(2) + "\n");
}

// trainer_state.json and optimizer.safetensors (the moments named after the parameters) into `dir`.
void write_optimizer_state(const std::string& dir, const Arena& layout, const OptimizerMoments& opt,
                           const TrainerState& st) {
  write_trainer_state(dir, st, opt.steps);
  std::vector<StTensorOut> moments;
  for (const auto& [prefix, base] : {std::pair<std::string, const float*>{"m.", opt.m}, {"v.", opt.v}})
    for (const auto& [name, view] : layout.entries())
      if (layout.offset(name) + view.numel() <= opt.numel)
        moments.push_back({prefix + name, StDType::F32,
                         {view.shape.dims.begin(), view.shape.dims.begin() + view.shape.ndim},
                         base + layout.offset(name)});
  write_safetensors(dir + "/optimizer.safetensors", moments);
}

// Marks `name` as the latest checkpoint, then keeps the newest max_to_keep (0: all) global_step_* folders.
void mark_latest_and_prune(const std::string& run_dir, const std::string& name, const std::string& dir,
                           int64_t max_to_keep);

// Moments m.<name> / v.<name> of `layout`'s tensors within [0, numel) from dir/optimizer.safetensors.
void read_moments(const std::string& dir, const Arena& layout, float* m, float* v, int64_t numel) {
  SafetensorsFile opt = SafetensorsFile::open(dir + "/optimizer.safetensors");
  for (const auto& [prefix, base] : {std::pair<std::string, float*>{"m.", m}, {"v.", v}})
    for (const auto& [name, view] : layout.entries()) {
      if (layout.offset(name) + view.numel() > numel) continue;  // a frozen vision tower's
      const StTensor* t = opt.find(prefix + name);
      GRPO_CHECK(t, "[resume] ", dir, "/optimizer.safetensors: missing tensor \"", prefix, name, "\"");
      tensor_to_f32(*t, base + layout.offset(name), view.numel(), opt.path());
    }
}

TrainerState read_trainer_state(const std::string& dir, int64_t* optimizer_steps) {
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

std::vector<std::string> tokenizer_files(const std::string& tokenizer_dir) {
  std::vector<std::string> extra;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"})
    if (file_exists(tokenizer_dir + "/" + f)) extra.push_back(tokenizer_dir + "/" + f);
  return extra;
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

std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const OptimizerMoments& opt,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir,
                                int64_t max_to_keep) {
  GRPO_CHECK(max_to_keep >= 0, "[checkpoint] trainer.max_actor_ckpt_to_keep must be >= 0 (0: keep all), got ",
             max_to_keep);
  const std::string ckdir = run_dir + "/checkpoints";
  make_dirs(ckdir);
  const std::string name = kStepPrefix + std::to_string(st.global_step);
  const std::string dir = ckdir + "/" + name;
  save_checkpoint(dir, w.config(), w.named_tensors(), save_dtype, 0, tokenizer_files(tokenizer_dir),
                  [&](const std::string& partial) { write_optimizer_state(partial, w.params(), opt, st); });
  mark_latest_and_prune(run_dir, name, dir, max_to_keep);
  return dir;
}

std::string checkpoint_stage_dir(const std::string& run_dir, int64_t global_step) {
  return run_dir + "/checkpoints/" + kStepPrefix + std::to_string(global_step) + ".shards";
}

std::string save_run_checkpoint(const std::string& run_dir, const ModelConfig& c, const ShardedCheckpoint& ck,
                                const TrainerState& st, const std::string& tokenizer_dir, int64_t max_to_keep) {
  GRPO_CHECK(max_to_keep >= 0, "[checkpoint] trainer.max_actor_ckpt_to_keep must be >= 0 (0: keep all), got ",
             max_to_keep);
  const std::string name = kStepPrefix + std::to_string(st.global_step);
  const std::string dir = run_dir + "/checkpoints/" + name;
  save_checkpoint_from_parts(dir, c, ck.model_dtype, ck.parts, ck.stage_dir + "/model", tokenizer_files(tokenizer_dir),
                             [&](const std::string& partial) {
                               write_trainer_state(partial, st, ck.steps);
                               place_flat_shards(moment_shards(), ck.stage_dir, partial, ck.moments, ck.trained_numel);
                               if (!ck.masters.empty())
                                 place_flat_shards(master_shards(), ck.stage_dir, partial, ck.masters, ck.layout_numel);
                             });
  std::error_code ec;
  fs::remove_all(ck.stage_dir, ec);
  mark_latest_and_prune(run_dir, name, dir, max_to_keep);
  return dir;
}

std::string save_run_lora_checkpoint(const std::string& run_dir, const LoraAdapters& lora, const OptimizerMoments& opt,
                                     const TrainerState& st, const std::string& base_model,
                                     const std::string& tokenizer_dir, int64_t max_to_keep) {
  GRPO_CHECK(max_to_keep >= 0, "[checkpoint] trainer.max_actor_ckpt_to_keep must be >= 0 (0: keep all), got ",
             max_to_keep);
  const std::string ckdir = run_dir + "/checkpoints";
  make_dirs(ckdir);
  const std::string name = kStepPrefix + std::to_string(st.global_step);
  const std::string dir = ckdir + "/" + name, partial = dir + ".partial", old = dir + ".old";
  std::error_code ec;
  fs::remove_all(partial, ec);  // a leftover of a crashed save
  try {
    make_dirs(partial);
    lora.save(partial, base_model);
    write_optimizer_state(partial, lora.params(), opt, st);
    for (const std::string& f : tokenizer_files(tokenizer_dir))
      fs::copy_file(f, partial + "/" + fs::path(f).filename().string(), fs::copy_options::overwrite_existing);
    fs::remove_all(old, ec);
    if (fs::exists(dir)) fs::rename(dir, old);
    fs::rename(partial, dir);
    fs::remove_all(old, ec);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(partial, ec);
    fail("[checkpoint] ", dir, ": ", e.what());
  } catch (...) {
    fs::remove_all(partial, ec);
    throw;
  }
  mark_latest_and_prune(run_dir, name, dir, max_to_keep);
  return dir;
}

namespace {

void mark_latest_and_prune(const std::string& run_dir, const std::string& name, const std::string& dir,
                           int64_t max_to_keep) {
  write_file_atomic(run_dir + "/checkpoints/latest", name + "\n");
  if (max_to_keep > 0) {  // oldest first; `latest` (just written) is the newest and always kept
    std::vector<std::string> all = run_checkpoints(run_dir);
    const std::string newest = fs::path(dir).lexically_normal().string();
    for (size_t i = 0; i + static_cast<size_t>(max_to_keep) < all.size(); ++i)
      if (fs::path(all[i]).lexically_normal().string() != newest) fs::remove_all(all[i]);
  }
}

}  // namespace

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

void load_checkpoint_weights(const std::string& dir, ModelWeights& w) {
  if (has_flat_shards(master_shards(), dir)) {  // the exact f32 masters, which the bf16 model files round
    MasterShardSource masters(dir, w.params());
    if (w.gemm_masters_sharded()) {  // the shadow from the model files, the masters of this rank's shard
      w.load_from(masters, Checkpoint::open(dir));
    } else {
      w.load_from(masters);
    }
  } else {
    w.load_from(Checkpoint::open(dir));
  }
}

TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, float* m, float* v, int64_t moments_numel,
                                 int64_t* optimizer_steps) {
  return load_run_checkpoint_range(dir, w, 0, moments_numel, moments_numel, m, v, optimizer_steps);
}

TrainerState load_run_checkpoint_range(const std::string& dir, ModelWeights& w, int64_t lo, int64_t hi,
                                       int64_t moments_numel, float* m, float* v, int64_t* optimizer_steps) {
  GRPO_CHECK(!file_exists(dir + "/adapter_config.json"), "[resume] ", dir,
             " is a LoRA checkpoint (adapter_config.json): resume it with actor_rollout_ref.model.lora_rank > 0");
  load_checkpoint_weights(dir, w);
  if (has_flat_shards(moment_shards(), dir)) {
    FlatShardReader(moment_shards(), dir, moments_numel).read(lo, hi, {m, v});
  } else if (lo == 0 && hi == moments_numel) {  // moments named after the parameters, in the whole layout
    read_moments(dir, w.params(), m, v, moments_numel);
  } else {
    std::vector<float> m_all(moments_numel), v_all(moments_numel);
    read_moments(dir, w.params(), m_all.data(), v_all.data(), moments_numel);
    std::copy(m_all.begin() + lo, m_all.begin() + hi, m);
    std::copy(v_all.begin() + lo, v_all.begin() + hi, v);
  }
  return read_trainer_state(dir, optimizer_steps);
}

TrainerState load_run_lora_checkpoint(const std::string& dir, LoraAdapters& lora, float* m, float* v,
                                      int64_t moments_numel, int64_t* optimizer_steps) {
  GRPO_CHECK(file_exists(dir + "/adapter_config.json"), "[resume] ", dir, " has no adapter_config.json: it is a "
             "full fine-tuning checkpoint, not a LoRA one (resume it with actor_rollout_ref.model.lora_rank: 0)");
  const LoraConfig saved = LoraAdapters::read_config(dir);
  GRPO_CHECK(saved.rank == lora.rank(), "[resume] ", dir, "/adapter_config.json: r = ", saved.rank,
             ", the run's adapters have rank ", lora.rank());
  lora.load_tensors(dir);
  read_moments(dir, lora.params(), m, v, moments_numel);
  return read_trainer_state(dir, optimizer_steps);
}

std::string save_run_checkpoint(const std::string& run_dir, const ModelWeights& w, const train::AdamW& adam,
                                const TrainerState& st, DType save_dtype, const std::string& tokenizer_dir,
                                int64_t max_to_keep) {
  GRPO_CHECK(adam.begin() == 0 && adam.end() == w.params().numel(), "[checkpoint] the optimizer holds a shard [",
             adam.begin(), ", ", adam.end(), ") of the layout; gather the moments first");
  return save_run_checkpoint(run_dir, w, OptimizerMoments{adam.m(), adam.v(), adam.end(), adam.steps()}, st, save_dtype,
                             tokenizer_dir, max_to_keep);
}

TrainerState load_run_checkpoint(const std::string& dir, ModelWeights& w, train::AdamW& adam) {
  GRPO_CHECK(adam.begin() == 0 && adam.end() == w.params().numel(), "[resume] the optimizer holds a shard [",
             adam.begin(), ", ", adam.end(), ") of the layout; load the whole layout and take the shard");
  int64_t steps = 0;
  TrainerState st = load_run_checkpoint(dir, w, adam.m(), adam.v(), adam.end(), &steps);
  adam.set_steps(steps);
  return st;
}

}  // namespace grpo
