"""The layout_nchwc pass and nxrt's channel-blocked kernels (NchwcConv, the Nchwc pools,
NchwcToNchw), against onnxruntime and against nxrt with the pass disabled.

The pass only rewrites where the CPU has AVX-512 or AVX2 with FMA; elsewhere these tests still run the
models (then through the plain kernels) but skip the checks that the blocked ops ran.
"""

import json
import os

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt

RNG = np.random.default_rng(11)


def _blocked_layout_available():
    if os.environ.get("NXRT_VMATH") == "portable" or not os.path.exists("/proc/cpuinfo"):
        return False
    flags = open("/proc/cpuinfo").read()
    return "avx512f" in flags or ("avx2" in flags and " fma" in flags)


def _weights(name, shape, scale=0.2):
    return numpy_helper.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


class _Graph:
    """A small float32 graph builder: input x [N, C, H, W], nodes, initializers."""

    def __init__(self, n, c, h, w):
        self.x_shape = (n, c, h, w)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def conv(self, x, c_in, c_out, k, group=1, bias=True, **attrs):
        w = self.fresh("w")
        self.inits.append(_weights(w, (c_out, c_in // group, k, k)))
        inputs = [x, w]
        if bias:
            b = self.fresh("b")
            self.inits.append(_weights(b, (c_out,), 1.0))
            inputs.append(b)
        y = self.fresh("conv")
        self.nodes.append(helper.make_node("Conv", inputs, [y], kernel_shape=[k, k], group=group,
                                           **attrs))
        return y

    def op(self, op_type, inputs, **attrs):
        y = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [y], **attrs))
        return y

    def model(self, outputs):
        graph = helper.make_graph(
            self.nodes, "nchwc",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(self.x_shape))],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
            self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


def _profiled_ops(session, feeds):
    session.run(None, feeds)
    path = session.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    return {e["args"]["op_name"] for e in events if e.get("cat") == "Node"}


def _check(model, x_shape, expect_ops=(), threads=1):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    session = nxrt.InferenceSession(model, options)
    got = session.run(None, {"x": x})
    plain = nxrt.InferenceSession(model, disabled_optimizers=["layout_nchwc"]).run(None, {"x": x})
    for g, p, e in zip(got, plain, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(g, p, rtol=1e-3, atol=1e-4)
    if _blocked_layout_available():
        ops = _profiled_ops(session, {"x": x})
        for op in expect_ops:
            assert op in ops, f"{op} did not run; ran {sorted(ops)}"


CONV_CASES = [
    # c_in, c_out, h, w, k, attrs
    (3, 64, 33, 35, 3, dict(strides=[2, 2])),
    (3, 32, 30, 31, 7, dict(strides=[2, 2], pads=[3, 3, 3, 3])),
    (16, 64, 13, 13, 3, dict(pads=[1, 1, 1, 1])),
    (20, 40, 9, 11, 3, dict(pads=[1, 0, 2, 1])),
    (64, 48, 7, 7, 1, {}),
    (40, 33, 12, 12, 3, dict(strides=[2, 2], pads=[1, 1, 1, 1], dilations=[2, 2])),
    (24, 32, 10, 9, 3, dict(auto_pad="SAME_UPPER")),
    (24, 32, 10, 9, 3, dict(auto_pad="SAME_LOWER", strides=[2, 2])),
    (70, 20, 6, 5, 2, dict(auto_pad="VALID")),
    # unpadded plain inputs of more than 16 channels are blocked first
    (48, 24, 11, 10, 3, dict(strides=[2, 1], dilations=[1, 2])),
]


@pytest.mark.parametrize("c_in,c_out,h,w,k,attrs", CONV_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_on_blocked_layout(c_in, c_out, h, w, k, attrs, threads):
    g = _Graph(2, c_in, h, w)
    y = g.conv("x", c_in, c_out, k, **attrs)
    _check(g.model([y]), g.x_shape, ["NchwcConv", "NchwcToNchw"], threads)


@pytest.mark.parametrize("c_in,c_out,h,w,k,attrs", CONV_CASES)
def test_conv_of_a_blocked_input(c_in, c_out, h, w, k, attrs):
    # The same convolutions reading the blocked output of another one: their windows
    # then read the padding in place rather than from a zero-bordered copy.
    g = _Graph(2, 4, h, w)
    first = g.op("Relu", [g.conv("x", 4, c_in, 1)])
    y = g.conv(first, c_in, c_out, k, **attrs)
    _check(g.model([y]), g.x_shape, ["NchwcConv", "NchwcToNchw"])


WINOGRAD_CASES = [
    # 3x3 stride-1 convolutions with at least 16 inputs and outputs take Winograd's
    # F(4x4, 3x3), F(2x2, 3x3) above 128 x 256 channels: odd and even maps, asymmetric and
    # no padding, a partial last block; the last runs the direct tiles (8 inputs).
    (32, 32, 7, 7, dict(pads=[1, 1, 1, 1])),
    (48, 40, 9, 6, dict(pads=[0, 1, 2, 0])),
    (64, 64, 5, 11, {}),
    (40, 72, 14, 14, dict(auto_pad="SAME_UPPER")),
    (64, 80, 13, 10, dict(pads=[1, 0, 2, 1])),
    (136, 256, 9, 10, dict(pads=[1, 1, 1, 1])),
    (8, 24, 9, 9, dict(pads=[1, 1, 1, 1])),
    # Transformed weights of 8 MB and few tiles: on 2 threads each thread takes a share of
    # the output blocks of every chunk of tiles.
    (32, 4096, 5, 5, dict(pads=[1, 1, 1, 1])),
]


@pytest.mark.parametrize("c_in,c_out,h,w,attrs", WINOGRAD_CASES)
@pytest.mark.parametrize("activation", [None, "Relu", "Sigmoid"])
@pytest.mark.parametrize("plain_input", [False, True])
def test_winograd_convolution(c_in, c_out, h, w, attrs, activation, plain_input):
    g = _Graph(2, c_in if plain_input else 8, h, w)
    x = "x" if plain_input else g.op("Relu", [g.conv("x", 8, c_in, 1)])
    y = g.conv(x, c_in, c_out, 3, **attrs)
    if activation:
        y = g.op(activation, [y])
    _check(g.model([y]), g.x_shape, ["NchwcConv"], threads=2)


@pytest.mark.parametrize("channels,threads", [(48, 1), (160, 2), (176, 2)])
def test_winograd_convolution_with_residual_sum(channels, threads):
    # 160 and 176 channels on 2 threads: weights beyond half an L2 and one chunk of tiles,
    # so the threads split the output blocks (176: 11 blocks, an odd split).
    g = _Graph(1, 8, 10, 9)
    a = g.op("Relu", [g.conv("x", 8, channels, 1)])
    b = g.conv(g.op("Relu", [g.conv(a, channels, channels, 3, pads=[1, 1, 1, 1])]), channels,
               channels, 3, pads=[1, 1, 1, 1])
    y = g.op("Relu", [g.op("Add", [b, a])])
    _check(g.model([y]), g.x_shape, ["NchwcConv"], threads)


@pytest.mark.parametrize("activation", ["Relu", "Sigmoid", "LeakyRelu", "HardSigmoid"])
def test_conv_activation_fused_on_blocked_layout(activation):
    g = _Graph(1, 8, 12, 12)
    y = g.op(activation, [g.conv("x", 8, 24, 3, pads=[1, 1, 1, 1])])
    _check(g.model([y]), g.x_shape, ["NchwcConv"])


@pytest.mark.parametrize("k,attrs", [
    (3, dict(pads=[1, 1, 1, 1])), (3, dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    (5, dict(pads=[2, 2, 2, 2])), (3, dict(pads=[0, 1, 1, 0], dilations=[2, 2])), (3, {})])
def test_depthwise_conv_after_a_blocked_one(k, attrs):
    g = _Graph(1, 8, 15, 14)
    a = g.op("Relu", [g.conv("x", 8, 40, 1)])
    y = g.conv(a, 40, 40, k, group=40, **attrs)
    _check(g.model([y]), g.x_shape, ["NchwcConv"])


@pytest.mark.parametrize("pool,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[2, 2], pads=[1, 1, 0, 0], dilations=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1)),
    ("GlobalAveragePool", {}),
    ("GlobalMaxPool", {}),
])
def test_pools_on_blocked_layout(pool, attrs):
    g = _Graph(2, 5, 17, 13)
    y = g.op(pool, [g.op("Relu", [g.conv("x", 5, 36, 3)])], **attrs)
    _check(g.model([y]), g.x_shape, ["Nchwc" + pool])


def test_residual_concat_and_elementwise_stay_blocked():
    # Two branches of whole blocks joined by Concat, a residual sum fused into the
    # convolution, an elementwise Mul by a per-channel gate (GlobalAveragePool -> Sigmoid,
    # broadcast over the map), and a graph output read in the middle of the chain.
    g = _Graph(1, 16, 10, 10)
    a = g.op("Relu", [g.conv("x", 16, 32, 3, pads=[1, 1, 1, 1])])
    b = g.op("Relu", [g.conv("x", 16, 32, 1)])
    cat = g.op("Concat", [a, b], axis=1)
    c = g.conv(cat, 64, 64, 3, pads=[1, 1, 1, 1])
    s = g.op("Relu", [g.op("Add", [c, cat])])
    gate = g.op("Sigmoid", [g.op("GlobalAveragePool", [s])])
    gated = g.op("Mul", [s, gate])
    y = g.op("MaxPool", [gated], kernel_shape=[2, 2], strides=[2, 2])
    _check(g.model([y, a]), g.x_shape, ["NchwcConv", "NchwcMaxPool", "Concat", "Mul"])


def _split_sizes(g, sizes):
    name = g.fresh("split")
    g.inits.append(numpy_helper.from_array(np.array(sizes, np.int64), name))
    return name


@pytest.mark.parametrize("threads", [1, 2])
def test_yolo_c2f_split_and_upsample_stay_blocked(threads):
    # YOLOv8's C2f block: a convolution's output split in halves on the channel axis, a
    # bottleneck on the second half with a residual Add, the parts joined by Concat; its
    # neck's nearest-neighbour Resize by 2. All of it on the blocked layout: no reorder
    # before the graph output.
    g = _Graph(1, 8, 12, 10)
    a = g.op("Relu", [g.conv("x", 8, 64, 3, pads=[1, 1, 1, 1])])
    g.nodes.append(helper.make_node("Split", [a, _split_sizes(g, [32, 32])], ["s0", "s1"],
                                    axis=1))
    m = g.op("Relu", [g.conv("s1", 32, 32, 3, pads=[1, 1, 1, 1])])
    cat = g.op("Concat", ["s0", "s1", g.op("Add", ["s1", m])], axis=1)
    c = g.op("Relu", [g.conv(cat, 96, 32, 1)])
    scales = g.fresh("scales")
    g.inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), scales))
    up = g.op("Resize", [c, "", scales], mode="nearest")
    y = g.conv(g.op("Concat", [up, g.op("Resize", [a, "", scales], mode="nearest")], axis=1),
               96, 16, 1)
    model = g.model([y])
    _check(model, g.x_shape, ["Split", "Resize", "Concat"], threads=threads)
    if _blocked_layout_available():
        options = nxrt.SessionOptions()
        options.enable_profiling = True
        ops = _profiled_ops(nxrt.InferenceSession(model, options),
                            {"x": np.zeros(g.x_shape, np.float32)})
        assert "NchwcToNchw" in ops  # the graph output only
        session = nxrt.InferenceSession(model, options)
        session.run(None, {"x": np.zeros(g.x_shape, np.float32)})
        with open(session.end_profiling()) as f:
            reorders = [e for e in json.load(f) if e.get("cat") == "Node"
                        and e["args"]["op_name"] == "NchwcToNchw"
                        and e["name"].endswith("_kernel_time")]
        assert len(reorders) == 1, reorders


@pytest.mark.parametrize("split,attrs,opset,blocked", [
    ([16, 48], {}, 13, True),
    (None, {}, 13, True),                      # equal halves
    (None, dict(num_outputs=2), 18, True),
    ([16, 48], {}, 11, True),                  # sizes as the attribute
    ([8, 56], {}, 13, False),                  # a part of half a block
    ([16, 48], dict(axis=2), 13, False),       # not the channel axis
])
def test_split_on_blocked_layout(split, attrs, opset, blocked):
    g = _Graph(2, 8, 7, 9)
    a = g.op("Relu", [g.conv("x", 8, 64, 3)])
    inputs = [a]
    attrs = dict(attrs)
    if split is not None and opset >= 13:
        inputs.append(_split_sizes(g, split))
    elif split is not None:
        attrs["split"] = split
    attrs.setdefault("axis", 1)
    if attrs["axis"] == 2:
        inputs[1:] = [_split_sizes(g, [2, 3])]
    g.nodes.append(helper.make_node("Split", inputs, ["s0", "s1"], **attrs))
    if attrs["axis"] == 1:
        y0 = g.conv("s0", split[0] if split else 32, 16, 1)
    else:
        y0 = g.op("Relu", ["s0"])
    model = helper.make_model(
        helper.make_graph(g.nodes, "split", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, list(g.x_shape))],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in (y0, "s1")],
            g.inits),
        opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()
    _check(model, g.x_shape, ["Split"])
    if _blocked_layout_available():
        options = nxrt.SessionOptions()
        options.enable_profiling = True
        session = nxrt.InferenceSession(model, options)
        session.run(None, {"x": np.zeros(g.x_shape, np.float32)})
        with open(session.end_profiling()) as f:
            reorders = sum(1 for e in json.load(f) if e.get("cat") == "Node"
                           and e["args"]["op_name"] == "NchwcToNchw"
                           and e["name"].endswith("_kernel_time"))
        # Blocked: each graph output read back (y0 through its conv's, s1 directly); plain:
        # the conv's output once before the Split, and y0's conv when it is blocked.
        assert (reorders == 2) if blocked else (reorders <= 2)


@pytest.mark.parametrize("attrs,scales", [
    (dict(mode="nearest"), [1, 1, 2, 2]),
    (dict(mode="nearest", coordinate_transformation_mode="half_pixel",
          nearest_mode="round_prefer_ceil"), [1, 1, 1.5, 0.5]),
    (dict(mode="nearest", coordinate_transformation_mode="align_corners"), [1, 1, 3, 2]),
    (dict(mode="linear"), [1, 1, 2, 2]),       # stays plain
    (dict(mode="nearest"), [1, 2, 2, 2]),      # scales the channels: stays plain
])
def test_resize_on_blocked_layout(attrs, scales):
    g = _Graph(1, 8, 6, 7)
    a = g.op("Relu", [g.conv("x", 8, 32, 3)])
    name = g.fresh("scales")
    g.inits.append(numpy_helper.from_array(np.array(scales, np.float32), name))
    y = g.op("Resize", [a, "", name], **attrs)
    _check(g.model([y]), g.x_shape, ["Resize"])


@pytest.mark.parametrize("activation", ["Relu", "Sigmoid"])
def test_batchnorm_between_blocked_ops(activation):
    # DenseNet's block: Concat -> BatchNormalization -> activation -> Conv. The BN no
    # convolution can absorb becomes nxrt ChannelAffine, which stays blocked.
    g = _Graph(1, 8, 9, 9)
    a = g.op("Relu", [g.conv("x", 8, 32, 3, pads=[1, 1, 1, 1])])
    b = g.op("Relu", [g.conv("x", 8, 16, 1)])
    cat = g.op("Concat", [a, b], axis=1)
    params = []
    for name, scale in (("s", 1.0), ("bb", 1.0), ("m", 1.0)):
        params.append(g.fresh(name))
        g.inits.append(_weights(params[-1], (48,), scale))
    params.append(g.fresh("v"))
    g.inits.append(numpy_helper.from_array(RNG.uniform(0.5, 2.0, 48).astype(np.float32),
                                           params[-1]))
    bn = g.op("BatchNormalization", [cat] + params)
    y = g.conv(g.op(activation, [bn]), 48, 32, 1)
    _check(g.model([y]), g.x_shape, ["NchwcChannelAffine", "NchwcConv"])


def test_small_output_channels_stay_plain():
    # Fewer than 16 output channels would waste most of a block: the pass leaves them.
    g = _Graph(1, 32, 8, 8)
    y = g.conv(g.op("Relu", [g.conv("x", 32, 32, 3, pads=[1, 1, 1, 1])]), 32, 4, 1)
    model = g.model([y])
    _check(model, g.x_shape, ["NchwcConv", "NchwcToNchw"])
    if _blocked_layout_available():
        options = nxrt.SessionOptions()
        options.enable_profiling = True
        ops = _profiled_ops(nxrt.InferenceSession(model, options),
                            {"x": np.zeros(g.x_shape, np.float32)})
        assert "FusedConv" in ops or "Conv" in ops


def test_disabling_the_pass_keeps_the_plain_kernels():
    g = _Graph(1, 8, 8, 8)
    y = g.conv("x", 8, 32, 3)
    options = nxrt.SessionOptions()
    options.enable_profiling = True
    session = nxrt.InferenceSession(g.model([y]), options, disabled_optimizers=["layout_nchwc"])
    ops = _profiled_ops(session, {"x": np.zeros(g.x_shape, np.float32)})
    assert not any(op.startswith("Nchwc") for op in ops)


def test_wrong_channel_count_is_a_clear_error():
    g = _Graph("N", "C", "H", "W")  # symbolic: only the kernel can catch the mismatch
    model = g.model([g.conv(g.op("Relu", [g.conv("x", 8, 32, 3)]), 32, 32, 3)])
    session = nxrt.InferenceSession(model)
    with pytest.raises(nxrt.InvalidArgument, match="channels"):
        session.run(None, {"x": np.zeros((1, 9, 8, 8), np.float32)})


def _direct_nchwc_conv_model(w_shape, x_type=TensorProto.FLOAT):
    # An nxrt NchwcConv written into the model itself, as a saved optimized model would.
    node = helper.make_node("NchwcConv", ["x", "w"], ["y"], domain="nxrt")
    graph = helper.make_graph(
        [node], "direct", [helper.make_tensor_value_info("x", x_type, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.zeros(w_shape, np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("nxrt", 1)]).SerializeToString()


def test_bad_nchwc_conv_nodes_are_clear_errors():
    with pytest.raises(nxrt.InvalidGraph, match=r"W \[16,0,3,3\] are empty"):
        nxrt.InferenceSession(_direct_nchwc_conv_model((16, 0, 3, 3)))
    with pytest.raises(nxrt.NotImplemented, match=r"input 0 has type tensor\(int64\)"):
        nxrt.InferenceSession(_direct_nchwc_conv_model((16, 4, 3, 3), TensorProto.INT64))
    session = nxrt.InferenceSession(_direct_nchwc_conv_model((16, 4, 3, 3)))
    with pytest.raises(nxrt.InvalidArgument, match="channels the weights expect"):
        session.run(None, {"x": np.zeros((1, 5, 8, 8), np.float32)})
