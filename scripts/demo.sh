#!/usr/bin/env bash
# Builds nxrt and runs its main job on a real model: Silero VAD (from the PyPI package
# silero-vad, which ships the ONNX file) over a stream of audio frames, printing the
# speech probabilities and the latency next to onnxruntime's in the same process.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
PYTHONPATH="$PWD/python" .venv/bin/python bench/demo_vad.py "$@"
