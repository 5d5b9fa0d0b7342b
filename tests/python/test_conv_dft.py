"""A Conv1d over a windowed DFT basis (the STFT as Silero VAD and other audio models export
it) runs as an FFT per frame in nxrt; its results must be the convolution's, and weights
that are only nearly a DFT basis must keep the convolution."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt

RNG = np.random.default_rng(5)


def dft_basis(n, sin_sign=-1.0, window="hann"):
    """[2(n/2 + 1), 1, n]: rows w cos(2 pi k t / n), then sin_sign * w sin(..)."""
    t = np.arange(n)
    k = np.arange(n // 2 + 1)[:, None]
    w = 0.5 - 0.5 * np.cos(2 * np.pi * t / n) if window == "hann" else RNG.uniform(0.2, 1.0, n)
    angle = 2 * np.pi * ((k * t) % n) / n
    rows = np.concatenate([w * np.cos(angle), sin_sign * w * np.sin(angle)])
    return rows.astype(np.float32)[:, None, :]


def conv_model(weight, stride, pads=(0, 0), auto_pad=None):
    attrs = {"strides": [stride]}
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = list(pads)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)], "stft",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 1, "t"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def run_both(model, x, threads=1):
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = threads
    got = nxrt.InferenceSession(model, options).run(None, {"x": x})[0]
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    return got, expected


@pytest.mark.parametrize("n,stride,pads,length,batch", [
    (256, 128, (0, 0), 640, 1),      # Silero VAD v5 at 16 kHz: 4 frames
    (128, 64, (0, 0), 320, 1),       # and at 8 kHz
    (64, 16, (32, 32), 2000, 2),     # padded, 126 frames: two chunks of frames
    (16, 3, (5, 2), 101, 3),         # odd stride and pads, frames not a multiple of 4
    (8, 8, (0, 0), 8, 1),            # one frame
])
@pytest.mark.parametrize("sin_sign", [-1.0, 1.0])
def test_stft_conv_matches_onnxruntime(n, stride, pads, length, batch, sin_sign):
    model = conv_model(dft_basis(n, sin_sign), stride, pads)
    x = RNG.standard_normal((batch, 1, length)).astype(np.float32)
    got, expected = run_both(model, x)
    # The FFT and the direct sums round differently: errors near float epsilon times the
    # frame's magnitude (sum |w x| <= n * 4 here).
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=2e-5 * np.sqrt(n))


def test_stft_conv_on_two_threads_and_with_auto_pad():
    model = conv_model(dft_basis(32, window="random"), 8, auto_pad="SAME_UPPER")
    x = RNG.standard_normal((2, 1, 5000)).astype(np.float32)
    for threads in (1, 2):
        got, expected = run_both(model, x, threads)
        assert got.shape == (2, 34, 625)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("where", ["cos_row", "sin_row", "window"])
def test_weights_near_a_dft_basis_keep_the_convolution(where):
    # One weight off by 1e-3: an FFT would miss it by far more than the tolerance.
    w = dft_basis(64)
    if where == "cos_row":
        w[5, 0, 17] += 1e-3
    elif where == "sin_row":
        w[33 + 7, 0, 40] -= 1e-3
    else:
        w[0, 0, 9] += 1e-3  # row 0 is the window the others are checked against
    model = conv_model(w, 16)
    x = RNG.standard_normal((1, 1, 640)).astype(np.float32) * 10
    got, expected = run_both(model, x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_stft_conv_reports_a_short_input_like_any_conv():
    model = conv_model(dft_basis(64), 16)
    x = np.zeros((1, 1, 40), np.float32)
    with pytest.raises(nxrt.InvalidArgument, match=r"\[Conv\].*does not fit"):
        nxrt.InferenceSession(model).run(None, {"x": x})
