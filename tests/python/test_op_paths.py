"""Every case of op_paths.py under every variant (weights constant or fed, 1 or 2 threads,
all passes or none) against onnxruntime, then the whole set again in a subprocess per
narrower ISA (AVX2, portable: nxrt's environment caps are read once per process)."""

import os
import subprocess
import sys

import pytest

import op_paths

CASES = op_paths.all_cases()


@pytest.mark.parametrize("case_id,case", CASES, ids=[c[0] for c in CASES])
def test_every_path_matches_onnxruntime(case_id, case):
    failures = op_paths.check(case)
    assert not failures, f"{case_id}:\n" + "\n".join(failures)


def test_harness_reports_a_wrong_result():
    # The comparison itself can fail: a reference off by one in one value is caught.
    _, case = next(c for c in CASES if c[0].startswith("conv-"))
    expected = [e.copy() for e in op_paths.reference(case)]
    expected[0].flat[0] += 1.0
    failures = op_paths.check(case, expected)
    assert len(failures) == len(op_paths.VARIANTS)
    assert "1 of" in failures[0] and "first at [0, 0, 0, 0]" in failures[0]


@pytest.mark.parametrize("isa", [k for k in op_paths.ISA_CAPS if k != "default"])
def test_every_path_matches_onnxruntime_on_narrower_kernels(isa):
    env = {**os.environ, **op_paths.ISA_CAPS[isa]}
    proc = subprocess.run([sys.executable, op_paths.__file__, "--isa", isa], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
