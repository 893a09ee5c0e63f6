#!/usr/bin/env bash
# DAPO (clip-higher, dynamic sampling, overlong shaping, token-mean loss) on DAPO-Math-17k with
# Qwen2.5-Math-7B, validated on AIME 2024. Mirrors verl's recipe/dapo/test_dapo_7b.sh: the same overrides,
# unchanged, with its shell variables written out; `grpo train --config-name dapo_trainer` replaces
# `ray job submit ... -- python3 -m recipe.dapo.src.main_dapo`, and the model and data are local (set the
# variables). Extra arguments pass through: `... --check` validates and trains nothing.
set -euo pipefail

GRPO=${GRPO:-grpo}
MODEL_PATH=${MODEL_PATH:-$HOME/models/Qwen2.5-Math-7B}
TRAIN_FILE=${TRAIN_FILE:-$HOME/data/dapo-math-17k.parquet}
TEST_FILE=${TEST_FILE:-$HOME/data/aime-2024.parquet}
CKPTS_DIR=${CKPTS_DIR:-checkpoints/DAPO/DAPO-Qwen2.5-7B-Math-Test}

"$GRPO" train --config-name dapo_trainer \
    data.train_files="$TRAIN_FILE" \
    data.val_files="$TEST_FILE" \
    data.prompt_key=prompt \
    data.truncation='left' \
    data.max_prompt_length=2048 \
    data.max_response_length=2048 \
    data.gen_batch_size=1536 \
    data.train_batch_size=512 \
    data.truncation='left' \
    actor_rollout_ref.rollout.n=16 \
    actor_rollout_ref.actor.kl_loss_coef=0.0 \
    actor_rollout_ref.actor.clip_ratio_low=0.2 \
    actor_rollout_ref.actor.clip_ratio_high=0.28 \
    algorithm.adv_estimator=grpo \
    algorithm.kl_ctrl.kl_coef=0.0 \
    algorithm.filter_groups.enable=True \
    algorithm.filter_groups.metric=acc \
    algorithm.filter_groups.max_num_gen_batches=10 \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True \
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096 \
    actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=4096 \
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=4096 \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    +actor_rollout_ref.model.override_config.attention_dropout=0. \
    +actor_rollout_ref.model.override_config.embd_pdrop=0. \
    +actor_rollout_ref.model.override_config.resid_pdrop=0. \
    actor_rollout_ref.model.enable_gradient_checkpointing=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.optim.lr_warmup_steps=10 \
    actor_rollout_ref.actor.optim.weight_decay=0.1 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size=null \
    actor_rollout_ref.actor.fsdp_config.param_offload=False \
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False \
    actor_rollout_ref.actor.entropy_coeff=0 \
    actor_rollout_ref.actor.grad_clip=1.0 \
    actor_rollout_ref.actor.use_token_level_loss=True \
    actor_rollout_ref.actor.use_token_level_loss=True \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=1 \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.85 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size=null \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.rollout.enable_chunked_prefill=True \
    actor_rollout_ref.rollout.max_num_batched_tokens=4096 \
    actor_rollout_ref.rollout.temperature=1.0 \
    actor_rollout_ref.rollout.top_p=1.0 \
    actor_rollout_ref.rollout.top_k="-1" \
    actor_rollout_ref.rollout.val_kwargs.temperature=1.0 \
    actor_rollout_ref.rollout.val_kwargs.top_p=1.0 \
    actor_rollout_ref.rollout.val_kwargs.top_k=-1 \
    actor_rollout_ref.rollout.val_kwargs.do_sample=True \
    actor_rollout_ref.rollout.val_kwargs.n=1 \
    actor_rollout_ref.ref.log_prob_micro_batch_size=null \
    actor_rollout_ref.ref.fsdp_config.param_offload=False \
    actor_rollout_ref.ref.ulysses_sequence_parallel_size=1 \
    actor_rollout_ref.actor.fsdp_config.fsdp_size=-1 \
    reward_model.reward_manager=dapo \
    custom_reward_function.overlong_buffer.enable=True \
    custom_reward_function.overlong_buffer.len=512 \
    custom_reward_function.overlong_buffer.penalty_factor=1.0 \
    trainer.logger=['console','wandb'] \
    trainer.project_name="DAPO" \
    trainer.experiment_name="DAPO-Qwen2.5-7B-Math-Test" \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes="4" \
    +trainer.val_before_train=True \
    trainer.test_freq=2 \
    trainer.save_freq=2 \
    trainer.total_epochs=1 \
    trainer.default_local_dir="$CKPTS_DIR" \
    trainer.resume_mode=disable "$@"
