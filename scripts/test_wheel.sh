#!/usr/bin/env bash
# Builds the wheel with `python -m build`, installs it into a clean virtual environment
# (numpy and onnxruntime from PyPI beside it, nothing from the source tree) and checks it
# as its users would: the drop-in Python API against onnxruntime (tests/wheel/
# check_installed.py), a C program built against the installed headers and libnxrt.so
# through the CMake package and through pkg-config, and the `nxrt` CLI.
# The work directory build/wheel-test is kept, so a second run rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
models=$(cd ../shared/models && pwd)
work=$root/build/wheel-test
scripts/setup.sh
rm -rf "$work/dist" "$work/venv" "$work/consumer" "$work/pc_consumer"
mkdir -p "$work"

echo "wheel: python -m build --wheel"
# --no-isolation: the build requirements (scikit-build-core, nanobind) come from .venv.
flock /tmp/nxrt-build.lock .venv/bin/python -m build --wheel --no-isolation \
  --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/nxrt-*.whl)
echo "wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

# The same numpy and onnxruntime versions as the development environment.
pins=$(.venv/bin/python -m pip freeze | grep -E '^(numpy|onnxruntime)==')
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel" $pins

# From outside the source tree, so `import nxrt` can only find the installed copy.
(cd "$work" && venv/bin/python "$root/tests/wheel/check_installed.py" "$models")

site=$("$work/venv/bin/python" -c 'import nxrt, os; print(os.path.dirname(nxrt.__file__))')
model=$models/silero_vad_v5.onnx
cmake -S tests/c/consumer -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$site" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer_c" "$model" | grep -q "input state sr"
"$work/consumer/consumer_cpp" "$model" | grep -q "2 outputs"
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
cc -std=c11 -Wall -Wextra -Werror tests/c/consumer/consumer.c \
  $(PKG_CONFIG_PATH="$site/lib/pkgconfig" pkg-config --cflags --libs nxrt) -o "$work/pc_consumer"
LD_LIBRARY_PATH="$site/lib" "$work/pc_consumer" "$model" | grep -q "input state sr"
echo "wheel: C consumers built against the installed package (CMake package and pkg-config) run"

"$work/venv/bin/nxrt" --version
"$work/venv/bin/nxrt" info "$model" | grep -q "sr"
echo "wheel: the nxrt CLI runs from the environment's bin directory"
echo "wheel: ok"
