#!/usr/bin/env bash
# The communication table over real network stacks: `grpo bench dist --np 2` (text, then --vl) over shared
# memory (one host), then between 2 hosts of the network-namespace bed (scripts/netns_bed.sh) with links of
# 10 Gbit/s and of 1 Gbit/s. Prints, per link and model, each run's step time, communication seconds and share
# and MB a step, and the comm-share ratio of overlap + bf16 to the baseline. As root (the bed needs it).
# Usage: bench/dist_over_links.sh [OUT_DIR]   (env: GRPO = the binary, default build/grpo; TEXT_ARGS, VL_ARGS
#        replace the bench's sizes, defaults below)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
grpo="${GRPO:-$here/build/grpo}"
out="${1:-$(mktemp -d /tmp/dist_over_links.XXXXXX)}"
text_args="${TEXT_ARGS:---preset small --prompts 4 --n 8 --max-response-length 64 --steps 3}"
vl_args="${VL_ARGS:---vl --preset small --prompts 2 --n 4 --max-response-length 32 --steps 3}"
mkdir -p "$out"
export GRPO_NETNS_NAME=distb GRPO_NETNS_SUBNET=198.18.1
trap '"$here/scripts/netns_bed.sh" down >/dev/null 2>&1 || true' EXIT

run() {  # LINK MODEL LAUNCHER ARGS...
  local link="$1" model="$2" launcher="$3"; shift 3
  echo "== $link, $model" >&2
  # shellcheck disable=SC2068
  "$grpo" bench dist --np 2 --mpirun "$launcher" --out "$out/work" $@ 2>"$out/$link-$model.log" |
    tail -n 1 >"$out/$link-$model.json"
}

for link in shared-memory 10gbit 1gbit; do
  launcher=mpirun
  if [[ "$link" != shared-memory ]]; then
    "$here/scripts/netns_bed.sh" down >/dev/null 2>&1 || true
    "$here/scripts/netns_bed.sh" up --hosts 2 --rate "$link" >&2
    launcher="$here/scripts/netns_bed.sh mpirun"
  fi
  run "$link" text "$launcher" $text_args
  run "$link" vl "$launcher" $vl_args
done

python3 - "$out" <<'EOF'
import json, sys, os
out = sys.argv[1]
print("| link | model | run | step (s) | comm (s) | comm share | MB / step |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for link in ("shared-memory", "10gbit", "1gbit"):
    for model in ("text", "vl"):
        j = json.load(open(os.path.join(out, f"{link}-{model}.json")))
        for r in j["runs"][1:]:
            share = r["comm_share"]
            print(f"| {link} | {j['model']} {model} | {r['name']} | {r['step_time_s']:.2f} | {r['comm_s']:.3f} | "
                  f"{100 * share:.1f}% | {r['comm_bytes'] / 1e6:.1f} |")
        print(f"| {link} | {j['model']} {model} | overlap + bf16 / baseline, comm share | | | "
              f"{j['comm_share_ratio']:.2f}x | |")
EOF
