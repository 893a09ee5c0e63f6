#!/usr/bin/env bash
# The independent check of `grpo export --format gguf` (docs/gguf.md): models exported as GGUF are run by a
# llama.cpp built elsewhere, and what llama.cpp computes is compared with this engine on the same tokens.
# Per case (architecture, preset, tokenizer): `grpo init`, a brief SFT on the arithmetic task (so that the
# logits are peaked, not near-uniform), export at f32 and q8_0, then
#   - tokenizer: llama.cpp's ids of the prompts and a few harder texts (llama-tokenize) == `grpo tokenize`'s
#   - f32 logits: llama-debug's last-position logits vs `grpo debug forward-backward` on llama.cpp's own
#     tokens: max |difference| / max |logit| <= 1e-4, same argmax
#   - greedy continuations: llama-completion (f32 and q8_0) vs `grpo generate --temperature 0`, common prefix
#   - perplexity: llama-perplexity of the q8_0 file within 1% of the f32 file's on held-out text
# Both sides keep the KV cache in f32 (llama.cpp's default is f16) and llama.cpp runs without flash attention,
# so that the f32 comparison measures the model, not the cache. It never builds llama.cpp: give the bin
# folder of a build (llama-debug, llama-completion, llama-perplexity, llama-tokenize).
#
#   scripts/check_gguf_llamacpp.sh LLAMA_BIN [WORK_DIR]      (or LLAMA_CPP_BIN=... scripts/check_gguf_llamacpp.sh)
#   env: GRPO (default build/grpo), CASES (default "qwen3:tiny:bytes qwen2:tiny:bytes llama:tiny:bytes
#        qwen3:small:bytes qwen2:small:bytes llama:small:bytes qwen3:tiny:qwen3"; the tokenizer "qwen3" is
#        ../shared/models/qwen3-tokenizer), SFT_ROWS (training rows of tiny models, default 1600: 50 steps),
#        SMALL_SFT_ROWS (of the other presets, default 640: 20 steps), PROMPTS (default 8),
#        NEW_TOKENS (default 32), THREADS (default 2)
# Exit status 0 when every case passes; one summary line per case on stdout.
set -euo pipefail

LLAMA_BIN=${1:-${LLAMA_CPP_BIN:-}}
[[ -n "$LLAMA_BIN" ]] || { echo "usage: $0 LLAMA_BIN [WORK_DIR] (a built llama.cpp's bin folder)" >&2; exit 2; }
for tool in llama-debug llama-completion llama-perplexity llama-tokenize; do
  [[ -x "$LLAMA_BIN/$tool" ]] || { echo "$LLAMA_BIN/$tool: missing (build llama.cpp's $tool first)" >&2; exit 2; }
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GRPO=${GRPO:-$ROOT/build/grpo}
[[ -x "$GRPO" ]] || { echo "$GRPO: missing (build the grpo target)" >&2; exit 2; }
WORK=${2:-$(mktemp -d /tmp/gguf_check.XXXXXX)}
QWEN3_TOKENIZER=${QWEN3_TOKENIZER:-$ROOT/../shared/models/qwen3-tokenizer}
CASES=${CASES:-"qwen3:tiny:bytes qwen2:tiny:bytes llama:tiny:bytes qwen3:small:bytes qwen2:small:bytes llama:small:bytes qwen3:tiny:qwen3"}
SFT_ROWS=${SFT_ROWS:-1600}
SMALL_SFT_ROWS=${SMALL_SFT_ROWS:-640}
PROMPTS=${PROMPTS:-8}
NEW_TOKENS=${NEW_TOKENS:-32}
THREADS=${THREADS:-2}
mkdir -p "$WORK"
HELPER="$WORK/helper.py"

# Small file conversions and comparisons, Python standard library only.
cat > "$HELPER" <<'EOF'
import json, math, struct, sys

def read_st(path):  # safetensors -> {name: (shape, floats)}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        assert v["dtype"] == "F32", (k, v["dtype"])
        out[k] = (v["shape"], struct.unpack("<%df" % ((b - a) // 4), data[a:b]))
    return out

def write_case(tokens_bin, out):  # llama.cpp's int32 token ids -> a one-sequence case for grpo debug
    raw = open(tokens_bin, "rb").read()
    ids = list(struct.unpack("<%di" % (len(raw) // 4), raw))
    tensors = {"input_ids": ids, "seq_lens": [len(ids)]}
    head, blob = {}, b""
    for k, v in tensors.items():
        b = struct.pack("<%dq" % len(v), *v)
        head[k] = {"dtype": "I64", "shape": [len(v)], "data_offsets": [len(blob), len(blob) + len(b)]}
        blob += b
    h = json.dumps(head).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(out, "wb").write(struct.pack("<Q", len(h)) + h + blob)
    print(json.dumps({"ids": ids}))

def compare_logits(ours_st, llama_bin):  # -> max|d|/max|logit|, argmax equal
    shape, ours = read_st(ours_st)["logits"]
    T, V = shape
    raw = open(llama_bin, "rb").read()
    theirs = struct.unpack("<%df" % (len(raw) // 4), raw)
    assert len(theirs) == V, (len(theirs), V)
    last = ours[(T - 1) * V:]
    scale = max(abs(x) for x in last)
    diff = max(abs(a - b) for a, b in zip(last, theirs))
    am = lambda xs: max(range(len(xs)), key=lambda i: xs[i])
    top2 = sorted(last, reverse=True)[:2]
    print("%.3e %d %.4f %.4f" % (diff / scale, am(last) == am(theirs), scale, top2[0] - top2[1]))

def prompts(test_jsonl, n, out):  # the first n held-out prompts as generate / text lines
    rows = [json.loads(l) for l in open(test_jsonl) if l.strip()][:n]
    with open(out, "w") as f:
        for r in rows:
            f.write(json.dumps({"prompt": r["prompt"], "text": r["prompt"], "max_new_tokens": int(sys.argv[5])}) + "\n")

EXTRA_TEXTS = [  # for the tokenizer check: words, contractions, digit runs, spaces, tabs, newlines, non-ASCII
    "Hello world! I'm here, aren't you? It's 12345 o'clock, we'll see.",
    "  two leading spaces\tand a tab\n\nblank line   trailing",
    "na\u00efve caf\u00e9 \u65e5\u672c\u8a9e \U0001F999\U0001F680 \u2014 \u00fcber",
    "<think>\nreasoning</think> the answer is 42",
    "def f(x):\n    return x**2  # 3.14159",
]

def texts(prompt_jsonl, out):  # the prompts, then EXTRA_TEXTS, as {"text"} lines
    rows = [json.loads(l)["text"] for l in open(prompt_jsonl)] + EXTRA_TEXTS
    with open(out, "w") as f:
        for t in rows:
            f.write(json.dumps({"text": t}) + "\n")

def held_out(test_jsonl, out):  # prompt + response of every held-out row, one a line
    with open(out, "w") as f:
        for l in open(test_jsonl):
            if l.strip():
                r = json.loads(l)
                f.write(r["prompt"] + " " + r["response"] + "\n")

def greedy(ours_jsonl, i, llama_f32, llama_q8):  # common-prefix chars of continuations
    ours = [json.loads(l) for l in open(ours_jsonl)][i]["completions"][0]["text"]
    def strip(p):  # llama-completion's text; a stop at an end-of-generation token prints " [end of text]"
        s = open(p, encoding="utf-8", errors="replace").read().rstrip("\n")
        return s[: -len(" [end of text]")] if s.endswith(" [end of text]") else s
    res = []
    for other in (strip(llama_f32), strip(llama_q8)):
        n = min(len(ours), len(other))
        k = next((j for j in range(n) if ours[j] != other[j]), n)
        res.append("%d/%d" % (k, n))
    print(" ".join(res))

cmd = sys.argv[1]
if cmd == "case": write_case(sys.argv[2], sys.argv[3])
elif cmd == "logits": compare_logits(sys.argv[2], sys.argv[3])
elif cmd == "prompts": prompts(sys.argv[2], int(sys.argv[3]), sys.argv[4])
elif cmd == "texts": texts(sys.argv[2], sys.argv[3])
elif cmd == "held_out": held_out(sys.argv[2], sys.argv[3])
elif cmd == "greedy": greedy(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
EOF

py() { python3 "$HELPER" "$@"; }
# llama-perplexity's final estimate of model $1 on the held-out text (log in $2), "nan" when none. Its log
# thread sometimes loses the last lines at exit (exit status 0): a run without them is repeated.
perplexity() {
  for _ in 1 2 3; do
    "$LLAMA_BIN/llama-perplexity" -m "$1" -f "$WORK/held_out.txt" -c 128 -b 128 -ctk f32 -ctv f32 -fa off \
      -t "$THREADS" > "$2" 2>&1 || true
    if grep -q 'Final estimate: PPL = ' "$2"; then
      grep -o 'Final estimate: PPL = [0-9.]*' "$2" | awk '{print $NF}'
      return
    fi
  done
  echo nan
}
[[ -f "$WORK/data/test.jsonl" ]] || "$GRPO" data arith --out "$WORK/data" --train "$SFT_ROWS" --test 200 --seed 0 > /dev/null 2>&1
[[ -f "$WORK/data/train_small.jsonl" ]] || head -n "$SMALL_SFT_ROWS" "$WORK/data/train.jsonl" > "$WORK/data/train_small.jsonl"
py prompts "$WORK/data/test.jsonl" "$PROMPTS" "$WORK/prompts.jsonl" "$NEW_TOKENS"
py held_out "$WORK/data/test.jsonl" "$WORK/held_out.txt"
py texts "$WORK/prompts.jsonl" "$WORK/texts.jsonl"

status=0
printf '%-22s %-12s %-12s %-10s %-10s %-10s %-24s %s\n' case tokenizer max_logit_err argmax greedy_f32 greedy_q8 "ppl f32 / q8_0" verdict
for spec in $CASES; do
  IFS=: read -r arch preset tok <<< "$spec"
  name="$arch-$preset-$tok"
  d="$WORK/$name"
  mkdir -p "$d"
  rm -f "$d/report.txt"
  model="$d/sft/model"
  if [[ ! -f "$model/config.json" ]]; then  # a rerun in the same WORK_DIR reuses the trained model
    rm -rf "$d/init" "$d/sft"
    train="$WORK/data/train.jsonl"
    [[ "$preset" == tiny ]] || train="$WORK/data/train_small.jsonl"
    if [[ "$tok" == qwen3 ]]; then  # the preset's shape with Qwen's vocabulary and special ids
      "$GRPO" init --arch "$arch" --preset "$preset" --config-only --out "$d/shape" > "$d/init.log" 2>&1
      python3 - "$d/shape/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(vocab_size=151936, bos_token_id=151643, eos_token_id=151645)
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
      "$GRPO" init --config "$d/shape/config.json" --out "$d/init" --tokenizer "$QWEN3_TOKENIZER" >> "$d/init.log" 2>&1
    else
      "$GRPO" init --arch "$arch" --preset "$preset" --out "$d/init" > "$d/init.log" 2>&1
    fi
    "$GRPO" sft "$ROOT/examples/arith-sft.yaml" "actor_rollout_ref.model.path=$d/init" "trainer.default_local_dir=$d/sft" \
      "data.train_files=$train" "data.val_files=$WORK/data/test.jsonl" "mixed_precision.enabled=false" \
      --threads "$THREADS" > "$d/sft.log" 2>&1
  fi
  for type in f32 q8_0; do
    "$GRPO" export --format gguf --model "$model" --out "$d/$type.gguf" --type "$type" > "$d/export_$type.log" 2>&1
  done

  # Tokenizer: llama.cpp's ids of the prompts and a few harder texts == ours.
  tok_ok=1
  "$GRPO" tokenize --tokenizer "$model" --input "$WORK/texts.jsonl" > "$d/ours_ids.jsonl" 2>/dev/null
  i=0
  while IFS= read -r line; do
    python3 -c 'import json,sys; print(json.loads(sys.argv[1])["text"], end="")' "$line" > "$d/t$i.txt"
    [[ $i -lt $PROMPTS ]] && cp "$d/t$i.txt" "$d/p$i.txt"
    theirs=$("$LLAMA_BIN/llama-tokenize" -m "$d/f32.gguf" -f "$d/t$i.txt" --ids --log-disable 2> /dev/null | tail -1 | tr -d ' ')
    ours=$(sed -n "$((i + 1))p" "$d/ours_ids.jsonl" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["ids"]).replace(" ",""))')
    [[ "$theirs" == "$ours" ]] || { tok_ok=0; echo "  tokenizer differs on text $i: llama.cpp $theirs, grpo $ours" >> "$d/report.txt"; }
    i=$((i + 1))
  done < "$WORK/texts.jsonl"

  # f32 logits at the last position of each prompt, on llama.cpp's tokens.
  worst=0; argmax_ok=1
  for ((i = 0; i < PROMPTS; i++)); do
    rm -rf "$d/dbg$i"
    "$LLAMA_BIN/llama-debug" -m "$d/f32.gguf" -f "$d/p$i.txt" --save-logits --logits-output-dir "$d/dbg$i" -c 512 \
      -ctk f32 -ctv f32 -fa off -t "$THREADS" > "$d/dbg$i.log" 2>&1
    py case "$d/dbg$i/llamacpp-f32-tokens.bin" "$d/case$i.safetensors" > /dev/null
    "$GRPO" debug forward-backward --model "$model" --case "$d/case$i.safetensors" --out "$d/ours$i.safetensors" \
      --dtype f32 --threads "$THREADS" > /dev/null 2>&1
    read -r err same scale gap < <(py logits "$d/ours$i.safetensors" "$d/dbg$i/llamacpp-f32.bin")
    echo "  prompt $i: logit err $err (max |logit| $scale, top-2 gap $gap), argmax equal $same" >> "$d/report.txt"
    worst=$(python3 -c "print(max($worst, $err))")
    [[ "$same" == 1 ]] || argmax_ok=0
  done

  # Greedy continuations.
  "$GRPO" generate --model "$model" --prompts "$WORK/prompts.jsonl" --out "$d/ours_gen.jsonl" --temperature 0 \
    --max-new-tokens "$NEW_TOKENS" --dtype f32 --kv-dtype f32 --threads "$THREADS" > /dev/null 2>&1
  f32_eq=0; q8_eq=0
  for ((i = 0; i < PROMPTS; i++)); do
    for type in f32 q8_0; do
      "$LLAMA_BIN/llama-completion" -m "$d/$type.gguf" -f "$d/p$i.txt" -n "$NEW_TOKENS" -no-cnv --no-display-prompt \
        --temp 0 --top-k 1 -ctk f32 -ctv f32 -fa off -c 512 -t "$THREADS" --no-warmup > "$d/gen_${type}_$i.txt" 2> /dev/null
    done
    read -r g32 g8 < <(py greedy "$d/ours_gen.jsonl" "$i" "$d/gen_f32_$i.txt" "$d/gen_q8_0_$i.txt")
    echo "  prompt $i: greedy common prefix f32 $g32, q8_0 $g8 (chars)" >> "$d/report.txt"
    [[ "${g32%/*}" == "${g32#*/}" ]] && f32_eq=$((f32_eq + 1))
    [[ "${g8%/*}" == "${g8#*/}" ]] && q8_eq=$((q8_eq + 1))
  done

  # Perplexity on the held-out text.
  ppl32=$(perplexity "$d/f32.gguf" "$d/ppl_f32.log")
  ppl8=$(perplexity "$d/q8_0.gguf" "$d/ppl_q8_0.log")
  rel=$(python3 -c "print('%.3f' % (100 * abs(float('$ppl8') - float('$ppl32')) / float('$ppl32')))")

  verdict=pass
  python3 -c "import sys; sys.exit(0 if $worst <= 1e-4 else 1)" || verdict=FAIL
  [[ $tok_ok == 1 && $argmax_ok == 1 && $f32_eq == "$PROMPTS" ]] || verdict=FAIL
  python3 -c "import sys; sys.exit(0 if float('$rel') <= 1.0 else 1)" || verdict=FAIL
  [[ $verdict == pass ]] || status=1
  printf '%-22s %-12s %-12s %-10s %-10s %-10s %-24s %s\n' "$name" "$([[ $tok_ok == 1 ]] && echo equal || echo DIFFERS)" \
    "$worst" "$([[ $argmax_ok == 1 ]] && echo equal || echo DIFFERS)" "$f32_eq/$PROMPTS" "$q8_eq/$PROMPTS" \
    "$ppl32 / $ppl8 ($rel%)" "$verdict"
done
echo "details: $WORK/<case>/report.txt and the logs beside it"
exit $status
