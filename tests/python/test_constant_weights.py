"""Kernels whose weights are initializers take pre-packed paths (the backend cases feed
weights as inputs, so they never reach them). Each case runs nxrt and onnxruntime on the
same constant-weight model."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt
from winograd_tolerance import winograd_atol

ort = pytest.importorskip("onnxruntime")
rng = np.random.default_rng(0)


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _compare(node, feeds, weights, n_out=1, opset=17, rtol=1e-4, atol=1e-5):
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16}
    inputs = [helper.make_tensor_value_info(k, types[v.dtype], None) for k, v in feeds.items()]
    elem = types[next(iter(feeds.values())).dtype]
    outputs = [helper.make_tensor_value_info(o, elem, None) for o in node.output[:n_out]]
    graph = helper.make_graph([node], "g", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    data = model.SerializeToString()
    got = nxrt.InferenceSession(data).run(None, feeds)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol)


# (in channels, out channels, length, kernel, stride, pad, dilation, group): Silero-like
# short outputs, the STFT conv, depthwise, and longer sequences.
CONV1D = [(129, 128, 4, 3, 1, 1, 1, 1), (1, 258, 640, 256, 128, 0, 1, 1), (128, 64, 4, 3, 2, 1, 1, 1),
          (258, 258, 9, 5, 1, 2, 1, 258), (16, 32, 30, 5, 1, 2, 1, 16), (8, 12, 200, 3, 1, 1, 2, 2),
          (64, 1, 1, 1, 1, 0, 1, 1), (3, 70, 50, 3, 2, 1, 1, 1)]


@pytest.mark.parametrize("c,m,length,k,s,p,d,g", CONV1D)
def test_conv1d(c, m, length, k, s, p, d, g):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k], strides=[s], pads=[p, p],
                            dilations=[d], group=g)
    _compare(node, {"x": _f32(1, c, length)}, {"w": _f32(m, c // g, k), "b": _f32(m)})


@pytest.mark.parametrize("c,m,h,k,s,g", [(3, 16, 8, 3, 1, 1), (8, 8, 6, 3, 2, 8), (16, 8, 20, 1, 1, 1),
                                         (4, 6, 9, 3, 1, 2)])
def test_conv2d(c, m, h, k, s, g):
    pads = [1, 1, 1, 1] if k == 3 else [0, 0, 0, 0]
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s], pads=pads, group=g)
    _compare(node, {"x": _f32(2, c, h, h)}, {"w": _f32(m, c // g, k, k)})


# Convolutions that read shifted rows of a zero-bordered copy of the input (stride 1) or
# of its phase planes (stride s) instead of an im2col: (in, out, height, width, kernel,
# pads t/l/b/r, dilation, group, strides). Asymmetric and missing pads, dilation, groups,
# 1 x k and k x 1 kernels, partial last panels, mixed strides, and narrow planes that stay
# on im2col.
CONV2D_DIRECT = [(16, 24, 20, 37, (3, 3), (1, 1, 1, 1), 1, 1, (1, 1)),
                 (8, 40, 9, 30, (3, 3), (0, 2, 1, 0), 1, 1, (1, 1)),
                 (6, 12, 15, 40, (5, 5), (2, 2, 2, 2), 2, 2, (1, 1)),
                 (4, 8, 12, 50, (1, 7), (0, 3, 0, 3), 1, 1, (1, 1)),
                 (4, 9, 30, 20, (7, 1), (3, 0, 3, 0), 1, 1, (1, 1)),
                 (32, 64, 28, 28, (3, 3), (1, 1, 1, 1), 1, 1, (1, 1)),
                 (3, 5, 10, 60, (2, 2), (0, 0, 0, 0), 1, 1, (1, 1)),
                 (8, 8, 11, 40, (3, 3), (0, 0, 0, 0), 1, 1, (1, 1)),
                 (64, 13, 7, 7, (3, 3), (1, 1, 1, 1), 1, 1, (1, 1)),
                 (5, 7, 33, 33, (3, 3), (1, 1, 1, 1), 3, 1, (1, 1)),
                 (3, 16, 31, 45, (3, 3), (0, 0, 0, 0), 1, 1, (2, 2)),
                 (3, 8, 40, 40, (7, 7), (3, 3, 3, 3), 1, 1, (2, 2)),
                 (16, 32, 20, 30, (1, 1), (0, 0, 0, 0), 1, 1, (2, 2)),
                 (8, 8, 21, 50, (3, 3), (1, 1, 1, 1), 2, 2, (2, 2)),
                 (4, 6, 25, 61, (5, 5), (2, 1, 2, 1), 1, 1, (3, 3)),
                 (6, 6, 17, 40, (3, 3), (1, 1, 1, 1), 1, 1, (1, 2)),
                 (6, 10, 40, 17, (4, 4), (1, 2, 0, 1), 1, 1, (2, 1)),
                 (128, 136, 9, 9, (3, 3), (1, 1, 1, 1), 1, 1, (1, 1)),
                 (96, 1000, 13, 13, (1, 1), (0, 0, 0, 0), 1, 1, (1, 1)),
                 (256, 520, 14, 14, (1, 1), (0, 0, 0, 0), 1, 1, (2, 2)),
                 (64, 200, 7, 7, (3, 3), (1, 1, 1, 1), 1, 1, (1, 1)),
                 # read in place from the input: 1x1, and k x 1 without padding; a plane
                 # stride of 4 KiB (32 x 32) is copied to a better one first
                 (8, 16, 12, 12, (1, 1), (0, 0, 0, 0), 1, 1, (1, 1)),
                 (16, 24, 32, 32, (1, 1), (0, 0, 0, 0), 1, 1, (1, 1)),
                 (6, 10, 15, 9, (3, 1), (0, 0, 0, 0), 1, 1, (1, 1)),
                 (12, 20, 9, 11, (1, 1), (0, 0, 0, 0), 1, 2, (1, 1))]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("c,m,h,w,k,pads,d,g,strides", CONV2D_DIRECT)
def test_conv2d_direct(c, m, h, w, k, pads, d, g, strides, threads):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=list(k), pads=list(pads),
                            dilations=[d, d], group=g, strides=list(strides))
    x, wt, b = _f32(2, c, h, w), _f32(m, c // g, *k), _f32(m)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    so = nxrt.SessionOptions()
    so.intra_op_num_threads = threads
    got = nxrt.InferenceSession(data, so).run(None, {"x": x})[0]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=_winograd_atol(c, m, k, d, g, strides, want))


def _winograd_atol(c, m, k, d, g, strides, want):
    return winograd_atol(1e-4, c, m, k, want, dilation=d, group=g, strides=strides)


# 3x3 stride-1 convolutions that take Winograd (>= 16 inputs and outputs; F(4x4, 3x3) here):
# odd output sizes (a last tile half outside), no padding, uneven padding up to 2, tile rows
# of more and fewer than 16 tiles; with a residual sum and a Relu fused (the transform's
# epilogue) or a LeakyRelu (applied after it).
WINOGRAD = [(32, 64, 28, 28, (1, 1, 1, 1)), (40, 72, 15, 23, (0, 0, 0, 0)),
            (32, 64, 10, 37, (2, 1, 0, 2)), (64, 96, 9, 9, (1, 1, 1, 1)),
            (48, 64, 40, 66, (1, 0, 1, 2))]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tail", ["none", "add_relu", "leaky_relu"])
@pytest.mark.parametrize("c,m,h,w,pads", WINOGRAD)
def test_conv3x3_winograd(c, m, h, w, pads, tail, threads):
    oh, ow = h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if tail != "none" else "y"],
                              kernel_shape=[3, 3], pads=list(pads))]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)]
    feeds = {"x": _f32(2, c, h, w)}
    if tail == "add_relu":
        nodes += [helper.make_node("Add", ["c", "z"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
        feeds["z"] = _f32(2, m, oh, ow)
    elif tail == "leaky_relu":
        nodes.append(helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1))
    wt, b = _f32(m, c, 3, 3), _f32(m)
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    so = nxrt.SessionOptions()
    so.intra_op_num_threads = threads
    got = nxrt.InferenceSession(data, so).run(None, feeds)[0]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.shape == (2, m, oh, ow)
    np.testing.assert_allclose(got, want, rtol=1e-4,
                               atol=_winograd_atol(c, m, (3, 3), 1, 1, (1, 1), want))


@pytest.mark.parametrize("c,m,h,bound", [
    (64, 64, 28, 1e-4),    # F(4x4, 3x3): measured 2-4e-5 of the output's RMS
    (128, 128, 14, 1e-4),
    (256, 256, 9, 1e-5),   # F(2x2, 3x3) (above 128 x 256 channels): measured ~3e-6
])
def test_winograd_rounding_against_float64(c, m, h, bound):
    """Winograd's error against an exact (float64) convolution, relative to the output's
    RMS, with He-scaled weights as trained networks have: the bound each algorithm keeps
    (the direct tiles: 3-8e-6)."""
    x = rng.standard_normal((1, c, h, h)).astype(np.float32)
    wt = (rng.standard_normal((m, c, 3, 3)) * np.sqrt(2.0 / (9 * c))).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(wt, "w")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    got = nxrt.InferenceSession(data).run(None, {"x": x})[0].astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros_like(got)
    for i in range(3):
        for j in range(3):
            ref += np.einsum("mc,nchw->nmhw", wt[:, :, i, j].astype(np.float64),
                             xp[:, :, i:i + h, j:j + h])
    rms = np.sqrt(np.mean(ref ** 2))
    assert np.abs(got - ref).max() <= bound * rms


# Convolutions with at most 64 output positions per image (the thin path: col^T read in
# place times the packed W^T): batches split across threads, output channel counts that
# leave a partial panel of 1 to 47 columns, groups, padding, strides, a 1x1 and a short
# row wider than 16.
THIN = [(8, 64, 64, 10, 10, 3, 1, 0, 1), (3, 32, 5, 7, 7, 3, 1, 1, 1), (4, 24, 40, 8, 8, 3, 2, 1, 1),
        (5, 16, 100, 7, 7, 1, 1, 0, 1), (2, 32, 64, 6, 6, 3, 1, 1, 2), (1, 48, 49, 1, 20, 3, 1, 1, 1),
        (6, 12, 17, 4, 19, 3, 1, 0, 1)]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n,c,m,h,w,k,s,p,g", THIN)
def test_conv_thin_outputs(n, c, m, h, w, k, s, p, g, threads):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[s, s],
                            pads=[p] * 4, group=g)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(_f32(m, c // g, k, k), "w"),
                               numpy_helper.from_array(_f32(m), "b")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    feeds = {"x": _f32(n, c, h, w)}
    so = nxrt.SessionOptions()
    so.intra_op_num_threads = threads
    got = nxrt.InferenceSession(data, so).run(None, feeds)[0]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4,
                               atol=_winograd_atol(c, m, (k, k), 1, g, (s, s), want))


@pytest.mark.parametrize("c,m,h,k,s,g", [(8, 4, 5, 3, 2, 1), (6, 6, 4, 2, 1, 2)])
def test_conv_transpose(c, m, h, k, s, g):
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[s, s], group=g)
    _compare(node, {"x": _f32(2, c, h, h)}, {"w": _f32(c, m // g, k, k), "b": _f32(m)})


@pytest.mark.parametrize("a,b", [((5, 257), (257, 32)), ((1, 64), (64, 300)), ((2, 3, 7, 40), (40, 9)),
                                 ((40,), (40, 9)), ((3, 40), (40,))])
def test_matmul(a, b):
    _compare(helper.make_node("MatMul", ["a", "b"], ["y"]), {"a": _f32(*a)}, {"b": _f32(*b)})


def test_matmul_float16():
    _compare(helper.make_node("MatMul", ["a", "b"], ["y"]), {"a": _f32(3, 20).astype(np.float16)},
             {"b": _f32(20, 7).astype(np.float16)}, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("ta,tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm(ta, tb):
    m, k, n = 6, 33, 19
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=ta, transB=tb, alpha=0.7, beta=1.3)
    _compare(node, {"a": _f32(*((k, m) if ta else (m, k)))},
             {"b": _f32(*((n, k) if tb else (k, n))), "c": _f32(n)})


@pytest.mark.parametrize("op,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("seq,batch,hidden", [(1, 1, 128), (5, 3, 16)])
def test_recurrent(op, gates, direction, seq, batch, hidden):
    dirs = 2 if direction == "bidirectional" else 1
    inp = 24
    node = helper.make_node(op, ["x", "w", "r", "b"], ["y", "y_h"], hidden_size=hidden, direction=direction)
    weights = {"w": _f32(dirs, gates * hidden, inp) * 0.3, "r": _f32(dirs, gates * hidden, hidden) * 0.3,
               "b": _f32(dirs, 2 * gates * hidden) * 0.1}
    _compare(node, {"x": _f32(seq, batch, inp)}, weights, n_out=2, opset=14)


@pytest.mark.parametrize("exponent", [2.0, 0.5, 1.0, 3.0])
def test_pow_constant_exponent(exponent):
    x = np.abs(_f32(4, 33)) if exponent == 0.5 else _f32(4, 33)
    _compare(helper.make_node("Pow", ["x", "e"], ["y"]), {"x": x}, {"e": np.array(exponent, np.float32)})


# Depthwise 2-D convolutions take a row-by-row vector kernel with clipped borders:
# (channels, multiplier, height, width, kernel, stride, dilation, pads). Widths leave
# vector tails of every length; asymmetric pads and windows wider than the input too.
DEPTHWISE = [(8, 1, 14, 14, 3, 1, 1, [1, 1, 1, 1]), (6, 2, 9, 13, 3, 2, 1, [1, 1, 1, 1]),
             (4, 1, 11, 30, 5, 1, 2, [4, 0, 2, 3]), (3, 1, 7, 7, 3, 3, 1, [0, 2, 1, 0]),
             (5, 1, 4, 5, 7, 1, 1, [3, 3, 3, 3]), (2, 3, 20, 17, 2, 2, 3, [0, 0, 0, 0])]


@pytest.mark.parametrize("c,mult,h,w,k,s,d,pads", DEPTHWISE)
def test_depthwise_conv2d(c, mult, h, w, k, s, d, pads):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], strides=[s, s],
                            dilations=[d, d], pads=pads, group=c)
    _compare(node, {"x": _f32(2, c, h, w)}, {"w": _f32(c * mult, 1, k, k), "b": _f32(c * mult)})


# Float Max/AveragePool of 1 and 2 spatial dims take the separable vector path.
POOLS = [("MaxPool", (2, 3, 15, 17), dict(kernel_shape=[3, 3], strides=[2, 2])),
         ("MaxPool", (1, 4, 13, 21), dict(kernel_shape=[3, 2], strides=[1, 3], pads=[1, 0, 2, 1],
                                          dilations=[2, 1], ceil_mode=1)),
         ("AveragePool", (1, 2, 9, 30), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
         ("AveragePool", (1, 2, 9, 30), dict(kernel_shape=[3, 5], strides=[2, 2], pads=[0, 2, 1, 2],
                                             count_include_pad=1, ceil_mode=1)),
         ("MaxPool", (2, 3, 40), dict(kernel_shape=[4], strides=[3], pads=[1, 2])),
         ("AveragePool", (2, 3, 40), dict(kernel_shape=[5], pads=[2, 2], count_include_pad=1)),
         ("MaxPool", (1, 3, 111, 111), dict(kernel_shape=[3, 3], strides=[2, 2])),
         ("MaxPool", (1, 2, 20, 75), dict(kernel_shape=[3, 3], strides=[2, 2], dilations=[1, 2],
                                          pads=[1, 1, 1, 1])),
         ("AveragePool", (1, 3, 28, 28), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
         ("AveragePool", (1, 2, 30, 67), dict(kernel_shape=[2, 2], strides=[2, 2])),
         # Strided windows over stacked planes: inception's [0, 0, 1, 1] pads, odd sizes,
         # stride 3 with dilation, divisors with and without the padding.
         ("MaxPool", (1, 5, 14, 14), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1])),
         ("MaxPool", (2, 3, 23, 19), dict(kernel_shape=[3, 3], strides=[3, 2], pads=[1, 2, 1, 0],
                                          dilations=[2, 1])),
         ("AveragePool", (1, 4, 13, 11), dict(kernel_shape=[3, 3], strides=[2, 2],
                                              pads=[1, 1, 1, 1])),
         ("AveragePool", (1, 4, 13, 11), dict(kernel_shape=[3, 2], strides=[2, 3],
                                              pads=[1, 1, 2, 1], count_include_pad=1)),
         ("MaxPool", (1, 3, 9, 9), dict(kernel_shape=[2, 2], strides=[4, 4])),
         # One window per whole plane.
         ("AveragePool", (1, 6, 7, 7), dict(kernel_shape=[7, 7])),
         ("MaxPool", (2, 3, 5, 6), dict(kernel_shape=[5, 6]))]


@pytest.mark.parametrize("op,shape,attrs", POOLS)
def test_pool(op, shape, attrs):
    _compare(helper.make_node(op, ["x"], ["y"], **attrs), {"x": _f32(*shape)}, {}, opset=19)


@pytest.mark.parametrize("shape,attrs", [(s, a) for op, s, a in POOLS if op == "MaxPool"])
def test_max_pool_vector_path_matches_generic(shape, attrs):
    # An Indices output sends MaxPool down the generic loop; Y must not change, NaN included
    # (nxrt's max lets NaN win a window, where onnxruntime's skips it at some positions).
    x = _f32(*shape)
    x.flat[30] = -np.inf
    graph = lambda outs: helper.make_graph(
        [helper.make_node("MaxPool", ["x"], outs, **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == "y" else TensorProto.INT64,
                                       None) for o in outs])
    run = lambda outs: nxrt.InferenceSession(helper.make_model(
        graph(outs), opset_imports=[helper.make_opsetid("", 19)]).SerializeToString()).run(
            None, {"x": x})
    # NaN where some window has its max (a strided window may skip any fixed place).
    x.flat[run(["y", "i"])[1].flat[0]] = np.nan
    fast, generic = run(["y"])[0], run(["y", "i"])[0]
    assert np.isnan(fast).any()
    np.testing.assert_array_equal(fast, generic)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_dequantize_8bit(signed, per_axis):
    x = _f32(2, 3, 37) * 4
    x.flat[5] = np.nan
    qtype = np.int8 if signed else np.uint8
    scale = np.array([0.05, 0.02, 0.1], np.float32) if per_axis else np.array(0.03, np.float32)
    zero = (np.array([3, -7, 0] if signed else [128, 0, 17], qtype) if per_axis
            else np.array(-2 if signed else 120, qtype))
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1)
    dq = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("q", TensorProto.INT8 if signed else TensorProto.UINT8,
                                             None)]
    graph = helper.make_graph([q, dq], "g", inputs, outputs,
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]).SerializeToString()
    got = nxrt.InferenceSession(data).run(None, {"x": x})
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    # A NaN quantizes to 0 in nxrt (the spec leaves it open; onnxruntime's per-tensor and
    # per-axis paths disagree with each other there), so it is checked on its own.
    assert got[1].flat[5] == 0
    keep = np.ones(x.size, bool)
    keep[5] = False
    np.testing.assert_array_equal(got[1].ravel()[keep], want[1].ravel()[keep])
    np.testing.assert_allclose(got[0].ravel()[keep], want[0].ravel()[keep], rtol=1e-6, atol=1e-7)


def _conv_integer_reference(x, w, xz, wz, strides, pads, dilations, group):
    """Exact int64 ConvInteger for 1-D and 2-D inputs (numpy)."""
    x = x.astype(np.int64) - int(xz)
    wz = np.broadcast_to(np.asarray(wz, np.int64).reshape(-1), (w.shape[0],))
    w = w.astype(np.int64) - wz.reshape((-1,) + (1,) * (w.ndim - 1))
    r = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(pads[d], pads[d + r]) for d in range(r)])
    N, C = x.shape[:2]
    M, Cg = w.shape[:2]
    k = w.shape[2:]
    out = [(x.shape[2 + d] - dilations[d] * (k[d] - 1) - 1) // strides[d] + 1 for d in range(r)]
    y = np.zeros([N, M] + out, np.int64)
    Mg = M // group
    for idx in np.ndindex(*k):
        sl = tuple(slice(idx[d] * dilations[d], idx[d] * dilations[d] + strides[d] * (out[d] - 1) + 1,
                         strides[d]) for d in range(r))
        patch = x[(slice(None), slice(None)) + sl]  # N, C, out...
        for g in range(group):
            wg = w[g * Mg:(g + 1) * Mg, :, *idx]  # Mg, Cg
            y[:, g * Mg:(g + 1) * Mg] += np.einsum("mc,nc...->nm...", wg, patch[:, g * Cg:(g + 1) * Cg])
    return y.astype(np.int32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("w_type", [np.uint8, np.int8])
@pytest.mark.parametrize("shape,kernel,strides,pads,dilations,group,per_channel", [
    ((2, 16, 50), (3,), (1,), (1, 1), (1,), 1, False),
    ((1, 12, 40), (7,), (1,), (9, 9), (3,), 1, True),
    ((1, 8, 33), (5,), (2,), (2, 1), (1,), 2, False),
    ((1, 6, 11, 13), (3, 3), (1, 2), (1, 0, 1, 2), (1, 1), 1, True),
    ((2, 8, 9, 9), (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 4, False),
    # Long enough for several chunks of positions: windows read in place, then gathered.
    ((1, 64, 1500), (11,), (1,), (5, 5), (1,), 1, False),
    ((1, 32, 1900), (3,), (2,), (1, 3), (3,), 1, True)])
def test_conv_integer_matches_exact_reference(shape, kernel, strides, pads, dilations, group,
                                              per_channel, w_type, threads):
    rng = np.random.default_rng(3)
    M = 12 if group != 4 else 8
    x = rng.integers(0, 256, shape).astype(np.uint8)
    info = np.iinfo(w_type)
    w = rng.integers(info.min, info.max + 1, (M, shape[1] // group) + kernel).astype(w_type)
    xz = np.array(131, np.uint8)
    wz = (rng.integers(info.min // 2, info.max // 2, M) if per_channel else np.array(7)).astype(w_type)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], kernel_shape=list(kernel),
                            strides=list(strides), pads=list(pads), dilations=list(dilations), group=group)
    tx = TensorProto.UINT8
    tw = TensorProto.UINT8 if w_type == np.uint8 else TensorProto.INT8
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", tx, None)],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(xz, "xz"),
                               numpy_helper.from_array(wz, "wz")])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    so = nxrt.SessionOptions()
    so.intra_op_num_threads = threads
    got = nxrt.InferenceSession(data, so).run(None, {"x": x})[0]
    want = _conv_integer_reference(x, w, xz, wz, strides, pads, dilations, group)
    np.testing.assert_array_equal(got, want)
