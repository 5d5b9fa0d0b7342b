"""com.microsoft GroupQueryAttention (onnxruntime-genai's decoders) against onnxruntime:
prompts and decode steps, a cache shared with the past (max length) or grown per step,
per-sequence lengths, packed QKV, rotary, local window and softcap."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import nxrt

RNG = np.random.default_rng(11)
FLOAT, INT32 = TensorProto.FLOAT, TensorProto.INT32


def _model(attrs, packed, past, rotary):
    names = ["query", "" if packed else "key", "" if packed else "value",
             "past_key" if past else "", "past_value" if past else "", "seqlens_k",
             "total_sequence_length"]
    if rotary:
        names += ["cos_cache", "sin_cache"]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("GroupQueryAttention", names, ["out", "present_key", "present_value"],
                            domain="com.microsoft", **attrs)
    inputs = [helper.make_tensor_value_info(n, INT32 if n in ("seqlens_k", "total_sequence_length")
                                            else FLOAT, None) for n in names if n]
    outputs = [helper.make_tensor_value_info(n, FLOAT, None)
               for n in ("out", "present_key", "present_value")]
    model = helper.make_model(helper.make_graph([node], "gqa", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 17),
                                             helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _feeds(B, S, Hq, Hkv, D, P, lengths, packed, rotary, max_pos=64):
    feeds = {}
    if packed:
        feeds["query"] = RNG.standard_normal((B, S, (Hq + 2 * Hkv) * D)).astype(np.float32)
    else:
        feeds["query"] = RNG.standard_normal((B, S, Hq * D)).astype(np.float32)
        feeds["key"] = RNG.standard_normal((B, S, Hkv * D)).astype(np.float32)
        feeds["value"] = RNG.standard_normal((B, S, Hkv * D)).astype(np.float32)
    if P:
        feeds["past_key"] = RNG.standard_normal((B, Hkv, P, D)).astype(np.float32)
        feeds["past_value"] = RNG.standard_normal((B, Hkv, P, D)).astype(np.float32)
    feeds["seqlens_k"] = np.array(lengths, np.int32) - 1
    feeds["total_sequence_length"] = np.array(max(lengths), np.int32)
    if rotary:
        angles = RNG.uniform(0, 6.3, (max_pos, rotary // 2))
        feeds["cos_cache"] = np.cos(angles).astype(np.float32)
        feeds["sin_cache"] = np.sin(angles).astype(np.float32)
    return feeds


def _compare(attrs, B, S, Hq, Hkv, D, P, lengths, packed=False, rotary=0, max_pos=64):
    attrs = dict(num_heads=Hq, kv_num_heads=Hkv, **attrs)
    if rotary:
        attrs["do_rotary"] = 1
    data = _model(attrs, packed, P > 0, rotary)
    feeds = _feeds(B, S, Hq, Hkv, D, P, lengths, packed, rotary, max_pos)
    got = nxrt.InferenceSession(data).run(None, feeds)
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    for g, w in zip(got[1:], want[1:]):
        assert g.shape == w.shape
        for b, n in enumerate(lengths):  # the cache up to each sequence's length
            np.testing.assert_allclose(g[b, :, :n], w[b, :, :n], rtol=1e-5, atol=1e-6)
    return got


@pytest.mark.parametrize("rotary,interleaved,D", [(0, 0, 16), (16, 0, 16), (16, 1, 16), (16, 0, 32)])
def test_prompt(rotary, interleaved, D):
    # The last case rotates half of each head (onnxruntime: cos_cache widths in 8s).
    attrs = {"rotary_interleaved": interleaved} if rotary else {}
    _compare(attrs, B=2, S=6, Hq=4, Hkv=2, D=D, P=0, lengths=[6, 6], rotary=rotary)


@pytest.mark.parametrize("rotary", [0, 16])
def test_decode_step_with_a_grown_cache(rotary):
    got = _compare({}, B=1, S=1, Hq=6, Hkv=2, D=16, P=9, lengths=[10], rotary=rotary)
    assert got[1].shape == (1, 2, 10, 16)


@pytest.mark.parametrize("rotary", [0, 16])
def test_decode_step_in_a_shared_cache_with_different_lengths(rotary):
    got = _compare({}, B=2, S=1, Hq=4, Hkv=4, D=8 if not rotary else 16, P=24,
                   lengths=[9, 14], rotary=rotary)
    assert got[1].shape[2] == 24


def test_prompt_continued_after_a_past():
    _compare({}, B=1, S=4, Hq=4, Hkv=1, D=16, P=5, lengths=[9], rotary=16)


def test_packed_qkv():
    _compare({}, B=2, S=3, Hq=4, Hkv=2, D=8, P=0, lengths=[3, 3], packed=True)
    _compare({}, B=1, S=1, Hq=4, Hkv=2, D=8, P=6, lengths=[7], packed=True)


def test_local_window_and_softcap():
    _compare({"local_window_size": 3}, B=1, S=7, Hq=2, Hkv=1, D=16, P=0, lengths=[7])
    _compare({"softcap": 2.5, "scale": 0.3}, B=1, S=1, Hq=2, Hkv=2, D=16, P=11, lengths=[12])


# From 5 new tokens a sequence's attention runs as matrix products over blocks of 64
# queries (group_query_attention.cc); the cases below take that path.


def _compare_rows_alone(attrs, S, Hq, Hkv, D, P, lengths, rotary=0):
    """Several sequences' prompts after different pasts in one run (nxrt's extension, a
    server's batched prompts), each against onnxruntime running it alone (which refuses
    batches of prompts with a past)."""
    attrs = dict(num_heads=Hq, kv_num_heads=Hkv, **attrs)
    if rotary:
        attrs["do_rotary"] = 1
    data = _model(attrs, False, True, rotary)
    feeds = _feeds(len(lengths), S, Hq, Hkv, D, P, lengths, False, rotary)
    got = nxrt.InferenceSession(data).run(None, feeds)
    ort_sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for b, n in enumerate(lengths):
        row = {k: (v[b:b + 1] if k in ("query", "key", "value", "past_key", "past_value")
                   else v) for k, v in feeds.items()}
        row["seqlens_k"] = np.array([n - 1], np.int32)
        row["total_sequence_length"] = np.array(n, np.int32)
        want = ort_sess.run(None, row)
        np.testing.assert_allclose(got[0][b], want[0][0], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[1][b, :, :n], want[1][0, :, :n], rtol=1e-5, atol=1e-6)


def test_prompts_in_a_cache_with_different_lengths():
    _compare_rows_alone({}, S=7, Hq=4, Hkv=2, D=16, P=24, lengths=[12, 20], rotary=16)
    _compare_rows_alone({"local_window_size": 4}, S=8, Hq=2, Hkv=1, D=16, P=24, lengths=[13, 18])


def test_long_prompt_over_several_query_blocks():
    _compare({}, B=1, S=150, Hq=2, Hkv=1, D=16, P=0, lengths=[150], rotary=16, max_pos=160)
    _compare({}, B=1, S=70, Hq=2, Hkv=2, D=16, P=90, lengths=[160], rotary=16, max_pos=160)


def test_prompt_with_softcap_window_and_packed_qkv():
    _compare({"softcap": 2.5, "scale": 0.3}, B=1, S=9, Hq=2, Hkv=2, D=16, P=0, lengths=[9])
    _compare({"local_window_size": 4}, B=1, S=8, Hq=2, Hkv=1, D=16, P=0, lengths=[8])
    _compare({}, B=2, S=5, Hq=4, Hkv=2, D=8, P=0, lengths=[5, 5], packed=True)


def test_a_prompts_rows_do_not_depend_on_what_runs_beside_it():
    """A prompt's outputs are bit for bit the same alone and padded at the end beside
    another sequence: the batch decoder of `nxrt serve` runs prompts so."""
    Hq, Hkv, D, P, rot = 4, 2, 16, 32, 16
    data = _model(dict(num_heads=Hq, kv_num_heads=Hkv, do_rotary=1), False, True, rot)
    sess = nxrt.InferenceSession(data)
    alone = _feeds(1, 6, Hq, Hkv, D, P, [9], False, rot)  # 3 cached tokens, 6 new
    other = _feeds(1, 9, Hq, Hkv, D, P, [20], False, rot)
    pad = RNG.standard_normal((1, 3, Hq * D)).astype(np.float32)
    padk = RNG.standard_normal((1, 3, Hkv * D)).astype(np.float32)
    together = {
        "query": np.concatenate([np.concatenate([alone["query"], pad], 1), other["query"]]),
        "key": np.concatenate([np.concatenate([alone["key"], padk], 1), other["key"]]),
        "value": np.concatenate([np.concatenate([alone["value"], padk], 1), other["value"]]),
        "past_key": np.concatenate([alone["past_key"], other["past_key"]]),
        "past_value": np.concatenate([alone["past_value"], other["past_value"]]),
        "seqlens_k": np.array([3 + 9 - 1, 19], np.int32),
        "total_sequence_length": np.array(20, np.int32),
        "cos_cache": alone["cos_cache"], "sin_cache": alone["sin_cache"]}
    got_alone = sess.run(None, alone)
    got_together = sess.run(None, together)
    np.testing.assert_array_equal(got_together[0][0, :6], got_alone[0][0])
    for g, a in zip(got_together[1:], got_alone[1:]):
        np.testing.assert_array_equal(g[0, :, :9], a[0, :, :9])


@pytest.mark.parametrize("D", [16, 32, 64, 128])
def test_decode_rows_by_head_size(D):
    """Decode steps take one query row at a time (on AVX-512 for these head sizes; the
    portable loop takes the others, such as 8 above)."""
    _compare({}, B=2, S=1, Hq=4, Hkv=2, D=D, P=40, lengths=[17, 33], rotary=16)
    _compare({"local_window_size": 5, "softcap": 3.0}, B=1, S=2, Hq=2, Hkv=1, D=D, P=30,
             lengths=[21])
    _compare({"smooth_softmax": 1}, B=1, S=1, Hq=2, Hkv=2, D=D, P=12, lengths=[9])


def test_bad_inputs_are_named():
    data = _model({"num_heads": 4, "kv_num_heads": 2}, False, True, 0)
    feeds = _feeds(1, 1, 4, 2, 8, 4, [5], False, 0)
    feeds["seqlens_k"] = np.array([9], np.int32)  # longer than the cache
    with pytest.raises(Exception, match="seqlens_k"):
        nxrt.InferenceSession(data).run(None, feeds)
    with pytest.raises(Exception, match="kv_num_heads"):
        nxrt.InferenceSession(_model({"num_heads": 3, "kv_num_heads": 2}, False, False, 0))


def test_absurd_total_sequence_length_is_refused():
    data = _model({"num_heads": 4, "kv_num_heads": 2}, False, False, 0)
    feeds = _feeds(1, 2, 4, 2, 8, 0, [2], False, 0)
    feeds["total_sequence_length"] = np.array(2 ** 30, np.int32)
    with pytest.raises(Exception, match="total_sequence_length"):
        nxrt.InferenceSession(data).run(None, feeds)
