#!/usr/bin/env bash
# Sanitizer checks (issue 5):
#  1. builds the C++ unit tests with ASan+UBSan (gcc, ./build-asan) and runs them;
#  2. builds the libFuzzer targets (clang, ./build-fuzz) and runs each for SECONDS on the
#     checked-in corpus (tests/fuzz/corpus), in a scratch copy so the corpus stays as
#     committed. Any sanitizer report, crash, leak or timeout fails the script.
# Usage: scripts/sanitize.sh [SECONDS per fuzz target, default 60] [-j JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-60}"
JOBS="${JOBS:-$(nproc)}"
start=$(date +%s)

echo "== ASan+UBSan unit tests (build-asan)"
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNXRT_SANITIZE=address,undefined -DNXRT_PYTHON_INPLACE=OFF -DNXRT_BUILD_PYTHON=OFF
fi
ninja -C build-asan -j "$JOBS"
# detect_leaks: the unit tests must not leak either.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$JOBS"

echo "== libFuzzer targets (build-fuzz), ${SECONDS_PER_TARGET}s each"
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNXRT_FUZZ=ON -DNXRT_BUILD_TESTS=OFF -DNXRT_BUILD_PYTHON=OFF -DNXRT_BUILD_TOOLS=OFF
fi
ninja -C build-fuzz -j "$JOBS" fuzz_model fuzz_run fuzz_tensor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for pair in fuzz_model:model fuzz_run:run fuzz_tensor:tensor; do
  target=${pair%%:*}
  corpus=${pair##*:}
  mkdir -p "$work/$corpus" "$work/artifacts-$target"
  cp tests/fuzz/corpus/"$corpus"/* "$work/$corpus/"
  # Inputs that once crashed a target (each fixed; replayed first as part of the corpus).
  find tests/fuzz/regressions/"$corpus" -type f ! -name '.*' -exec cp {} "$work/$corpus/" \;
  echo "-- $target on corpus/$corpus"
  rc=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-fuzz/tests/fuzz/"$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts-$target/" \
    "$work/$corpus" > "$work/$target.log" 2>&1 || rc=$?
  grep -E "^#[0-9]+ *(DONE|INITED)|stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY|runtime error" \
    "$work/$target.log" || true
  if [ "$rc" -ne 0 ] || [ -n "$(ls -A "$work/artifacts-$target")" ]; then
    tail -50 "$work/$target.log"
    mkdir -p fuzz-artifacts
    cp "$work/artifacts-$target"/* fuzz-artifacts/
    echo "FAIL: $target found crashing inputs (copied to fuzz-artifacts/)"
    exit 1
  fi
done
echo "== sanitize.sh passed in $(( $(date +%s) - start ))s"
