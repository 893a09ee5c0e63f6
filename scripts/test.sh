#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, runs every test (CTest), runs them again
# with GRPO_ISA=avx2 (the AVX2 kernels and emulated bf16 GEMM, whatever this CPU has), then builds the
# engine under AddressSanitizer + UndefinedBehaviorSanitizer (the test code under ASan) and runs the tests,
# then runs the libFuzzer targets briefly. Usage: scripts/test.sh   (env: GRPO_FUZZ_SECONDS, default 20 per target)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"
start=$SECONDS
phase() { echo "== $* (at $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s)" >&2; }

phase "release build + tests"
"$here/scripts/setup.sh" "$here/build"
(cd "$here/build" && ctest --output-on-failure -j"$jobs" --timeout 900)

phase "release tests again at GRPO_ISA=avx2"
(cd "$here/build" && GRPO_ISA=avx2 ctest --output-on-failure -j"$jobs" --timeout 900)

phase "AddressSanitizer + UndefinedBehaviorSanitizer build + unit tests (label slow left out)"
cmake -S "$here" -B "$here/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRPO_SANITIZE=ON \
  -DGRPO_BENCH=OFF >/dev/null
cmake --build "$here/build-asan" -j"$jobs"
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" --timeout 1800 -LE slow)

if compgen -G "$here/fuzz/*.cpp" >/dev/null; then
  phase "libFuzzer targets (clang, ASan + UBSan)"
  CXX=clang++ CC=clang cmake -S "$here" -B "$here/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGRPO_SANITIZE=ON -DGRPO_FUZZ=ON -DGRPO_TESTS=OFF -DGRPO_BENCH=OFF >/dev/null
  cmake --build "$here/build-fuzz" -j"$jobs" --target fuzz_all
  for f in "$here"/fuzz/*.cpp; do
    name="$(basename "$f" .cpp)"
    corpus="$here/fuzz/corpus/${name#fuzz_}"  # seeds: fuzz/corpus/<name without fuzz_>
    mkdir -p "$here/build-fuzz/corpus-$name"
    echo "-- $name" >&2
    "$here/build-fuzz/$name" -max_total_time="${GRPO_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 \
      "$here/build-fuzz/corpus-$name" $( [[ -d "$corpus" ]] && echo "$corpus" ) 2>&1 | tail -n 3
  done
fi
phase "all tests passed"
