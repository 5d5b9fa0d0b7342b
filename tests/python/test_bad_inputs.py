"""Malformed models and bad feeds: the exception type and the words that locate the fault."""

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nxrt

ADD_CASE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                                         "onnx-backend-data", "node", "test_add", "model.onnx"))


def _model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model.SerializeToString()


def _vi(name, shape=(2,), dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, list(shape) if shape is not None else None)


def test_not_a_file(tmp_path):
    with pytest.raises(nxrt.NoSuchFile, match="not a regular file"):
        nxrt.InferenceSession(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        nxrt.InferenceSession(str(tmp_path / "missing.onnx"))


def test_wrong_argument_type():
    with pytest.raises(TypeError, match="Unable to load"):
        nxrt.InferenceSession(12345)


def test_empty_and_truncated_model():
    with open(ADD_CASE, "rb") as f:
        data = f.read()
    with pytest.raises(nxrt.InvalidProtobuf, match="empty"):
        nxrt.InferenceSession(b"")
    failures = 0
    for cut in range(1, len(data)):
        try:
            nxrt.InferenceSession(data[:cut])
        except (nxrt.InvalidProtobuf, nxrt.InvalidGraph, nxrt.InvalidArgument) as e:
            failures += 1
            assert str(e)
    assert failures > len(data) // 2


def test_unsupported_ir_version():
    data = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x")], [_vi("y")], ir_version=2)
    with pytest.raises(nxrt.InvalidGraph, match="IR version 2"):
        nxrt.InferenceSession(data)


def test_unknown_op_names_op_domain_opset():
    data = _model([helper.make_node("FrobnicateX", ["x"], ["y"], name="weird")], [_vi("x")], [_vi("y")])
    with pytest.raises(nxrt.NotImplemented, match="FrobnicateX.*ai.onnx.*17") as info:
        nxrt.InferenceSession(data)
    assert "weird" in str(info.value)


def test_unimported_domain():
    data = _model([helper.make_node("Foo", ["x"], ["y"], domain="com.example")], [_vi("x")], [_vi("y")])
    with pytest.raises(nxrt.InvalidGraph, match="com.example"):
        nxrt.InferenceSession(data)


def test_op_version_not_supported():
    data = _model([helper.make_node("Gelu", ["x"], ["y"])], [_vi("x")], [_vi("y")], opset=17)
    with pytest.raises(nxrt.NotImplemented, match="Gelu.*opset 17"):
        nxrt.InferenceSession(data)


def test_input_never_produced():
    data = _model([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")], [_vi("x")], [_vi("y")])
    with pytest.raises(nxrt.InvalidGraph, match="adder.*'ghost'"):
        nxrt.InferenceSession(data)


def test_cycle():
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
             helper.make_node("Relu", ["a"], ["b"], name="n2")]
    data = _model(nodes, [_vi("x")], [_vi("b")])
    with pytest.raises(nxrt.InvalidGraph, match="cycle"):
        nxrt.InferenceSession(data)


def test_node_consumes_own_output():
    data = _model([helper.make_node("Add", ["x", "y"], ["y"], name="selfish")], [_vi("x")], [_vi("y")])
    with pytest.raises(nxrt.InvalidGraph, match="selfish"):
        nxrt.InferenceSession(data)


def test_duplicate_value_names():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="a"),
             helper.make_node("Relu", ["x"], ["y"], name="b")]
    data = _model(nodes, [_vi("x")], [_vi("y")])
    with pytest.raises(nxrt.InvalidGraph, match="duplicate"):
        nxrt.InferenceSession(data)


def test_tensor_size_disagrees_with_shape():
    bad = helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    bad.dims[0] = 5
    data = _model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", (5,))], [_vi("y", (5,))], [bad])
    with pytest.raises(nxrt.InvalidGraph, match="'w'.*3 elements.*\\[5\\]"):
        nxrt.InferenceSession(data)


def test_external_data_outside_folder(tmp_path):
    tensor = helper.make_tensor("w", TensorProto.FLOAT, [2], [1.0, 2.0])
    tensor.ClearField("float_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "../secret.bin"), ("offset", "0"), ("length", "8")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    path = tmp_path / "model.onnx"
    path.write_bytes(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")], [tensor]))
    with pytest.raises(nxrt.InvalidArgument, match="leaves the model's folder"):
        nxrt.InferenceSession(str(path))


def test_external_data_in_folder_and_bounds(tmp_path):
    np.arange(4, dtype=np.float32).tofile(tmp_path / "weights.bin")

    def model_with(offset, length):
        tensor = helper.make_tensor("w", TensorProto.FLOAT, [2], [0.0, 0.0])
        tensor.ClearField("float_data")
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        path = tmp_path / f"model_{offset}.onnx"
        path.write_bytes(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")], [tensor]))
        return str(path)

    s = nxrt.InferenceSession(model_with(8, 8))
    np.testing.assert_allclose(s.run(None, {"x": np.zeros(2, np.float32)})[0], [2.0, 3.0])
    with pytest.raises(nxrt.InvalidGraph, match="exceeds the size"):
        nxrt.InferenceSession(model_with(12, 8))


def test_unsupported_dtype_is_type_error():
    s = nxrt.InferenceSession(ADD_CASE)
    x = np.ones((3, 4, 5), np.complex64)
    with pytest.raises(TypeError, match="complex64.*astype"):
        s.run(None, {"x": x, "y": x})


def test_unknown_input_name():
    s = nxrt.InferenceSession(ADD_CASE)
    x = np.ones((3, 4, 5), np.float32)
    with pytest.raises(nxrt.InvalidArgument, match="'z'"):
        s.run(None, {"x": x, "y": x, "z": x})


def test_unknown_provider_is_an_error():
    with pytest.raises(ValueError, match="CUDAExecutionProvider.*not available"):
        nxrt.InferenceSession(ADD_CASE, providers=["CUDAExecutionProvider"])
    with pytest.raises(ValueError, match="unknown execution provider 'FooEP'"):
        nxrt.InferenceSession(ADD_CASE, providers=["FooEP"])


def test_broadcast_error_names_node():
    data = _model([helper.make_node("Add", ["x", "y"], ["z"], name="bad_add")],
                  [_vi("x", None), _vi("y", None)], [_vi("z", None)])
    s = nxrt.InferenceSession(data)
    with pytest.raises(nxrt.InvalidArgument, match="bad_add.*cannot be broadcast"):
        s.run(None, {"x": np.ones(3, np.float32), "y": np.ones(4, np.float32)})
    # The session still works for the next good input.
    assert s.run(None, {"x": np.ones(3, np.float32), "y": np.ones(3, np.float32)})[0].shape == (3,)


def test_absurd_reshape_is_refused():
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1 << 40, 1 << 40])
    data = _model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="huge")],
                  [_vi("x")], [_vi("y", None)], [shape])
    s = nxrt.InferenceSession(data)
    with pytest.raises(nxrt.InvalidArgument, match="huge"):
        s.run(None, {"x": np.ones(2, np.float32)})


def test_gelu_unknown_approximation_names_it():
    data = _model([helper.make_node("Gelu", ["x"], ["y"], name="g1", approximate="fast")],
                  [_vi("x")], [_vi("y")], opset=20)
    with pytest.raises(nxrt.InvalidGraph, match="g1.*approximate must be 'none' or 'tanh', got 'fast'"):
        nxrt.InferenceSession(data)


def test_quantize_per_axis_scale_of_wrong_length():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q1", axis=1)]
    inits = [onnx.numpy_helper.from_array(np.ones(5, np.float32), "s"),
             onnx.numpy_helper.from_array(np.zeros(5, np.uint8), "z")]
    data = _model(nodes, [_vi("x", (2, 3, 4))], [_vi("q", (2, 3, 4), TensorProto.UINT8)], inits,
                  opset=19)
    sess = nxrt.InferenceSession(data)
    with pytest.raises(nxrt.InvalidArgument, match="QuantizeLinear.*q1.*per-axis scale must be 1-D of size 3"):
        sess.run(None, {"x": np.zeros((2, 3, 4), np.float32)})
