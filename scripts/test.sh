#!/usr/bin/env bash
# The full test suite: builds, then runs the C++ unit tests (ctest), the Python tests
# (pytest: API, models against onnxruntime, the ONNX backend cases), the wheel as a user
# installs it (scripts/test_wheel.sh) and the sanitizer
# checks (scripts/sanitize.sh: ASan+UBSan unit tests, 60 s per fuzz target, the
# ThreadSanitizer concurrency test). Exits non-zero on any failure.
# NXRT_SKIP_SANITIZE=1 skips the sanitizer stage (quick local runs); extra arguments go
# to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
echo "== Formatting (clang-format, .clang-format)"
scripts/check_format.sh
echo "== C++ unit tests (ctest)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
echo "== Python tests (pytest)"
NXRT_REQUIRE_TEST_DEPS=1 PYTHONPATH="$PWD/python" .venv/bin/python -m pytest tests/python -q -p no:cacheprovider "$@"
echo "== Wheel (scripts/test_wheel.sh: python -m build, clean virtual environment)"
scripts/test_wheel.sh
if [ "${NXRT_SKIP_SANITIZE:-0}" = 1 ]; then
  echo "== Sanitizer checks skipped (NXRT_SKIP_SANITIZE=1)"
else
  echo "== Sanitizer checks (scripts/sanitize.sh)"
  scripts/sanitize.sh "${NXRT_FUZZ_SECONDS:-60}"
fi
