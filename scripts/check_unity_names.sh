#!/usr/bin/env bash
# Compile-only check of the unity build's rule (CMakeLists.txt, GRPO_UNITY): names private to a file must be
# unique within its target. Every target's files are compiled as one translation unit (GRPO_UNITY_BATCH=0),
# unoptimised and without linking, so a clash fails here whatever the batches.
# Usage: scripts/check_unity_names.sh [BUILD_DIR]   (default build-names; needs what scripts/setup.sh installs)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build-names}"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
  -DGRPO_UNITY_BATCH=0 -DGRPO_BENCH=OFF >/dev/null
# The unity translation units only (the kernels compile one file a unit and are not concerned).
mapfile -t units < <(ninja -C "$build" -t targets all | grep -o '^[^:]*/Unity/[^:]*\.o')
ninja --quiet -C "$build" -j"$(nproc)" "${units[@]}"
echo "[names] ${#units[@]} targets compiled as one unit each: no clashing file-private names" >&2
