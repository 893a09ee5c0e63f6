// Run session set-up (see session.h).
#include "loop/session.h"

#include "config/part_options.h"

#include <algorithm>
#include <cstdio>

#include "comm/communicator.h"
#include "core/checked.h"
#include "core/error_context.h"
#include "core/files.h"
#include "data/prompting.h"
#include "data/vision_data.h"
#include "loop/trainer_state.h"
#include "rollout/tokenizer_text.h"
#include "train/actor.h"

namespace grpo {

std::unique_ptr<Session> Session::open_data(const Config& config, bool require_response) {
  auto s = std::make_unique<Session>();
  s->config = config;
  s->mode = config.mixed_precision.enabled ? ComputeMode::BF16 : ComputeMode::F32;
  const std::string& model = config.actor_rollout_ref.model.path;
  GRPO_CHECK(!model.empty(), "[config] actor_rollout_ref.model.path is required");
  {
    ErrorContext what("loading the model ", model, " (actor_rollout_ref.model.path)");
    s->model_config = read_model_folder_config(model);
  }
  const ModelConfig& mc = s->model_config;
  GRPO_CHECK(config.data.max_prompt_length + config.data.max_response_length <= mc.max_position_embeddings,
             "[config] data.max_prompt_length + data.max_response_length = ",
             config.data.max_prompt_length + config.data.max_response_length, " tokens, more than the ",
             mc.max_position_embeddings, " positions of ", model, " (max_position_embeddings in config.json)");
  s->tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(model));
  GRPO_CHECK(s->tokenizer->vocab_size() <= mc.vocab_size, "[tokenizer] ", model, ": ", s->tokenizer->vocab_size(),
             " token ids but the model has vocab_size ", mc.vocab_size);
  const bool chat = config.data.apply_chat_template;
  s->stop_ids = s->tokenizer->stop_ids();
  const int32_t end = response_end_id(*s->tokenizer, chat);
  if (std::find(s->stop_ids.begin(), s->stop_ids.end(), end) == s->stop_ids.end()) s->stop_ids.push_back(end);

  if (has_image_processor_config(model)) s->image_processor = load_image_processor_config(model);
  DatasetOptions dopt;
  const Tokenizer& tok = *s->tokenizer;
  const ImageProcessorConfig* images = s->image_processor ? &*s->image_processor : nullptr;
  if (config.actor_rollout_ref.rollout.multi_turn.enable) {
    ErrorContext what("loading the tools (actor_rollout_ref.rollout.multi_turn)");
    s->tools = std::make_unique<RunTools>(config.actor_rollout_ref.rollout.multi_turn, tok, end);
  }
  const nlohmann::ordered_json* tools = s->tools ? &s->tools->schemas : nullptr;
  dopt.encode_prompt = [&tok, chat, images, tools](const Example& ex) {
    return encode_prompt(tok, ex, chat, images, tools);
  };
  dopt.image_key = config.data.image_key;
  dopt.image_processor = images;
  dopt.max_prompt_length = config.data.max_prompt_length;
  dopt.overflow = prompt_overflow_from_config(config.data.filter_overlong_prompts, config.data.truncation);
  dopt.require_response = require_response;
  {
    ErrorContext what("reading the training prompts ", data_files_text(config.data.train_files), " (data.train_files)");
    s->train = load_datasets(config.data.train_files, dopt);
  }
  if (s->train.filtered > 0 && comm::launch_rank() == 0)
    std::fprintf(stderr, "[data] %s: %lld prompts longer than %lld tokens filtered out\n", data_files_text(config.data.train_files).c_str(),
                 static_cast<long long>(s->train.filtered), static_cast<long long>(config.data.max_prompt_length));
  if (!config.data.val_files.empty()) {
    dopt.require_response = false;
    ErrorContext what("reading the validation prompts ", data_files_text(config.data.val_files), " (data.val_files)");
    s->val = load_datasets(config.data.val_files, dopt);
  }
  for (const Dataset* d : {&s->train, &s->val})
    for (const Example& ex : d->examples)
      if (!ex.images.empty()) {
        s->check_pictures_fit_model(*d, ex);
        break;
      }
  return s;
}

std::unique_ptr<Session> Session::open(const Config& config, bool require_response, SessionRollout rollout,
                                       const BeforeWeights& before_weights, const WeightShard& shard) {
  std::unique_ptr<Session> s = open_data(config, require_response);
  const std::string& model = config.actor_rollout_ref.model.path;
  const Tokenizer& tok = *s->tokenizer;
  if (before_weights) before_weights(*s);
  {
    ErrorContext what("loading the model ", model, " (actor_rollout_ref.model.path)");
    // LoRA under mixed precision: the frozen base is held once, in bf16.
    const bool lora = config.actor_rollout_ref.model.lora_rank > 0;
    if (lora && s->mode == ComputeMode::BF16) {
      s->weights = ModelWeights::load_frozen_bf16(model);
    } else {  // a folder with f32 master shards (a run checkpoint, SFT's model from several ranks): those
      s->weights = std::make_unique<ModelWeights>(Checkpoint::open(model).config());
      if (s->mode == ComputeMode::BF16 && shard.ranks > 1) {  // ZeRO: f32 masters of this rank's shard
        const comm::Partition part = train::parameter_partition(s->weights->params().numel(), shard.ranks);
        s->weights->shard_gemm_masters(part.begin(shard.rank), part.end(shard.rank));
      }
      load_checkpoint_weights(model, *s->weights);
    }
  }
  s->lora = make_lora_adapters(config, s->weights->config());
  const RolloutConfig& rc = config.actor_rollout_ref.rollout;
  const int64_t val_samples = checked_mul(static_cast<int64_t>(s->val.examples.size()), rc.val_kwargs.n,
                                          "[config] validation prompts x actor_rollout_ref.rollout.val_kwargs.n");
  int64_t samples = val_samples;
  if (rollout == SessionRollout::TrainAndValidate)
    samples = std::max(samples, checked_mul(config.data.train_batch_size, rc.n,
                                            "[config] data.train_batch_size x actor_rollout_ref.rollout.n"));
  if (samples > 0) {
    rollout::EngineConfig ec = engine_config(config, s->weights->config(), samples);
    ec.kv_base_bytes = s->kv_base_bytes;
    ErrorContext what("creating the rollout engine: KV cache of at most ", ec.kv_max_blocks, " blocks of ",
                      ec.block_size, " tokens (", rc.max_num_seqs, " sequences x ",
                      config.data.max_prompt_length + config.data.max_response_length, " tokens), ",
                      rc.max_num_batched_tokens, " tokens per step");
    s->rollout_model =
        std::make_unique<rollout::DecoderRolloutModel>(*s->weights, s->mode, ec.block_size, rc.decode_matmul);
    s->rollout_model->set_lora(s->lora.get());
    s->engine = std::make_unique<rollout::Engine>(*s->rollout_model, ec, rollout::tokenizer_decode_fn(tok));
    if (comm::launch_rank() == 0) std::fprintf(stderr, "[rollout] %s\n", s->engine->kv_budget().describe().c_str());
  }
  return s;
}

void Session::check_pictures_fit_model(const Dataset& data, const Example& ex) const {
  const std::string where = cat("[data] ", data.path, ":", ex.line, ": the row has pictures but ");
  const ModelConfig& m = model_config;
  const std::string& model = config.actor_rollout_ref.model.path;
  GRPO_CHECK(m.has_vision(), where, model, " is a text model (no vision_config in config.json), which cannot see them");
  const ImageProcessorConfig& p = *image_processor;  // load_dataset refused pictures without it
  GRPO_CHECK(p.row_width() == m.vision.patch_dim() && p.merge_size == m.vision.spatial_merge_size, where, model,
             "/preprocessor_config.json makes patch rows of ", p.row_width(), " values merged ", p.merge_size, "x",
             p.merge_size, ", the vision tower takes ", m.vision.patch_dim(), " merged ", m.vision.spatial_merge_size,
             "x", m.vision.spatial_merge_size);
  const int32_t pad = tokenizer->token_to_id(kImagePadToken);
  GRPO_CHECK(pad == m.image_token_id, where, "the tokenizer's ", kImagePadToken, " is id ", pad,
             ", config.json's image_token_id is ", m.image_token_id);
}

std::vector<PicturePtr> Session::pictures(const Example& ex, const Dataset& data) const {
  if (ex.images.empty()) return {};
  return model_pictures(load_example_pictures(ex, *image_processor, data.path));
}

void Session::load_weights(const std::string& dir) {
  Checkpoint ck = Checkpoint::open(dir);
  weights->load_from(ck);
  if (engine) engine->clear_prefix_cache();
}

}  // namespace grpo
