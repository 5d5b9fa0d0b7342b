"""The ONNX op spec nxrt checks nodes against (src/ops/op_schema.inc): generated from onnx's
schemas, and every malformed node of a known op rejected at load with a message that names
the node, the op and what is wrong."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nxrt

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_schema_table_is_what_the_generator_makes():
    head = (ROOT / "src" / "ops" / "op_schema.inc").read_text()[:200]
    if f"onnx {onnx.__version__}'s operator schemas" not in head:
        pytest.skip("generated with another onnx version")
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_op_schema.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _session(node, inputs, outputs, opset=17):
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return nxrt.InferenceSession(model.SerializeToString())


def _float(name, shape=(2, 3)):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def test_attribute_of_the_wrong_type_is_named():
    node = helper.make_node("Softmax", ["x"], ["y"], name="soft", axis="last")
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph) as error:
        _session(node, [_float("x")], [_float("y")])
    message = str(error.value)
    assert "soft" in message and "attribute 'axis' is STRING" in message
    assert "Softmax takes INT" in message


def test_missing_required_attribute_is_named():
    node = helper.make_node("Cast", ["x"], ["y"], name="cast")
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph) as error:
        _session(node, [_float("x")], [_float("y")])
    assert "attribute 'to' (INT) is required by opset 17 of Cast" in str(error.value)


def test_too_many_inputs_and_outputs_are_rejected():
    relu = helper.make_node("Relu", ["x", "x"], ["y"], name="r")
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph) as error:
        _session(relu, [_float("x")], [_float("y")])
    assert "has 2 inputs; opset 17 of Relu takes at most 1" in str(error.value)
    split = helper.make_node("Shape", ["x"], ["y", "z"], name="s")
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph) as error:
        _session(split, [_float("x")], [helper.make_tensor_value_info("y", TensorProto.INT64, [2]),
                                          helper.make_tensor_value_info("z", TensorProto.INT64, [2])])
    assert "has 2 outputs; opset 17 of Shape produces at most 1" in str(error.value)


def test_well_formed_variadic_node_still_runs():
    node = helper.make_node("Sum", ["a", "b", "c"], ["y"], name="sum")
    sess = _session(node, [_float("a"), _float("b"), _float("c")], [_float("y")])
    ones = np.ones((2, 3), np.float32)
    (y,) = sess.run(None, {"a": ones, "b": 2 * ones, "c": 3 * ones})
    np.testing.assert_array_equal(y, 6 * ones)
