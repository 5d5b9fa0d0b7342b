"""com.microsoft DynamicQuantizeMatMul, QLinearAveragePool, EmbedLayerNormalization,
NGramRepeatBlock and the contrib QuantizeLinear/DequantizeLinear against onnxruntime's CPU
provider (DynamicQuantizeMatMul against its definition: onnxruntime's 8-bit kernel for
AVX2 without VNNI adds pairs of u8 x s8 products in saturating 16 bits, off by up to ~40
on these inputs), on random inputs of several shapes
and attribute settings, plus one malformed input per op whose error names that input."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import nxrt

RNG = np.random.default_rng(1111)


def _model(node, feeds, outputs, inits=None):
    """A one-node model: `feeds` (name -> array) are graph inputs, `inits` initializers,
    `outputs` (name -> numpy dtype) the graph outputs."""
    def info(name, dtype):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                             None)
    graph = helper.make_graph([node], "g", [info(n, a.dtype) for n, a in feeds.items()],
                              [info(n, t) for n, t in outputs.items()],
                              [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _run_both(data, feeds, threads=0):
    so = nxrt.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    session = nxrt.InferenceSession(data, so)
    got = session.run(None, feeds)
    again = session.run(None, feeds)  # warm run: packed weights and scratch reused
    for g, a in zip(got, again):
        np.testing.assert_array_equal(g, a)
    oso = ort.SessionOptions()
    oso.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(data, oso, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    return got, want


# ---- DynamicQuantizeMatMul ----

def _dqmm_reference(a, b, b_scale, b_zero=None, bias=None):
    """The op's definition in float64: DynamicQuantizeLinear's uint8 codes of A, the exact
    integer product with B - b_zero, times a_scale * b_scale, plus bias."""
    lo, hi = min(0.0, float(a.min())), max(0.0, float(a.max()))
    scale = np.float32(hi - lo) / np.float32(255)
    if scale == 0:  # an all-zero A: every code is the zero point, 0
        zero, codes = 0.0, np.zeros(a.shape)
    else:
        zero = np.round(np.clip(-lo / scale, 0, 255))
        codes = np.clip(np.round(a / scale) + zero, 0, 255)
    b = b.astype(np.float64) - (0 if b_zero is None else b_zero.astype(np.float64))
    y = np.matmul(codes - zero, b) * np.float64(scale) * b_scale.astype(np.float64)
    return y if bias is None else y + bias


def _dqmm(a_shape, b_shape, b_type, scale_shape, zero, bias, constant, threads=0):
    a = (RNG.standard_normal(a_shape) * 2 + 0.3).astype(np.float32)
    lo, hi = (-128, 128) if b_type == np.int8 else (0, 256)
    b = RNG.integers(lo, hi, b_shape).astype(b_type)
    n = b_shape[-1] if len(b_shape) > 1 else 1
    weights = {"B": b, "b_scale": np.asarray(RNG.random(scale_shape) * 0.05 + 0.001, np.float32)}
    names = ["A", "B", "b_scale", "", ""]
    if zero is not None:
        center = 0 if b_type == np.int8 else 128
        weights["b_zero_point"] = np.asarray(RNG.integers(center - 16, center + 16, zero), b_type)
        names[3] = "b_zero_point"
    if bias:
        weights["bias"] = RNG.standard_normal(n).astype(np.float32)
        names[4] = "bias"
    while names[-1] == "":
        names.pop()
    node = helper.make_node("DynamicQuantizeMatMul", names, ["Y"], domain="com.microsoft")
    feeds = {"A": a}
    if constant:
        data = _model(node, feeds, {"Y": np.float32}, weights)
    else:
        feeds.update(weights)
        data = _model(node, feeds, {"Y": np.float32})
    got, _ = _run_both(data, feeds, threads)  # onnxruntime's values: see the module's note
    want = _dqmm_reference(a, b, weights["b_scale"], weights.get("b_zero_point"),
                           weights.get("bias"))
    return got, [want]


@pytest.mark.parametrize("a_shape,b_shape,scale_shape,zero,bias", [
    ((4, 16), (16, 8), (), None, False),
    ((2, 5, 32), (32, 24), (24,), (24,), True),
    ((3, 7, 40), (40, 33), (), (), True),
    ((1, 64), (64, 100), (100,), None, True),
    ((33,), (33, 9), (9,), (9,), False),           # 1-D A
    ((2, 6, 12), (12,), (), (), False),             # 1-D B
    ((3, 1, 4, 8), (2, 8, 5), (2, 1, 5), (2, 1, 5), True),  # batched B, per batch and column
    ((2, 4, 8), (2, 8, 5), (5,), (), False),        # batched B, per column (bias: below)
    ((130, 70), (70, 45), (45,), (45,), True),      # several row blocks
])
@pytest.mark.parametrize("b_type", [np.int8, np.uint8])
@pytest.mark.parametrize("constant", [False, True], ids=["fed", "initializer"])
def test_dynamic_quantize_matmul(a_shape, b_shape, scale_shape, zero, bias, b_type, constant):
    got, want = _dqmm(a_shape, b_shape, b_type, scale_shape, zero, bias, constant)
    # The product is exact in int32 in both runtimes and A is quantized the same way; only
    # the float scaling (a_scale * b_scale once, or one after the other) may round apart.
    scale = max(1.0, float(np.abs(want[0]).max()))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6 * scale)


def test_dynamic_quantize_matmul_threads_and_edge_values():
    got, want = _dqmm((96, 256), (256, 64), np.int8, (64,), (64,), True, True, threads=2)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    # All-zero, all-negative and all-positive A (the range always includes 0).
    b = RNG.integers(-128, 128, (6, 4)).astype(np.int8)
    node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "s"], ["Y"], domain="com.microsoft")
    for a in (np.zeros((3, 6)), np.full((3, 6), -2.5), RNG.random((3, 6)) + 1):
        feeds = {"A": a.astype(np.float32), "B": b, "s": np.array(0.03, np.float32)}
        got, _ = _run_both(_model(node, feeds, {"Y": np.float32}), feeds)
        want = _dqmm_reference(feeds["A"], b, feeds["s"])
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)


def test_dynamic_quantize_matmul_bias_with_batched_b_follows_the_spec():
    # Y = A B + bias. onnxruntime 1.32 agrees when b_scale is a scalar, [N] with a 2-D B, or
    # of B's rank; for other per-column scales (here [N] with a batched B) it adds the bias
    # before multiplying by b_scale, so its bias comes out scaled. nxrt keeps the spec.
    a = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    b = RNG.integers(-128, 128, (2, 8, 5)).astype(np.int8)
    feeds = {"A": a, "B": b, "b_scale": (RNG.random(5) * 0.05 + 0.01).astype(np.float32),
             "bias": RNG.standard_normal(5).astype(np.float32)}
    node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "b_scale", "", "bias"], ["Y"],
                            domain="com.microsoft")
    got = nxrt.InferenceSession(_model(node, feeds, {"Y": np.float32})).run(None, feeds)[0]
    want = _dqmm_reference(a, b, feeds["b_scale"], bias=feeds["bias"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_dynamic_quantize_matmul_bad_scale_names_it():
    node = helper.make_node("DynamicQuantizeMatMul", ["A", "B", "b_scale"], ["Y"],
                            domain="com.microsoft")
    feeds = {"A": np.ones((2, 4), np.float32), "B": np.ones((4, 5), np.int8),
             "b_scale": np.ones(3, np.float32)}
    data = _model(node, feeds, {"Y": np.float32})
    with pytest.raises(nxrt.InvalidArgument, match="b_scale has shape \\[3\\]"):
        nxrt.InferenceSession(data).run(None, feeds)
    feeds["b_scale"] = np.ones(5, np.float32)
    feeds["B"] = np.ones((3, 5), np.int8)
    with pytest.raises(nxrt.InvalidArgument, match="A's shape .* and B's shape"):
        nxrt.InferenceSession(data).run(None, feeds)


# ---- QLinearAveragePool ----

def _pool_reference_and_ours(x, attrs, xq, yq, threads=0):
    inits = {"x_scale": np.array(xq[0], np.float32), "x_zero_point": np.array(xq[1], x.dtype),
             "y_scale": np.array(yq[0], np.float32), "y_zero_point": np.array(yq[1], x.dtype)}
    node = helper.make_node("QLinearAveragePool", ["X", "x_scale", "x_zero_point", "y_scale",
                                                   "y_zero_point"], ["Y"], domain="com.microsoft",
                            **attrs)
    feeds = {"X": x}
    return _run_both(_model(node, feeds, {"Y": x.dtype}, inits), feeds, threads)


def _pool_cases():
    rng = np.random.default_rng(5)
    cases = []
    for i in range(48):
        rank = 1 + i % 3
        dtype = np.uint8 if i % 2 else np.int8
        channels_last = (i // 3) % 2
        spatial = tuple(int(v) for v in rng.integers(3, 10 if rank < 3 else 7, rank))
        kernel = [int(v) for v in rng.integers(1, 4, rank)]
        attrs = dict(kernel_shape=kernel, strides=[int(v) for v in rng.integers(1, 3, rank)],
                     count_include_pad=int(rng.integers(0, 2)), ceil_mode=int(rng.integers(0, 2)),
                     channels_last=channels_last)
        if i % 8 == 7:
            attrs["auto_pad"] = ["SAME_UPPER", "SAME_LOWER", "VALID"][i % 3]
        else:
            attrs["pads"] = [int(rng.integers(0, k)) for k in kernel * 2]
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        shape = (n,) + spatial + (c,) if channels_last else (n, c) + spatial
        cases.append((f"{i}-r{rank}-{np.dtype(dtype).name}-cl{channels_last}", shape, dtype, attrs))
    return cases


@pytest.mark.parametrize("name,shape,dtype,attrs", _pool_cases(), ids=[c[0] for c in _pool_cases()])
def test_qlinear_average_pool(name, shape, dtype, attrs):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, shape).astype(dtype)
    xq = (float(RNG.uniform(0.01, 0.1)), int(RNG.integers(info.min, info.max + 1)))
    yq = (float(RNG.uniform(0.005, 0.1)), int(RNG.integers(info.min, info.max + 1)))
    got, want = _pool_reference_and_ours(x, attrs, xq, yq)
    np.testing.assert_array_equal(got[0], want[0])


def test_qlinear_average_pool_ties_and_ceil_mode_divisor():
    # Means of .5 round half to even after the zero point is added (6.5 -> 6, 7.5 -> 8).
    x = np.array([[[1, 2, 2, 3, 3, 4, 4, 5, 5, 6]]], np.uint8)
    got, want = _pool_reference_and_ours(x, dict(kernel_shape=[2], strides=[2]), (1.0, 0), (1.0, 5))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0].ravel(), [6, 8, 8, 10, 10])
    # count_include_pad with ceil_mode divides by the whole kernel, also past the padding.
    x = np.full((1, 1, 5, 5), 240, np.uint8)
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1,
                 count_include_pad=1)
    got, want = _pool_reference_and_ours(x, attrs, (1.0, 0), (1.0, 0))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0][0, 0, 2, 2] == 27  # 240 / 9


def test_qlinear_average_pool_large_with_threads():
    for channels_last in (0, 1):
        shape = (2, 28, 28, 32) if channels_last else (2, 32, 28, 28)
        x = RNG.integers(0, 256, shape).astype(np.uint8)
        attrs = dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                     channels_last=channels_last)
        got, want = _pool_reference_and_ours(x, attrs, (0.02, 128), (0.015, 120), threads=2)
        np.testing.assert_array_equal(got[0], want[0])


def test_qlinear_average_pool_bad_scale_names_it():
    node = helper.make_node("QLinearAveragePool", ["X", "x_scale", "", "y_scale"], ["Y"],
                            domain="com.microsoft", kernel_shape=[2, 2])
    feeds = {"X": np.ones((1, 1, 4, 4), np.uint8), "x_scale": np.ones(2, np.float32),
             "y_scale": np.ones(1, np.float32)}
    data = _model(node, feeds, {"Y": np.uint8})
    with pytest.raises(nxrt.InvalidArgument, match="x_scale has 2 values"):
        nxrt.InferenceSession(data).run(None, feeds)
    bad_pads = helper.make_node("QLinearAveragePool", ["X", "x_scale", "", "y_scale"], ["Y"],
                                domain="com.microsoft", kernel_shape=[2, 2], pads=[2, 0, 0, 0])
    with pytest.raises(nxrt.InvalidGraph, match="pads\\[0\\] = 2"):
        nxrt.InferenceSession(_model(bad_pads, feeds, {"Y": np.uint8}))


# ---- EmbedLayerNormalization ----

def _embed_feeds(B, S, H, V=30, P=24, G=3, segments=True, mask=True, positions=None,
                 dtype=np.float32):
    f = lambda *s: RNG.standard_normal(s).astype(dtype)  # noqa: E731
    feeds = {"input_ids": RNG.integers(0, V, (B, S)).astype(np.int32)}
    if segments:
        feeds["segment_ids"] = RNG.integers(0, G, (B, S)).astype(np.int32)
    feeds.update(word_embedding=f(V, H), position_embedding=f(P, H))
    if segments:
        feeds["segment_embedding"] = f(G, H)
    feeds.update(gamma=f(H), beta=f(H))
    if mask:
        feeds["mask"] = RNG.integers(0, 2, (B, S)).astype(np.int32)
    if positions:
        feeds["position_ids"] = RNG.integers(0, P, positions).astype(np.int32)
    return feeds


def _embed_model(feeds, outputs=("output", "mask_index", "embedding_sum"), **attrs):
    order = ["input_ids", "segment_ids", "word_embedding", "position_embedding",
             "segment_embedding", "gamma", "beta", "mask", "position_ids"]
    names = [n if n in feeds else "" for n in order]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("EmbedLayerNormalization", names, list(outputs),
                            domain="com.microsoft", **attrs)
    t = feeds["word_embedding"].dtype
    types = {"output": t, "mask_index": np.int32, "embedding_sum": t}
    return _model(node, feeds, {o: types[o] for o in outputs if o})


@pytest.mark.parametrize("B,S,H,segments,mask,positions,epsilon", [
    (2, 4, 8, True, True, None, None),
    (3, 17, 96, True, True, None, 1e-5),
    (1, 9, 64, False, True, None, None),
    (2, 6, 32, True, False, None, 1e-3),
    (2, 7, 48, True, True, "batch", None),
    (4, 5, 16, False, False, "shared", 1e-6),
])
def test_embed_layer_normalization(B, S, H, segments, mask, positions, epsilon):
    pos_shape = {"batch": (B, S), "shared": (1, S), None: None}[positions]
    feeds = _embed_feeds(B, S, H, segments=segments, mask=mask, positions=pos_shape)
    attrs = {} if epsilon is None else {"epsilon": epsilon}
    got, want = _run_both(_embed_model(feeds, **attrs), feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6, atol=1e-6)


def test_embed_layer_normalization_mask_counts_and_optional_outputs():
    feeds = _embed_feeds(3, 5, 8)
    # mask_index counts the values equal to 1 (not the nonzero ones, not the first 0).
    feeds["mask"] = np.array([[1, 0, 1, 1, 0], [2, 0, 3, 1, 1], [-1, 1, 0, 0, 0]], np.int32)
    got, want = _run_both(_embed_model(feeds, mask_index_type=1), feeds)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[1], [3, 2, 1])
    # Only output and mask_index (onnxruntime requires the second output).
    got, want = _run_both(_embed_model(feeds, outputs=("output", "mask_index")), feeds)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
    # No mask: mask_index is all zeros.
    del feeds["mask"]
    got, want = _run_both(_embed_model(feeds), feeds)
    np.testing.assert_array_equal(got[1], want[1])
    assert not got[1].any()


def test_embed_layer_normalization_segment_table_without_ids_uses_segment_0():
    feeds = _embed_feeds(2, 6, 16)
    del feeds["segment_ids"]
    got, want = _run_both(_embed_model(feeds), feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_embed_layer_normalization_float16():
    feeds = _embed_feeds(2, 7, 32, dtype=np.float16)
    got, want = _run_both(_embed_model(feeds), feeds)
    # nxrt sums and normalizes in float and rounds once; onnxruntime rounds the running
    # sum to float16 too: a float16 ulp or so apart.
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].astype(np.float32), rtol=4e-3,
                               atol=4e-3)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2].astype(np.float32), want[2].astype(np.float32), rtol=2e-3,
                               atol=2e-3)


def test_embed_layer_normalization_bad_ids_name_the_input():
    feeds = _embed_feeds(2, 4, 8, V=10)
    feeds["input_ids"][1, 2] = 10
    data = _embed_model(feeds)
    with pytest.raises(nxrt.InvalidArgument, match=r"input_ids\[1, 2\] = 10 is outside word_embedding"):
        nxrt.InferenceSession(data).run(None, feeds)
    feeds = _embed_feeds(2, 4, 8, P=3)
    with pytest.raises(nxrt.InvalidArgument, match="position_embedding's 3 rows"):
        nxrt.InferenceSession(_embed_model(feeds)).run(None, feeds)
    feeds = _embed_feeds(2, 4, 8)
    feeds["gamma"] = feeds["gamma"][:7]
    with pytest.raises(nxrt.InvalidArgument, match="gamma has 7 values"):
        nxrt.InferenceSession(_embed_model(feeds)).run(None, feeds)


# ---- NGramRepeatBlock ----

def _ngram(ids, scores, n):
    node = helper.make_node("NGramRepeatBlock", ["input_ids", "scores"], ["scores_out"],
                            domain="com.microsoft", ngram_size=n)
    feeds = {"input_ids": ids, "scores": scores}
    return _run_both(_model(node, feeds, {"scores_out": np.float32}), feeds)


@pytest.mark.parametrize("n,B,S,V,distinct", [
    (1, 2, 5, 8, 8), (2, 3, 12, 6, 3), (3, 2, 20, 10, 2), (3, 1, 2, 5, 2), (4, 4, 30, 50, 3),
    (2, 2, 0, 4, 2), (5, 1, 4, 4, 2), (2, 3, 64, 1000, 4),
])
def test_ngram_repeat_block(n, B, S, V, distinct):
    ids = RNG.integers(0, distinct, (B, S)).astype(np.int64)
    scores = RNG.standard_normal((B, V)).astype(np.float32)
    got, want = _ngram(ids, scores, n)
    np.testing.assert_array_equal(got[0], want[0])


def test_ngram_repeat_block_bans_exactly_the_repeats():
    ids = np.array([[1, 2, 3, 1, 2], [4, 4, 4, 4, 4]], np.int64)
    got, want = _ngram(ids, np.zeros((2, 6), np.float32), 3)
    np.testing.assert_array_equal(got[0], want[0])
    banned = [set(np.flatnonzero(np.isinf(row))) for row in got[0]]
    assert banned == [{3}, {4}]  # "1 2" was followed by 3; "4 4" by 4


def test_ngram_repeat_block_bad_input_names_it():
    node = helper.make_node("NGramRepeatBlock", ["input_ids", "scores"], ["out"],
                            domain="com.microsoft", ngram_size=2)
    feeds = {"input_ids": np.array([[7, 7, 7]], np.int64), "scores": np.zeros((1, 5), np.float32)}
    data = _model(node, feeds, {"out": np.float32})
    with pytest.raises(nxrt.InvalidArgument, match=r"input_ids\[0, 1\] = 7 would be banned"):
        nxrt.InferenceSession(data).run(None, feeds)
    feeds["scores"] = np.zeros((2, 5), np.float32)
    with pytest.raises(nxrt.InvalidArgument, match="scores has shape \\[2,5\\]"):
        nxrt.InferenceSession(data).run(None, feeds)
    zero = helper.make_node("NGramRepeatBlock", ["input_ids", "scores"], ["out"],
                            domain="com.microsoft", ngram_size=0)
    with pytest.raises(nxrt.InvalidGraph, match="ngram_size must be positive"):
        nxrt.InferenceSession(_model(zero, feeds, {"out": np.float32}))


def test_every_new_op_is_registered():
    table = {(d, op) for d, op, *_ in nxrt._nxrt.kernel_table()}
    for op in ("DynamicQuantizeMatMul", "QLinearAveragePool", "EmbedLayerNormalization",
               "NGramRepeatBlock"):
        assert ("com.microsoft", op) in table



# ---- com.microsoft QuantizeLinear / DequantizeLinear --------------------------------------

@pytest.mark.parametrize("q_type", [np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize("x_type", [np.float32, np.float16])
def test_contrib_quantize_and_dequantize_linear(q_type, per_axis, x_type):
    x = (RNG.standard_normal((2, 3, 4)) * 40).astype(x_type)
    info = np.iinfo(q_type)
    shape = (3,) if per_axis else ()
    scale = np.asarray(RNG.random(shape) * 0.5 + 0.05, x_type)
    zero = np.asarray(RNG.integers(max(info.min, -20), min(info.max, 20) + 1, shape), q_type)
    attrs = {"axis": 1} if per_axis else {}
    quantize = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], domain="com.microsoft",
                                **attrs)
    (q,), (want_q,) = _run_both(_model(quantize, {"x": x, "s": scale, "z": zero}, {"q": q_type}),
                                {"x": x, "s": scale, "z": zero})
    np.testing.assert_array_equal(q, want_q)
    dequantize = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"],
                                  domain="com.microsoft", **attrs)
    (y,), (want_y,) = _run_both(_model(dequantize, {"q": q, "s": scale, "z": zero}, {"y": x_type}),
                                {"q": q, "s": scale, "z": zero})
    np.testing.assert_array_equal(y, want_y)


def test_contrib_dequantize_linear_int32_without_zero_point():
    q = RNG.integers(-1000, 1000, (4, 5)).astype(np.int32)
    scale = np.asarray(0.01, np.float32)
    node = helper.make_node("DequantizeLinear", ["q", "s"], ["y"], domain="com.microsoft")
    (y,), (want,) = _run_both(_model(node, {"q": q, "s": scale}, {"y": np.float32}),
                              {"q": q, "s": scale})
    np.testing.assert_array_equal(y, want)
