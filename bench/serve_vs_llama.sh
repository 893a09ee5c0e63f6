#!/usr/bin/env bash
# `grpo serve` against llama.cpp's llama-server on the same model (docs/serving.md, "Numbers"): the model is
# exported to GGUF with `grpo export`, both servers get the same parallel slots (grpo --max-seqs, llama-server
# -np), threads and weight type, and scripts/serve_load.py drives each with C concurrent clients sending
# streamed completions of the same prompts and lengths (ignore_eos: every reply has TOKENS tokens). Prints a
# Markdown table: output tokens/s and time to first token (median / p99) per server and client count, and the
# throughput ratio. It never builds llama.cpp: give a built llama-server.
#
#   bench/serve_vs_llama.sh MODEL_DIR LLAMA_SERVER
#   env: GRPO (default build/grpo), CLIENTS (default "1 8 32"), REQUESTS per client (default 2), TOKENS
#        (default 64), TYPE (weights: bf16 or f32, default bf16), THREADS (default: the cores), SLOTS (default:
#        the largest client count), WORK (default a temporary folder; the GGUF file and the servers' logs)
set -euo pipefail

MODEL=${1:?usage: $0 MODEL_DIR LLAMA_SERVER}
LLAMA_SERVER=${2:?usage: $0 MODEL_DIR LLAMA_SERVER}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GRPO=${GRPO:-$ROOT/build/grpo}
CLIENTS=${CLIENTS:-"1 8 32"}
REQUESTS=${REQUESTS:-2}
TOKENS=${TOKENS:-64}
TYPE=${TYPE:-bf16}
THREADS=${THREADS:-$(nproc)}
SLOTS=${SLOTS:-$(tr ' ' '\n' <<<"$CLIENTS" | sort -n | tail -1)}
WORK=${WORK:-$(mktemp -d /tmp/serve_vs_llama.XXXXXX)}
[[ -x "$GRPO" ]] || { echo "$GRPO: missing (build the grpo target)" >&2; exit 2; }
[[ -x "$LLAMA_SERVER" ]] || { echo "$LLAMA_SERVER: not an executable llama-server" >&2; exit 2; }
[[ -f "$MODEL/config.json" ]] || { echo "$MODEL: not a model folder (no config.json)" >&2; exit 2; }
[[ "$TYPE" == bf16 || "$TYPE" == f32 ]] || { echo "TYPE must be bf16 or f32, got $TYPE" >&2; exit 2; }
mkdir -p "$WORK"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() {  # URL PID LOG: until GET /health answers 200, or the server died
  for _ in $(seq 1 600); do
    kill -0 "$2" 2>/dev/null || { echo "the server exited; its log:" >&2; tail -n 30 "$3" >&2; exit 1; }
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1/health")" == 200 ]] && return 0
    sleep 0.5
  done
  echo "$1 not healthy after 300 s" >&2; exit 1
}
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
# One server's row per client count: "name clients tokens/s ttft_median ttft_p99"
load() {
  local name=$1 url=$2
  for c in $CLIENTS; do
    python3 "$ROOT/scripts/serve_load.py" "$url" --clients "$c" --requests "$REQUESTS" --tokens "$TOKENS" |
      python3 -c 'import json, sys; r = json.load(sys.stdin); print(sys.argv[1], r["clients"], r["output_tokens_per_s"], r["ttft_median_s"], r["ttft_p99_s"])' "$name"
  done
}

echo "== exporting $MODEL as GGUF ($TYPE)" >&2
"$GRPO" export --model "$MODEL" --format gguf --type "$TYPE" --out "$WORK/model.gguf" >"$WORK/export.log" 2>&1
CTX_PER_SLOT=$((TOKENS + 64))  # the prompts are a few tokens

echo "== grpo serve: $SLOTS sequences a step, $THREADS threads" >&2
port=$(free_port)
"$GRPO" serve --model "$MODEL" --dtype "$TYPE" --port "$port" --max-seqs "$SLOTS" --threads "$THREADS" \
  --kv-dtype bf16 --kv-cache-memory $((512 << 20)) >"$WORK/grpo.log" 2>&1 &
PIDS+=($!)
wait_healthy "http://127.0.0.1:$port" "$!" "$WORK/grpo.log"
load grpo "http://127.0.0.1:$port" >"$WORK/grpo.rows"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

echo "== llama-server: $SLOTS slots, $THREADS threads" >&2
port=$(free_port)
"$LLAMA_SERVER" -m "$WORK/model.gguf" --host 127.0.0.1 --port "$port" -np "$SLOTS" -c $((SLOTS * CTX_PER_SLOT)) \
  -t "$THREADS" -tb "$THREADS" >"$WORK/llama.log" 2>&1 &
PIDS+=($!)
wait_healthy "http://127.0.0.1:$port" "$!" "$WORK/llama.log"
load llama "http://127.0.0.1:$port" >"$WORK/llama.rows"
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

echo "| clients | grpo serve tokens/s | llama-server tokens/s | ratio | grpo TTFT median / p99 (s) | llama TTFT median / p99 (s) |"
echo "| --- | --- | --- | --- | --- | --- |"
paste -d ' ' "$WORK/grpo.rows" "$WORK/llama.rows" | while read -r _ c g gm gp _ _ l lm lp; do
  echo "| $c | $g | $l | $(python3 -c "print(f'{$g / $l:.2f}x')") | $gm / $gp | $lm / $lp |"
done
