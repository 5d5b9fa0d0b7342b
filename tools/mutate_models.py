"""Loads randomly corrupted copies of a model (bit flips, truncations) and runs each once.

Every corruption must end in a Python exception or a result, never a crash or a hang.
Each attempt runs in a child process so a crash is caught and reported with its seed.
Usage: PYTHONPATH=python python tools/mutate_models.py MODEL [--count 200] [--seed 0]
"""

import argparse
import multiprocessing as mp
import sys

import numpy as np


def _attempt(data, feeds, queue):
    import nxrt

    try:
        sess = nxrt.InferenceSession(data)
        try:
            sess.run(None, feeds)
        except Exception as e:  # noqa: BLE001
            queue.put(("run-error", type(e).__name__))
            return
        queue.put(("ok", ""))
    except Exception as e:  # noqa: BLE001
        queue.put(("load-error", type(e).__name__))


def default_feeds(path):
    import nxrt

    sess = nxrt.InferenceSession(path)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        dtype = {"tensor(float)": np.float32, "tensor(int64)": np.int64}.get(i.type, np.float32)
        feeds[i.name] = np.zeros(shape, dtype)
        if i.name == "sr":
            feeds[i.name] = np.array(16000, np.int64)
        if i.name == "input" and len(shape) == 2:
            feeds[i.name] = np.zeros((1, 512), np.float32)
    return feeds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    with open(args.model, "rb") as f:
        original = f.read()
    feeds = default_feeds(args.model)
    rng = np.random.default_rng(args.seed)
    ctx = mp.get_context("fork")
    outcomes = {}
    bad = 0
    for n in range(args.count):
        data = bytearray(original)
        if n % 4 == 0:
            data = data[: int(rng.integers(1, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 8))):
                pos = int(rng.integers(0, len(data)))
                data[pos] ^= 1 << int(rng.integers(0, 8))
        queue = ctx.Queue()
        proc = ctx.Process(target=_attempt, args=(bytes(data), feeds, queue))
        proc.start()
        proc.join(args.timeout)
        if proc.is_alive():
            proc.kill()
            print(f"HANG at attempt {n} (seed {args.seed})", flush=True)
            bad += 1
            continue
        if proc.exitcode != 0:
            print(f"CRASH at attempt {n} (seed {args.seed}): exit code {proc.exitcode}", flush=True)
            with open(f"/tmp/nxrt_crash_{args.seed}_{n}.onnx", "wb") as f:
                f.write(bytes(data))
            bad += 1
            continue
        kind, name = queue.get()
        outcomes[(kind, name)] = outcomes.get((kind, name), 0) + 1
    print(f"{args.count} attempts, {bad} crashes or hangs; outcomes: {outcomes}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
