#!/usr/bin/env python3
"""Warm eager-dispatch cost from Python, next to numpy's for the same op.

Usage: PYTHONPATH=python python3 bench/eager_bench.py [--calls N]
Reports the median per-call time over many timed batches (each batch: --batch calls), so
one-off stalls do not move the figure.
"""

import argparse
import statistics
import time

import numpy as np

import nxrt.eager as eager
import nxrt.ops as ops


def per_call_ns(fn, calls, batch):
    for _ in range(1000):  # warm: plan cached, buffers and allocator warm
        fn()
    samples = []
    for _ in range(max(1, calls // batch)):
        start = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter_ns() - start) / batch)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x = np.random.rand(8, 16).astype(np.float32)
    dispatch = eager.dispatch
    cases = [
        ("numpy.add (4,) float32", lambda: np.add(a, b)),
        ("eager.dispatch('Add') (4,) float32", lambda: dispatch("Add", [a, b])),
        ("nxrt.ops.add (4,) float32", lambda: ops.add(a, b)),
        ("eager.dispatch('Softmax', axis=-1) (8,16)", lambda: dispatch("Softmax", [x], {"axis": -1})),
        ("nxrt.ops.softmax (8,16)", lambda: ops.softmax(x, axis=-1)),
    ]
    for name, fn in cases:
        print(f"{name:45s} {per_call_ns(fn, args.calls, args.batch) / 1000:7.2f} us/call")
    print("cache:", eager.cache_stats())


if __name__ == "__main__":
    main()
