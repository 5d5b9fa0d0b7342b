"""Property-based differential tests: hypothesis draws single-node models for every op of
property_ops.SPECS and checks nxrt against onnxruntime (or onnx.reference where
onnxruntime does not run the case); then replays the saved regression cases of
tests/python/property_regressions/.

Profiles (NXRT_PROPERTY_PROFILE):
  ci (default)  CI_EXAMPLES examples per op, derandomized: the same draws every run.
  long          LONG_EXAMPLES examples per op (NXRT_PROPERTY_EXAMPLES overrides; ops with
                a cost draw more), fresh draws each run; by hand:

    NXRT_PROPERTY_PROFILE=long PYTHONPATH=python .venv/bin/python -m pytest \\
        tests/python/test_property_ops.py -q -s -p no:cacheprovider

(-s prints a line per op: examples compared with each reference, draws rejected and why.)

Either profile leaves out the draws of KNOWN_NXRT_BUGS (NXRT_PROPERTY_KNOWN_BUGS=1 draws
them). A failure is shrunk by hypothesis, printed (model, inputs, expected and got, which
side onnx.reference takes) and saved as a regression case (NXRT_PROPERTY_SAVE=0: not
saved).
A saved case whose .json has "xfail" set is a known nxrt bug: its replay is
xfail(strict=True), so it fails once the bug is fixed (then clear "xfail" and the entry of
KNOWN_NXRT_BUGS below that keeps the bug out of the CI draws).
"""

import collections
import json
import os

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import property_ops  # noqa: E402
from property_ops import SPECS  # noqa: E402

CI_EXAMPLES = 50
LONG_EXAMPLES = 200
PROFILE = os.environ.get("NXRT_PROPERTY_PROFILE", "ci")
if PROFILE not in ("ci", "long"):
    raise ValueError(f"NXRT_PROPERTY_PROFILE={PROFILE!r}: ci or long")

_COMMON = dict(deadline=None, database=None, print_blob=True, report_multiple_bugs=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.large_base_example,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=CI_EXAMPLES, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=int(os.environ.get("NXRT_PROPERTY_EXAMPLES",
                                                                  LONG_EXAMPLES)),
                          derandomize=False, **_COMMON)
BASE = settings.get_profile(PROFILE)

# Known nxrt bugs: spec name -> [(predicate on the drawn Case, reason)]. The profiles
# reject the draws they match (their saved regression cases, xfail(strict=True), keep
# them tested); NXRT_PROPERTY_KNOWN_BUGS=1 draws them too. None at present: Abs(-0.0),
# Sign/Celu/HardSigmoid of NaN, Clip 11+'s absent bounds and Resize's align_corners /
# tf_crop_and_resize of a fractional scale are fixed (test_property_fixes.py).
KNOWN_NXRT_BUGS = {}
CHECK_KNOWN = os.environ.get("NXRT_PROPERTY_KNOWN_BUGS", "0") == "1"


def _known_bug(name, case):
    for predicate, reason in KNOWN_NXRT_BUGS.get(name, ()):
        if predicate(case):
            return reason
    return None


def _examples(spec):
    return max(1, round(BASE.max_examples * spec.cost))


def _summary(name, stats):
    """One line per op: examples compared (by reference), draws rejected and why."""
    why = ", ".join(f"{n} {reason}" for reason, n in stats["rejected"].most_common(3))
    dtypes = ", ".join(sorted(stats["dtypes"]))
    return (f"{name}: {stats['onnxruntime'] + stats['onnx.reference']} examples compared "
            f"({stats['onnxruntime']} with onnxruntime, {stats['onnx.reference']} with "
            f"onnx.reference; {dtypes}); {sum(stats['rejected'].values())} draws rejected"
            + (f" ({why})" if why else ""))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_op_matches_reference(name):
    """Run with -s to see each op's summary line (examples, references, rejections)."""
    spec = SPECS[name]
    last = {}
    stats = {"onnxruntime": 0, "onnx.reference": 0, "rejected": collections.Counter(),
             "dtypes": set()}

    @settings(BASE, max_examples=_examples(spec))
    @given(st.data())
    def prop(data):
        last.clear()
        case = spec.build(property_ops.Draw(data.draw))
        if _known_bug(name, case) and not CHECK_KNOWN:
            stats["rejected"]["a known nxrt bug"] += 1
            reject()
        try:
            source = property_ops.check(case)
        except property_ops.Rejected as e:
            stats["rejected"][str(e).split(":")[0].split(" (")[0]] += 1
            reject()
        except property_ops.Mismatch as e:
            last["case"], last["message"] = case, str(e)
            raise
        stats[source] += 1
        stats["dtypes"].update(str(a.dtype) for n, a in case.inputs if n)

    try:
        prop()
    except Exception:
        # hypothesis ran the shrunk example last: save it for test_saved_regression
        if "case" in last and os.environ.get("NXRT_PROPERTY_SAVE", "1") != "0":
            base = property_ops.save_regression(name, last["case"], last["message"])
            print(f"saved the shrunk failing case as {base}.onnx/.npz/.json")
        raise
    print(_summary(name, stats))


def _regression_param(base):
    with open(base + ".json") as f:
        meta = json.load(f)
    # (only a mismatch is the expected failure: a case no longer valid fails)
    marks = ([pytest.mark.xfail(strict=True, raises=property_ops.Mismatch, reason=meta["xfail"])]
             if meta.get("xfail") else [])
    return pytest.param(base, id=os.path.basename(base), marks=marks)


@pytest.mark.parametrize("base", [_regression_param(b)
                                  for b in property_ops.regression_cases()])
def test_saved_regression(base):
    case, meta = property_ops.load_regression(base)
    try:
        property_ops.check(case)
    except property_ops.Rejected as e:
        pytest.fail(f"{base}: no longer a valid test case: {e}")


# ---- the harness itself ---------------------------------------------------------------------

def _relu_case():
    x = np.array([[-1.5, 0.0, 2.0], [np.nan, -0.0, 7.25]], np.float32)
    return property_ops.Case("Relu", [("x", x)], opset=14)


def test_harness_reports_a_wrong_value(monkeypatch):
    case = _relu_case()
    assert property_ops.check(case) == "onnxruntime"
    real = property_ops.run_nxrt

    def off_by_one(*args, **kwargs):
        out = real(*args, **kwargs)
        out[0][0, 2] += 1
        return out

    monkeypatch.setattr(property_ops, "run_nxrt", off_by_one)
    with pytest.raises(property_ops.Mismatch, match=r"1 of 6 values differ, first at \[0, 2\]"):
        property_ops.check(case)


def test_harness_checks_nan_positions_dtype_and_signed_zeros():
    f = np.float32
    nan = float("nan")
    assert property_ops.compare(np.array([nan, 1], f), np.array([nan, 1], f), 1e-3, 1e-7) == []
    assert property_ops.compare(np.array([1, 1], f), np.array([nan, 1], f), 1e-3, 1e-7)
    assert property_ops.compare(np.array([1], np.float64), np.array([1], f), 1e-3, 1e-7)
    assert property_ops.compare(np.array([-0.0], f), np.array([0.0], f), 1e-3, 1e-7) == []
    assert property_ops.compare(np.array([-0.0], f), np.array([0.0], f), 1e-3, 1e-7,
                                signed_zeros=True)
    assert property_ops.compare(np.array([3], np.int64), np.array([4], np.int64), 1, 1)


def test_harness_falls_back_to_the_reference_and_rejects_what_both_refuse():
    # Erf of float64: onnxruntime's CPU provider has no kernel, onnx.reference runs it
    x = np.linspace(-3, 3, 7)
    assert property_ops.check(property_ops.Case("Erf", [("x", x)], opset=13)) == \
        "onnx.reference"
    # Gather with an index out of range: onnxruntime and nxrt refuse it
    case = property_ops.Case("Gather", [("x", np.zeros(3, np.float32)),
                                        ("i", np.array([5], np.int64))], opset=13)
    with pytest.raises(property_ops.Rejected):
        property_ops.check(case)


def test_regression_round_trip(tmp_path):
    case = _relu_case()
    case.constant = ()
    case.threads, case.level = 2, 0
    base = property_ops.save_regression("Relu", case, "a message", directory=str(tmp_path))
    loaded, meta = property_ops.load_regression(base)
    assert meta["failure"] == "a message" and meta["xfail"] is None
    assert (loaded.op, loaded.opset, loaded.threads, loaded.level) == ("Relu", 14, 2, 0)
    np.testing.assert_array_equal(loaded.inputs[0][1], case.inputs[0][1])
    assert property_ops.check(loaded) == "onnxruntime"
