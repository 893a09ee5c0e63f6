// The start-up check of a run without the run (see run_check.h).
#include "plan/run_check.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "core/error.h"
#include "data/dataset.h"
#include "data/prompting.h"
#include "image/preprocess.h"
#include "model/checkpoint.h"
#include "reward/rewards.h"
#include "tokenizer/tokenizer.h"
#include "config/reward_setup.h"
#include "config/part_options.h"

namespace grpo {
namespace {

std::string millions(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, n >= 10'000'000 ? "%.0fM" : "%.1fM", static_cast<double>(n) / 1e6);
  return buf;
}

// What the data check found in one file.
struct DataFacts {
  int64_t examples = 0, filtered = 0, truncated = 0, longest = 0, with_pictures = 0;
  std::vector<std::string> data_sources;  // of the rows, in first-seen order ("" for rows without)
};

// Loads a key's data files as the run would (prompts tokenized when the tokenizer loaded); problems recorded.
std::optional<DataFacts> check_data(const std::string& key, const std::vector<std::string>& paths,
                                    const DatasetOptions& opt, std::vector<std::string>& problems) {
  try {
    Dataset d = load_datasets(paths, opt);
    DataFacts f;
    f.examples = static_cast<int64_t>(d.examples.size());
    f.filtered = d.filtered;
    f.truncated = d.truncated;
    f.data_sources = data_sources_of({&d});
    for (const Example& ex : d.examples) {
      f.longest = std::max<int64_t>(f.longest, static_cast<int64_t>(ex.prompt_ids.size()));
      if (!ex.images.empty()) f.with_pictures++;
    }
    return f;
  } catch (const Error& e) {
    problems.push_back(cat(e.what(), " (", key, ")"));
    return std::nullopt;
  }
}

std::string sampling(bool greedy, double temperature, double top_p, int64_t top_k) {
  if (greedy || temperature == 0) return "greedy";
  return cat("temperature ", temperature, ", top_p ", top_p, top_k > 0 ? cat(", top_k ", top_k) : std::string());
}

}  // namespace

RunCheck check_run(const Config& c, const ConfigNotes& notes, RunKind kind) {
  RunCheck r;
  auto& out = r.summary;
  const std::string& model = c.actor_rollout_ref.model.path;

  // The model: config.json and the safetensors headers (Checkpoint::open reads no tensor data), the tokenizer.
  std::optional<Checkpoint> ck;
  try {
    ck = Checkpoint::open(model);
  } catch (const Error& e) {
    r.problems.push_back(cat(e.what(), " (actor_rollout_ref.model.path)"));
  }
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = std::make_unique<Tokenizer>(Tokenizer::load(model));
  } catch (const Error& e) {
    r.problems.push_back(cat(e.what(), " (actor_rollout_ref.model.path)"));
  }
  std::optional<ImageProcessorConfig> images;
  try {
    if (has_image_processor_config(model)) images = load_image_processor_config(model);
  } catch (const Error& e) {
    r.problems.push_back(e.what());
  }
  if (ck) {
    const ModelConfig& m = ck->config();
    int64_t params = 0;
    for (const std::string& name : ck->names())
      if (const StTensor* t = ck->find(name)) params += st_numel(t->shape);
    out.push_back(cat("model: ", model, " (", m.architecture, ", ", m.num_hidden_layers, " layers, hidden ",
                      m.hidden_size, ", vocab ", m.vocab_size, ", ", millions(params), " parameters, ",
                      m.max_position_embeddings, " positions", m.has_vision() ? ", vision tower" : "", ")"));
    const int64_t seq = c.data.max_prompt_length + c.data.max_response_length;
    if (kind == RunKind::Grpo && seq > m.max_position_embeddings)
      r.problems.push_back(cat("[config] data.max_prompt_length + data.max_response_length = ", seq,
                               " tokens, more than the ", m.max_position_embeddings, " positions of ", model,
                               " (max_position_embeddings in config.json)"));
    if (tok && tok->vocab_size() > m.vocab_size)
      r.problems.push_back(cat("[tokenizer] ", model, ": ", tok->vocab_size(),
                               " token ids but the model has vocab_size ", m.vocab_size));
  }

  // The data, read and tokenized as the run reads it.
  DatasetOptions opt;
  const bool chat = c.data.apply_chat_template;
  const ImageProcessorConfig* proc = images ? &*images : nullptr;
  if (tok) opt.encode_prompt = [&tok, chat, proc](const Example& ex) { return encode_prompt(*tok, ex, chat, proc); };
  opt.image_key = c.data.image_key;
  opt.image_processor = proc;
  opt.max_prompt_length = c.data.max_prompt_length;
  opt.overflow = prompt_overflow_from_config(c.data.filter_overlong_prompts, c.data.truncation);
  opt.require_response = kind == RunKind::Sft;
  const std::optional<DataFacts> train = check_data("data.train_files", c.data.train_files, opt, r.problems);
  std::optional<DataFacts> val;
  if (!c.data.val_files.empty()) {
    opt.require_response = false;
    val = check_data("data.val_files", c.data.val_files, opt, r.problems);
  }
  struct DataLine {
    const char* key;
    const std::vector<std::string>* files;
    const std::optional<DataFacts>* facts;
  };
  for (const DataLine& d : {DataLine{"train", &c.data.train_files, &train}, DataLine{"val", &c.data.val_files, &val}}) {
    if (!*d.facts) continue;
    const DataFacts& f = **d.facts;
    const char* key = d.key;
    const std::string file = data_files_text(*d.files);
    std::string line = cat("data (", key, "): ", file, ": ", f.examples, " examples");
    if (tok) line += cat(", longest prompt ", f.longest, " tokens (max_prompt_length ", c.data.max_prompt_length, ")");
    if (f.filtered) line += cat(", ", f.filtered, " overlong prompts filtered out");
    if (f.truncated)
      line += cat(", ", f.truncated, " overlong prompts truncated (", kTruncationNames.name(c.data.truncation), ")");
    if (f.with_pictures) line += cat(", ", f.with_pictures, " with pictures");
    out.push_back(line);
    if (f.with_pictures && ck && !ck->config().has_vision())
      r.problems.push_back(cat("[data] ", file, ": ", f.with_pictures, " rows have pictures but ", model,
                               " is a text model (no vision_config in config.json)"));
  }

  const int64_t n = c.actor_rollout_ref.rollout.n;
  if (kind == RunKind::Grpo) {
    const auto& actor = c.actor_rollout_ref.actor;
    const auto& rollout = c.actor_rollout_ref.rollout;
    const int64_t B = c.data.train_batch_size, mini = actor.ppo_mini_batch_size;
    out.push_back(cat("step: ", B, " prompts x ", n, " responses = ", B * n, " sequences of at most ",
                      c.data.max_prompt_length, " + ", c.data.max_response_length, " tokens; ", B / mini,
                      " mini-batch(es) of ", mini * n, " sequences x ", actor.ppo_epochs, " epoch(s) = ",
                      B / mini * actor.ppo_epochs, " optimizer step(s)"));
    out.push_back(actor.use_dynamic_bsz
                      ? cat("micro-batches: packed by token budget, ", actor.ppo_max_token_len_per_gpu, " tokens")
                      : cat("micro-batches: ", actor.ppo_micro_batch_size_per_gpu, " sequences (",
                            mini * n / actor.ppo_micro_batch_size_per_gpu, " per mini-batch)"));
    if (train) {
      if (train->examples < B) {
        r.problems.push_back(cat("[data] ", data_files_text(c.data.train_files), " (data.train_files) has ", train->examples,
                                 " prompts, fewer than data.train_batch_size = ", B));
      } else {
        const std::string how = c.trainer.total_training_steps > 0 ? std::string(", trainer.total_training_steps")
                                                                   : cat(" x ", c.trainer.total_epochs, " epochs");
        out.push_back(cat("steps: ", total_training_steps(c, train->examples), " (", train->examples / B,
                          " per epoch", how, ")"));
      }
    }
    out.push_back(cat(
        "algorithm: ", train::kAdvEstimatorNames.name(c.algorithm.adv_estimator), " (advantages scaled by ",
        train::kAdvantageScalingNames.name(c.algorithm.scale_rewards), " std), loss ",
        train::kLossAggModeNames.name(actor.loss_agg_mode), ", clip ", actor.clip_ratio_low, "/", actor.clip_ratio_high,
        actor.use_kl_loss
            ? cat(", KL loss ", train::kKlPenaltyNames.name(actor.kl_loss_type), " x ", actor.kl_loss_coef)
            : "",
        actor.entropy_coeff != 0 ? cat(", entropy x ", actor.entropy_coeff) : "",
        c.algorithm.filter_groups.enable ? ", DAPO group filtering" : "",
        c.reward.overlong_buffer.enable ? cat(", overlong buffer ", c.reward.overlong_buffer.len) : "", "; lr ",
        actor.optim.lr));
    out.push_back(cat("rollout: ", sampling(!rollout.do_sample, rollout.temperature, rollout.top_p, rollout.top_k),
                      "; validation: ",
                      val ? cat(val->examples, " prompts x ", rollout.val_kwargs.n, ", ",
                                sampling(!rollout.val_kwargs.do_sample, rollout.val_kwargs.temperature,
                                         rollout.val_kwargs.top_p, rollout.val_kwargs.top_k))
                          : std::string("none")));
  } else if (train) {
    const int64_t bs = std::min<int64_t>(c.sft.batch_size, std::max<int64_t>(1, train->examples));
    out.push_back(cat("steps: ", (train->examples + bs - 1) / bs * c.sft.epochs, " (", c.sft.epochs, " epoch(s) of ",
                      bs, " sequences a step, at most ", c.sft.max_length, " tokens each)"));
  }
  if (kind == RunKind::Sft)
    if (const std::string problem = sft_config_problem(c); !problem.empty()) r.problems.push_back(problem);
  // The memory plan of the run (what the weights, optimizer, KV cache and activations take) belongs here,
  // between the run's shapes and its reward set-up.

  // Rewards, chosen as the run chooses them (by the rows' data_source when reward.functions is empty): each
  // function constructs (patterns compile; external commands and Python workers start on first use).
  try {
    std::vector<std::string> sources = train ? train->data_sources : std::vector<std::string>{};
    if (val)
      for (const std::string& s : val->data_sources)
        if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
    const std::vector<WeightedReward> rewards =
        make_rewards(run_reward_functions(c.reward, sources, data_files_text(c.data.train_files)));
    std::string line = "reward:";
    for (size_t i = 0; i < rewards.size(); ++i)
      line += cat(i ? " +" : " ", rewards[i].weight, " x ", rewards[i].function->name());
    if (kind == RunKind::Grpo) out.push_back(line);
  } catch (const Error& e) {
    r.problems.push_back(e.what());
  }

  out.push_back(cat("run folder: ", c.trainer.default_local_dir, "; loggers: ", [&] {
    std::string s;
    for (Logger l : c.trainer.logger) s += cat(s.empty() ? "" : ", ", kLoggerNames.name(l));
    return s.empty() ? std::string("none") : s;
  }()));
  const std::string said = notes.describe(c.trainer.default_local_dir);
  for (size_t begin = 0; begin < said.size();) {
    const size_t end = said.find('\n', begin);
    std::string line = said.substr(begin, end - begin);
    if (line.starts_with("[config] ")) line = line.substr(9);
    out.push_back(line);
    begin = end == std::string::npos ? said.size() : end + 1;
  }
  return r;
}

std::string describe(const RunCheck& check) {
  std::string s;
  for (const auto& line : check.summary) s += "[check] " + line + "\n";
  if (check.ok()) return s + "[check] ok: the run would start (nothing was trained)\n";
  s += cat("[check] ", check.problems.size(), " problem(s): the run would not start\n");
  for (const auto& p : check.problems) s += "  " + p + "\n";
  return s;
}

}  // namespace grpo
