"""com.microsoft DynamicQuantizeLSTM against onnxruntime's CPU kernel: the gate products in
8 bits, X quantized to uint8 once and h before every step (DynamicQuantizeLinear's
parameters), the integer products scaled by the activation's and the weight's scales.

onnxruntime runs one thread here: with more, it quantizes h per block of batch rows (one
block per thread), which nxrt does not copy. int8 weights stay within 7 bits, as
onnxruntime's quantizer writes them (its reduce_range): onnxruntime's u8s8 kernel on AVX2
without VNNI sums pairs of products in int16, which full-range weights can overflow. uint8
weights take the whole range; onnxruntime takes one zero point per direction (2-D zero
points must repeat it), nxrt also one per column (checked against a numpy model of the op).
The results agree to float rounding; an h that lands within ~1e-5 of a rounding tie of its
quantization can still round the other way with the activations' last bits (nxrt's
sigmoid/tanh are not onnxruntime's), which moves a gate by one 8-bit step: the data here
stays clear of that.
"""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt

S, B, I, H = 7, 3, 10, 8
N = 4 * H


def _dirs(direction):
    return 2 if direction == "bidirectional" else 1


def _quantize(w, dtype, zero, per_column):
    """w [D, rows, 4H] -> (q, scale, zero point) per direction ([D]) or per column
    ([D, 4H]); `zero` (uint8) is each direction's zero point: an int or a list per
    direction, or per direction and column."""
    D = w.shape[0]
    axis = (1,) if per_column else (1, 2)
    if dtype == np.int8:
        scale = np.abs(w).max(axis=axis) / 63
        zp = np.zeros(scale.shape, np.int8)
        q = np.clip(np.round(w / scale.reshape(D, 1, -1)), -63, 63).astype(np.int8)
        return q, scale.astype(np.float32), zp
    zero = np.asarray(zero, np.int64)
    zp = np.broadcast_to(zero.reshape(D, -1) if zero.size > 1 else zero, (D, N if per_column else 1))
    zp = zp.reshape(D, -1) if per_column else zp.reshape(D)
    lo, hi = w.min(axis=axis), w.max(axis=axis)
    # The wider side of the zero point decides the scale, so nothing clips much.
    scale = np.maximum(hi / np.maximum(255 - zp, 1), -lo / np.maximum(zp, 1)).astype(np.float32)
    q = np.clip(np.round(w / scale.reshape(D, 1, -1)) + zp.reshape(D, 1, -1), 0, 255).astype(np.uint8)
    return q, scale, zp.astype(np.uint8)


def _model(direction, dtype=np.int8, zero=0, per_column=False, bias=True, initial=False,
           lens=None, peephole=False, outputs=("y", "yh", "yc"), weights_as_inputs=False,
           attrs=None, seed=0):
    rng = np.random.default_rng(seed)
    D = _dirs(direction)
    wq, ws, wz = _quantize(rng.standard_normal((D, I, N)).astype(np.float32) * 0.4, dtype, zero, per_column)
    rq, rs, rz = _quantize(rng.standard_normal((D, H, N)).astype(np.float32) * 0.4, dtype, zero, per_column)
    values = {"wq": wq, "rq": rq, "ws": ws, "wz": wz, "rs": rs, "rz": rz}
    if bias:
        values["bias"] = rng.standard_normal((D, 8 * H)).astype(np.float32) * 0.3
    if initial:
        values["h0"] = rng.standard_normal((D, B, H)).astype(np.float32) * 0.5
        values["c0"] = rng.standard_normal((D, B, H)).astype(np.float32)
    if peephole:
        values["p"] = rng.standard_normal((D, 3 * H)).astype(np.float32) * 0.3
    if lens is not None:
        values["lens"] = np.asarray(lens, np.int32)
    names = ["x", "wq", "rq", "bias", "lens", "h0", "c0", "p", "ws", "wz", "rs", "rz"]
    inputs = [n if n == "x" or n in values else "" for n in names]
    node = helper.make_node("DynamicQuantizeLSTM", inputs, [o if o in outputs else "" for o in ("y", "yh", "yc")],
                            domain="com.microsoft", direction=direction, hidden_size=H, **(attrs or {}))
    feeds = {"x": (rng.standard_normal((S, B, I)) * 1.5 + 0.3).astype(np.float32)}
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)]
    inits = []
    for name, v in values.items():
        if weights_as_inputs and name in ("wq", "rq"):
            feeds[name] = v
            graph_inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), None))
        else:
            inits.append(numpy_helper.from_array(np.ascontiguousarray(v), name))
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString(), feeds, values


def _run_both(data, feeds, threads=1):
    so = nxrt.SessionOptions()
    so.intra_op_num_threads = threads
    got = nxrt.InferenceSession(data, so).run(None, feeds)
    oso = ort.SessionOptions()
    oso.intra_op_num_threads = 1
    want = ort.InferenceSession(data, oso, providers=["CPUExecutionProvider"]).run(None, feeds)
    return got, want


def _check(got, want, atol=2e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=atol)


DIRECTIONS = ["forward", "reverse", "bidirectional"]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("initial", [False, True], ids=["zero_state", "initial_state"])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_onnxruntime(direction, initial, threads):
    data, feeds, _ = _model(direction, initial=initial)
    _check(*_run_both(data, feeds, threads))


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("zero", [0, 128, 37, 211, [90, 160]], ids=["z0", "z128", "z37", "z211", "z_per_dir"])
@pytest.mark.parametrize("per_column", [False, True], ids=["scale_per_dir", "scale_per_column"])
def test_uint8_weights_with_zero_points(direction, zero, per_column):
    if isinstance(zero, list):
        if per_column and _dirs(direction) == 2:
            pytest.skip("onnxruntime wants a 2-D zero point tensor to hold one value throughout")
        zero = zero[:_dirs(direction)]
    data, feeds, _ = _model(direction, np.uint8, zero, per_column, initial=True)
    _check(*_run_both(data, feeds))


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("outputs", [("y", "yh", "yc"), ("yh", "yc")], ids=["with_y", "states_only"])
def test_sequence_lens(direction, outputs):
    # Entries that have ended count as 0 in h's range when Y is an output, as their last h
    # otherwise; length 0 gives zero states (without Y, onnxruntime then reads an unwritten
    # Y_h row back as h, so that case is left out).
    lens = [S, 3, 0] if "y" in outputs else [S, 3, 1]
    data, feeds, _ = _model(direction, np.uint8, 100, lens=lens, initial=True, outputs=outputs)
    _check(*_run_both(data, feeds))
    data, feeds, _ = _model(direction, lens=[2, 5, 4], outputs=outputs, seed=2)  # max below S
    _check(*_run_both(data, feeds))


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_peephole_clip_input_forget_and_activations(direction):
    data, feeds, _ = _model(direction, peephole=True, initial=True, attrs={"clip": 0.8})
    _check(*_run_both(data, feeds))
    data, feeds, _ = _model(direction, peephole=True, attrs={"input_forget": 1})
    _check(*_run_both(data, feeds))
    acts = ["HardSigmoid", "Tanh", "Softsign"] * _dirs(direction)
    data, feeds, _ = _model(direction, bias=False, attrs={"activations": acts})
    _check(*_run_both(data, feeds))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_weights_given_at_run_time(dtype):
    data, feeds, _ = _model("bidirectional", dtype, 77, weights_as_inputs=True, initial=True)
    _check(*_run_both(data, feeds))


def _reference(x, v, direction):
    """The op in numpy (per-column zero points included), one batch block."""
    def params(a):
        lo, hi = np.float32(min(a.min(), 0)), np.float32(max(a.max(), 0))
        scale = np.float32(1) if lo == hi else np.float32((hi - lo) / np.float32(255))
        return scale, int(np.round(np.clip(np.float32(0) - lo / scale, 0, 255)))

    def quant(a, scale, zero):
        return np.clip(np.round(a / scale) + zero, 0, 255).astype(np.int64)

    D = _dirs(direction)
    xs, xz = params(x)
    xq = quant(x.reshape(-1, I), xs, xz) - xz
    ys, yh, yc = np.zeros((S, D, B, H), np.float32), np.zeros((D, B, H), np.float32), np.zeros((D, B, H), np.float32)
    sig = lambda a: (1 / (1 + np.exp(-a.astype(np.float64)))).astype(np.float32)  # noqa: E731
    for d in range(D):
        w = v["wq"][d].astype(np.int64) - v["wz"].reshape(D, -1)[d].astype(np.int64)
        r = v["rq"][d].astype(np.int64) - v["rz"].reshape(D, -1)[d].astype(np.int64)
        wsc = np.broadcast_to(v["ws"].reshape(D, -1)[d], (N,))
        rsc = np.broadcast_to(v["rs"].reshape(D, -1)[d], (N,))
        xw = ((xq @ w).astype(np.float32) * (xs * wsc).astype(np.float32)).reshape(S, B, N)
        bias = v["bias"][d, :N] + v["bias"][d, N:]
        h, c = v["h0"][d].copy(), v["c0"][d].copy()
        for s in range(S):
            t = S - 1 - s if (direction == "reverse" or d == 1) else s
            hs, hz = params(h)
            g = xw[t] + ((quant(h, hs, hz) - hz) @ r).astype(np.float32) * (hs * rsc).astype(np.float32) + bias
            i, o, f, cc = sig(g[:, :H]), sig(g[:, H:2 * H]), sig(g[:, 2 * H:3 * H]), np.tanh(g[:, 3 * H:])
            c = f * c + i * cc
            h = o * np.tanh(c)
            ys[t, d] = h
        yh[d], yc[d] = h, c
    return ys, yh, yc


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_per_column_zero_points(direction):
    # onnxruntime refuses uint8 zero points that differ across columns; nxrt takes them.
    D = _dirs(direction)
    zero = np.random.default_rng(3).integers(60, 200, (D, N))
    data, feeds, values = _model(direction, np.uint8, zero, per_column=True, initial=True)
    got = nxrt.InferenceSession(data).run(None, feeds)
    for g, w in zip(got, _reference(feeds["x"], values, direction)):
        np.testing.assert_allclose(g, w, rtol=0, atol=2e-5)


def test_bad_weight_scale_is_an_invalid_graph():
    data, _, _ = _model("forward")
    model = helper.ModelProto()
    model.ParseFromString(data)
    for init in model.graph.initializer:
        if init.name == "rs":
            init.CopyFrom(numpy_helper.from_array(np.ones(3, np.float32), "rs"))
    with pytest.raises(nxrt.InvalidGraph, match="R's scale"):
        nxrt.InferenceSession(model.SerializeToString())
