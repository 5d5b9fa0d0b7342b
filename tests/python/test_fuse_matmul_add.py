"""MatMul by a constant weight followed by the Add of a constant bias becomes one nxrt
MatMulBias (the fuse_matmul_add pass); results match onnxruntime, and patterns whose
rewrite would change anything stay as they are."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt
from profiled_run import profiled_run

RNG = np.random.default_rng(13)


def linear_model(a_shape, k, n, bias_shape=(None,), bias_first=False, weight_is_input=False,
                 product_is_output=False):
    bias_shape = tuple(n if d is None else d for d in bias_shape)
    w = numpy_helper.from_array(RNG.standard_normal((k, n)).astype(np.float32), "w")
    b = numpy_helper.from_array(RNG.standard_normal(bias_shape).astype(np.float32), "b")
    add_inputs = ["b", "p"] if bias_first else ["p", "b"]
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)]
    if weight_is_input:  # an initializer a caller may override: not a constant
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if product_is_output:
        outputs.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["p"]), helper.make_node("Add", add_inputs, ["y"])],
        "linear", inputs, outputs, [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def check(model, a_shape, want_ops):
    a = RNG.standard_normal(a_shape).astype(np.float32)
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"a": a})
    for threads in (1, 2):
        ops, got = profiled_run(model, {"a": a}, threads)
        assert ops == want_ops
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a_shape,k,n", [
    ((1, 128, 384), 384, 1536),  # MiniLM's feed-forward layer
    ((2, 7, 33), 33, 65),        # sizes off every tile
    ((5, 16), 16, 8),            # 2-D
    ((3, 1, 4, 24), 24, 1),      # one column
])
def test_linear_layers_fuse_and_match_onnxruntime(a_shape, k, n):
    check(linear_model(a_shape, k, n), a_shape, ["MatMulBias"])


@pytest.mark.parametrize("bias_shape,bias_first", [((None,), True), ((1,), False), ((), False)])
def test_bias_in_either_place_and_of_one_value(bias_shape, bias_first):
    check(linear_model((2, 9, 40), 40, 24, bias_shape, bias_first), (2, 9, 40), ["MatMulBias"])


@pytest.mark.parametrize("case", ["bias_2d", "weight_is_input", "product_is_output"])
def test_patterns_the_rewrite_would_change_stay_as_they_are(case):
    kwargs = {"bias_2d": {"bias_shape": (1, None)}, "weight_is_input": {"weight_is_input": True},
              "product_is_output": {"product_is_output": True}}[case]
    check(linear_model((2, 9, 40), 40, 24, **kwargs), (2, 9, 40), ["Add", "MatMul"])


def test_a_matmul_bias_node_with_a_bias_of_the_wrong_size_names_it():
    w = numpy_helper.from_array(np.ones((4, 3), np.float32), "w")
    b = numpy_helper.from_array(np.ones(5, np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("MatMulBias", ["a", "w", "b"], ["y"], domain="nxrt", name="lin")],
        "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("nxrt", 1)])
    model.ir_version = 8
    sess = nxrt.InferenceSession(model.SerializeToString())
    with pytest.raises(nxrt.InvalidArgument, match=r"\[MatMulBias\] node 'lin'.*1 or 3 values"):
        sess.run(None, {"a": np.ones((2, 4), np.float32)})
