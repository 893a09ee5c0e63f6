#!/usr/bin/env bash
# Generation against llama.cpp at real sizes (docs/performance.md, "Against llama.cpp at real sizes"): the
# model is exported to GGUF with `grpo export`, llama.cpp's llama-batched-bench generates TG tokens after
# PP-token prompts for 1, 16 and 64 sequences (and for 64 sequences sharing one prompt, -pps), and `grpo bench
# rollout` does the same work: 1, 16 and 64 prompts of one sample each, and GRPO's shape, 16 prompts x 4
# samples sharing their prompt (not quite the same work: llama.cpp's -pps run prefills one prompt where ours
# prefills 16, which favours it). Same weights, weight type and threads. Prints a Markdown table: wall time
# (prefill + decode) of each, the ratio, decode tokens/s of each, and grpo's fractions of its roofline (decode
# against the bandwidth or GEMM-peak bound of its batch, prefill against the GEMM peak). It never builds
# llama.cpp: give a built llama-batched-bench.
#
#   bench/rollout_vs_llama.sh MODEL_DIR LLAMA_BATCHED_BENCH
#   env: GRPO (default build/grpo), TYPE (bf16 or f32, default bf16), THREADS (default: the cores), PP (prompt
#        tokens, 128), TG (new tokens, 64), NPL (sequence counts, "1 16 64"), WORK (default a temporary folder)
set -euo pipefail

MODEL=${1:?usage: $0 MODEL_DIR LLAMA_BATCHED_BENCH}
LLAMA=${2:?usage: $0 MODEL_DIR LLAMA_BATCHED_BENCH}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GRPO=${GRPO:-$ROOT/build/grpo}
TYPE=${TYPE:-bf16}
THREADS=${THREADS:-$(nproc)}
PP=${PP:-128}
TG=${TG:-64}
NPL=${NPL:-"1 16 64"}
WORK=${WORK:-$(mktemp -d /tmp/rollout_vs_llama.XXXXXX)}
[[ -x "$GRPO" ]] || { echo "$GRPO: missing (build the grpo target)" >&2; exit 2; }
[[ -x "$LLAMA" ]] || { echo "$LLAMA: not an executable llama-batched-bench" >&2; exit 2; }
[[ -f "$MODEL/config.json" ]] || { echo "$MODEL: not a model folder (no config.json)" >&2; exit 2; }
[[ "$TYPE" == bf16 || "$TYPE" == f32 ]] || { echo "TYPE must be bf16 or f32, got $TYPE" >&2; exit 2; }
mkdir -p "$WORK"
max_npl=$(tr ' ' '\n' <<<"$NPL" | sort -n | tail -1)
((max_npl >= 16)) || { echo "NPL must include a count of 16 or more (GRPO's shape is 16 prompts)" >&2; exit 2; }
shared_prompts=16 shared_n=$((max_npl / 16))

echo "== exporting $MODEL as GGUF ($TYPE)" >&2
[[ -f "$WORK/model.gguf" ]] ||
  "$GRPO" export --model "$MODEL" --format gguf --type "$TYPE" --out "$WORK/model.gguf" >"$WORK/export.log" 2>&1

echo "== llama-batched-bench: $PP + $TG tokens, sequences $NPL, then $max_npl sharing one prompt" >&2
ctx=$((max_npl * (PP + TG)))
"$LLAMA" -m "$WORK/model.gguf" -c "$ctx" -b 2048 -ub 512 -npp "$PP" -ntg "$TG" -npl "${NPL// /,}" -t "$THREADS" \
  -tb "$THREADS" --output-format jsonl >"$WORK/llama.jsonl" 2>"$WORK/llama.log"
"$LLAMA" -m "$WORK/model.gguf" -c "$ctx" -b 2048 -ub 512 -npp "$PP" -ntg "$TG" -npl "$max_npl" -pps \
  -t "$THREADS" -tb "$THREADS" --output-format jsonl >"$WORK/llama_pps.jsonl" 2>>"$WORK/llama.log"

bench() {  # NAME PROMPTS N
  echo "== grpo bench rollout: $2 prompts x $3 samples, $PP + $TG tokens" >&2
  "$GRPO" bench rollout --model "$MODEL" --dtype "$TYPE" --threads "$THREADS" --prompts "$2" --n "$3" \
    --prompt-len "$PP" --max-new-tokens "$TG" --skip-baseline >"$WORK/grpo_$1.json" 2>"$WORK/grpo_$1.log"
}
for n in $NPL; do bench "seq$n" "$n" 1; done
bench shared "$shared_prompts" "$shared_n"

python3 - "$WORK" "$NPL" "$shared_prompts" "$shared_n" "$max_npl" "$PP" "$TG" <<'EOF'
import json, sys
work, npl, sp, sn, max_npl, pp, tg = sys.argv[1], [int(x) for x in sys.argv[2].split()], *map(int, sys.argv[3:])
llama = {j["pl"]: j for j in (json.loads(l) for l in open(f"{work}/llama.jsonl") if l.startswith("{"))}
pps = [json.loads(l) for l in open(f"{work}/llama_pps.jsonl") if l.startswith("{")][0]
def row(label, g, l, llama_label):
    r = g["roofline"]
    ratio = l["t"] / g["seconds"]
    print(f"| {label} | {g['seconds']:.2f} | {l['t']:.2f} ({llama_label}) | {ratio:.2f}x | "
          f"{g['decode_tokens_per_s']:.0f} | {l['speed_tg']:.0f} | {r['decode_fraction']:.2f} of {r['decode_bound']} "
          f"({r['decode_batch']} seqs) | {r['prefill_fraction']:.2f} |")
print(f"| work ({pp} + {tg} tokens) | grpo.cpp wall (s) | llama.cpp wall (s) | llama / grpo | grpo decode tok/s | "
      "llama decode tok/s | grpo decode vs roofline | grpo prefill vs GEMM peak |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for n in npl:
    row(f"{n} sequence{'s' if n > 1 else ''}", json.load(open(f"{work}/grpo_seq{n}.json")), llama[n], f"{n} sequences")
row(f"GRPO's shape: {sp} prompts x {sn} samples sharing theirs", json.load(open(f"{work}/grpo_shared.json")), pps,
    f"{max_npl} sequences sharing 1 prompt")
g1 = json.load(open(f"{work}/grpo_seq{npl[0]}.json"))
print(f"\nDRAM read bandwidth {g1['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s, decode at batch 1 "
      f"{g1['bandwidth_fraction']:.2f} of its bound; GEMM peak {g1['roofline']['gemm_peak_gflops']:.0f} GFLOP/s")
EOF
