#!/usr/bin/env bash
# The real-scale GRPO run of the README: the qwen3-0.6b preset (random init, the Qwen3 tokenizer from
# ../shared/models/qwen3-tokenizer), 8 prompts x 8 samples per step, prompts of ~256 tokens (arithmetic
# problems behind a long system message, chat template applied), responses of up to 512 tokens, bf16 mixed
# precision, 2 steps. Prints each step's line (step time, rollout tokens/s, peak RSS) and, last, a JSON
# summary from metrics.jsonl.
#
#   bench/real_scale_run.sh [OUT_DIR]          (default runs/real-scale)
# Environment: DTYPE=bf16|f32, STEPS (2), PROMPTS (8), N (8), RESPONSE (512): smaller values for a quick
# check of the same model and prompts; PROMPT (256: max_prompt_length; below ~250 the prompts are cut from
# the left, inside the system message); PRESET (qwen3-0.6b; qwen3-1.7b, qwen3-4b); LORA_RANK (0: full
# fine-tuning; R: LoRA of rank R, alpha 2R, on all linears); THREADS (0: all cores; 1 on a machine shared
# with other work, where OpenMP barriers wait for descheduled threads).
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${1:-runs/real-scale}
GRPO=${GRPO:-build/grpo}
SHARED=${SHARED:-../shared}
DTYPE=${DTYPE:-bf16}
STEPS=${STEPS:-2}
PROMPTS=${PROMPTS:-8}
N=${N:-8}
RESPONSE=${RESPONSE:-512}
PROMPT=${PROMPT:-256}
PRESET=${PRESET:-qwen3-0.6b}
LORA_RANK=${LORA_RANK:-0}
THREADS=${THREADS:-0}
mkdir -p "$OUT"

if [ ! -f "$OUT/model/config.json" ]; then
  "$GRPO" init --arch qwen3 --preset "$PRESET" --tokenizer "$SHARED/models/qwen3-tokenizer" --seed 0 --out "$OUT/model"
fi

# Arithmetic problems, each behind the same ~220-token system message: prompts of ~250 tokens.
"$GRPO" data arith --out "$OUT/arith" --train 64 --test 0 --seed 0 > /dev/null
python3 - "$OUT/arith/train.jsonl" "$OUT/train.jsonl" <<'EOF'
import json, sys
system = (
    "You are a careful assistant that solves arithmetic problems. Read the problem once, slowly, and decide "
    "which operation it asks for before you write anything. Work the numbers out column by column, from the "
    "units digit to the highest digit, and write down every carry or borrow as you go, so that a reader can "
    "check each step without redoing the whole computation. When a problem mixes several operations, apply "
    "multiplication and division before addition and subtraction, and work through parentheses first. "
    "Do not round: every answer is "
    "an integer, and an answer that is not an integer means a step went wrong, so go back and look for the "
    "mistake. After you have the result, check it once by the inverse operation: add back what you "
    "subtracted, or subtract what you added, and compare with the numbers of the problem. Keep the working "
    "short and plain, one line per step, without repeating the problem. "
    "Finish with one sentence that states the result, then give the final answer alone inside "
    "\\boxed{}, with no units and no other text after it. If the problem cannot be solved as written, say so "
    "in one sentence and box the word none."
)
with open(sys.argv[1]) as src, open(sys.argv[2], "w") as dst:
    for line in src:
        row = json.loads(line)
        row["messages"] = [{"role": "system", "content": system}, {"role": "user", "content": row.pop("prompt")}]
        dst.write(json.dumps(row) + "\n")
EOF

cat > "$OUT/config.yaml" <<EOF
data:
  train_files: $OUT/train.jsonl
  val_files: ''
  train_batch_size: $PROMPTS
  max_prompt_length: $PROMPT
  truncation: left
  max_response_length: $RESPONSE
  apply_chat_template: true
actor_rollout_ref:
  model:
    path: $OUT/model
    enable_gradient_checkpointing: true
    lora_rank: $LORA_RANK
    lora_alpha: $((2 * (LORA_RANK > 0 ? LORA_RANK : 1)))
    target_modules: all-linear
  rollout:
    n: $N
    temperature: 1.0
    kv_cache_dtype: bf16   # as under mixed precision (auto), also when DTYPE=f32
  actor:
    ppo_mini_batch_size: $PROMPTS
    use_dynamic_bsz: true
    ppo_max_token_len_per_gpu: 4096
    optim:
      lr: 1.0e-6
reward:
  functions:
    - name: math
trainer:
  total_training_steps: $STEPS
  val_before_train: false
  save_freq: -1
  default_local_dir: $OUT/run
  experiment_name: $PRESET-real-scale
  seed: 0
mixed_precision:
  enabled: $([ "$DTYPE" = bf16 ] && echo true || echo false)
EOF

rm -rf "$OUT/run"
"$GRPO" train "$OUT/config.yaml" --threads "$THREADS"
python3 - "$OUT/run/metrics.jsonl" <<'EOF'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if "timing_s/step" in l]
print(json.dumps({
    "steps": len(steps),
    "step_time_s": [round(s["timing_s/step"], 1) for s in steps],
    "gen_s": [round(s["timing_s/gen"], 1) for s in steps],
    "update_actor_s": [round(s["timing_s/update_actor"], 1) for s in steps],
    "rollout_tokens_per_s": [round(s["perf/rollout_tokens_per_s"], 1) for s in steps],
    "response_length_mean": [round(s["response_length/mean"], 1) for s in steps],
    "peak_rss_gib": round(max(s["perf/peak_rss_bytes"] for s in steps) / 2**30, 2),
}))
EOF
