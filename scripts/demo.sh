#!/usr/bin/env bash
# The main job of the README: installs dependencies, builds, then runs the demo: generates the built-in
# arithmetic task, SFT-warm-starts a `small` model from scratch and trains it with GRPO, printing
# held-out accuracy after each phase (reports with plots in runs/demo/{sft,grpo}/report.html).
# Usage: scripts/demo.sh [OUT_DIR] [extra grpo demo options]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/scripts/setup.sh" "$here/build"
out="${1:-$here/runs/demo}"
shift || true
exec "$here/build/grpo" demo --out "$out" "$@"
