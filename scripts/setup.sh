#!/usr/bin/env bash
# Installs everything nxrt needs to build and test on Debian 12: system packages via
# apt-get (when missing) and Python packages into ./.venv. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
# clang and its runtimes: the sanitizer and libFuzzer builds of scripts/sanitize.sh.
# libgl1, libglib2.0-0: OpenCV's runtime, for rapidocr in tests/python/test_libraries.py.
# clang-format: scripts/test.sh checks that the C and C++ sources are formatted.
# nlohmann-json3-dev: the JSON reader of src/genai (tokenizer.json), header-only.
# libcpp-httplib-dev: the HTTP server of `nxrt serve`.
# libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev: ImageDecoder's codecs.
for pkg in cmake ninja-build g++ clang-format libprotozero-dev libgtest-dev libbenchmark-dev pkg-config libcli11-dev espeak-ng sox \
           nlohmann-json3-dev libcpp-httplib-dev \
           libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev \
           clang libclang-rt-14-dev libgl1 libglib2.0-0; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if ! command -v python3 >/dev/null 2>&1; then need_apt+=(python3 python3-dev python3-venv); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  if ! python3 -m venv .venv 2>/dev/null; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-venv python3-dev >/dev/null
    python3 -m venv .venv
  fi
fi
stamp=.venv/.requirements-installed
if [ ! -f "$stamp" ] || [ requirements-dev.txt -nt "$stamp" ]; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements-dev.txt
  touch "$stamp"
fi
