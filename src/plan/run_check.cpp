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
#include "plan/memory_plan.h"
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
  DataLengths lengths;                    // what the memory plan needs of them
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
    f.lengths = data_lengths(d, Dataset{});
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

// What the model folder holds, each part empty where it did not load.
struct ModelParts {
  std::optional<Checkpoint> checkpoint;
  std::unique_ptr<Tokenizer> tokenizer;
  std::optional<ImageProcessorConfig> images;
};

// Opens config.json and the safetensors headers (Checkpoint::open reads no tensor data), the tokenizer and
// the picture preprocessor's config; problems recorded.
ModelParts open_model(const std::string& model, std::vector<std::string>& problems) {
  ModelParts m;
  try {
    m.checkpoint = Checkpoint::open(model);
  } catch (const Error& e) {
    problems.push_back(cat(e.what(), " (actor_rollout_ref.model.path)"));
  }
  try {
    m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(model));
  } catch (const Error& e) {
    problems.push_back(cat(e.what(), " (actor_rollout_ref.model.path)"));
  }
  try {
    if (has_image_processor_config(model)) m.images = load_image_processor_config(model);
  } catch (const Error& e) {
    problems.push_back(e.what());
  }
  return m;
}

// The model's line, and whether the run's lengths and the tokenizer fit it.
void check_model(const Config& c, const ModelParts& parts, RunKind kind, RunCheck& r) {
  if (!parts.checkpoint) return;
  const Checkpoint& ck = *parts.checkpoint;
  const std::string& model = c.actor_rollout_ref.model.path;
  const ModelConfig& m = ck.config();
  int64_t params = 0;
  for (const std::string& name : ck.names())
    if (const StTensor* t = ck.find(name)) params += st_numel(t->shape);
  r.summary.push_back(cat("model: ", model, " (", m.architecture, ", ", m.num_hidden_layers, " layers, hidden ",
                          m.hidden_size, ", vocab ", m.vocab_size, ", ", millions(params), " parameters, ",
                          m.max_position_embeddings, " positions", m.has_vision() ? ", vision tower" : "", ")"));
  const int64_t seq = c.data.max_prompt_length + c.data.max_response_length;
  if (kind == RunKind::Grpo && seq > m.max_position_embeddings)
    r.problems.push_back(cat("[config] data.max_prompt_length + data.max_response_length = ", seq,
                             " tokens, more than the ", m.max_position_embeddings, " positions of ", model,
                             " (max_position_embeddings in config.json)"));
  if (parts.tokenizer && parts.tokenizer->vocab_size() > m.vocab_size)
    r.problems.push_back(cat("[tokenizer] ", model, ": ", parts.tokenizer->vocab_size(),
                             " token ids but the model has vocab_size ", m.vocab_size));
}

// What the data check found in the training and the validation files (each empty where not read).
struct RunData {
  std::optional<DataFacts> train, val;
};

// The data, read and tokenized as the run reads it.
RunData check_run_data(const Config& c, const ModelParts& parts, RunKind kind, RunCheck& r) {
  DatasetOptions opt;
  const bool chat = c.data.apply_chat_template;
  const ImageProcessorConfig* proc = parts.images ? &*parts.images : nullptr;
  const Tokenizer* tok = parts.tokenizer.get();
  if (tok) opt.encode_prompt = [tok, chat, proc](const Example& ex) { return encode_prompt(*tok, ex, chat, proc); };
  opt.image_key = c.data.image_key;
  opt.image_processor = proc;
  opt.max_prompt_length = c.data.max_prompt_length;
  opt.overflow = prompt_overflow_from_config(c.data.filter_overlong_prompts, c.data.truncation);
  opt.require_response = kind == RunKind::Sft;
  RunData d;
  d.train = check_data("data.train_files", c.data.train_files, opt, r.problems);
  if (!c.data.val_files.empty()) {
    opt.require_response = false;
    d.val = check_data("data.val_files", c.data.val_files, opt, r.problems);
  }
  return d;
}

// A line per data file read, and whether the model can read its pictures.
void describe_data(const Config& c, const ModelParts& parts, const RunData& data, RunCheck& r) {
  struct DataLine {
    const char* key;
    const std::vector<std::string>* files;
    const std::optional<DataFacts>* facts;
  };
  for (const DataLine& d :
       {DataLine{"train", &c.data.train_files, &data.train}, DataLine{"val", &c.data.val_files, &data.val}}) {
    if (!*d.facts) continue;
    const DataFacts& f = **d.facts;
    const char* key = d.key;
    const std::string file = data_files_text(*d.files);
    std::string line = cat("data (", key, "): ", file, ": ", f.examples, " examples");
    if (parts.tokenizer)
      line += cat(", longest prompt ", f.longest, " tokens (max_prompt_length ", c.data.max_prompt_length, ")");
    if (f.filtered) line += cat(", ", f.filtered, " overlong prompts filtered out");
    if (f.truncated)
      line += cat(", ", f.truncated, " overlong prompts truncated (", kTruncationNames.name(c.data.truncation), ")");
    if (f.with_pictures) line += cat(", ", f.with_pictures, " with pictures");
    r.summary.push_back(line);
    if (f.with_pictures && parts.checkpoint && !parts.checkpoint->config().has_vision())
      r.problems.push_back(cat("[data] ", file, ": ", f.with_pictures, " rows have pictures but ",
                               c.actor_rollout_ref.model.path, " is a text model (no vision_config in config.json)"));
  }
}

// A GRPO step's shapes, the step count, the algorithm and the sampling.
void describe_grpo_step(const Config& c, const RunData& data, RunCheck& r) {
  auto& out = r.summary;
  const auto& actor = c.actor_rollout_ref.actor;
  const auto& rollout = c.actor_rollout_ref.rollout;
  const int64_t n = rollout.n;
  const int64_t B = c.data.train_batch_size, mini = actor.ppo_mini_batch_size;
  out.push_back(cat("step: ", B, " prompts x ", n, " responses = ", B * n, " sequences of at most ",
                    c.data.max_prompt_length, " + ", c.data.max_response_length, " tokens; ", B / mini,
                    " mini-batch(es) of ", mini * n, " sequences x ", actor.ppo_epochs,
                    " epoch(s) = ", B / mini * actor.ppo_epochs, " optimizer step(s)"));
  out.push_back(actor.use_dynamic_bsz
                    ? cat("micro-batches: packed by token budget, ", actor.ppo_max_token_len_per_gpu, " tokens")
                    : cat("micro-batches: ", actor.ppo_micro_batch_size_per_gpu, " sequences (",
                          mini * n / actor.ppo_micro_batch_size_per_gpu, " per mini-batch)"));
  if (data.train) {
    if (data.train->examples < B) {
      r.problems.push_back(cat("[data] ", data_files_text(c.data.train_files), " (data.train_files) has ",
                               data.train->examples, " prompts, fewer than data.train_batch_size = ", B));
    } else {
      const std::string how = c.trainer.total_training_steps > 0 ? std::string(", trainer.total_training_steps")
                                                                 : cat(" x ", c.trainer.total_epochs, " epochs");
      out.push_back(cat("steps: ", total_training_steps(c, data.train->examples), " (", data.train->examples / B,
                        " per epoch", how, ")"));
    }
  }
  out.push_back(cat(
      "algorithm: ", train::kAdvEstimatorNames.name(c.algorithm.adv_estimator), " (advantages scaled by ",
      train::kAdvantageScalingNames.name(c.algorithm.scale_rewards), " std), loss ",
      train::kLossAggModeNames.name(actor.loss_agg_mode), ", clip ", actor.clip_ratio_low, "/", actor.clip_ratio_high,
      actor.use_kl_loss ? cat(", KL loss ", train::kKlPenaltyNames.name(actor.kl_loss_type), " x ", actor.kl_loss_coef)
                        : "",
      actor.entropy_coeff != 0 ? cat(", entropy x ", actor.entropy_coeff) : "",
      c.algorithm.filter_groups.enable ? ", DAPO group filtering" : "",
      c.reward.overlong_buffer.enable ? cat(", overlong buffer ", c.reward.overlong_buffer.len) : "", "; lr ",
      actor.optim.lr));
  out.push_back(cat("rollout: ", sampling(!rollout.do_sample, rollout.temperature, rollout.top_p, rollout.top_k),
                    "; validation: ",
                    data.val ? cat(data.val->examples, " prompts x ", rollout.val_kwargs.n, ", ",
                                   sampling(!rollout.val_kwargs.do_sample, rollout.val_kwargs.temperature,
                                            rollout.val_kwargs.top_p, rollout.val_kwargs.top_k))
                             : std::string("none")));
}

// The lines of a text.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = text.find('\n', begin);
    lines.push_back(text.substr(begin, end - begin));
    begin = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

// The memory plan as `grpo train` makes it once the data is read (GrpoTrainer::check_memory_plan): its
// table, and a problem when the run does not fit (unless --ignore-memory-plan).
void check_memory_plan(const Config& c, const ModelParts& parts, const RunData& data, const RunCheckOptions& opt,
                       RunCheck& r) {
  if (!parts.checkpoint || !parts.tokenizer || !data.train) {
    r.summary.push_back("memory plan: not made (it needs the model, its tokenizer and the training data)");
    return;
  }
  DataLengths lengths = data.train->lengths;  // data_lengths of the training and validation sets
  if (data.val) {
    const DataLengths& v = data.val->lengths;
    lengths.max_prompt_tokens = std::max(lengths.max_prompt_tokens, v.max_prompt_tokens);
    lengths.max_prompt_patches = std::max(lengths.max_prompt_patches, v.max_prompt_patches);
    lengths.max_prompt_pictures = std::max(lengths.max_prompt_pictures, v.max_prompt_pictures);
    lengths.val_prompts = data.val->examples;
  }
  try {
    // The model's config.json as the session reads it (Checkpoint::open may tie a missing lm_head).
    const std::string& model = c.actor_rollout_ref.model.path;
    MemoryPlanInputs in = memory_plan_inputs(c, read_model_folder_config(model), lengths, opt.ranks);
    if (opt.available_bytes > 0) in.available_bytes = opt.available_bytes;
    const MemoryPlan p = plan_memory(in);
    for (const std::string& line : lines_of(explain_memory_plan(p))) r.summary.push_back(line);
    if (p.fits()) return;
    if (opt.ignore_memory_plan)
      r.summary.push_back("memory plan: the run does not fit; --ignore-memory-plan runs it anyway");
    else
      r.problems.push_back(cat("[memory] the run does not fit this machine's memory: the memory plan above needs ",
                               human_bytes(p.machine_bytes()), " of ", human_bytes(in.available_bytes),
                               p.kv_holds_a_sample ? "" : " and its KV budget holds no whole sample",
                               " (grpo train --ignore-memory-plan runs it anyway)"));
  } catch (const Error& e) {
    r.problems.push_back(e.what());
  }
}

// The SFT run's step count, and its config's problem if any.
void describe_sft_steps(const Config& c, const RunData& data, RunCheck& r) {
  if (data.train) {
    const int64_t bs = std::min<int64_t>(c.sft.batch_size, std::max<int64_t>(1, data.train->examples));
    r.summary.push_back(cat("steps: ", (data.train->examples + bs - 1) / bs * c.sft.epochs, " (", c.sft.epochs,
                            " epoch(s) of ", bs, " sequences a step, at most ", c.sft.max_length, " tokens each)"));
  }
  if (const std::string problem = sft_config_problem(c); !problem.empty()) r.problems.push_back(problem);
}

// Rewards, chosen as the run chooses them (by the rows' data_source when reward.functions is empty): each
// function constructs (patterns compile; external commands and Python workers start on first use).
void check_rewards(const Config& c, const RunData& data, RunKind kind, RunCheck& r) {
  try {
    std::vector<std::string> sources = data.train ? data.train->data_sources : std::vector<std::string>{};
    if (data.val)
      for (const std::string& s : data.val->data_sources)
        if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
    const std::vector<WeightedReward> rewards =
        make_rewards(run_reward_functions(c.reward, sources, data_files_text(c.data.train_files)));
    std::string line = "reward:";
    for (size_t i = 0; i < rewards.size(); ++i)
      line += cat(i ? " +" : " ", rewards[i].weight, " x ", rewards[i].function->name());
    if (kind == RunKind::Grpo) r.summary.push_back(line);
  } catch (const Error& e) {
    r.problems.push_back(e.what());
  }
}

// The run folder, the loggers, and the config's notes (keys without effect here), a line each.
void describe_outputs(const Config& c, const ConfigNotes& notes, RunCheck& r) {
  auto& out = r.summary;
  out.push_back(cat("run folder: ", c.trainer.default_local_dir, "; loggers: ", [&] {
    std::string s;
    for (Logger l : c.trainer.logger) s += cat(s.empty() ? "" : ", ", kLoggerNames.name(l));
    return s.empty() ? std::string("none") : s;
  }()));
  for (std::string& line : lines_of(notes.describe(c.trainer.default_local_dir)))
    out.push_back(line.starts_with("[config] ") ? line.substr(9) : std::move(line));
}

}  // namespace

RunCheck check_run(const Config& c, const ConfigNotes& notes, RunKind kind, const RunCheckOptions& options) {
  RunCheck r;
  const ModelParts parts = open_model(c.actor_rollout_ref.model.path, r.problems);
  check_model(c, parts, kind, r);
  const RunData data = check_run_data(c, parts, kind, r);
  describe_data(c, parts, data, r);
  if (kind == RunKind::Grpo) {
    describe_grpo_step(c, data, r);
    check_memory_plan(c, parts, data, options, r);
  } else {
    describe_sft_steps(c, data, r);
  }
  check_rewards(c, data, kind, r);
  describe_outputs(c, notes, r);
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
