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


# Random inputs larger than this are refused before numpy tries to allocate them.
MAX_INPUT_ELEMENTS = 1 << 31


def parse_pairs(items, what):
    """NAME=VALUE items into {NAME: [ints]}: VALUE is D0,D1,... for --shape, one int for
    --dim."""
    out = {}
    for item in items or []:
        name, _, value = item.partition("=")
        try:
            numbers = [int(v) for v in value.split(",")]
        except ValueError:
            numbers = None
        if not name or not numbers or any(n < 0 for n in numbers) or \
                (what == "--dim" and len(numbers) != 1):
            form = "SYMBOL=SIZE" if what == "--dim" else "NAME=D0,D1,..."
            raise SystemExit(f"{what} '{item}': expected {form} with sizes >= 0")
        out[name] = numbers[0] if what == "--dim" else numbers
    return out


def random_feeds(session, shapes, dims, seed=0):
    rng = np.random.default_rng(seed)
    names = [arg.name for arg in session.get_inputs()]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise SystemExit(f"--shape names {unknown}, which are not inputs of the model "
                         f"(its inputs: {names})")
    feeds = {}
    for arg in session.get_inputs():
        shape = shapes.get(arg.name)
        if shape is None:
            shape = [d if isinstance(d, int) else dims.get(str(d), 1) for d in arg.shape]
        if np.prod(shape, dtype=np.float64) > MAX_INPUT_ELEMENTS:
            raise SystemExit(f"input '{arg.name}' of shape {shape} would hold more than "
                             f"{MAX_INPUT_ELEMENTS} elements")
        element = arg.type[len("tensor("):-1]
        dtype = np.dtype({"float": "float32", "double": "float64"}.get(element, element))
        if dtype.kind == "f":
            feeds[arg.name] = rng.random(shape).astype(dtype)
        else:
            feeds[arg.name] = np.zeros(shape, dtype)
    return feeds


def guarded(runtime, call):
    """call(), or exit with what `runtime` raised, on one line."""
    try:
        return call()
    except Exception as err:  # noqa: BLE001 (either runtime's error types)
        text = " ".join(line.strip() for line in str(err).splitlines()) or type(err).__name__
        raise SystemExit(f"{runtime}: {text}") from None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shape", action="append", metavar="NAME=D0,D1,...")
    ap.add_argument("--dim", action="append", metavar="SYMBOL=SIZE")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--block", type=int, default=5)
    args = ap.parse_args()
    shapes = parse_pairs(args.shape, "--shape")
    dims = parse_pairs(args.dim, "--dim")
    name = os.path.basename(args.model)
    for threads in args.threads:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        nx_options = nxrt.SessionOptions()
        nx_options.intra_op_num_threads = threads
        # nxrt first: a model it refuses is reported in its words.
        session = guarded("nxrt", lambda: nxrt.InferenceSession(args.model, nx_options))
        baseline = guarded("onnxruntime", lambda: ort.InferenceSession(
            args.model, options, providers=["CPUExecutionProvider"]))
        feeds = random_feeds(baseline, shapes, dims)
        got = guarded("nxrt", lambda: session.run(None, feeds))
        expected = guarded("onnxruntime", lambda: baseline.run(None, feeds))
        diff = max((float(np.max(np.abs(np.asarray(e, np.float64) - g))) if np.size(e) else 0.0)
                   for e, g in zip(expected, got))
        r = harness.compare(lambda: session.run(None, feeds), lambda: baseline.run(None, feeds),
                            rounds=args.rounds, block=args.block, warmup=2,
                            settle_s=harness.settle_for(threads))
        print(harness.format_row(name, threads, r) + f"  max |difference| {diff:.2e}", flush=True)


if __name__ == "__main__":
    main()
