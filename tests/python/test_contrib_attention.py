"""com.microsoft Attention (the packed-QKV self-attention node of onnxruntime's transformer
optimizer: BERT encoders, GPT-2 with a past) against onnxruntime: every mask_index form,
causal attention, attention_bias, uneven qkv_hidden_sizes, past/present, and the forms
nxrt refuses with the reason."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxrt

RNG = np.random.default_rng(11)
B, S, HIN, N = 2, 5, 12, 3


def _model(weights, attrs, feeds, with_bias=True, outputs=("out",)):
    names = ["input", "weights", "bias" if with_bias else "", "mask_index" if "mask_index" in feeds
             else "", "past" if "past" in feeds else "", "attention_bias" if "attention_bias" in
             feeds else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Attention", names, list(outputs), domain="com.microsoft", **attrs)
    inits = [numpy_helper.from_array(weights, "weights")]
    if with_bias:
        inits.append(numpy_helper.from_array(
            RNG.standard_normal(weights.shape[1]).astype(np.float32), "bias"))
    inputs = [helper.make_tensor_value_info(
        n, TensorProto.INT32 if n == "mask_index" else TensorProto.FLOAT, None)
        for n in names if n in feeds]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    model = helper.make_model(helper.make_graph([node], "attention", inputs, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _compare(feeds, attrs=None, hidden=(12, 12, 12), with_bias=True, outputs=("out",)):
    weights = (RNG.standard_normal((HIN, sum(hidden))) / 3).astype(np.float32)
    attrs = dict(num_heads=N, **(attrs or {}))
    if list(hidden) != [hidden[0]] * 3:
        attrs["qkv_hidden_sizes"] = list(hidden)
    data = _model(weights, attrs, feeds, with_bias, outputs)
    got = nxrt.InferenceSession(data).run(None, feeds)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    return got


def _input(s=S):
    return RNG.standard_normal((B, s, HIN)).astype(np.float32)


def test_plain_and_without_bias():
    _compare({"input": _input()})
    _compare({"input": _input()}, with_bias=False)


@pytest.mark.parametrize("form", ["lengths", "end_start", "rows", "per_query"])
def test_mask_index_forms(form):
    if form == "lengths":
        mask = np.array([3, 5], np.int32)
    elif form == "end_start":
        mask = np.array([4, 5, 1, 0], np.int32)
    elif form == "rows":
        mask = (RNG.random((B, S)) > 0.3).astype(np.int32)
        mask[:, 0] = 1
    else:
        mask = (RNG.random((B, S, S)) > 0.3).astype(np.int32)
    _compare({"input": _input(), "mask_index": mask})


def test_fully_masked_row_matches_onnxruntime():
    """mask_filter_value is added, not -inf: a row with every key masked averages them."""
    mask = np.ones((B, S), np.int32)
    mask[1] = 0
    _compare({"input": _input(), "mask_index": mask}, {"mask_filter_value": -50.0})


def test_unidirectional_scale_and_attention_bias():
    feeds = {"input": _input(), "attention_bias": RNG.standard_normal((1, N, S, S)).astype(
        np.float32)}
    _compare(feeds, {"unidirectional": 1, "scale": 0.3})
    feeds["mask_index"] = np.array([5, 2], np.int32)
    _compare(feeds, {"unidirectional": 1})


def test_uneven_qkv_hidden_sizes():
    _compare({"input": _input()}, hidden=(6, 6, 9))


def test_past_and_present():
    past = RNG.standard_normal((2, B, N, 4, 4)).astype(np.float32)
    out, present = _compare({"input": _input(1), "past": past}, {"unidirectional": 1},
                            outputs=("out", "present"))
    assert present.shape == (2, B, N, 5, 4)
    np.testing.assert_array_equal(present[:, :, :, :4], past)
    _compare({"input": _input(3), "past": past,
              "mask_index": np.ones((B, 7), np.int32)}, outputs=("out", "present"))


def test_refused_forms_name_the_reason():
    weights = np.zeros((HIN, 36), np.float32)
    data = _model(weights, {"num_heads": N, "do_rotary": 1}, {"input": None})
    with pytest.raises(nxrt.NotImplemented, match="do_rotary"):
        nxrt.InferenceSession(data)
    data = _model(weights, {"num_heads": 5}, {"input": None})
    with pytest.raises(nxrt.InvalidGraph, match="multiple of 5 heads"):
        nxrt.InferenceSession(data)
    sess = nxrt.InferenceSession(_model(weights, {"num_heads": N}, {"input": None,
                                                                     "mask_index": None}))
    with pytest.raises(nxrt.NotImplemented, match=r"mask_index of shape \[2,1,5,5\]"):
        sess.run(None, {"input": _input(), "mask_index": np.ones((B, 1, S, S), np.int32)})
