"""ScatterND and ScatterElements write their output over the data input where it dies at
the node (Kernel::output0_overwrites_input): the results must equal numpy's whether the
data block is taken over or, read again later, kept."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt


def _model(op, later_read, reduction):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5, 6])
    u = helper.make_tensor_value_info("u", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    if op == "ScatterND":
        idx = np.array([[1, 2], [3, 0], [1, 2]], np.int64)  # repeated: nxrt applies them in order
    else:
        idx = np.array([[[0, 3, 2, 3, 1, 0]]], np.int64)  # along axis 0
    attrs = {"reduction": reduction} if reduction != "none" else {}
    nodes = [helper.make_node("Relu", ["x"], ["data"]),
             helper.make_node(op, ["data", "idx", "u"], ["s"], **attrs),
             helper.make_node("Neg", ["s"], ["n"])]
    if later_read:  # data read after the scatter: its block must stay intact
        nodes.append(helper.make_node("Add", ["n", "data"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", ["n"], ["y"]))
    g = helper.make_graph(nodes, "g", [x, u], [y], [numpy_helper.from_array(idx, "idx")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString(), idx


def _reference(op, x, idx, u, reduction, later_read):
    data = np.maximum(x, 0)
    s = data.copy()
    combine = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply}[reduction]
    if op == "ScatterND":
        for i, (a, b) in enumerate(idx):
            s[a, b] = combine(s[a, b], u[i])
    else:
        for j in range(idx.shape[2]):
            s[idx[0, 0, j], 0, j] = combine(s[idx[0, 0, j], 0, j], u[0, 0, j])
    y = -s
    return y + data if later_read else y


@pytest.mark.parametrize("op", ["ScatterND", "ScatterElements"])
@pytest.mark.parametrize("later_read", [False, True])
@pytest.mark.parametrize("reduction", ["none", "add", "mul"])
def test_scatter_over_a_dying_input_matches_numpy(op, later_read, reduction):
    model, idx = _model(op, later_read, reduction)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    u = rng.standard_normal((3, 6) if op == "ScatterND" else (1, 1, 6)).astype(np.float32)
    session = nxrt.InferenceSession(model)
    want = _reference(op, x, idx, u, reduction, later_read)
    for _ in range(3):  # warm runs reuse the blocks (the static memory plan)
        got = session.run(None, {"x": x, "u": u})[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
