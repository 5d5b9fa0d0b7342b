"""SessionOptions.optimized_model_filepath: the graph as nxrt's passes leave it, written as
an ONNX file.

Every ONNX backend case runs again from the file nxrt wrote of it (all passes on), so the
writer is checked on every op, attribute and type the suites hold. Files written at the
basic level hold only ONNX ops; onnxruntime loads them and gives its own results.
"""

import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import backend_cases
import nxrt

SHARED = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
CASES = [c for c in backend_cases.discover()
         if f"{c[0]}/{c[1]}" not in backend_cases.load_known_failures()]


def _written(model, path, level=nxrt.GraphOptimizationLevel.ORT_ENABLE_ALL):
    options = nxrt.SessionOptions()
    options.graph_optimization_level = level
    options.optimized_model_filepath = str(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nxrt-only ops: checked below
        nxrt.InferenceSession(model, options)
    return str(path)


@pytest.mark.parametrize("suite,name,path", CASES, ids=[f"{s}/{n}" for s, n, _ in CASES])
def test_backend_case_runs_from_the_written_model(suite, name, path, tmp_path):
    def from_written(model_path):
        return nxrt.InferenceSession(_written(model_path, tmp_path / "optimized.onnx"))

    backend_cases.run_case(suite, name, path, session_for=from_written)


def _random_feeds(session, seed=0):
    """Inputs for the models below: image batches of 1; audio as 512 samples at 16 kHz
    (the VAD frame), one stream, so every size follows from the declared shapes."""
    rng = np.random.default_rng(seed)
    sizes = {0: 1, 1: 512}
    feeds = {}
    for i in session.get_inputs():
        if i.type == "tensor(int64)":  # the sample rate
            feeds[i.name] = np.array(16000, np.int64)
            continue
        # A recurrent state's unknown size is the stream count (1); a signal's is
        # [streams, samples].
        shape = [d if isinstance(d, int) else (1 if len(i.shape) == 3 else sizes[k])
                 for k, d in enumerate(i.shape)]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32) * 0.1
    return feeds


ORT_MODELS = ["onnx-backend-data/light/light_squeezenet.onnx",
              "onnx-backend-data/light/light_inception_v1.onnx",
              "models/silero_vad_v5.onnx", "models/silero_vad_legacy.onnx",
              "models/oww_melspectrogram.onnx"]


@pytest.mark.parametrize("model", ORT_MODELS)
def test_basic_level_file_loads_in_onnxruntime_with_the_same_results(model, tmp_path):
    original = os.path.join(SHARED, model)
    written = _written(original, tmp_path / "basic.onnx",
                       nxrt.GraphOptimizationLevel.ORT_ENABLE_BASIC)
    onnx.checker.check_model(onnx.load(written))
    reference = ort.InferenceSession(original, providers=["CPUExecutionProvider"])
    feeds = _random_feeds(reference)
    rewritten = ort.InferenceSession(written, providers=["CPUExecutionProvider"])
    for got, want in zip(rewritten.run(None, feeds), reference.run(None, feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_file_with_nxrt_ops_comes_with_a_warning_naming_them(tmp_path):
    path = tmp_path / "all.onnx"
    options = nxrt.SessionOptions()
    options.optimized_model_filepath = str(path)
    with pytest.warns(RuntimeWarning, match=r"nxrt's own ops \(.*NchwcConv.*\).*ORT_ENABLE_BASIC"):
        nxrt.InferenceSession(os.path.join(SHARED, ORT_MODELS[0]), options)
    assert "nxrt" in {o.domain for o in onnx.load(str(path)).opset_import}


def test_writer_keeps_types_shapes_metadata_and_packed_initializers(tmp_path):
    int4 = helper.make_tensor("w4", TensorProto.INT4, [5], [-8, -1, 0, 3, 7])
    words = helper.make_tensor("words", TensorProto.STRING, [2], [b"a", b"bc"])
    nodes = [helper.make_node("Cast", ["w4"], ["w4_f"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "w4_f"], ["y"]),
             helper.make_node("Identity", ["words"], ["s"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None, 5]),
         helper.make_tensor_value_info("s", TensorProto.STRING, [2])], [int4, words])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    helper.set_model_props(model, {"author": "nxrt tests", "purpose": "round trip"})
    model.producer_name = "nxrt-test"
    path = _written(model.SerializeToString(), tmp_path / "typed.onnx",
                    nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL)
    back = onnx.load(path)
    onnx.checker.check_model(back)
    assert back.graph.input == model.graph.input  # symbolic and unknown dims kept
    assert back.graph.output == model.graph.output
    assert {p.key: p.value for p in back.metadata_props} == {"author": "nxrt tests",
                                                              "purpose": "round trip"}
    assert back.producer_name == "nxrt-test" and back.ir_version == 10
    written = {t.name: numpy_helper.to_array(t) for t in back.graph.initializer}
    np.testing.assert_array_equal(written["w4"], [-8, -1, 0, 3, 7])
    assert [str(w) for w in written["words"]] == ["a", "bc"]
    x = np.zeros((2, 3, 5), np.float32)
    got = nxrt.InferenceSession(path).run(None, {"x": x})
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    assert list(got[1]) == list(want[1]) == ["a", "bc"]


def test_unwritable_path_fails_the_session_with_the_path(tmp_path):
    options = nxrt.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "no such folder" / "m.onnx")
    with pytest.raises(nxrt.Fail, match="cannot open '.*no such folder/m.onnx' to write"):
        nxrt.InferenceSession(os.path.join(SHARED, ORT_MODELS[2]), options)


def test_writing_over_the_model_being_loaded_keeps_the_session_working(tmp_path):
    # The session still reads the mapped file while the optimized one replaces it.
    import shutil

    path = tmp_path / "vad.onnx"
    shutil.copy(os.path.join(SHARED, "models", "silero_vad_v5.onnx"), path)
    reference = nxrt.InferenceSession(str(path))
    feeds = _random_feeds(reference)
    want = reference.run(None, feeds)
    options = nxrt.SessionOptions()
    options.optimized_model_filepath = str(path)
    session = nxrt.InferenceSession(str(path), options)
    for got, w in zip(session.run(None, feeds), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    for got, w in zip(nxrt.InferenceSession(str(path)).run(None, feeds), want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert os.listdir(tmp_path) == ["vad.onnx"]  # no partial file left
