"""fuse_attention: the attention chains exporters write, as one nxrt FusedAttention,
against onnxruntime running the unfused graph.

Three export forms: HF BERT through torch.onnx.export (K^T by Transpose(0, 2, 3, 1), Div
after the product), PyTorch's scaled_dot_product_attention through TorchScript (both
operands multiplied by the root of the scale) and through dynamo (K^T by Reshape /
Transpose / Reshape, Where(IsNaN) after the Softmax).
"""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt
from test_optimizer import _nxrt, _ort, _profiled_ops

RNG = np.random.default_rng(11)


def _const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.array(value, dtype), name)


def _attention_model(form, B, S, T, H, D, bias_shape=None, batch_symbol=False):
    """Q [B, S, H*D], K and V [B, T, H*D] (and a bias) -> attention output [B, S, H*D]."""
    inits = [_const("split", [0, -1, H, D], np.int64), _const("merge", [0, -1, H * D], np.int64)]
    nodes = [helper.make_node("Reshape", [n, "split"], [n + "4"]) for n in ("q", "k", "v")]
    nodes += [helper.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3])]
    root = float(np.sqrt(1.0 / np.sqrt(D)))
    if form == "bert":
        nodes += [helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
                  helper.make_node("MatMul", ["qt", "kt"], ["qk"]),
                  helper.make_node("Div", ["qk", "sqrt_d"], ["s"])]
        inits.append(_const("sqrt_d", np.sqrt(D)))
    elif form == "torchscript":
        nodes += [helper.make_node("Transpose", ["k4"], ["kt0"], perm=[0, 2, 3, 1]),
                  helper.make_node("Mul", ["qt", "root"], ["qs"]),
                  helper.make_node("Mul", ["kt0", "root"], ["kt"]),
                  helper.make_node("MatMul", ["qs", "kt"], ["s"])]
        inits.append(_const("root", root))
    else:  # dynamo
        nodes += [helper.make_node("Transpose", ["k4"], ["kh"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["kh", "merged"], ["k3"]),
                  helper.make_node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
                  helper.make_node("Reshape", ["k3t", "unmerged"], ["kt0"]),
                  helper.make_node("Mul", ["qt", "root"], ["qs"]),
                  helper.make_node("Mul", ["kt0", "root"], ["kt"]),
                  helper.make_node("MatMul", ["qs", "kt"], ["s"])]
        inits += [_const("merged", [-1, T, D], np.int64), _const("unmerged", [-1, H, D, T], np.int64),
                  _const("root", root)]
    scores = "s"
    if bias_shape is not None:
        nodes.append(helper.make_node("Add", ["s", "bias"], ["sb"]))
        scores = "sb"
    nodes.append(helper.make_node("Softmax", [scores], ["p"], axis=-1))
    if form == "dynamo":
        nodes += [helper.make_node("IsNaN", ["p"], ["nan"]),
                  helper.make_node("Where", ["nan", "zero", "p"], ["pz"])]
        inits.append(_const("zero", 0.0))
    nodes += [helper.make_node("MatMul", ["pz" if form == "dynamo" else "p", "vt"], ["o"]),
              helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "merge"], ["y"])]
    b = "batch" if batch_symbol else B
    inputs = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [b, S, H * D]),
              helper.make_tensor_value_info("k", TensorProto.FLOAT, [b, T, H * D]),
              helper.make_tensor_value_info("v", TensorProto.FLOAT, [b, T, H * D])]
    if bias_shape is not None:
        inputs.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, bias_shape))
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _feeds(B, S, T, H, D, bias_shape=None, masked_rows=False):
    feeds = {"q": RNG.standard_normal((B, S, H * D)).astype(np.float32),
             "k": RNG.standard_normal((B, T, H * D)).astype(np.float32),
             "v": RNG.standard_normal((B, T, H * D)).astype(np.float32)}
    if bias_shape is not None:
        bias = np.where(RNG.random(bias_shape) < 0.2, -np.inf, 0.0).astype(np.float32)
        bias += RNG.standard_normal(bias_shape).astype(np.float32)
        bias[..., 0] = 0.0  # every row keeps a key ...
        if masked_rows:
            bias[0, ..., -1, :] = -np.inf  # ... but these, whose weights are all NaN or 0
        feeds["bias"] = bias
    return feeds


CASES = [  # B, S, T, H, D, bias shape
    (1, 7, 7, 2, 16, None),
    (2, 130, 130, 3, 32, "key_padding"),
    (1, 5, 300, 4, 64, "full"),
    (2, 70, 9, 1, 8, "rows"),
]


def _bias_shape(kind, B, S, T, H):
    return {None: None, "key_padding": [B, 1, 1, T], "full": [B, H, S, T],
            "rows": [S, T]}[kind]


@pytest.mark.parametrize("form", ["bert", "torchscript", "dynamo"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])) + f"-{c[5]}")
def test_attention_chain_fuses_and_matches_onnxruntime(form, case):
    B, S, T, H, D, kind = case
    bias_shape = _bias_shape(kind, B, S, T, H)
    model = _attention_model(form, B, S, T, H, D, bias_shape)
    feeds = _feeds(B, S, T, H, D, bias_shape)
    ops = _profiled_ops(model, feeds)
    assert "FusedAttention" in ops
    assert not {"Transpose", "Softmax", "SafeSoftmax", "MatMul", "Mul", "Div"} & set(ops), ops
    expected = _ort(model).run(None, feeds)[0]
    for threads in (1, 2):
        got = _nxrt(model, threads).run(None, feeds)[0]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_dynamo_form_with_symbolic_batch_fuses():
    # The Reshape splitting K's merged batch and heads back is proven by its head dim.
    B, S, T, H, D = 3, 12, 12, 2, 16
    model = _attention_model("dynamo", B, S, T, H, D, [B, 1, 1, T], batch_symbol=True)
    feeds = _feeds(B, S, T, H, D, [B, 1, 1, T])
    ops = _profiled_ops(model, feeds)
    assert "FusedAttention" in ops and "Transpose" not in ops, ops
    np.testing.assert_allclose(_nxrt(model).run(None, feeds)[0], _ort(model).run(None, feeds)[0],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("form", ["dynamo", "bert"])
def test_fully_masked_rows(form):
    # Every key of a row masked: NaN weights, which dynamo's Where(IsNaN) turns into zeros
    # (SafeSoftmax inside the fused kernel) and the BERT export leaves as NaN.
    B, S, T, H, D = 2, 9, 9, 2, 16
    model = _attention_model(form, B, S, T, H, D, [B, 1, S, T])
    feeds = _feeds(B, S, T, H, D, [B, 1, S, T], masked_rows=True)
    expected = _ort(model).run(None, feeds)[0]
    if form == "dynamo":
        assert (expected[0, -1] == 0).all() and not np.isnan(expected).any()
    else:
        assert np.isnan(expected[0, -1]).all()
    for threads in (1, 2):
        np.testing.assert_allclose(_nxrt(model, threads).run(None, feeds)[0], expected,
                                   rtol=1e-4, atol=1e-5)


def test_bias_rows_repeat_a_single_query():
    # scores [B, H, 1, T] + bias [B, H, 3, T]: Add broadcasts the query row; so must the
    # fused kernel.
    B, T, H, D = 2, 10, 2, 8
    model = _attention_model("bert", B, 1, T, H, D, [B, H, 3, T])
    feeds = _feeds(B, 1, T, H, D, [B, H, 3, T])
    expected = _ort(model).run(None, feeds)[0]
    assert expected.shape == (B, 3, H * D)
    assert "FusedAttention" in _profiled_ops(model, feeds)
    np.testing.assert_allclose(_nxrt(model).run(None, feeds)[0], expected, rtol=1e-4, atol=1e-5)


def test_weights_read_elsewhere_keep_the_chain():
    B, S, T, H, D = 1, 6, 6, 2, 8
    model = _attention_model("bert", B, S, T, H, D)
    import onnx
    m = onnx.load_from_string(model)
    m.graph.output.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, None))
    data = m.SerializeToString()
    feeds = _feeds(B, S, T, H, D)
    assert "FusedAttention" not in _profiled_ops(data, feeds)
    for got, expected in zip(_nxrt(data).run(None, feeds), _ort(data).run(None, feeds)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def _fused_node_model(q_shape, k_shape, v_shape, **attrs):
    node = helper.make_node("FusedAttention", ["q", "k", "v"], ["y"], name="att", domain="nxrt",
                            **attrs)
    graph = helper.make_graph([node], "fused", [
        helper.make_tensor_value_info("q", TensorProto.FLOAT, q_shape),
        helper.make_tensor_value_info("k", TensorProto.FLOAT, k_shape),
        helper.make_tensor_value_info("v", TensorProto.FLOAT, v_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("nxrt", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def test_fused_node_errors_name_the_node_and_shapes():
    model = _fused_node_model([1, 2, 4, 8], [1, 2, 5, 8], [1, 2, 6, 8])
    sess = nxrt.InferenceSession(model)
    feeds = {"q": np.zeros((1, 2, 4, 8), np.float32), "k": np.zeros((1, 2, 5, 8), np.float32),
             "v": np.zeros((1, 2, 6, 8), np.float32)}
    with pytest.raises(Exception, match=r"node 'att'.*\[1,2,6,8\].*key counts differ"):
        sess.run(None, feeds)
    with pytest.raises(Exception, match=r"node 'att'.*k_layout 'bsdh'"):
        nxrt.InferenceSession(_fused_node_model([1, 2, 4, 8], [1, 2, 5, 8], [1, 2, 5, 8],
                                                k_layout="bsdh"))


def test_head_size_of_a_symbolic_shape_folds():
    # Shape(x)[-1] under a symbolic batch is a number: fold_shapes makes it a constant, so
    # the scale computed from it (as exports compute 1 / sqrt(head size)) folds as well.
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "last"], ["d"], axis=0),
             helper.make_node("Cast", ["d"], ["df"], to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["df"], ["root"]),
             helper.make_node("Div", ["x", "root"], ["y"])]
    graph = helper.make_graph(nodes, "head_size", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_const("last", -1, np.int64)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    x = RNG.standard_normal((3, 16)).astype(np.float32)
    assert _profiled_ops(data, {"x": x}) == ["Div"]
    assert _profiled_ops(data, {"x": x}, disabled_optimizers=["fold_shapes"]) == [
        "Cast", "Div", "Gather", "Shape", "Sqrt"]
    np.testing.assert_allclose(_nxrt(data).run(None, {"x": x})[0],
                               _ort(data, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
                               .run(None, {"x": x})[0], rtol=1e-6)


def _to_bhsd(x, layout):
    return {"bhsd": x, "bshd": x.transpose(0, 2, 1, 3), "bhds": x.transpose(0, 1, 3, 2)}[layout]


def _reference(q, k, v, bias, a):
    """FusedAttention's definition in numpy (float64), operands in their layouts."""
    qs = _to_bhsd(q.astype(np.float64), a["q_layout"]) * a["q_scale"]
    ks = _to_bhsd(k.astype(np.float64), a["k_layout"]) * a["k_scale"]
    s = a["scale"] * (qs @ ks.transpose(0, 1, 3, 2))
    if bias is not None:
        s = s + bias
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    y = p @ _to_bhsd(v.astype(np.float64), a["v_layout"])
    return y.transpose(0, 2, 1, 3) if a["out_layout"] == "bshd" else y


def _layout_shape(B, H, R, D, layout):
    return {"bhsd": [B, H, R, D], "bshd": [B, R, H, D], "bhds": [B, H, D, R]}[layout]


@pytest.mark.parametrize("layouts", [("bhsd", "bhds", "bhsd", "bhsd"),
                                     ("bshd", "bshd", "bshd", "bshd"),
                                     ("bhsd", "bhsd", "bshd", "bshd")],
                         ids=lambda x: "-".join(x))
@pytest.mark.parametrize("shapes", [
    # (B of q, B of k and v, H, S, T, D, Dv, bias shape)
    (2, 1, 3, 5, 7, 8, 4, None),            # keys and values shared by the batch
    (1, 1, 2, 3, 9, 16, 16, [2, 1, 1, 9]),  # the bias adds a batch dim
    (1, 1, 2, 1, 6, 8, 8, [1, 2, 4, 6]),    # one query, four bias rows: the query repeats
    (1, 1, 2, 4, 5, 0, 3, [4, 5]),          # head size 0: the bias alone
], ids=lambda s: "x".join(str(d) for d in s[:7]) + f"-bias{s[7]}")
def test_fused_node_against_numpy(layouts, shapes):
    Bq, Bk, H, S, T, D, Dv, bias_shape = shapes
    attrs = dict(zip(("q_layout", "k_layout", "v_layout", "out_layout"), layouts),
                 scale=0.7, q_scale=1.25, k_scale=0.5, safe=0)
    q = RNG.standard_normal(_layout_shape(Bq, H, S, D, layouts[0])).astype(np.float32)
    k = RNG.standard_normal(_layout_shape(Bk, H, T, D, layouts[1])).astype(np.float32)
    v = RNG.standard_normal(_layout_shape(Bk, H, T, Dv, layouts[2])).astype(np.float32)
    bias = None if bias_shape is None else RNG.standard_normal(bias_shape).astype(np.float32)
    inputs = [("q", q), ("k", k), ("v", v)] + ([("bias", bias)] if bias is not None else [])
    node = helper.make_node("FusedAttention", [n for n, _ in inputs], ["y"], domain="nxrt",
                            **attrs)
    graph = helper.make_graph([node], "fused", [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, x.shape) for n, x in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("nxrt", 1)])
    model.ir_version = 8
    feeds = dict(inputs)
    expected = _reference(q, k, v, bias, attrs)
    for threads in (1, 2):
        got = _nxrt(model.SerializeToString(), threads).run(None, feeds)[0]
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_fused_node_without_keys_gives_zeros():
    model = _fused_node_model([1, 2, 3, 4], [1, 2, 0, 4], [1, 2, 0, 5])
    feeds = {"q": np.ones((1, 2, 3, 4), np.float32), "k": np.zeros((1, 2, 0, 4), np.float32),
             "v": np.zeros((1, 2, 0, 5), np.float32)}
    got = nxrt.InferenceSession(model).run(None, feeds)[0]
    assert got.shape == (1, 2, 3, 5) and (got == 0).all()
