"""Graph features beyond single ops: model-local functions, sequences and optionals across
the API, subgraphs reading outer-scope values, constant folding, initializer overrides."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nxrt

ort = pytest.importorskip("onnxruntime")


def _session_pair(model):
    data = model.SerializeToString()
    return nxrt.InferenceSession(data), ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _model(nodes, inputs, outputs, inits=(), opset=18, functions=(), extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions))
    model.ir_version = 9
    return model


def test_model_local_function_with_attribute_and_nesting():
    # inner(x) = x * alpha ; outer(x, y) = inner(x) + y, called twice.
    inner = helper.make_function(
        "custom", "Scale", ["x"], ["y"],
        [helper.make_node("Constant", [], ["a"], value_float=0.0),
         helper.make_node("CastLike", ["alpha_t", "x"], ["alpha_c"]),
         helper.make_node("Mul", ["x", "alpha_c"], ["y"])],
        [helper.make_opsetid("", 18)], attributes=[])
    # alpha comes through a Constant whose value_float refers to the call's attribute.
    const = helper.make_node("Constant", [], ["alpha_t"])
    ref = onnx.AttributeProto()
    ref.name, ref.ref_attr_name, ref.type = "value_float", "alpha", onnx.AttributeProto.FLOAT
    const.attribute.append(ref)
    inner.node.insert(0, const)
    inner.attribute.append("alpha")
    outer = helper.make_function(
        "custom", "ScaleAdd", ["x", "y"], ["z"],
        [helper.make_node("Scale", ["x"], ["s"], domain="custom", alpha=3.0),
         helper.make_node("Add", ["s", "y"], ["z"])],
        [helper.make_opsetid("", 18), helper.make_opsetid("custom", 1)])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])
    model = _model([helper.make_node("ScaleAdd", ["x", "x"], ["t"], domain="custom"),
                    helper.make_node("ScaleAdd", ["t", "x"], ["out"], domain="custom")],
                   [x], [out], functions=[inner, outer], extra_opsets=[("custom", 1)])
    nx, rt = _session_pair(model)
    feed = {"x": np.array([1.0, -2.0], np.float32)}
    np.testing.assert_allclose(nx.run(None, feed)[0], rt.run(None, feed)[0])
    np.testing.assert_allclose(nx.run(None, feed)[0], [13.0, -26.0])


def test_sequence_in_and_out():
    seq_in = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
    seq_out = helper.make_tensor_sequence_value_info("seq_out", TensorProto.FLOAT, None)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    n = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    model = _model([helper.make_node("SequenceInsert", ["seq", "x"], ["seq_out"]),
                    helper.make_node("SequenceLength", ["seq_out"], ["n"])],
                   [seq_in, x], [seq_out, n])
    nx, rt = _session_pair(model)
    feed = {"seq": [np.ones(2, np.float32), np.zeros(4, np.float32)], "x": np.arange(3, dtype=np.float32)}
    a, b = nx.run(None, feed), rt.run(None, feed)
    assert isinstance(a[0], list) and len(a[0]) == 3
    for u, v in zip(a[0], b[0]):
        np.testing.assert_array_equal(u, v)
    assert int(a[1]) == int(b[1]) == 3
    assert nx.get_inputs()[0].type == "seq(tensor(float))"


def test_if_reads_outer_scope_values():
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["r"])], "then", [],
                               [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["r2"])], "else", [],
                               [helper.make_tensor_value_info("r2", TensorProto.FLOAT, [2])])
    model = _model([helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                   [cond, x], [y], opset=16)
    nx, rt = _session_pair(model)
    for c in (True, False):
        feed = {"cond": np.array(c), "x": np.array([1.5, -2.0], np.float32)}
        np.testing.assert_allclose(nx.run(None, feed)[0], rt.run(None, feed)[0])


def test_constant_folding_matches_and_can_be_disabled():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 2], np.arange(6, dtype=np.float32))
    nodes = [helper.make_node("Transpose", ["w"], ["wt"]),  # foldable: input is constant
             helper.make_node("Shape", ["wt"], ["shape"]),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    model = _model(nodes, [x], [y], [w])
    feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    so = nxrt.SessionOptions()
    so.graph_optimization_level = nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = nxrt.InferenceSession(model.SerializeToString(), so).run(None, feed)[0]
    folded = nxrt.InferenceSession(model.SerializeToString()).run(None, feed)[0]
    np.testing.assert_array_equal(plain, folded)
    assert folded.shape == (2, 3)


def test_optional_input_may_be_omitted():
    opt = helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])
    opt.type.CopyFrom(helper.make_optional_type_proto(opt.type))
    has = helper.make_tensor_value_info("has", TensorProto.BOOL, [])
    model = _model([helper.make_node("OptionalHasElement", ["o"], ["has"])], [opt], [has])
    sess = nxrt.InferenceSession(model.SerializeToString())
    assert bool(sess.run(None, {})[0]) is False
    assert bool(sess.run(None, {"o": np.ones(2, np.float32)})[0]) is True


def test_run_options_terminate_stops_a_long_loop():
    import threading
    import time

    # Loop with a huge trip count whose body does a little work each iteration.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    trips = helper.make_tensor_value_info("trips", TensorProto.INT64, [])
    acc = helper.make_tensor_value_info("acc", TensorProto.FLOAT, [1])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
    model = _model([helper.make_node("Loop", ["trips", "cond", "acc"], ["out"], body=body)],
                   [trips, acc], [out], [cond], opset=16)
    sess = nxrt.InferenceSession(model.SerializeToString())
    ro = nxrt.RunOptions()
    timer = threading.Timer(0.3, lambda: setattr(ro, "terminate", True))
    timer.start()
    start = time.monotonic()
    with pytest.raises(nxrt.Fail, match="terminate"):
        sess.run(None, {"trips": np.array(1 << 40, np.int64), "acc": np.zeros(1, np.float32)}, ro)
    timer.join()
    assert time.monotonic() - start < 30
    # The session still works, and a fresh RunOptions runs to completion.
    res = sess.run(None, {"trips": np.array(5, np.int64), "acc": np.zeros(1, np.float32)})
    np.testing.assert_allclose(res[0], [5.0])
