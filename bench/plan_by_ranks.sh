#!/usr/bin/env bash
# The memory plan's peak per rank as ranks are added: `grpo plan CONFIG --np N --ranks-per-machine 1
# --machine-memory M` for N = 1, 2, 4, 8, 16, 32, full fine-tuning and LoRA (rank 32 on all linears), one
# Markdown row each: the peak per rank and the phase it is in (whether it fits does not matter here: M only
# sizes the KV budget, the engine's rule: gpu_memory_utilization x what the rest of the run leaves a rank). Extra arguments go to every `grpo plan` (e.g. --no-data
# --prompt-patches 1024).
#   bench/plan_by_ranks.sh CONFIG [PLAN ARGS...]   (env: GRPO, default build/grpo; MEMORY in GiB, default 64;
#                                                   RANKS, default "1 2 4 8 16 32")
set -euo pipefail
config=${1:?usage: $0 CONFIG [PLAN ARGS...]}
shift
plan_args=("$@")
grpo=${GRPO:-$(cd "$(dirname "$0")/.." && pwd)/build/grpo}
memory=${MEMORY:-64}
ranks=${RANKS:-"1 2 4 8 16 32"}
row() {  # LABEL LORA_RANK
  local line="| $1 |"
  for n in $ranks; do
    local out peak
    out="$("$grpo" plan "$config" --np "$n" --ranks-per-machine 1 --machine-memory "$memory" --lora-rank "$2" \
      "${plan_args[@]}" 2>&1 || true)"
    peak="$(sed -n 's/^  peak \([0-9.]* [MG]iB\) per rank (\(.*\)) of .*/\1 (\2)/p' <<<"$out")"
    [[ -n "$peak" ]] || { echo "grpo plan --np $n failed:" >&2; tail -n 5 <<<"$out" >&2; exit 1; }
    line+=" $peak |"
  done
  echo "$line"
}
header="| $(basename "$config") |"
sep="| --- |"
for n in $ranks; do header+=" $n |"; sep+=" --- |"; done
echo "$header"
echo "$sep"
row "full fine-tuning" 0
row "LoRA r32" 32
