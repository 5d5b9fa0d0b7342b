"""The operator bugs the property suite found (tests/python/property_regressions/), each
checked on its own against onnxruntime and onnx.reference, with the values the spec gives
written out, over every dtype and the vector paths (arrays longer than a vector, with a
tail; NXRT_VMATH=portable in a subprocess):

- Abs(-0.0) is +0.0 (IEEE abs clears the sign) in float16 and float64 too;
- Sign, Celu and HardSigmoid keep NaN (max/min-based forms turned it into 0 or 1);
- Clip 11+ without min / max clamps to numeric_limits<T>::lowest() / max() (the spec;
  onnxruntime), so +-inf become T's largest finite values;
- Resize's align_corners and tf_crop_and_resize divide by length_resized - 1, the output's
  integer length, when a scale makes scale * length fractional (the spec; onnxruntime).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import property_ops  # noqa: E402
from property_ops import Case  # noqa: E402

FLOATS = [np.float16, np.float32, np.float64]
NAN, INF = float("nan"), float("inf")


def _nxrt(case, threads=1, level=99):
    return property_ops.run_nxrt(case.model().SerializeToString(), case.feeds(), threads,
                                 level)[0]


def _ort(case):
    return property_ops.run_onnxruntime(case.model().SerializeToString(), case.feeds())[0]


def _reference(case):
    return property_ops.run_reference(case.model(), case.feeds())[0]


def _specials(dtype, n=1037):
    """n values (more than a vector, with a tail) with -0, +-0, NaN and +-inf spread in."""
    x = np.random.default_rng(n).standard_normal(n).astype(dtype)
    x[::7] = -0.0
    x[3::7] = 0.0
    x[5::11] = NAN
    x[2::13] = INF
    x[4::13] = -INF
    return x


def _same(got, want, signed_zeros=False):
    """Equal values, NaN where NaN (and with signed_zeros, the sign of every zero)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if signed_zeros:
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))
    half = got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-3 if half else 1e-5, atol=1e-3 if half else 1e-6)


# ---- Abs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 1037])
def test_abs_of_negative_zero_is_positive_zero(dtype, n):
    x = _specials(dtype, n) if n > 1 else np.array([-0.0], dtype)
    case = Case("Abs", [("x", x)], opset=13, signed_zeros=True)
    got = _nxrt(case)
    _same(got, np.abs(x), signed_zeros=True)
    assert not np.signbit(got[x == 0]).any()
    _same(got, _ort(case), signed_zeros=True)
    assert property_ops.check(case) == "onnxruntime"


# ---- Sign, Celu, HardSigmoid of NaN ---------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_sign_keeps_nan(dtype):
    x = _specials(dtype)
    case = Case("Sign", [("x", x)], opset=13)
    got = _nxrt(case)
    _same(got, np.sign(x).astype(dtype))
    _same(got, _reference(case))
    if dtype != np.float16:  # (onnxruntime's float16 Sign makes NaN 0, its float NaN)
        _same(got, _ort(case))


@pytest.mark.parametrize("alpha", [0.1, 1.0, 2.5])
def test_celu_keeps_nan(alpha):
    x = _specials(np.float32)
    case = Case("Celu", [("x", x)], {"alpha": alpha}, opset=12)
    got = _nxrt(case)
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64)
        want = np.maximum(0, xd) + np.minimum(0, alpha * np.expm1(xd / alpha))
    _same(got, want.astype(np.float32))
    _same(got, _ort(case))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_celu_of_other_types_is_rejected_as_onnxruntime_does(dtype):
    # The spec's Celu takes float only; onnxruntime refuses the model when it loads it.
    import nxrt
    case = Case("Celu", [("x", _specials(dtype))], {"alpha": 1.0}, opset=12)
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph,
                       match=r"opset 12 of Celu takes T in \{tensor\(float\)\}"):
        _nxrt(case)
    with pytest.raises(Exception, match="Type Error"):
        _ort(case)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("opset", [6, 22])
def test_hard_sigmoid_keeps_nan(dtype, opset):
    x = _specials(dtype)
    attrs = {"alpha": 0.5, "beta": 0.7}
    case = Case("HardSigmoid", [("x", x)], attrs, opset=opset)
    got = _nxrt(case)
    want = np.clip(0.5 * x.astype(np.float64) + 0.7, 0, 1)  # (np.clip keeps NaN)
    _same(got, want.astype(dtype))
    _same(got, _reference(case))
    try:
        expected = _ort(case)
    except Exception:  # noqa: BLE001 (onnxruntime has float32 only before opset 22)
        return
    _same(got, expected)


def test_nan_survives_the_portable_vector_path():
    """float32 HardSigmoid (and Abs of -0) through vmath's scalar definition."""
    code = (
        "import numpy as np, property_ops\n"
        "from property_ops import Case\n"
        "x = np.array([np.nan, -0.0, 1.0, -np.inf] * 9, np.float32)\n"
        "run = lambda c: property_ops.run_nxrt(c.model().SerializeToString(), c.feeds())[0]\n"
        "y = run(Case('HardSigmoid', [('x', x)], opset=6))\n"
        "assert np.isnan(y[::4]).all() and not np.isnan(y[1::4]).any(), y\n"
        "a = run(Case('Abs', [('x', x)], opset=13))\n"
        "assert not np.signbit(a[1::4]).any(), a\n"
        "print('ok')\n")
    env = dict(os.environ, NXRT_VMATH="portable")
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# ---- Clip's absent bounds ---------------------------------------------------------------------

def _clip_case(x, opset, lo=None, hi=None):
    dtype = x.dtype
    inputs = [("x", x), ("min", np.array(lo, dtype)) if lo is not None else ("", None)]
    if hi is not None:
        inputs.append(("max", np.array(hi, dtype)))
    return Case("Clip", inputs, opset=opset)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("opset", [11, 12, 13])
@pytest.mark.parametrize("bounds", ["none", "min", "max"])
def test_clip_absent_bounds_are_the_type_limits(dtype, opset, bounds):
    x = np.array([INF, -INF, NAN, 1.5, -2.5, 0.0], dtype)
    lo = -1.0 if bounds == "min" else None
    hi = 1.0 if bounds == "max" else None
    case = _clip_case(x, opset, lo, hi)
    big = np.finfo(dtype).max
    want = np.array([hi if hi is not None else big, lo if lo is not None else -big, NAN,
                     min(1.5, hi) if hi is not None else 1.5,
                     max(-2.5, lo) if lo is not None else -2.5, 0.0], dtype)
    got = _nxrt(case)
    _same(got, want)
    # onnxruntime runs Clip-11 for float only (float16 through inserted Casts, where
    # FLT_MAX rounds back to inf), Clip-12+ for each type; onnx.reference skips absent
    # bounds (inf stays inf), against the spec
    if dtype == np.float32 or opset >= 12:
        _same(got, _ort(case))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
def test_clip_absent_bounds_of_integers_change_nothing(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max, 0, 1], dtype)
    case = _clip_case(x, 13)
    np.testing.assert_array_equal(_nxrt(case), x)
    np.testing.assert_array_equal(_nxrt(case), _ort(case))


def test_clip_6_defaults_stay_float_limits():
    x = np.array([INF, -INF, 2.0], np.float32)
    case = Case("Clip", [("x", x)], opset=6)
    big = np.finfo(np.float32).max
    _same(_nxrt(case), np.array([big, -big, 2.0], np.float32))
    _same(_nxrt(case), _ort(case))


@pytest.mark.parametrize("level", [0, 99])
def test_clip_without_bounds_in_a_long_tensor(level):
    x = _specials(np.float32)
    case = _clip_case(x, 13)
    big = np.finfo(np.float32).max
    got = _nxrt(case, threads=2, level=level)
    _same(got, np.where(np.isnan(x), x, np.clip(x, -big, big)))
    _same(got, _ort(case))


# ---- Resize of a fractional scale ---------------------------------------------------------------

def _resize_case(x, mode, ctm, scales, opset=13, roi=None, **attrs):
    attrs = {"mode": mode, "coordinate_transformation_mode": ctm, **attrs}
    roi = ("roi", np.array(roi, np.float32)) if roi is not None else ("", None)
    return Case("Resize", [("x", x), roi, ("scales", np.array(scales, np.float32))], attrs,
                opset=opset)


def _align_corners_linear(x, out):
    """The spec's align_corners along the last axis, length_resized = out."""
    n = x.shape[-1]
    pos = np.arange(out) * (n - 1) / (out - 1) if out > 1 else np.zeros(1)
    lo = np.minimum(np.floor(pos).astype(int), n - 1)
    hi = np.minimum(lo + 1, n - 1)
    w = pos - lo
    return x[..., lo] * (1 - w) + x[..., hi] * w


def test_resize_align_corners_of_a_fractional_scale_ends_on_the_last_input():
    # the saved case: 3 values * 1.5 = 4.5 -> 4 outputs, the last one the last input
    x = np.array([702, 274, 22], np.int32).reshape(1, 1, 3, 1)
    case = _resize_case(x, "linear", "align_corners", [1, 1, 1.5, 1], opset=11, roi=[])
    got = _nxrt(case)
    # positions 0, 2/3, 4/3, 2: 702, 416.67, 190, 22 (onnxruntime truncates 416.67)
    np.testing.assert_array_equal(got.ravel(), [702, 417, 190, 22])
    np.testing.assert_allclose(got, _ort(case), rtol=0, atol=1)


@pytest.mark.parametrize("scale", [0.6, 0.75, 1.5, 1.7, 2.5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_resize_align_corners_linear_matches_the_spec(scale, dtype):
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 7)).astype(dtype)
    case = _resize_case(x, "linear", "align_corners", [1, 1, 1, scale])
    out = int(np.floor(7 * np.float32(scale)))
    got = _nxrt(case)
    assert got.shape == (1, 2, 3, out)
    want = _align_corners_linear(x.astype(np.float64), out).astype(dtype)
    np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float16 else 1e-5,
                               atol=2e-3 if dtype == np.float16 else 1e-6)
    np.testing.assert_allclose(got[..., -1], x[..., -1], rtol=1e-3)  # the corners align
    if dtype == np.float32:
        np.testing.assert_allclose(got, _ort(case), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("ctm", ["align_corners", "tf_crop_and_resize"])
@pytest.mark.parametrize("scales", [[0.6, 0.75], [1.5, 1.7], [2.5, 0.8]])
def test_resize_fractional_scales_match_onnxruntime(mode, ctm, scales):
    x = np.random.default_rng(5).standard_normal((1, 2, 5, 6)).astype(np.float32)
    roi = [0, 0, 0.1, 0.25, 1, 1, 0.8, 0.9] if ctm == "tf_crop_and_resize" else None
    extra = {"nearest_mode": "floor"} if mode == "nearest" else {}
    case = _resize_case(x, mode, ctm, [1, 1, *scales], roi=roi, **extra)
    want = _ort(case)
    for threads, level in [(1, 99), (2, 0)]:
        got = _nxrt(case, threads, level)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("ctm", ["align_corners", "tf_crop_and_resize"])
def test_resize_keep_aspect_ratio_divides_by_the_output_length(policy, ctm):
    # sizes [4, 5] of 3 x 4: scale min(4/3, 5/4) = 1.25 (not_larger) -> 3.75 and 5 -> 4 x 5;
    # max 4/3 (not_smaller) -> 4 and 5.33 -> 4 x 5: a fractional length either way
    x = np.random.default_rng(9).standard_normal((1, 1, 3, 4)).astype(np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": ctm,
             "keep_aspect_ratio_policy": policy, "axes": [2, 3]}
    roi = ("roi", np.array([0.0, 0.0, 1.0, 1.0], np.float32)) \
        if ctm == "tf_crop_and_resize" else ("", None)
    case = Case("Resize", [("x", x), roi, ("", None), ("sizes", np.array([4, 5], np.int64))],
                attrs, opset=18)
    got = _nxrt(case)
    want = _ort(case)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[..., 0, 0], x[..., 0, 0], rtol=1e-5)
    np.testing.assert_allclose(got[..., -1, -1], x[..., -1, -1], rtol=1e-5)


def test_resize_backend_data_divides_by_the_fractional_length():
    """The ONNX backend case test_resize_downsample_scales_linear_align_corners was made by
    onnx.reference, which divides by scale * length - 1 (2.4 - 1): known_failures.txt lists
    it. nxrt and onnxruntime divide by the output's length - 1 (2 - 1)."""
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4)
    case = _resize_case(x, "linear", "align_corners", [1, 1, 0.6, 0.6], opset=11,
                        roi=[])
    np.testing.assert_allclose(_nxrt(case).ravel(), [1.0, 4.0])
    np.testing.assert_allclose(_ort(case).ravel(), [1.0, 4.0])
    np.testing.assert_allclose(_reference(case).ravel(), [1.0, 1 + 3 / 1.4], rtol=1e-6)
