"""Side-by-side timing of nxrt and onnxruntime: same process, same inputs, interleaved.

Each round runs a block of calls on one runtime then the same block on the other, so
drift (frequency, the other core's load) hits both alike. Reports medians, p99 and the
nxrt/onnxruntime ratio of medians (below 1.0 means nxrt is faster).

With several intra-op threads, blocks are separated by a pause (`settle_s`): onnxruntime's
workers keep spinning for about 40 ms after each of its runs (measured on this VM with
/proc/<tid>/schedstat: a full core's worth of CPU time), which, in one process on two
cores, takes the second core from the block that follows. nxrt's workers sleep when idle.
The pause lets each block start on an idle machine; within its own block each runtime
keeps its workers' behaviour (onnxruntime's spinning included).
"""

import time

import numpy as np


def time_calls(fn, calls, before=None):
    """Times each of CALLS calls of FN; BEFORE (untimed) runs ahead of each."""
    out = np.empty(calls)
    for i in range(calls):
        if before is not None:
            before()
        t0 = time.perf_counter_ns()
        fn()
        out[i] = (time.perf_counter_ns() - t0) / 1000.0
    return out


def compare(nx_fn, ort_fn, rounds=20, block=10, warmup=5, settle_s=0.0, before=None):
    for _ in range(warmup):
        nx_fn()
        ort_fn()
    nx, rt = [], []
    for r in range(rounds):
        first, second = (nx_fn, ort_fn) if r % 2 == 0 else (ort_fn, nx_fn)
        time.sleep(settle_s)
        a = time_calls(first, block, before)
        time.sleep(settle_s)
        b = time_calls(second, block, before)
        (nx if first is nx_fn else rt).append(a)
        (rt if first is nx_fn else nx).append(b)
    nx, rt = np.concatenate(nx), np.concatenate(rt)
    return {
        "nxrt_median_us": float(np.median(nx)), "nxrt_p99_us": float(np.percentile(nx, 99)),
        "ort_median_us": float(np.median(rt)), "ort_p99_us": float(np.percentile(rt, 99)),
        "ratio": float(np.median(nx) / np.median(rt)), "calls": len(nx),
    }


class CacheFlush:
    """Writes a buffer larger than this CPU's L2 (16 MiB) so that the next call finds no
    weights in L1/L2: the latency of a model run now and then by an application that does
    other work between runs (an audio frame every 32 ms), rather than back to back."""

    def __init__(self, mib=16):
        self.buffer = np.ones(mib * (1 << 20) // 8)  # written: its pages exist before timing

    def __call__(self):
        self.buffer += 1.0


def settle_for(threads):
    """The pause between blocks for THREADS intra-op threads (see the module's note)."""
    return 0.06 if threads > 1 else 0.0


def format_row(name, threads, r, baseline="onnxruntime"):
    return (f"{name:<28} threads={threads}  nxrt {r['nxrt_median_us']:>10.1f} us (p99 "
            f"{r['nxrt_p99_us']:>10.1f})  {baseline} {r['ort_median_us']:>10.1f} us (p99 "
            f"{r['ort_p99_us']:>10.1f})  ratio {r['ratio']:.2f}")
