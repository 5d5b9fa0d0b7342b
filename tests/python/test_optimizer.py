"""Graph passes and the fused kernels they produce, against onnxruntime.

The passes rewrite Conv -> BatchNormalization -> activation into one com.microsoft
FusedConv. FusedConv is also a contrib op users meet in models saved after onnxruntime's
optimizer, so it is tested directly against onnxruntime's own kernel too.
"""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt
from winograd_tolerance import winograd_atol

RNG = np.random.default_rng(7)


def _ort(model_bytes, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _nxrt(model_bytes, threads=1, level=None, **kwargs):
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = threads
    if level is not None:
        options.graph_optimization_level = level
    return nxrt.InferenceSession(model_bytes, options, **kwargs)


def _fused_conv_model(x_shape, w_shape, activation, params, with_bias, with_sum, y_shape,
                      **conv_attrs):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    node_inputs = ["x", "w", "b" if with_bias else ""]
    if with_sum:
        node_inputs.append("z")
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, y_shape))
    attrs = dict(conv_attrs)
    if activation:
        attrs["activation"] = activation
    if params:
        attrs["activation_params"] = params
    node = helper.make_node("FusedConv", node_inputs, ["y"], domain="com.microsoft", **attrs)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    if with_bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(w_shape[0]).astype(np.float32), "b"))
    graph = helper.make_graph([node], "fused", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


ACTIVATIONS = [("", []), ("Relu", []), ("LeakyRelu", [0.1]), ("Sigmoid", []), ("Tanh", []),
               ("HardSigmoid", [0.2, 0.5]), ("Clip", [-0.5, 0.7])]

# (x shape, w shape, y shape, conv attributes): the kernel's paths: im2col + GEMM, pointwise,
# depthwise, grouped, a thin output (<= 64 positions, weights packed transposed), 1-D.
SHAPES = [
    ((1, 3, 9, 9), (8, 3, 3, 3), (1, 8, 9, 9), dict(pads=[1, 1, 1, 1])),
    ((2, 16, 12, 12), (24, 16, 1, 1), (2, 24, 12, 12), {}),
    ((1, 8, 10, 10), (8, 1, 3, 3), (1, 8, 5, 5), dict(group=8, strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 8, 7, 7), (12, 4, 3, 3), (1, 12, 5, 5), dict(group=2)),
    ((1, 32, 4, 4), (40, 32, 3, 3), (1, 40, 4, 4), dict(pads=[1, 1, 1, 1])),
    ((1, 4, 50), (6, 4, 5), (1, 6, 50), dict(pads=[2, 2])),
    # 2-D convolutions over a unit dim, run as 1-D: (k x 1) over width 1, (1 x k) over height 1
    ((1, 6, 40, 1), (8, 6, 5, 1), (1, 8, 36, 1), {}),
    ((2, 4, 1, 30), (5, 4, 1, 3), (2, 5, 1, 30), dict(pads=[0, 1, 0, 1])),
    ((1, 6, 1, 30), (6, 1, 1, 3), (1, 6, 1, 15), dict(group=6, strides=[1, 2], pads=[0, 1, 0, 1])),
    # one input channel, long overlapping windows (FIR filter banks): strided GEMV per filter
    ((2, 1, 300), (3, 1, 64), (2, 3, 129), dict(strides=[2], pads=[10, 10])),
    ((1, 1, 1, 700), (2, 1, 1, 256), (1, 2, 1, 223), dict(strides=[1, 2])),
]


@pytest.mark.parametrize("activation,params", ACTIVATIONS, ids=[a or "none" for a, _ in ACTIVATIONS])
@pytest.mark.parametrize("shape", SHAPES, ids=["im2col", "pointwise", "depthwise", "grouped",
                                               "thin", "conv1d", "kx1", "1xk", "depthwise1xk",
                                               "fir", "fir2d"])
@pytest.mark.parametrize("with_sum", [False, True], ids=["", "sum"])
def test_fused_conv_matches_onnxruntime(activation, params, shape, with_sum):
    x_shape, w_shape, y_shape, attrs = shape
    model = _fused_conv_model(x_shape, w_shape, activation, params, True, with_sum, y_shape,
                              **attrs)
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32)}
    if with_sum:
        feeds["z"] = RNG.standard_normal(y_shape).astype(np.float32)
    expected = _ort(model).run(None, feeds)[0]
    for threads in (1, 2):
        got = _nxrt(model, threads).run(None, feeds)[0]
        # The convolution's own scale, before Clip or Tanh squeeze it: about four standard
        # deviations of a sum of C * taps products of N(0, 1) values.
        scale = 4.0 * np.sqrt(np.prod(w_shape[1:]))
        np.testing.assert_allclose(got, expected, rtol=1e-4,
                                   atol=winograd_atol(1e-5, x_shape[1], w_shape[0], w_shape[2:],
                                                      expected, group=attrs.get("group", 1),
                                                      strides=attrs.get("strides", (1, 1)),
                                                      scale=scale))


def test_fused_conv_rejects_bad_activations_and_sums():
    model = _fused_conv_model((1, 2, 4, 4), (2, 2, 1, 1), "Gelu", [], False, False, (1, 2, 4, 4))
    with pytest.raises(nxrt.NotImplemented, match="activation 'Gelu'.*FusedConv"):
        _nxrt(model)
    model = _fused_conv_model((1, 2, 4, 4), (2, 2, 1, 1), "Clip", [0.0], False, False, (1, 2, 4, 4))
    with pytest.raises(nxrt.InvalidGraph, match="Clip takes 2 activation_params, got 1"):
        _nxrt(model)
    model = _fused_conv_model((1, 2, 4, 4), (2, 2, 1, 1), "Relu", [], False, True, None)
    with pytest.raises(nxrt.InvalidArgument, match="sum input Z.*output's type and shape"):
        _nxrt(model).run(None, {"x": np.zeros((1, 2, 4, 4), np.float32),
                                "z": np.zeros((1, 2, 4, 3), np.float32)})


def _conv_bn_act_model(activation_node, params_are_inputs=False):
    c = 6
    inits = [
        numpy_helper.from_array(RNG.standard_normal((c, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "b"),
        numpy_helper.from_array(RNG.uniform(0.5, 1.5, c).astype(np.float32), "scale"),
        numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "beta"),
        numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "mean"),
        numpy_helper.from_array(RNG.uniform(0.5, 2.0, c).astype(np.float32), "var"),
        numpy_helper.from_array(np.array(-1.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(2.0, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["n"],
                         epsilon=1e-3),
        helper.make_node("Identity", ["n"], ["i"]),
        activation_node,
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])]
    if params_are_inputs:  # overridable initializers: no longer constants for either runtime
        inputs += [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.dims))
                   for t in inits[:6]]
    graph = helper.make_graph(nodes, "conv_bn", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.parametrize("act", [
    helper.make_node("Relu", ["i"], ["y"]),
    helper.make_node("Clip", ["i", "lo", "hi"], ["y"]),
    helper.make_node("LeakyRelu", ["i"], ["y"], alpha=0.2),
    helper.make_node("HardSigmoid", ["i"], ["y"], alpha=0.3, beta=0.4),
    helper.make_node("Sigmoid", ["i"], ["y"]),
    helper.make_node("HardSwish", ["i"], ["y"]),  # nxrt's own FusedConv
    helper.make_node("Softplus", ["i"], ["y"]),  # no FusedConv form: BN folds, it stays
], ids=["relu", "clip", "leaky", "hardsigmoid", "sigmoid", "hardswish", "softplus"])
def test_conv_batchnorm_activation_fusions_match_onnxruntime(act):
    model = _conv_bn_act_model(act)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    expected = _ort(model).run(None, {"x": x})[0]
    for level in (nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL,
                  nxrt.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                  nxrt.GraphOptimizationLevel.ORT_ENABLE_ALL):
        got = _nxrt(model, level=level).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def _profiled_ops(model, feeds, **kwargs):
    """The op types a run of the optimized model executes, from nxrt's profile."""
    import json
    import os
    options = nxrt.SessionOptions()
    options.enable_profiling = True
    sess = nxrt.InferenceSession(model, options, **kwargs)
    sess.run(None, feeds)
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    return sorted({e["args"]["op_name"] for e in events
                   if e.get("cat") == "Node" and "op_name" in e.get("args", {})})


def test_fusion_shows_in_the_profile_and_can_be_disabled():
    model = _conv_bn_act_model(helper.make_node("Relu", ["i"], ["y"]))
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)

    def ops_run(**kwargs):
        return _profiled_ops(model, {"x": x}, **kwargs)

    assert ops_run() == ["FusedConv"]
    assert ops_run(disabled_optimizers=["fuse_conv_activation"]) == ["Conv", "Relu"]
    assert ops_run(disabled_optimizers=["fuse_conv_batchnorm", "fuse_conv_batchnorm_runtime",
                                        "fuse_conv_activation", "eliminate_identity"]) == [
        "BatchNormalization", "Conv", "Identity", "Relu"]
    with pytest.raises(nxrt.InvalidArgument, match="'nonsense', which is not a graph pass"):
        nxrt.InferenceSession(model, disabled_optimizers=["nonsense"])


def _silu_model(mul_inputs):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", mul_inputs, ["y"])]
    w = numpy_helper.from_array(RNG.standard_normal((5, 3, 3, 3)).astype(np.float32), "w")
    graph = helper.make_graph(nodes, "silu", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model.SerializeToString()


@pytest.mark.parametrize("mul_inputs", [["c", "s"], ["s", "c"]], ids=["x*s", "s*x"])
def test_conv_silu_fuses_and_matches_onnxruntime(mul_inputs):
    model = _silu_model(mul_inputs)
    x = RNG.standard_normal((1, 3, 9, 9)).astype(np.float32)
    expected = _ort(model).run(None, {"x": x})[0]
    for threads in (1, 2):
        np.testing.assert_allclose(_nxrt(model, threads).run(None, {"x": x})[0], expected,
                                   rtol=1e-4, atol=1e-5)


def test_silu_whose_sigmoid_is_read_elsewhere_is_not_fused():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("Mul", ["x", "s"], ["y"]),
             helper.make_node("Neg", ["s"], ["z"])]
    graph = helper.make_graph(nodes, "silu_shared", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    x = np.linspace(-4, 4, 7).astype(np.float32)
    y, z = _nxrt(model.SerializeToString()).run(None, {"x": x})
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(y, x * s, rtol=1e-5)
    np.testing.assert_allclose(z, -s, rtol=1e-5)


@pytest.mark.parametrize("alpha", [None, 1.0, 0.5])
def test_quick_gelu_matches_onnxruntime(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    node = helper.make_node("QuickGelu", ["x"], ["y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "qg", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 1000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    data = model.SerializeToString()
    x = (RNG.standard_normal((3, 1000)) * 6).astype(np.float32)
    got = _nxrt(data).run(None, {"x": x})[0]
    # onnxruntime's own sigmoid approximation is off by ~1e-6 absolute on tiny outputs.
    np.testing.assert_allclose(got, _ort(data).run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)
    a = 1.702 if alpha is None else alpha
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got, x64 / (1 + np.exp(-a * x64)), rtol=1e-5, atol=1e-7)


def _int8_matmul_model(op, a_type, b_type, with_zero_points, per_column, batch_dims, b_const=True):
    """MatMulInteger or com.microsoft MatMulIntegerToFloat on 8-bit inputs: the model, its
    feeds and the exact result (int64 sums in numpy, then scaled for the float form)."""
    K, N = 37, 50
    a_np = np.int8 if a_type == TensorProto.INT8 else np.uint8
    b_np = np.int8 if b_type == TensorProto.INT8 else np.uint8
    b = RNG.integers(np.iinfo(b_np).min, np.iinfo(b_np).max + 1, (K, N)).astype(b_np)
    inits = []
    inputs = [helper.make_tensor_value_info("a", a_type, batch_dims + [K])]
    if b_const:
        inits.append(numpy_helper.from_array(b, "b"))
    else:
        inputs.append(helper.make_tensor_value_info("b", b_type, [K, N]))
    names = ["a", "b"]
    az, bz, scale = 0, np.zeros(N, np.int64), None
    if op == "MatMulIntegerToFloat":
        inits.append(numpy_helper.from_array(np.array(0.02, np.float32), "a_scale"))
        scale = RNG.uniform(0.001, 0.01, N if per_column else ()).astype(np.float32)
        inits.append(numpy_helper.from_array(np.asarray(scale), "b_scale"))
        names += ["a_scale", "b_scale"]
    if with_zero_points:
        az = 3 if a_np == np.int8 else 131
        inits.append(numpy_helper.from_array(np.array(az, a_np), "az"))
        bz = RNG.integers(-4, 5, N if per_column else ()) + (0 if b_np == np.int8 else 128)
        inits.append(numpy_helper.from_array(np.asarray(bz).astype(b_np), "bz"))
        names += ["az", "bz"]
    out_type = TensorProto.FLOAT if op == "MatMulIntegerToFloat" else TensorProto.INT32
    domain = "com.microsoft" if op == "MatMulIntegerToFloat" else ""
    node = helper.make_node(op, names, ["y"], domain=domain)
    graph = helper.make_graph([node], "q", inputs, [helper.make_tensor_value_info("y", out_type, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    feeds = {"a": RNG.integers(np.iinfo(a_np).min, np.iinfo(a_np).max + 1,
                               batch_dims + [K]).astype(a_np)}
    if not b_const:
        feeds["b"] = b
    exact = (feeds["a"].astype(np.int64) - az) @ (b.astype(np.int64) - np.asarray(bz, np.int64))
    if op == "MatMulIntegerToFloat":
        exact = exact.astype(np.float64) * (np.float64(np.float32(0.02)) * scale.astype(np.float64))
    return model.SerializeToString(), feeds, exact


@pytest.mark.parametrize("op", ["MatMulInteger", "MatMulIntegerToFloat"])
@pytest.mark.parametrize("types", [(TensorProto.UINT8, TensorProto.INT8),
                                   (TensorProto.UINT8, TensorProto.UINT8),
                                   (TensorProto.INT8, TensorProto.INT8)], ids=["u8s8", "u8u8", "s8s8"])
@pytest.mark.parametrize("zero_points", [False, True], ids=["", "zp"])
@pytest.mark.parametrize("per_column", [False, True], ids=["tensor", "column"])
@pytest.mark.parametrize("b_const", [True, False], ids=["const", "fed"])
def test_8bit_matmuls_match_onnxruntime(op, types, zero_points, per_column, b_const):
    if op == "MatMulInteger" and types == (TensorProto.INT8, TensorProto.INT8):
        pytest.skip("onnxruntime's CPU MatMulInteger has no int8 x int8 kernel")
    model, feeds, exact = _int8_matmul_model(op, *types, zero_points, per_column, [2, 30], b_const)
    expected = _ort(model).run(None, feeds)[0]
    # onnxruntime's u8s8 kernel on AVX2 without VNNI (vpmaddubsw) saturates pair sums at
    # int16 on full-range data, so its answer is compared only where it is the exact one.
    ort_exact = np.allclose(expected, exact, rtol=1e-5, atol=1e-5)
    for threads in (1, 2):
        got = _nxrt(model, threads).run(None, feeds)[0]
        if op == "MatMulInteger":
            np.testing.assert_array_equal(got, exact)
            if ort_exact:
                np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)
            if ort_exact:
                np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_qdq_matmul_fuses_and_matches_onnxruntime():
    K, N = 64, 48
    # 7-bit weights: onnxruntime's u8s8 kernel on AVX2 without VNNI sums pairs of products
    # in int16, which full-range weights overflow (test_8bit_matmuls_match_onnxruntime
    # checks full-range data against the exact sums).
    w = RNG.integers(-63, 64, (K, N)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "wq"),
             numpy_helper.from_array(RNG.uniform(0.001, 0.01, N).astype(np.float32), "ws"),
             numpy_helper.from_array(np.zeros(N, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["y"]),
             helper.make_node("Relu", ["xd"], ["r"])]  # a second reader keeps the DQ
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                           [3, 20, K])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("r", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    x = RNG.standard_normal((3, 20, K)).astype(np.float32) * 3
    assert _profiled_ops(data, {"x": x}) == [
        "DequantizeLinear", "MatMulIntegerToFloat", "QuantizeLinear", "Relu"]
    expected = _ort(data, ort.GraphOptimizationLevel.ORT_ENABLE_ALL).run(None, {"x": x})
    for level in (nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL,
                  nxrt.GraphOptimizationLevel.ORT_ENABLE_ALL):
        got = _nxrt(data, level=level).run(None, {"x": x})
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("b_shape", [[2, 3, 32, 40], [32, 40]], ids=["batched", "shared"])
@pytest.mark.parametrize("b_type", [TensorProto.INT8, TensorProto.UINT8], ids=["s8", "u8"])
def test_qdq_matmul_of_two_activations_fuses_and_matches_onnxruntime(b_shape, b_type):
    # Attention's Q K^T in a QDQ model: both operands are quantized activations.
    b_np = np.int8 if b_type == TensorProto.INT8 else np.uint8
    c = lambda name, v, t=np.float32: numpy_helper.from_array(np.array(v, t), name)  # noqa: E731
    inits = [c("xs", 0.04), c("xz", 120, np.uint8), c("ks", 0.03), c("kz", 3 if b_np == np.int8 else 125, b_np)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("QuantizeLinear", ["k", "ks", "kz"], ["kq"]),
             helper.make_node("DequantizeLinear", ["kq", "ks", "kz"], ["kd"]),
             helper.make_node("MatMul", ["xd", "kd"], ["y"])]
    graph = helper.make_graph(nodes, "qk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("k", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    feeds = {"x": RNG.standard_normal([2, 3, 37, 32]).astype(np.float32) * 2,
             "k": RNG.standard_normal(b_shape).astype(np.float32) * 2}
    assert _profiled_ops(data, feeds) == ["MatMulIntegerToFloat", "QuantizeLinear"]
    expected = _ort(data, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, feeds)[0]
    for threads in (1, 2):
        got = _nxrt(data, threads).run(None, feeds)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _gelu_graph_model(nodes, inits, opset):
    """The written-out Gelu `nodes` as a model from float x [4, 300] to y."""
    graph = helper.make_graph(nodes, "gelu", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 300])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def _decomposed_gelu(form, opset):
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    inits = [c("sqrt2", 1.4142135381698608), c("inv_sqrt2", 0.7071067690849304), c("one", 1.0),
             c("half", 0.5)]
    scale = (helper.make_node("Div", ["x", "sqrt2"], ["s"]) if form != "mul_scale"
             else helper.make_node("Mul", ["inv_sqrt2", "x"], ["s"]))
    nodes = [scale, helper.make_node("Erf", ["s"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"])]
    if form == "half_of_sum":
        nodes += [helper.make_node("Mul", ["half", "a"], ["h"]),
                  helper.make_node("Mul", ["x", "h"], ["y"])]
    elif form == "half_first":
        nodes += [helper.make_node("Mul", ["x", "half"], ["h"]),
                  helper.make_node("Mul", ["h", "a"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["x", "a"], ["m"]),
                  helper.make_node("Mul", ["m", "half"], ["y"])]
    return _gelu_graph_model(nodes, inits, opset)


@pytest.mark.parametrize("form", ["half_last", "half_first", "half_of_sum", "mul_scale"])
@pytest.mark.parametrize("opset", [13, 20])
def test_decomposed_gelu_fuses_and_matches_onnxruntime(form, opset):
    model = _decomposed_gelu(form, opset)
    x = (RNG.standard_normal((4, 300)) * 4).astype(np.float32)
    assert _profiled_ops(model, {"x": x}) == ["Gelu"]
    expected = _ort(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(_nxrt(model).run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)


def _decomposed_tanh_gelu(cubic, tail, opset):
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    inits = [c("k", 0.044715), c("three", 3.0), c("sqrt_2_pi", 0.7978845834732056),
             c("one", 1.0), c("half", 0.5)]
    mul = helper.make_node
    if cubic == "jax":  # x * (x * (0.044715 * x)), as jax2tf writes it (Magika)
        nodes = [mul("Mul", ["k", "x"], ["c1"]), mul("Mul", ["x", "c1"], ["c2"]),
                 mul("Mul", ["x", "c2"], ["cubic"])]
    elif cubic == "chain":  # ((x * x) * x) * 0.044715
        nodes = [mul("Mul", ["x", "x"], ["c1"]), mul("Mul", ["c1", "x"], ["c2"]),
                 mul("Mul", ["c2", "k"], ["cubic"])]
    else:  # Pow(x, 3) * 0.044715
        nodes = [mul("Pow", ["x", "three"], ["c1"]), mul("Mul", ["c1", "k"], ["cubic"])]
    nodes += [mul("Add", ["x", "cubic"], ["s"]), mul("Mul", ["sqrt_2_pi", "s"], ["u"]),
              mul("Tanh", ["u"], ["t"]), mul("Add", ["one", "t"], ["a"])]
    if tail == "half_of_sum":
        nodes += [mul("Mul", ["half", "a"], ["h"]), mul("Mul", ["x", "h"], ["y"])]
    else:
        nodes += [mul("Mul", ["x", "a"], ["m"]), mul("Mul", ["m", "half"], ["y"])]
    return _gelu_graph_model(nodes, inits, opset)


@pytest.mark.parametrize("cubic", ["jax", "chain", "pow"])
@pytest.mark.parametrize("tail", ["half_last", "half_of_sum"])
@pytest.mark.parametrize("opset", [13, 20])
def test_decomposed_tanh_gelu_fuses_and_matches_onnxruntime(cubic, tail, opset):
    model = _decomposed_tanh_gelu(cubic, tail, opset)
    x = (RNG.standard_normal((4, 300)) * 4).astype(np.float32)
    assert _profiled_ops(model, {"x": x}) == ["FastGelu" if opset < 20 else "Gelu"]
    expected = _ort(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, {"x": x})[0]
    # The written-out form cancels in 1 + tanh for very negative x: absolute tolerance.
    np.testing.assert_allclose(_nxrt(model).run(None, {"x": x})[0], expected, rtol=1e-5, atol=2e-6)


def test_tanh_gelu_with_another_coefficient_is_left_alone():
    model = onnx.load_from_string(_decomposed_tanh_gelu("pow", "half_last", 20))
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array(0.05, np.float32), "k"))
    data = model.SerializeToString()
    x = (RNG.standard_normal((4, 300)) * 4).astype(np.float32)
    assert "Tanh" in _profiled_ops(data, {"x": x})
    expected = _ort(data, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, {"x": x})[0]
    np.testing.assert_allclose(_nxrt(data).run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-6)


def _safe_softmax_model(zero, axis, shape):
    nodes = [helper.make_node("Softmax", ["x"], ["p"], axis=axis),
             helper.make_node("IsNaN", ["p"], ["nan"]),
             helper.make_node("Where", ["nan", "zero", "p"], ["y"])]
    graph = helper.make_graph(nodes, "safe_softmax", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array(zero, np.float32), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.parametrize("n", [5, 100])
@pytest.mark.parametrize("axis", [-1, 1])
def test_safe_softmax_fuses_and_zeroes_masked_rows(n, axis):
    # PyTorch's masked attention: rows of -inf scores give NaN, which Where(IsNaN) zeroes.
    shape = [2, 3, 4, n]
    model = _safe_softmax_model(0.0, axis, shape)
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    x[0, 1, 2, :] = -np.inf
    x[1, 2, :, :] = -np.inf
    x[1, 0, 3, n // 2] = np.nan
    x[0, 2, 1, 1] = np.inf
    assert _profiled_ops(model, {"x": x}) == ["SafeSoftmax"]
    expected = _ort(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, {"x": x})[0]
    assert not np.isnan(expected).any() and (expected == 0).any()
    for threads in (1, 2):
        got = _nxrt(model, threads).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_where_of_another_value_is_not_a_safe_softmax():
    model = _safe_softmax_model(0.5, -1, [3, 8])
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    x[1] = -np.inf
    assert _profiled_ops(model, {"x": x}) == ["IsNaN", "Softmax", "Where"]
    expected = _ort(model, ort.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, {"x": x})[0]
    np.testing.assert_allclose(_nxrt(model).run(None, {"x": x})[0], expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("act", [helper.make_node("Relu", ["i"], ["y"]),
                                 helper.make_node("Softplus", ["i"], ["y"])], ids=["relu", "softplus"])
def test_run_time_batchnorm_fusion_matches_onnxruntime(act):
    # Weights and BN parameters are graph inputs: the BN is applied per run inside nxrt's
    # FusedConv, and fed parameters take effect.
    model = _conv_bn_act_model(act, params_are_inputs=True)
    x = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
    ops = _profiled_ops(model, {"x": x})
    assert ops == (["FusedConv"] if act.op_type == "Relu" else ["FusedConv", "Softplus"])
    feeds = {"x": x, "var": RNG.uniform(0.1, 3.0, 6).astype(np.float32),
             "w": RNG.standard_normal((6, 3, 3, 3)).astype(np.float32)}
    for f in ({"x": x}, feeds):
        expected = _ort(model).run(None, f)[0]
        for threads in (1, 2):
            np.testing.assert_allclose(_nxrt(model, threads).run(None, f)[0], expected,
                                       rtol=1e-4, atol=1e-5)


def _lcnet_block(opset, per_channel_add):
    """Conv -> Mul(a) -> Add(b) -> HardSwish written out -> Mul(c) -> Add(d): PP-LCNet's
    conv block as PaddleOCR exports it (constants as Constant nodes)."""
    c = 8
    const = lambda name, v: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(v, np.float32), name))
    nodes = [
        const("a", [1.3]), const("b", RNG.standard_normal((c, 1, 1)) if per_channel_add else [0.2]),
        const("three", 3.0), const("zero", 0.0), const("six", 6.0), const("six2", 6.0),
        const("c", [0.9]), const("d", [-0.1]),
        helper.make_node("Conv", ["x", "w", "bias"], ["y0"], pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["a", "y0"], ["y1"]),
        helper.make_node("Add", ["y1", "b"], ["y2"]),
        helper.make_node("Add", ["y2", "three"], ["h0"]),
        helper.make_node("Clip", ["h0", "zero", "six"], ["h1"]) if opset >= 11
        else helper.make_node("Clip", ["h0"], ["h1"], min=0.0, max=6.0),
        helper.make_node("Mul", ["y2", "h1"], ["h2"]),
        helper.make_node("Div", ["h2", "six2"], ["h3"]),
        helper.make_node("Mul", ["c", "h3"], ["h4"]),
        helper.make_node("Add", ["h4", "d"], ["y"]),
    ]
    inits = [numpy_helper.from_array(RNG.standard_normal((c, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "bias")]
    graph = helper.make_graph(nodes, "lcnet", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model.SerializeToString()


@pytest.mark.parametrize("opset", [10, 11, 14])
@pytest.mark.parametrize("per_channel_add", [False, True], ids=["scalar", "channel"])
def test_conv_affine_hardswish_affine_becomes_one_fused_conv(opset, per_channel_add):
    model = _lcnet_block(opset, per_channel_add)
    x = (RNG.standard_normal((1, 3, 12, 12)) * 2).astype(np.float32)
    assert _profiled_ops(model, {"x": x}) == ["FusedConv"]
    expected = _ort(model).run(None, {"x": x})[0]
    for threads in (1, 2):
        np.testing.assert_allclose(_nxrt(model, threads).run(None, {"x": x})[0], expected,
                                   rtol=1e-4, atol=1e-5)
    off = _nxrt(model, level=nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL).run(None, {"x": x})[0]
    np.testing.assert_allclose(off, expected, rtol=1e-4, atol=1e-5)


def _residual_block(z_shape, conv_x_shape, op="Add", weights_by_constant_of_shape=False):
    """Conv -> Add/Sum(Z) -> Relu, Z a graph input of shape Z_SHAPE; the conv's weight
    made by ConstantOfShape + Mul when asked (as the light_* models do)."""
    c = conv_x_shape[1]
    w = RNG.standard_normal((c, c, 3, 3)).astype(np.float32) * 0.2
    b = RNG.standard_normal(c).astype(np.float32)
    nodes, inits = [], [numpy_helper.from_array(b, "b")]
    if weights_by_constant_of_shape:
        inits += [numpy_helper.from_array(np.array(w.shape, np.int64), "wshape"),
                  numpy_helper.from_array(w, "wscale")]
        nodes += [helper.make_node("ConstantOfShape", ["wshape"], ["ones"],
                                   value=numpy_helper.from_array(np.ones(1, np.float32))),
                  helper.make_node("Mul", ["ones", "wscale"], ["w"])]
    else:
        inits.append(numpy_helper.from_array(w, "w"))
    nodes += [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
              helper.make_node(op, ["z", "c"], ["s"]),
              helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "res", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                             helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": RNG.standard_normal(conv_x_shape).astype(np.float32),
             "z": RNG.standard_normal(z_shape).astype(np.float32)}
    return model.SerializeToString(), feeds


@pytest.mark.parametrize("op", ["Add", "Sum"])
@pytest.mark.parametrize("z_shape,x_shape", [
    ((2, 16, 20, 24), (2, 16, 20, 24)),   # a residual connection: equal shapes
    ((1, 16, 1, 1), (2, 16, 20, 24)),     # Z broadcasts into the conv's output
    ((2, 16, 20, 24), (2, 16, 1, 1)),     # the conv's output broadcasts into Z's shape
    ((24,), (1, 16, 5, 24))])
def test_conv_add_relu_fuses_and_matches_onnxruntime(op, z_shape, x_shape):
    data, feeds = _residual_block(z_shape, x_shape, op)
    assert _profiled_ops(data, feeds) == ["FusedConv"]
    want = _ort(data).run(None, feeds)[0]
    for threads in (1, 2):
        got = _nxrt(data, threads=threads).run(None, feeds)[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    got = _nxrt(data, disabled_optimizers=["fuse_conv_add"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_constant_folding_lets_computed_weights_fuse():
    # The weight is ConstantOfShape * constant: folded before the fusions, which then
    # leave one node; the same numbers with the pass off (the planner folds instead).
    data, feeds = _residual_block((1, 8, 9, 9), (1, 8, 9, 9), weights_by_constant_of_shape=True)
    assert _profiled_ops(data, feeds) == ["FusedConv"]
    want = _ort(data).run(None, feeds)[0]
    for kwargs in ({}, {"disabled_optimizers": ["fold_constants"]}):
        np.testing.assert_allclose(_nxrt(data, **kwargs).run(None, feeds)[0], want,
                                   rtol=1e-4, atol=1e-4)


def _bn_chain_model(rank_known, mul_shape, act):
    """Concat(a, b) -> BatchNormalization -> Mul -> Add -> activation, as DenseNet's
    pre-activation blocks write it. The inputs' shapes are declared only if RANK_KNOWN."""
    c = 6
    shape = [2, 3, 5, 7] if rank_known else None
    inits = [numpy_helper.from_array((RNG.random(c) + 0.5).astype(np.float32), "scale"),
             numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "bias"),
             numpy_helper.from_array(RNG.standard_normal(c).astype(np.float32), "mean"),
             numpy_helper.from_array((RNG.random(c) + 0.1).astype(np.float32), "var"),
             numpy_helper.from_array(RNG.standard_normal(mul_shape).astype(np.float32), "k"),
             numpy_helper.from_array(RNG.standard_normal((c, 1, 1)).astype(np.float32), "d")]
    nodes = [helper.make_node("Concat", ["a", "b"], ["x"], axis=1),
             helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["n"],
                              epsilon=1e-3),
             helper.make_node("Mul", ["n", "k"], ["m"]),
             helper.make_node("Add", ["d", "m"], ["s"]),
             act]
    graph = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
                                            for n in ("a", "b")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    feeds = {n: RNG.standard_normal((2, 3, 5, 7)).astype(np.float32) for n in ("a", "b")}
    return model.SerializeToString(), feeds


@pytest.mark.parametrize("act", [helper.make_node("Relu", ["s"], ["y"]),
                                 helper.make_node("LeakyRelu", ["s"], ["y"], alpha=0.2),
                                 helper.make_node("Clip", ["s", "", "hi"], ["y"]),
                                 helper.make_node("Identity", ["s"], ["y"])],
                         ids=["relu", "leaky", "clip", "none"])
@pytest.mark.parametrize("mul_shape", [(6, 1, 1), (1, 6, 1, 1), (1,)], ids=["c11", "1c11", "scalar"])
def test_batchnorm_mul_add_activation_becomes_one_channel_affine(act, mul_shape):
    data, feeds = _bn_chain_model(True, mul_shape, act)
    if act.op_type == "Clip":
        import onnx
        m = onnx.load_from_string(data)
        m.graph.initializer.append(numpy_helper.from_array(np.array(0.7, np.float32), "hi"))
        data = m.SerializeToString()
    # (An Identity that writes a graph output stays.)
    assert [op for op in _profiled_ops(data, feeds) if op != "Identity"] == ["ChannelAffine",
                                                                            "Concat"]
    want = _ort(data).run(None, feeds)[0]
    for threads in (1, 2):
        np.testing.assert_allclose(_nxrt(data, threads=threads).run(None, feeds)[0], want,
                                   rtol=1e-5, atol=1e-5)
    off = _nxrt(data, disabled_optimizers=["fuse_batchnorm_affine"])
    np.testing.assert_allclose(off.run(None, feeds)[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rank_known,mul_shape", [
    (False, (6, 1, 1)),      # the rank of BN's input is unknown: [6, 1, 1] may not be per channel
    (True, (1, 1, 6, 1, 1)),  # rank 5: the Mul broadcasts its input to a new shape
    (True, (5, 1))])          # aligned with H and W, not the channels
def test_batchnorm_chain_keeps_mul_it_cannot_prove_per_channel(rank_known, mul_shape):
    data, feeds = _bn_chain_model(rank_known, mul_shape, helper.make_node("Relu", ["s"], ["y"]))
    assert "Mul" in _profiled_ops(data, feeds)
    want = _ort(data).run(None, feeds)[0]
    got = _nxrt(data).run(None, feeds)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _one_hot_matmul_model(a_shape, r_values, w, index_type=TensorProto.INT32, classes_first=False):
    """Equal(A, R) -> Cast(float) -> MatMul(W): a one-hot embedding as jax2tf writes it."""
    np_type = np.int32 if index_type == TensorProto.INT32 else np.int64
    r = numpy_helper.from_array(np.asarray(r_values, dtype=np_type).reshape(1, 1, -1), "r")
    equal_inputs = ["r", "a"] if classes_first else ["a", "r"]
    nodes = [helper.make_node("Equal", equal_inputs, ["hot"]),
             helper.make_node("Cast", ["hot"], ["hot_f"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["hot_f", "w"], ["y"])]
    graph = helper.make_graph(
        nodes, "one_hot", [helper.make_tensor_value_info("a", index_type, a_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [r, numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.parametrize("index_type", [TensorProto.INT32, TensorProto.INT64])
@pytest.mark.parametrize("classes", ["counting", "shuffled"])
@pytest.mark.parametrize("a_last", [1, 9])
@pytest.mark.parametrize("classes_first", [False, True])
def test_one_hot_matmul_fuses_and_matches_onnxruntime(index_type, classes, a_last, classes_first):
    K, N = 9, 5
    r = np.arange(K) if classes == "counting" else RNG.permutation(K)
    w = RNG.standard_normal((K, N)).astype(np.float32)
    model = _one_hot_matmul_model([2, 6, a_last], r, w, index_type, classes_first)
    np_type = np.int32 if index_type == TensorProto.INT32 else np.int64
    # Indices in range, out of it on both sides, and far outside.
    a = RNG.integers(-2, K + 2, size=(2, 6, a_last)).astype(np_type)
    a.flat[0] = np.iinfo(np_type).max
    for threads in (1, 2):
        got = _nxrt(model, threads).run(None, {"a": a})[0]
        np.testing.assert_allclose(got, _ort(model).run(None, {"a": a})[0], rtol=1e-6, atol=1e-7)
    assert _profiled_ops(model, {"a": a}) == ["OneHotMatMul"]
    assert _profiled_ops(model, {"a": a}, disabled_optimizers=["fuse_one_hot_matmul"]) == [
        "Cast", "Equal", "MatMul"]


def test_one_hot_matmul_keeps_the_product_for_infinite_weights():
    # 0 * inf is NaN: the product spreads an infinity over every row, a lookup would not.
    w = RNG.standard_normal((4, 3)).astype(np.float32)
    w[2, 1] = np.inf
    model = _one_hot_matmul_model([5, 1], np.arange(4), w)
    a = np.array([[0], [1], [2], [3], [7]], dtype=np.int32)
    assert "OneHotMatMul" not in _profiled_ops(model, {"a": a})
    np.testing.assert_array_equal(_nxrt(model).run(None, {"a": a})[0],
                                  _ort(model).run(None, {"a": a})[0])


def test_one_hot_matmul_rejects_indices_that_do_not_broadcast():
    model = _one_hot_matmul_model([2, None], np.arange(4), np.ones((4, 3), np.float32))
    with pytest.raises(nxrt.InvalidArgument, match="OneHotMatMul.*do not broadcast"):
        _nxrt(model).run(None, {"a": np.zeros((2, 3), np.int32)})


def _shape_computation_model(batch):
    """y = Reshape(x, Concat(Shape(x)[0:1], [-1])) with x's batch BATCH (a number or a
    symbol)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "zero", "one"], ["b"]),
             helper.make_node("Concat", ["b", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_shapes_of_fixed_dims_fold_into_constants():
    data = _shape_computation_model(2)
    feeds = {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32)}
    want = feeds["x"].reshape(2, 12)
    # fold_shapes turns Shape into a constant, fold_constants the rest: one Reshape runs.
    assert _profiled_ops(data, feeds) == ["Reshape"]
    assert _profiled_ops(data, feeds, disabled_optimizers=["fold_shapes"]) == [
        "Concat", "Reshape", "Shape", "Slice"]
    for kwargs in ({}, {"disabled_optimizers": ["fold_shapes"]}):
        np.testing.assert_array_equal(_nxrt(data, **kwargs).run(None, feeds)[0], want)
    # A fixed dim is enforced at run time, so the folded shape cannot go stale.
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidArgument):
        _nxrt(data).run(None, {"x": np.zeros((3, 3, 4), np.float32)})


def test_shapes_of_symbolic_dims_stay_computed():
    data = _shape_computation_model("batch")
    assert "Shape" in _profiled_ops(data, {"x": np.zeros((5, 3, 4), np.float32)})
    for n in (1, 5):
        x = RNG.standard_normal((n, 3, 4)).astype(np.float32)
        np.testing.assert_array_equal(_nxrt(data).run(None, {"x": x})[0], x.reshape(n, 12))


def test_free_dimension_overrides_let_shapes_fold():
    data = _shape_computation_model("batch")
    so = nxrt.SessionOptions()
    so.add_free_dimension_override_by_name("batch", 2)
    so.enable_profiling = True
    sess = nxrt.InferenceSession(data, so)
    assert sess.get_inputs()[0].shape == [2, 3, 4]
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x.reshape(2, 12))
    import json
    import os
    path = sess.end_profiling()
    with open(path) as f:
        ops = {e["args"]["op_name"] for e in json.load(f)
               if e.get("cat") == "Node" and "op_name" in e.get("args", {})}
    os.remove(path)
    assert ops == {"Reshape"}
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidArgument):
        sess.run(None, {"x": np.zeros((3, 3, 4), np.float32)})


def _nchwc_sum_model(z_shape):
    # Relu's output z dies at the blocked convolution, so the convolution may write its
    # output over z's block (Kernel::output0_overwrites_input).
    nodes = [helper.make_node("Relu", ["zin"], ["z"]),
             helper.make_node("NchwcConv", ["x", "w", "", "z"], ["c"], domain="nxrt"),
             helper.make_node("Neg", ["c"], ["y"])]
    graph = helper.make_graph(
        nodes, "nchwc_sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4, 16]),
         helper.make_tensor_value_info("zin", TensorProto.FLOAT, z_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(RNG.standard_normal((16, 16, 1, 1)).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("nxrt", 1)])
    model.ir_version = 8
    return model.SerializeToString(), model.graph.initializer[0]


def test_blocked_conv_over_a_dying_sum_input_checks_its_shape():
    model, w_init = _nchwc_sum_model([1, 1, 4, 4, 16])
    try:
        session = _nxrt(model)
    except nxrt.NotImplemented:
        pytest.skip("no blocked convolutions on this CPU")
    x = RNG.standard_normal((1, 1, 4, 4, 16)).astype(np.float32)
    zin = RNG.standard_normal((1, 1, 4, 4, 16)).astype(np.float32)
    w = numpy_helper.to_array(w_init)[:, :, 0, 0]  # [out, in]
    expected = -(np.einsum("nbhwi,oi->nbhwo", x, w) + np.maximum(zin, 0))
    for _ in range(3):
        np.testing.assert_allclose(session.run(None, {"x": x, "zin": zin})[0], expected,
                                   rtol=1e-5, atol=1e-5)
    bad, _ = _nchwc_sum_model([1, 1, 4, 3, 16])
    with pytest.raises(nxrt.InvalidArgument, match="sum input Z is tensor.float. .1,1,4,3,16."):
        _nxrt(bad).run(None, {"x": x, "zin": np.zeros((1, 1, 4, 3, 16), np.float32)})


def _snake_model(x_shape, alpha_shape, square="pow", swap=False, r_shape=None):
    """y = x + r * sin(alpha * x)^2 as the vocoder exports write it."""
    c = alpha_shape[-2]
    alpha = RNG.uniform(0.2, 3.0, alpha_shape).astype(np.float32)
    r = RNG.uniform(0.1, 2.0, r_shape or alpha_shape).astype(np.float32)
    first, second = (["alpha", "x"], ["p", "r"]) if swap else (["x", "alpha"], ["r", "p"])
    nodes = [helper.make_node("Mul", first, ["ax"]),
             helper.make_node("Sin", ["ax"], ["s"]),
             helper.make_node("Pow", ["s", "two"], ["p"]) if square == "pow"
             else helper.make_node("Mul", ["s", "s"], ["p"]),
             helper.make_node("Mul", second, ["m"]),
             helper.make_node("Add", ["m", "x"] if swap else ["x", "m"], ["y"])]
    graph = helper.make_graph(nodes, "snake", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(alpha, "alpha"), numpy_helper.from_array(r, "r"),
         numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    assert c >= 1
    return model.SerializeToString()


@pytest.mark.parametrize("x_shape,alpha_shape,square,swap", [
    ([2, 4, 3000], [1, 4, 1], "pow", False),
    ([1, 3, 77], [3, 1], "mul", True),
    ([4, 1000], [1, 4, 1], "pow", True),   # x broadcast up to [1, 4, 1000]
    ([2, 1, 50], [1, 4, 1], "mul", False),  # x's single channel repeated
])
def test_snake_fuses_bit_for_bit(x_shape, alpha_shape, square, swap):
    model = _snake_model(x_shape, alpha_shape, square, swap)
    x = (RNG.standard_normal(x_shape) * 3).astype(np.float32)
    x.flat[::97] *= 5000.0  # past the vector sine's range: its double-precision path
    assert _profiled_ops(model, {"x": x}) == ["Snake"]
    unfused = _nxrt(model, disabled_optimizers=["fuse_snake"]).run(None, {"x": x})[0]
    expected = _ort(model).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = _nxrt(model, threads).run(None, {"x": x})[0]
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, unfused)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_snake_with_unlike_alpha_and_r_is_left_alone():
    model = _snake_model([1, 4, 16], [1, 4, 1], r_shape=[1, 1, 1])
    x = RNG.standard_normal((1, 4, 16)).astype(np.float32)
    assert "Snake" not in _profiled_ops(model, {"x": x})
    np.testing.assert_allclose(_nxrt(model).run(None, {"x": x})[0],
                               _ort(model).run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
