"""Shape inference (src/ops/shape_inference.h) against real shapes.

- Every case of the ONNX backend suites: shapes inferred from the test inputs' shapes must
  equal the reference outputs' shapes wherever inference gives numbers, and most outputs
  must get numbers.
- Real models (../shared/models and the fetched zoo): every intermediate value is made a
  graph output, the model runs, and each value's real shape must match what inference
  said (numbers equal, a symbol standing for the same size everywhere it appears).
- Small graphs check the symbolic cases: a symbolic batch through Shape/Gather/Concat into
  Reshape, broadcasting, conflicts reported with the node's name.
"""

import glob
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nxrt
from nxrt import _nxrt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backend_cases  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import zoo  # noqa: E402

SHARED = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))

# Cases whose reference shapes inference gets wrong, with the reason. Empty: a wrong
# number is a bug to fix, not to list.
WRONG_SHAPES = {}


def _tensor_shape(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return list(t.dims)


def _node_case_shapes(path):
    """(input shapes by name, [(output name, expected shape)]) from test_data_set_0."""
    model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    data = os.path.join(path, "test_data_set_0")
    inputs = {}
    for k in range(len(glob.glob(os.path.join(data, "input_*.pb")))):
        info = graph_inputs[k] if k < len(graph_inputs) else model.graph.input[k]
        if info.type.WhichOneof("value") != "tensor_type":
            return None, []
        inputs[info.name] = _tensor_shape(os.path.join(data, f"input_{k}.pb"))
    outputs = []
    for k in range(len(glob.glob(os.path.join(data, "output_*.pb")))):
        info = model.graph.output[k]
        if info.type.WhichOneof("value") == "tensor_type":
            outputs.append((info.name, _tensor_shape(os.path.join(data, f"output_{k}.pb"))))
    return inputs, outputs


def _with_small_int_inputs_as_initializers(path, inputs, out_path):
    """The case's model with its small inputs (pads, axes, shapes, k, scales, depth, ...)
    made initializers holding the test data, as real models carry them; None when it has
    none."""
    model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    moved = []
    for k, info in enumerate(graph_inputs):
        file = os.path.join(path, "test_data_set_0", f"input_{k}.pb")
        if not os.path.exists(file):
            continue
        t = TensorProto()
        with open(file, "rb") as f:
            t.ParseFromString(f.read())
        if t.data_type in (TensorProto.INT64, TensorProto.INT32, TensorProto.FLOAT) and \
                np.prod(t.dims) <= 8:
            t.name = info.name
            model.graph.initializer.append(t)
            model.graph.input.remove(info)
            moved.append(info.name)
    if not moved:
        return None
    onnx.save(model, out_path)
    return {k: v for k, v in inputs.items() if k not in moved}


def test_backend_cases_get_the_reference_shapes(tmp_path):
    cases = [c for c in backend_cases.discover() if c[0] != "light"]
    assert len(cases) > 1000, "the ONNX backend data is missing"
    wrong, known, total = [], 0, 0
    for suite, name, path in cases:
        inputs, outputs = _node_case_shapes(path)
        if inputs is None or not outputs:
            continue
        model_path = os.path.join(path, "model.onnx")
        rewritten = str(tmp_path / "case.onnx")
        fewer_inputs = _with_small_int_inputs_as_initializers(path, inputs, rewritten)
        if fewer_inputs is not None:
            model_path, inputs = rewritten, fewer_inputs
        shapes = _nxrt.infer_shapes(model_path, inputs, use_declared=False)[0]
        for out_name, expected in outputs:
            total += 1
            got = shapes.get(out_name)
            if got is None or not all(isinstance(d, int) for d in got):
                continue
            known += 1
            case = f"{suite}/{name}"
            if got != expected and case not in WRONG_SHAPES:
                wrong.append(f"{case} output '{out_name}': inferred {got}, reference {expected}")
    assert not wrong, f"{len(wrong)} wrong shapes:\n" + "\n".join(wrong[:40])
    # Most outputs get numbers; ops without rules (sequences, Loop, Einsum, ...) and
    # data-dependent sizes (NonZero, Unique, ...) do not.
    assert known / total > 0.8, f"only {known} of {total} outputs inferred"


def _all_values_as_outputs(model_path, out_path):
    """Writes the model with every top-level node output also a graph output."""
    model = onnx.load(model_path)
    present = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in present:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
                present.add(name)
    onnx.save(model, out_path)
    return [o.name for o in model.graph.output]


def _check_run_shapes(model_path, feeds, tmp_path):
    """Runs the model with every value exposed; returns mismatch messages and counts."""
    shapes, conflicts, _, _ = _nxrt.infer_shapes(
        model_path, {k: list(np.asarray(v).shape) for k, v in feeds.items()}, use_declared=False)
    exposed = str(tmp_path / "exposed.onnx")
    names = _all_values_as_outputs(model_path, exposed)
    so = nxrt.SessionOptions()
    so.graph_optimization_level = nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = nxrt.InferenceSession(exposed, so)
    values = sess.run(None, feeds)
    wrong, known, symbols = [], 0, {}
    for name, value in zip(names, values):
        inferred = shapes.get(name)
        if inferred is None or not isinstance(value, np.ndarray):
            continue
        real = list(value.shape)
        if len(inferred) != len(real):
            wrong.append(f"'{name}': inferred {inferred}, ran {real}")
            continue
        for d, r in zip(inferred, real):
            if isinstance(d, int) and d != r:
                wrong.append(f"'{name}': inferred {inferred}, ran {real}")
                break
            if isinstance(d, str) and symbols.setdefault(d, r) != r:
                wrong.append(f"'{name}': symbol {d} is {r} here, {symbols[d]} elsewhere")
                break
        known += all(isinstance(d, int) for d in inferred)
    return wrong, known, len(names), conflicts


SHARED_MODELS = {
    "silero_vad_v5.onnx": lambda: {"input": np.zeros((1, 512), np.float32),
                                   "state": np.zeros((2, 1, 128), np.float32),
                                   "sr": np.array(16000, np.int64)},
    "silero_vad_legacy.onnx": lambda: {"input": np.zeros((1, 512), np.float32),
                                       "sr": np.array(16000, np.int64),
                                       "h": np.zeros((2, 1, 64), np.float32),
                                       "c": np.zeros((2, 1, 64), np.float32)},
    "oww_melspectrogram.onnx": lambda: {"input": np.zeros((1, 1280), np.float32)},
    "ppocr_v4_det.onnx": lambda: {"x": np.random.default_rng(0).random((1, 3, 320, 256),
                                                                        np.float32)},
}


# Conflicts inference rightly reports for these inputs: Silero VAD v5's 8 kHz branch
# (If_0_else_branch) given a 16 kHz frame of 512 samples computes two STFT frames where
# it expects one, so its LSTM input would not be 3-D (that branch does not run here).
EXPECTED_CONFLICT_PREFIX = {"silero_vad_v5.onnx": "If_0_else_branch__Inline_0__/decoder/rnn/"}


@pytest.mark.parametrize("name", sorted(SHARED_MODELS))
def test_shared_model_values_have_inferred_shapes(name, tmp_path):
    path = os.path.join(SHARED, "models", name)
    wrong, known, total, conflicts = _check_run_shapes(path, SHARED_MODELS[name](), tmp_path)
    assert not wrong, "\n".join(wrong[:20])
    expected = EXPECTED_CONFLICT_PREFIX.get(name)
    unexpected = [c for c in conflicts if not expected or f"node '{expected}" not in c]
    assert not unexpected, "\n".join(unexpected)
    if total > 10:  # the Silero models are one If at the top level
        assert known > 0.9 * total, f"{known} of {total} values inferred"


def _zoo_entries():
    return [e for e in zoo.load_manifest() if "build" not in e]


@pytest.mark.parametrize("model_id", [e["id"] for e in _zoo_entries()])
def test_zoo_model_values_have_inferred_shapes(model_id, tmp_path):
    entry = zoo.get_entry(model_id)
    try:
        path = zoo.model_path(entry)
    except Exception as err:  # noqa: BLE001
        pytest.skip(f"not fetched: {zoo.first_line(err)}")
    if not os.path.exists(path):
        pytest.skip("not fetched (scripts/fetch_zoo.py)")
    if os.path.getsize(path) > 200 << 20:
        pytest.skip("over 200 MB: every value kept alive at once is too much for the test")
    sess = nxrt.InferenceSession(path)
    feeds = zoo.make_feeds(entry, seed=0, session=sess)
    wrong, known, total, conflicts = _check_run_shapes(path, feeds, tmp_path)
    assert not wrong, "\n".join(wrong[:20])
    assert not conflicts, "\n".join(conflicts)


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _infer(model, tmp_path, input_shapes=None):
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    return _nxrt.infer_shapes(path, input_shapes or {}, use_declared=False)[:3]


def test_symbolic_batch_flows_through_a_shape_computation(tmp_path):
    # y = reshape(x, concat(shape(x)[0:1], [-1, 64])): the batch symbol survives.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 12, 128])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "axes0"], ["b1"]),
        helper.make_node("Concat", ["b1", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0, 2]),
    ]
    inits = [helper.make_tensor("zero", TensorProto.INT64, [], [0]),
             helper.make_tensor("axes0", TensorProto.INT64, [1], [0]),
             helper.make_tensor("rest", TensorProto.INT64, [2], [-1, 64])]
    shapes, conflicts, missing = _infer(_model(nodes, [x], [y], inits), tmp_path)
    assert shapes["s"] == [3]
    assert shapes["r"] == ["batch", 24, 64]
    assert shapes["y"] == [24, "batch", 64]
    assert conflicts == [] and missing == []
    # A feed shape replaces the symbol.
    shapes, _, _ = _infer(_model(nodes, [x], [y], inits), tmp_path, {"x": [5, 12, 128]})
    assert shapes["y"] == [24, 5, 64]


def test_conv_pool_and_matmul_shapes(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 224, 224])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 3, 3, 3], np.zeros(432).tolist())
    m = helper.make_tensor("m", TensorProto.FLOAT, [16, 10], np.zeros(160).tolist())
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("GlobalAveragePool", ["p"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("MatMul", ["f", "m"], ["y"]),
    ]
    shapes, conflicts, _ = _infer(_model(nodes, [x], [y], [w, m]), tmp_path)
    assert shapes["c"] == ["n", 16, 112, 112]
    assert shapes["p"] == ["n", 16, 56, 56]
    assert shapes["y"] == ["n", 10]
    assert conflicts == []


def test_conflicts_name_the_node_and_leave_the_shape_unknown(tmp_path):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MatMul", ["a", "b"], ["p"], name="mm"),
             helper.make_node("Add", ["a", "b"], ["y"], name="add")]
    shapes, conflicts, _ = _infer(_model(nodes, [a, b], [y]), tmp_path)
    assert shapes["p"] is None and shapes["y"] is None
    assert len(conflicts) == 2
    assert conflicts[0].startswith("[MatMul] node 'mm': inner dimensions differ: [2,3] times [4,5]")
    assert "[Add] node 'add'" in conflicts[1] and "do not broadcast" in conflicts[1]


def test_broadcasting_keeps_symbols_and_numbers(tmp_path):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 1, "seq"])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [8, 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Mul", ["a", "b"], ["y"])]
    shapes, _, _ = _infer(_model(nodes, [a, b], [y]), tmp_path)
    assert shapes["y"] == ["batch", 8, "seq"]


def test_ops_without_a_rule_are_listed(tmp_path):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Mystery", ["a"], ["y"], domain="example.com")]
    model = _model(nodes, [a], [y])
    model.opset_import.append(helper.make_opsetid("example.com", 1))
    shapes, _, missing = _infer(model, tmp_path)
    assert shapes["y"] is None
    assert missing == ["example.com:Mystery"]


def test_absurd_sizes_stay_unknown_instead_of_overflowing(tmp_path):
    # Sizes near the int64 limit (a model file may declare any): no wrapped-around numbers.
    big = 2 ** 62
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [big, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Tile", ["x", "reps"], ["t"]),
             helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Concat", ["x", "x"], ["c"], axis=0),
             helper.make_node("Reshape", ["x", "flat"], ["r"]),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Mul", ["s", "reps"], ["y"])]
    inits = [helper.make_tensor("reps", TensorProto.INT64, [2], [4, 1]),
             helper.make_tensor("pads", TensorProto.INT64, [4], [big, 0, big, 0]),
             helper.make_tensor("flat", TensorProto.INT64, [1], [-1])]
    shapes, conflicts, _ = _infer(_model(nodes, [x], [y], inits), tmp_path)
    assert shapes["t"] == [None, 4] and shapes["p"] == [None, 4] and shapes["c"] == [None, 4]
    assert shapes["r"] == [None]
    assert shapes["y"] == [2]
