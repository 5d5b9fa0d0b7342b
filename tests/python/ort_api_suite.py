"""Tests written against onnxruntime's Python API, unchanged.

test_ort_compat.py runs this module twice: as is (against onnxruntime, proving the tests
are right) and with its import line replaced by `import nxrt as ort`.
"""

import os
import tempfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxruntime as ort


def make_model(opset=17, with_initializer=True):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 4])
    relu = helper.make_tensor_value_info("relu", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Add", ["x", "y"], ["s"], name="add"),
        helper.make_node("Add", ["s", "bias"], ["out"], name="add_bias"),
        helper.make_node("Relu", ["out"], ["relu"], name="relu"),
    ]
    inits = [helper.make_tensor("bias", TensorProto.FLOAT, [4], [1, 2, 3, 4])] if with_initializer else []
    inputs = [x, y, bias] if with_initializer else [x, y]
    graph = helper.make_graph(nodes, "compat_graph", inputs, [out, relu], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="compat-test")
    model.ir_version = 8
    model.doc_string = "a small model"
    model.model_version = 3
    helper.set_model_props(model, {"author": "nxrt", "purpose": "tests"})
    return model


@pytest.fixture(scope="module")
def model_path():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        onnx.save(make_model(), path)
        yield path


def test_available_providers():
    assert "CPUExecutionProvider" in ort.get_available_providers()
    assert isinstance(ort.__version__, str)
    assert ort.get_device() in ("CPU", "GPU")


def test_session_from_path_and_bytes(model_path):
    s1 = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    with open(model_path, "rb") as f:
        s2 = ort.InferenceSession(f.read(), providers=["CPUExecutionProvider"])
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.ones((2, 4), np.float32)
    a = s1.run(None, {"x": x, "y": y})
    b = s2.run(["relu"], {"x": x, "y": y})
    np.testing.assert_allclose(a[0], x + y + np.array([1, 2, 3, 4], np.float32))
    np.testing.assert_allclose(a[1], b[0])
    assert len(b) == 1


def test_pathlike(model_path):
    import pathlib

    s = ort.InferenceSession(pathlib.Path(model_path), providers=["CPUExecutionProvider"])
    assert [i.name for i in s.get_inputs()] == ["x", "y"]


def test_inputs_outputs_metadata(model_path):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    inputs = s.get_inputs()
    assert [i.name for i in inputs] == ["x", "y"]
    assert inputs[0].type == "tensor(float)"
    assert inputs[0].shape == ["batch", 4]
    outputs = s.get_outputs()
    assert [o.name for o in outputs] == ["out", "relu"]
    assert outputs[0].shape == ["batch", 4]
    assert [i.name for i in s.get_overridable_initializers()] == ["bias"]
    meta = s.get_modelmeta()
    assert meta.producer_name == "compat-test"
    assert meta.graph_name == "compat_graph"
    assert meta.description == "a small model"
    assert meta.version == 3
    assert meta.custom_metadata_map == {"author": "nxrt", "purpose": "tests"}
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert "CPUExecutionProvider" in s.get_provider_options()


def test_override_initializer(model_path):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.zeros((1, 4), np.float32)
    out = s.run(["out"], {"x": x, "y": x, "bias": np.full(4, 10, np.float32)})[0]
    np.testing.assert_allclose(out, np.full((1, 4), 10, np.float32))


def test_session_options(model_path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.enable_cpu_mem_arena = True
    so.enable_mem_pattern = True
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    s = ort.InferenceSession(model_path, sess_options=so, providers=["CPUExecutionProvider"])
    assert s.get_session_options().intra_op_num_threads == 1
    ro = ort.RunOptions()
    ro.log_severity_level = 3
    ro.logid = "tagged"
    x = np.ones((3, 4), np.float32)
    assert s.run(None, {"x": x, "y": x}, ro)[0].shape == (3, 4)


def test_missing_input_is_an_error(model_path):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    with pytest.raises(ValueError, match="x"):
        s.run(None, {"y": np.ones((1, 4), np.float32)})


def test_wrong_dtype_is_invalid_argument(model_path):
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.ones((1, 4), np.float64)
    with pytest.raises(InvalidArgument, match="tensor\\(double\\)"):
        s.run(None, {"x": x, "y": x})
    # The message format that code handling onnxruntime's errors parses.
    with pytest.raises(InvalidArgument, match=r"^\[ONNXRuntimeError\] : 2 : INVALID_ARGUMENT : "):
        s.run(None, {"x": x, "y": x})


def test_unknown_op_is_not_implemented_in_onnxruntime_format():
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], domain="com.example")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    with pytest.raises((OrtNotImplemented, Exception), match=r"^\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : "):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_wrong_rank_and_dims(model_path):
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    with pytest.raises(InvalidArgument, match="Invalid rank for input: x"):
        s.run(None, {"x": np.ones((4,), np.float32), "y": np.ones((1, 4), np.float32)})
    with pytest.raises(InvalidArgument, match="Got invalid dimensions for input: x"):
        s.run(None, {"x": np.ones((1, 5), np.float32), "y": np.ones((1, 4), np.float32)})


def test_unknown_output_name(model_path):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.ones((1, 4), np.float32)
    with pytest.raises(Exception, match="nope"):
        s.run(["nope"], {"x": x, "y": x})


def test_missing_file():
    from onnxruntime.capi.onnxruntime_pybind11_state import NoSuchFile

    with pytest.raises(NoSuchFile):
        ort.InferenceSession("/definitely/not/here.onnx", providers=["CPUExecutionProvider"])


def test_corrupt_bytes():
    from onnxruntime.capi.onnxruntime_pybind11_state import InvalidProtobuf

    with pytest.raises(InvalidProtobuf):
        ort.InferenceSession(b"\x08\x07\x12\xff\xff garbage", providers=["CPUExecutionProvider"])


def test_non_contiguous_input(model_path):
    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    big = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = big[:, ::2]
    assert not x.flags.c_contiguous
    out = s.run(["out"], {"x": x, "y": np.zeros((4, 4), np.float32)})[0]
    np.testing.assert_allclose(out, x + np.array([1, 2, 3, 4], np.float32))


def test_run_from_threads(model_path):
    import threading

    s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(50):
            x = rng.standard_normal((5, 4)).astype(np.float32)
            out = s.run(["relu"], {"x": x, "y": x})[0]
            expected = np.maximum(x + x + np.array([1, 2, 3, 4], np.float32), 0)
            if not np.allclose(out, expected):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _identity_model(elem_type):
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                              [helper.make_tensor_value_info("x", elem_type, None)],
                              [helper.make_tensor_value_info("y", elem_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


LIST_FEEDS = [
    (TensorProto.INT32, [[1, 2], [3, 4]], np.int32, [[1, 2], [3, 4]]),
    (TensorProto.FLOAT, [1.5, 2], np.float32, [1.5, 2.0]),
    (TensorProto.FLOAT, [1, 2], np.float32, [1.0, 2.0]),
    (TensorProto.INT64, [1.5, -2.7], np.int64, [1, -2]),
    (TensorProto.BOOL, [1, 0], np.bool_, [True, False]),
    (TensorProto.FLOAT16, [0.5], np.float16, [0.5]),
    (TensorProto.DOUBLE, [1], np.float64, [1.0]),
    (TensorProto.UINT8, [255, 0], np.uint8, [255, 0]),
]


def test_python_lists_take_the_declared_type():
    for elem_type, value, dtype, expected in LIST_FEEDS:
        y = ort.InferenceSession(_identity_model(elem_type), providers=["CPUExecutionProvider"]).run(
            None, {"x": value})[0]
        assert y.dtype == dtype, (elem_type, value)
        assert y.tolist() == expected, (elem_type, value)


def test_python_lists_the_type_cannot_hold():
    for elem_type, value in [(TensorProto.INT8, [300]), (TensorProto.UINT8, [-1]),
                             (TensorProto.INT32, [2 ** 40]), (TensorProto.INT64, [float("nan")]),
                             (TensorProto.FLOAT, [[1, 2], [3]])]:
        sess = ort.InferenceSession(_identity_model(elem_type), providers=["CPUExecutionProvider"])
        with pytest.raises(RuntimeError, match="Could not create tensor from given input list"):
            sess.run(None, {"x": value})


def test_numpy_arrays_keep_their_dtype():
    sess = ort.InferenceSession(_identity_model(TensorProto.INT32), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="Unexpected input data type"):
        sess.run(None, {"x": np.array([1, 2], np.int64)})


def test_module_level_switches():
    assert ort.disable_telemetry_events() is None
    assert ort.enable_telemetry_events() is None
    ort.set_default_logger_severity(3)
    ort.set_default_logger_verbosity(0)
    with pytest.raises(RuntimeError):
        ort.set_default_logger_severity(5)
    with pytest.raises(TypeError):
        ort.set_default_logger_severity("warning")
    assert isinstance(ort.get_version_string(), str) and isinstance(ort.get_build_info(), str)
    assert ort.has_collective_ops() is False


def test_set_seed_makes_unseeded_random_ops_repeat():
    graph = helper.make_graph([helper.make_node("RandomNormal", [], ["y"], shape=[16])], "random", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    ort.set_seed(1234)
    first = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {})[0]
    ort.set_seed(1234)
    second = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {})[0]
    np.testing.assert_array_equal(first, second)
    assert np.std(first) > 0.1


def test_run_config_entries():
    ro = ort.RunOptions()
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with pytest.raises(RuntimeError, match="does not have configuration with key"):
        ro.get_run_config_entry("no.such.key")


def test_custom_ops_library_that_cannot_load_is_fail():
    from onnxruntime.capi.onnxruntime_pybind11_state import Fail

    so = ort.SessionOptions()
    assert so.use_per_session_threads is True or so.use_per_session_threads == 1
    with pytest.raises(Fail, match=r"^\[ONNXRuntimeError\] : 1 : FAIL : "):
        so.register_custom_ops_library(os.path.join(tempfile.gettempdir(), "no_such_custom_ops.so"))


def test_run_async_calls_back_with_results_or_error(model_path):
    import threading

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.array([[1, -2, 3, -4]], np.float32)
    done = threading.Event()
    seen = {}

    def callback(results, user_data, err):
        seen[user_data] = (results, err)
        done.set()

    sess.run_async(None, {"x": x, "y": x}, callback, "ok")
    assert done.wait(10)
    results, err = seen["ok"]
    assert err == ""
    np.testing.assert_allclose(results[0], x + x + np.array([1, 2, 3, 4], np.float32))
    done.clear()
    sess.run_async(None, {"x": x.astype(np.float64), "y": x}, callback, "bad")
    assert done.wait(10)
    results, err = seen["bad"]
    assert results == [] and "Unexpected input data type" in err and not err.startswith("[")
