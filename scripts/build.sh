#!/usr/bin/env bash
# Configures and builds the C++ libraries, unit tests and the Python extension (in place,
# next to python/nxrt) into ./build. Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$PWD/.venv/bin/python" "$@"
fi
# One build at a time on this machine (helpers and scripts share the lock).
flock /tmp/nxrt-build.lock cmake --build build -j "$(nproc)"
