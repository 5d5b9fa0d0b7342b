"""bench/bench_ops.py's single-op cases: nxrt computes what onnxruntime does on each (the
benchmark checks the same before it times anything), at 1 and 2 threads."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import bench_ops  # noqa: E402

CASES = bench_ops.cases()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("threads", [1, 2])
def test_bench_ops_case_matches_onnxruntime(name, threads):
    model, x = CASES[name]
    session, reference = bench_ops.sessions(model, threads)
    bench_ops.check(session, reference, x)
