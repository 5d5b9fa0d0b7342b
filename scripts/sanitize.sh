#!/usr/bin/env bash
# Sanitizer checks (issue 5), part of the full test suite (scripts/test.sh):
#  1. ./build-san (clang, ASan+UBSan, libFuzzer coverage): builds the C++ and C unit tests
#     and the three libFuzzer targets; runs the unit tests (leak checking on), then each
#     fuzz target for SECONDS on the checked-in corpus plus the crash regressions, in a
#     scratch copy so the corpus stays as committed. A fixed seed and a fixed number of
#     executions (about SECONDS on this machine) make CI's fuzzing the same from run to run;
#     2 x SECONDS caps the time on a slower machine. Long campaigns by hand use random
#     seeds and time limits.
#  2. ./build-tsan (clang, ThreadSanitizer): builds and runs the concurrency test
#     (tests/c/sessions_test.c: many sessions on 2 threads, one session on 4 threads).
# Any sanitizer report, crash, leak or fuzzer timeout fails the script. Sanitizer builds
# use -O1 -g1: they compile about twice as fast as -O2 -g and keep line numbers.
# Usage: scripts/sanitize.sh [SECONDS per fuzz target, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh  # clang and its sanitizer runtimes, when missing
SECONDS_PER_TARGET="${1:-60}"
JOBS="${JOBS:-$(nproc)}"
start=$(date +%s)
SAN_FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1"
           -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DNXRT_BUILD_PYTHON=OFF
           -DNXRT_PYTHON_INPLACE=OFF -DNXRT_BUILD_TOOLS=OFF)

echo "== ASan+UBSan: unit tests and fuzz targets (build-san)"
if [ ! -f build-san/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-san -G Ninja "${SAN_FLAGS[@]}" -DNXRT_FUZZ=ON >/dev/null
fi
flock /tmp/nxrt-build.lock ninja -C build-san -j "$JOBS"
# detect_leaks: the unit tests must not leak either.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-san --output-on-failure -j "$JOBS"

echo "== libFuzzer targets, about ${SECONDS_PER_TARGET}s each"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# target:corpus:executions per 60 s (measured here under ASan+UBSan at -O1)
for spec in fuzz_model:model:800000 fuzz_run:run:200000 fuzz_tensor:tensor:3000000; do
  IFS=: read -r target corpus per_minute <<<"$spec"
  runs=$(( per_minute * SECONDS_PER_TARGET / 60 ))
  mkdir -p "$work/$corpus" "$work/artifacts-$target"
  cp tests/fuzz/corpus/"$corpus"/* "$work/$corpus/"
  # Inputs that once crashed a target (each fixed; replayed first as part of the corpus).
  find tests/fuzz/regressions/"$corpus" -type f ! -name '.*' -exec cp {} "$work/$corpus/" \;
  echo "-- $target on corpus/$corpus, $runs executions"
  rc=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-san/tests/fuzz/"$target" -seed=1 -runs="$runs" \
    -max_total_time=$(( 2 * SECONDS_PER_TARGET )) -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts-$target/" \
    "$work/$corpus" > "$work/$target.log" 2>&1 || rc=$?
  grep -E "^#[0-9]+ *(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|runtime error" \
    "$work/$target.log" || true
  # Slow units (over 10 s, reported) are not failures; crashes, leaks, timeouts and
  # out-of-memory inputs are.
  if [ "$rc" -ne 0 ] || ls "$work/artifacts-$target" | grep -qv '^slow-unit-'; then
    tail -50 "$work/$target.log"
    mkdir -p fuzz-artifacts
    cp "$work/artifacts-$target"/* fuzz-artifacts/ 2>/dev/null || true
    echo "FAIL: $target found crashing inputs (copied to fuzz-artifacts/)"
    exit 1
  fi
done

echo "== ThreadSanitizer: concurrency test (build-tsan)"
if [ ! -f build-tsan/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja "${SAN_FLAGS[@]}" \
    -DNXRT_SANITIZE=thread >/dev/null
fi
flock /tmp/nxrt-build.lock ninja -C build-tsan -j "$JOBS" nxrt_sessions_test
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/tests/c/nxrt_sessions_test
echo "== sanitize.sh passed in $(( $(date +%s) - start ))s"
