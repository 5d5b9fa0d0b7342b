"""Kernels that split large tensors across intra-op threads: the same results on 1 and 2
threads as numpy (or onnxruntime), over sizes big enough to take the threaded paths."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import nxrt

RNG = np.random.default_rng(3)


def _run(node, inputs, threads, opset=17):
    graph = helper.make_graph(
        [node], "t",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(v.shape))
         for name, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    data = model.SerializeToString()
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = threads
    got = nxrt.InferenceSession(data, options).run(None, inputs)[0]
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    return got, expected


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("threads", [1, 2])
def test_large_concat(axis, threads):
    shapes = [(3, 40, 700), (3, 40, 700), (3, 40, 700)]
    shapes = [tuple(s if d != axis else s + 7 * i for d, s in enumerate(shape))
              for i, shape in enumerate(shapes)]
    inputs = {f"x{i}": RNG.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    got, expected = _run(helper.make_node("Concat", list(inputs), ["y"], axis=axis), inputs,
                         threads)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("threads", [1, 2])
def test_large_broadcast_binary_and_batchnorm(threads):
    x = RNG.standard_normal((2, 64, 60, 70)).astype(np.float32)
    bias = RNG.standard_normal((64, 1, 70)).astype(np.float32)
    got, expected = _run(helper.make_node("Add", ["x", "b"], ["y"]), {"x": x, "b": bias}, threads)
    np.testing.assert_array_equal(got, expected)
    params = {n: RNG.uniform(0.5, 1.5, 64).astype(np.float32)
              for n in ("scale", "beta", "mean", "var")}
    got, expected = _run(helper.make_node("BatchNormalization",
                                          ["x", "scale", "beta", "mean", "var"], ["y"]),
                         {"x": x, **params}, threads)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_prelu_per_channel_and_elementwise(threads):
    x = RNG.standard_normal((16, 28, 22, 22)).astype(np.float32)
    for slope_shape in [(28, 1, 1), (28, 22, 22), (22,)]:
        slope = RNG.uniform(0.01, 0.5, slope_shape).astype(np.float32)
        got, expected = _run(helper.make_node("PRelu", ["x", "s"], ["y"]), {"x": x, "s": slope},
                             threads)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("n", [1, 2, 5, 16, 17, 128, 301])
@pytest.mark.parametrize("threads", [1, 2])
def test_softmax_many_short_rows(op, n, threads):
    # Rows of up to 16 go through blocks with one vectorized exp; a detector's class scores.
    x = (RNG.standard_normal((3, 4001, n)) * 8).astype(np.float32)
    x[0, 5, 0] = -np.inf
    x[1, 7, :] = -np.inf  # a row of -inf gives NaN, as in onnxruntime
    x[2, 9, n // 2] = np.nan  # NaN anywhere in a row makes the row NaN
    got, expected = _run(helper.make_node(op, ["x"], ["y"], axis=-1), {"x": x}, threads)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.isnan(got[2, 9]).all() and np.isnan(got[1, 7]).all()
