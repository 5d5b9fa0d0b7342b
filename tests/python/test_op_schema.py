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


# ---- type constraints: what onnxruntime checks when it loads a graph ----------------------

def _value(name, elem, shape=(2,)):
    return helper.make_tensor_value_info(name, elem, list(shape))


def _rejected(node, inputs, outputs, opset=17):
    """The message nxrt rejects the node with; onnxruntime must reject it too."""
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with pytest.raises(Exception, match="Type"):
        import onnxruntime
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph) as error:
        nxrt.InferenceSession(model.SerializeToString())
    return str(error.value)


def test_type_outside_the_opset_constraint_is_named():
    # Relu takes integers from opset 14 on; at 13 an int32 input is a type error.
    message = _rejected(helper.make_node("Relu", ["x"], ["y"], name="r"),
                        [_value("x", TensorProto.INT32)], [_value("y", TensorProto.INT32)], opset=13)
    assert "[Relu] node 'r'" in message
    assert "input 0 ('x', formal X) has type tensor(int32)" in message
    assert "opset 13 of Relu takes T in {tensor(float), tensor(float16), tensor(double), " \
           "tensor(bfloat16)}" in message
    # The same node at opset 14 loads and runs.
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [_value("x", TensorProto.INT32)], [_value("y", TensorProto.INT32)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    (y,) = nxrt.InferenceSession(model.SerializeToString()).run(
        None, {"x": np.array([-3, 4], np.int32)})
    np.testing.assert_array_equal(y, [0, 4])


def test_inputs_sharing_a_type_parameter_must_agree():
    message = _rejected(helper.make_node("Add", ["a", "b"], ["y"], name="add"),
                        [_value("a", TensorProto.FLOAT), _value("b", TensorProto.INT64)],
                        [_value("y", TensorProto.FLOAT)])
    assert "type parameter T of Add is bound to tensor(float) by input 0 ('a') and to " \
           "tensor(int64) by input 1 ('b')" in message


def test_variadic_inputs_share_their_parameter():
    message = _rejected(helper.make_node("Concat", ["a", "b", "c"], ["y"], name="cat", axis=0),
                        [_value("a", TensorProto.FLOAT), _value("b", TensorProto.FLOAT),
                         _value("c", TensorProto.DOUBLE)], [_value("y", TensorProto.FLOAT, [6])])
    assert "bound to tensor(float) by input 0 ('a') and to tensor(double) by input 2 ('c')" \
        in message


def test_fixed_type_formal_is_checked():
    # Reshape's shape input is tensor(int64), whatever the data's type.
    message = _rejected(helper.make_node("Reshape", ["x", "s"], ["y"], name="rs"),
                        [_value("x", TensorProto.FLOAT), _value("s", TensorProto.INT32, [1])],
                        [_value("y", TensorProto.FLOAT)])
    assert "input 1 ('s', formal shape) has type tensor(int32)" in message
    assert "takes tensor(int64) in {tensor(int64)}" in message


def test_sequence_formal_rejects_a_tensor():
    message = _rejected(helper.make_node("SequenceLength", ["x"], ["n"], name="len"),
                        [_value("x", TensorProto.FLOAT)], [_value("n", TensorProto.INT64, [])])
    assert "input 0 ('x', formal input_sequence) has type tensor(float)" in message
    assert "seq(tensor(float))" in message


def test_heterogeneous_loop_carried_values_load():
    # Loop's v_initial is variadic with a type per value: a float and an int64 state.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["f_in"], ["f_out"]),
         helper.make_node("Identity", ["i_in"], ["i_out"])], "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         _value("f_in", TensorProto.FLOAT), _value("i_in", TensorProto.INT64)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         _value("f_out", TensorProto.FLOAT), _value("i_out", TensorProto.INT64)])
    loop = helper.make_node("Loop", ["n", "", "f", "i"], ["f_end", "i_end"], body=body)
    graph = helper.make_graph(
        [loop], "g", [helper.make_tensor_value_info("n", TensorProto.INT64, []),
                      _value("f", TensorProto.FLOAT), _value("i", TensorProto.INT64)],
        [_value("f_end", TensorProto.FLOAT), _value("i_end", TensorProto.INT64)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    f, i = nxrt.InferenceSession(model.SerializeToString()).run(
        None, {"n": np.array(2, np.int64), "f": np.ones(2, np.float32), "i": np.ones(2, np.int64)})
    np.testing.assert_array_equal(f, [1, 1])
    np.testing.assert_array_equal(i, [1, 1])
