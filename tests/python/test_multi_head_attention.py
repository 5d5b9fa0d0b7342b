"""com.microsoft MultiHeadAttention (BERT/Whisper/T5 exports of onnxruntime's transformer
optimizer) against onnxruntime: self and cross attention, the key padding mask in its
three shapes, attention bias, input bias, past/present caches, causal attention and the
forms nxrt refuses (packed QKV, as onnxruntime's CPU provider does)."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import nxrt

RNG = np.random.default_rng(5)
B, S, L, N, D = 2, 3, 4, 2, 8
NAMES = ["query", "key", "value", "bias", "key_padding_mask", "attention_bias",
         "past_key", "past_value"]


def _model(feeds, attrs, outputs=("out",)):
    names = [n if n in feeds else "" for n in NAMES]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("MultiHeadAttention", names, list(outputs), domain="com.microsoft",
                            **attrs)
    inputs = [helper.make_tensor_value_info(
        n, TensorProto.INT32 if n == "key_padding_mask" else TensorProto.FLOAT, None)
        for n in names if n]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    model = helper.make_model(helper.make_graph([node], "mha", inputs, outs),
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _compare(feeds, attrs=None, outputs=("out",)):
    data = _model(feeds, dict(num_heads=N, **(attrs or {})), outputs)
    got = nxrt.InferenceSession(data).run(None, feeds)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    return got


def _qkv(s=S, l=L):
    return {"query": RNG.standard_normal((B, s, N * D)).astype(np.float32),
            "key": RNG.standard_normal((B, l, N * D)).astype(np.float32),
            "value": RNG.standard_normal((B, l, N * D)).astype(np.float32)}


def test_cross_attention():
    _compare(_qkv())


def test_scale_attribute():
    _compare(_qkv(), {"scale": 0.3})


def test_input_bias():
    feeds = _qkv()
    feeds["bias"] = RNG.standard_normal(3 * N * D).astype(np.float32)
    _compare(feeds)


@pytest.mark.parametrize("mask", [
    np.array([[1, 1, 0, 1], [1, 0, 0, 0]], np.int32),   # [B, L] key padding
    np.array([3, 1], np.int32),                          # [B] valid lengths
    None,                                                # [B, S, L], made below
])
def test_key_padding_mask(mask):
    feeds = _qkv()
    if mask is None:
        mask = RNG.integers(0, 2, (B, S, L)).astype(np.int32)
        mask[..., 0] = 1
    feeds["key_padding_mask"] = mask
    _compare(feeds)


def test_mask_filter_value():
    feeds = _qkv()
    feeds["key_padding_mask"] = np.array([[1, 1, 0, 1], [1, 0, 0, 0]], np.int32)
    _compare(feeds, {"mask_filter_value": -5.0})


@pytest.mark.parametrize("shape", [(1, N, S, L), (B, N, S, L), (B, 1, S, L)])
def test_attention_bias(shape):
    feeds = _qkv()
    feeds["attention_bias"] = RNG.standard_normal(shape).astype(np.float32)
    _compare(feeds)


def test_key_value_in_heads_layout():
    feeds = _qkv()
    for name in ("key", "value"):
        feeds[name] = feeds[name].reshape(B, L, N, D).transpose(0, 2, 1, 3).copy()
    _compare(feeds)


@pytest.mark.parametrize("unidirectional", [0, 1])
def test_past_and_present(unidirectional):
    feeds = _qkv(s=3, l=3)
    feeds["past_key"] = RNG.standard_normal((B, N, 5, D)).astype(np.float32)
    feeds["past_value"] = RNG.standard_normal((B, N, 5, D)).astype(np.float32)
    _compare(feeds, {"unidirectional": unidirectional}, ("out", "present_key", "present_value"))


def test_causal_self_attention_without_past():
    _compare(_qkv(s=4, l=4), {"unidirectional": 1})


def test_decode_step_with_mask_and_past():
    feeds = _qkv(s=1, l=1)
    feeds["past_key"] = RNG.standard_normal((B, N, 6, D)).astype(np.float32)
    feeds["past_value"] = RNG.standard_normal((B, N, 6, D)).astype(np.float32)
    feeds["key_padding_mask"] = np.array([[1] * 7, [0, 0, 1, 1, 1, 1, 1]], np.int32)
    _compare(feeds, {}, ("out", "present_key", "present_value"))


def test_packed_qkv_is_refused_with_the_op_named():
    qkv = RNG.standard_normal((B, S, N, 3, D)).astype(np.float32)
    data = _model({"query": qkv}, dict(num_heads=N))
    with pytest.raises(Exception, match="MultiHeadAttention"):
        nxrt.InferenceSession(data).run(None, {"query": qkv})


def test_hidden_size_not_divisible_by_heads_is_an_error():
    feeds = {"query": RNG.standard_normal((B, S, 15)).astype(np.float32),
             "key": RNG.standard_normal((B, L, 15)).astype(np.float32),
             "value": RNG.standard_normal((B, L, 15)).astype(np.float32)}
    data = _model(feeds, dict(num_heads=N))
    with pytest.raises(Exception, match="MultiHeadAttention"):
        nxrt.InferenceSession(data).run(None, feeds)
