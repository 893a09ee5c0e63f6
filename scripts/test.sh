#!/usr/bin/env bash
# The test command of the README: installs dependencies, builds, checks the format of the lines changed since
# .clang-format and that file-private names are unique per target (compile-only), runs every test (CTest) at
# the CPU's level (amx on an AMX machine), runs them again with GRPO_ISA=avx2 (the AVX2 kernels and emulated bf16 GEMM,
# whatever this CPU has), then builds the engine under AddressSanitizer + UndefinedBehaviorSanitizer (the
# test code under ASan) and runs the tests, then runs the libFuzzer targets briefly.
# Usage: scripts/test.sh   (env: GRPO_FUZZ_SECONDS, default 20 per target)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"
start=$SECONDS
phase() { echo "== $* (at $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s)" >&2; }

phase "release build + tests"
"$here/scripts/setup.sh" "$here/build"

phase "format of the changed lines + file-private names per target (compile-only)"
"$here/scripts/check_format.sh"
"$here/scripts/check_unity_names.sh" "$here/build-names"
(cd "$here/build" && ctest --output-on-failure -j"$jobs" --timeout 900)

phase "release tests again at GRPO_ISA=avx2"
(cd "$here/build" && GRPO_ISA=avx2 ctest --output-on-failure -j"$jobs" --timeout 900)

# Under the sanitizers (each test ~2.5x slower) two multi-process runs are left out besides label `slow`:
# ZeRO on 3 ranks (the same code as on 2, which runs; 3 runs in both Release passes) and `grpo bench dist`
# (four whole training runs under mpirun; its collectives run in CliDist's other tests).
phase "AddressSanitizer + UndefinedBehaviorSanitizer build + unit tests (label slow left out)"
cmake -S "$here" -B "$here/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRPO_SANITIZE=ON \
  -DGRPO_BENCH=OFF >/dev/null
cmake --build "$here/build-asan" -j"$jobs"
(cd "$here/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" --timeout 1800 -LE slow -E '^(train_dist_mpi_np3|CliDist\.BenchDist.*)$')

if compgen -G "$here/fuzz/*.cpp" >/dev/null; then
  phase "libFuzzer targets (clang, ASan + UBSan)"
  CXX=clang++ CC=clang cmake -S "$here" -B "$here/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGRPO_SANITIZE=ON -DGRPO_FUZZ=ON -DGRPO_TESTS=OFF -DGRPO_BENCH=OFF >/dev/null
  cmake --build "$here/build-fuzz" -j"$jobs" --target fuzz_all
  fuzz() {  # one target for GRPO_FUZZ_SECONDS; its last lines (and the crash, if any) in build-fuzz/<name>.log
    local name="$1" corpus="$here/fuzz/corpus/${1#fuzz_}"  # seeds: fuzz/corpus/<name without fuzz_>
    mkdir -p "$here/build-fuzz/corpus-$name"
    "$here/build-fuzz/$name" -max_total_time="${GRPO_FUZZ_SECONDS:-20}" -rss_limit_mb=4096 \
      "$here/build-fuzz/corpus-$name" $( [[ -d "$corpus" ]] && echo "$corpus" ) >"$here/build-fuzz/$name.log" 2>&1
  }
  # as many targets at a time as there are cores; a target that fails prints its log and stops the run
  names=(); for f in "$here"/fuzz/*.cpp; do names+=("$(basename "$f" .cpp)"); done
  for ((i = 0; i < ${#names[@]}; i += jobs)); do
    pids=()
    for name in "${names[@]:i:jobs}"; do fuzz "$name" & pids+=("$!"); done
    for ((j = 0; j < ${#pids[@]}; ++j)); do
      name="${names[i + j]}"
      status=0; wait "${pids[j]}" || status=$?
      echo "-- $name: $(tail -n 1 "$here/build-fuzz/$name.log")" >&2
      ((status == 0)) || { tail -n 60 "$here/build-fuzz/$name.log" >&2; echo "fuzz target $name failed" >&2; exit 1; }
    done
  done
fi
phase "all tests passed"
