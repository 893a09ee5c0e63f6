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
# The engine's libraries and the grpo tool (the kernels compile one file a unit and are not concerned), and
# the test folders of more than one batch (16 files): the regular build compiles the others as one unit.
targets='grpo[^/:]*'
for d in "$here"/tests/*/; do
  files=("$d"*.cpp)
  [[ -e "${files[0]}" ]] && ((${#files[@]} > 16)) && targets+="|test_$(basename "$d")"
done
mapfile -t units < <(ninja -C "$build" -t targets all | grep -oE "^CMakeFiles/($targets)\.dir/Unity/[^:]*\.o")
ninja --quiet -C "$build" -j"$(nproc)" "${units[@]}"
echo "[names] ${#units[@]} targets compiled as one unit each: no clashing file-private names" >&2
