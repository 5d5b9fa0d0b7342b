"""Any ONNX file, nxrt next to onnxruntime (bench/harness.py: one process, same inputs,
interleaved blocks, medians and p99), for models outside the zoo: the check that the
kernels hold on models nobody tuned them for.

Inputs are random: floats uniform in [0, 1), integers and booleans zero. Symbolic dims
take --dim SYMBOL=SIZE (default 1); --shape NAME=D0,D1,... gives one input's whole shape.

Usage:
  PYTHONPATH=python .venv/bin/python bench/bench_file.py MODEL.onnx [--threads 1 2]
      [--shape NAME=1,3,320,320 ...] [--dim SYMBOL=SIZE ...] [--rounds 10 --block 5]
"""
import argparse
import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

import nxrt  # noqa: E402


def parse_pairs(items, convert):
    out = {}
    for item in items or []:
        name, _, value = item.partition("=")
        if not value:
            raise SystemExit(f"expected NAME=VALUE, got '{item}'")
        out[name] = convert(value)
    return out


def random_feeds(session, shapes, dims, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in session.get_inputs():
        shape = shapes.get(arg.name)
        if shape is None:
            shape = [d if isinstance(d, int) else dims.get(str(d), 1) for d in arg.shape]
        element = arg.type[len("tensor("):-1]
        dtype = np.dtype({"float": "float32", "double": "float64"}.get(element, element))
        if dtype.kind == "f":
            feeds[arg.name] = rng.random(shape).astype(dtype)
        else:
            feeds[arg.name] = np.zeros(shape, dtype)
    return feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shape", action="append", metavar="NAME=D0,D1,...")
    ap.add_argument("--dim", action="append", metavar="SYMBOL=SIZE")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--block", type=int, default=5)
    args = ap.parse_args()
    shapes = parse_pairs(args.shape, lambda v: [int(d) for d in v.split(",")])
    dims = parse_pairs(args.dim, int)
    name = os.path.basename(args.model)
    for threads in args.threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        baseline = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        nx_options = nxrt.SessionOptions()
        nx_options.intra_op_num_threads = threads
        session = nxrt.InferenceSession(args.model, nx_options)
        feeds = random_feeds(baseline, shapes, dims)
        expected, got = baseline.run(None, feeds), session.run(None, feeds)
        diff = max((float(np.max(np.abs(np.asarray(e, np.float64) - g))) if np.size(e) else 0.0)
                   for e, g in zip(expected, got))
        r = harness.compare(lambda: session.run(None, feeds), lambda: baseline.run(None, feeds),
                            rounds=args.rounds, block=args.block, warmup=2,
                            settle_s=harness.settle_for(threads))
        print(harness.format_row(name, threads, r) + f"  max |difference| {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
