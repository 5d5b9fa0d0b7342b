"""How far onnxruntime's own outputs move when its float inputs carry rounding-level noise.

A model whose outputs move by much more than the zoo comparison's tolerance under noise
of a few float32 ulps is chaotic in its arithmetic: two runtimes agree to that tolerance
only when every op rounds bit for bit alike. This measures it for zoo models, next to
nxrt's distance from onnxruntime on the unperturbed inputs:

    PYTHONPATH=python .venv/bin/python bench/zoo_sensitivity.py kokoro_int8 [ID ...]

Differences are given as a share of the onnxruntime output's range (max and mean over
elements), the unit of the zoo's quantized-output tolerance (1%).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

NOISE = (1e-6, 1e-5, 1e-4)  # relative; 1e-6 is about 8 float32 ulps
TRIALS = 2


def distance(got, ref):
    """(max, mean) of |got - ref| in % of ref's range; None when the shapes differ."""
    if got.shape != ref.shape:
        return None
    span = float(np.ptp(ref)) or 1.0
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    return 100 * float(diff.max()) / span, 100 * float(diff.mean()) / span


def describe(d):
    return "other shape" if d is None else f"max {d[0]:5.1f}%  mean {d[1]:5.2f}%"


def measure(model_id):
    import onnxruntime as ort

    import nxrt
    try:
        entry = zoo.get_entry(model_id)
    except KeyError as err:
        sys.exit(str(err).strip("'\""))
    path = zoo.model_path(entry)
    if path is None:
        print(f"{model_id}: not fetched (scripts/fetch_zoo.py)")
        return
    feeds = zoo.make_feeds(entry, seed=0)
    ref_session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    reference = ref_session.run(None, feeds)
    ours = nxrt.InferenceSession(path).run(None, feeds)
    print(f"{model_id}: differences in % of onnxruntime's output range")
    for i, ref in enumerate(reference):
        if ref.dtype.kind != "f":
            continue
        print(f"  output {i}: nxrt vs onnxruntime              {describe(distance(ours[i], ref))}")
    floats = [name for name, value in feeds.items()
              if value.dtype == np.float32 and np.any(value)]  # noise on zeros is no noise
    for name in floats:
        for rel in NOISE:
            worst = (0.0, 0.0)
            for trial in range(TRIALS):
                noisy = dict(feeds)
                rng = np.random.default_rng(trial)
                value = feeds[name]
                noisy[name] = (value * (1 + rel * rng.standard_normal(value.shape))).astype(
                    np.float32)
                moved = ref_session.run(None, noisy)
                for i, ref in enumerate(reference):
                    d = distance(moved[i], ref) if ref.dtype.kind == "f" else (0.0, 0.0)
                    worst = (100.0, 100.0) if d is None else max(worst, d)
            print(f"  onnxruntime, {name} x (1 + {rel:g} N), worst output: "
                  f"{describe(worst)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="+", help="zoo model ids")
    args = parser.parse_args()
    for model_id in args.ids:
        measure(model_id)


if __name__ == "__main__":
    main()
