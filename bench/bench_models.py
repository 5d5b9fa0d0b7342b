"""Benchmarks nxrt against onnxruntime on the real models in ../shared/models.

Usage: PYTHONPATH=python python bench/bench_models.py [--threads 1 2] [--models NAME ...]
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

import nxrt  # noqa: E402
import onnxruntime as ort  # noqa: E402

MODELS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared", "models"))


def feeds_for(name):
    rng = np.random.default_rng(0)
    if name.startswith("silero_vad_v5"):
        return {"input": rng.standard_normal((1, 512)).astype(np.float32) * 0.1,
                "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    if name.startswith("silero_vad_legacy"):
        return {"input": rng.standard_normal((1, 512)).astype(np.float32) * 0.1,
                "sr": np.array(16000, np.int64), "h": np.zeros((2, 1, 64), np.float32),
                "c": np.zeros((2, 1, 64), np.float32)}
    if name.startswith("oww"):
        return {"input": rng.standard_normal((1, 1280)).astype(np.float32) * 1000}
    if name.startswith("ppocr"):
        return {"x": rng.standard_normal((1, 3, 640, 640)).astype(np.float32)}
    raise KeyError(name)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=["silero_vad_v5", "silero_vad_legacy",
                                                         "oww_melspectrogram", "ppocr_v4_det"])
    args = parser.parse_args()
    for name in args.models:
        path = os.path.join(MODELS, name + ".onnx")
        feeds = feeds_for(name)
        for threads in args.threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            rt = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            nso = nxrt.SessionOptions()
            nso.intra_op_num_threads = threads
            nx = nxrt.InferenceSession(path, nso)
            a, b = nx.run(None, feeds), rt.run(None, feeds)
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
            heavy = name.startswith("ppocr")
            r = harness.compare(lambda: nx.run(None, feeds), lambda: rt.run(None, feeds),
                                rounds=6 if heavy else 20, block=2 if heavy else 20,
                                warmup=2 if heavy else 10,
                                settle_s=harness.settle_for(threads))
            print(harness.format_row(name, threads, r), flush=True)


if __name__ == "__main__":
    main()
