#!/usr/bin/env bash
# Installs the Debian 12 packages grpo.cpp needs and configures + builds it.
# Idempotent; run as root on a fresh machine. Usage: scripts/setup.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
packages=(build-essential cmake ninja-build pkg-config clang clang-format libclang-rt-14-dev libomp-dev
          libdnnl-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libpcre2-dev libutf8proc-dev
          libgtest-dev libbenchmark-dev ocl-icd-opencl-dev libpng-dev libjpeg62-turbo-dev libopenmpi-dev
          openmpi-bin python3 libsnappy-dev zlib1g-dev libzstd-dev liblz4-dev libbrotli-dev libcpp-httplib-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
build="${1:-$here/build}"; shift || true
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
