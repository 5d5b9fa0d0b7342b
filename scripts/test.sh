#!/usr/bin/env bash
# The full test suite: builds, then runs the C++ unit tests (ctest) and the Python tests
# (pytest: API, models against onnxruntime, the ONNX backend cases). Exits non-zero on
# any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
echo "== C++ unit tests (ctest)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
echo "== Python tests (pytest)"
PYTHONPATH="$PWD/python" .venv/bin/python -m pytest tests/python -q -p no:cacheprovider "$@"
