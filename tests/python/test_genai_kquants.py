"""GGUF's K-quants (Q2_K..Q6_K) and Q5_0 / Q5_1: nxrt.genai's GGUF reader dequantizes them
as llama.cpp's own gguf-py does (bit for bit, on random blocks), and the converter's int4
weights turn them into MatMulNBits products that equal the float product."""
import numpy as np
import pytest

import nxrt
from nxrt.genai import gguf as reader
from nxrt.genai.convert import _LlamaBuilder

gguf = pytest.importorskip("gguf")  # llama.cpp's gguf-py: the reference dequantizer
Q = gguf.GGMLQuantizationType

# Byte offsets of each block's float16 scale fields (random bytes there could be inf/NaN).
HALVES = {"Q5_0": [0], "Q5_1": [0, 2], "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2],
          "Q5_K": [0, 2], "Q6_K": [208]}
# Types whose 8-bit MatMulNBits form has float zero points, which onnxruntime's CPU
# provider refuses ("use uint8 zero points"); nxrt runs them.
ORT_REFUSES = {"Q5_1", "Q5_K"}


def _blocks(name, count, rng, scales=(0.001, 0.05)):
    size = gguf.GGML_QUANT_SIZES[getattr(Q, name)][1]
    raw = rng.integers(0, 256, (count, size), dtype=np.uint8)
    for off in HALVES[name]:
        halves = rng.uniform(*scales, count).astype(np.float16)
        raw[:, off:off + 2] = np.frombuffer(halves.tobytes(), np.uint8).reshape(count, 2)
    return raw


@pytest.mark.parametrize("name", sorted(HALVES))
def test_dequantize_matches_gguf_py(name):
    rng = np.random.default_rng(len(name) * 7 + ord(name[1]))
    raw = _blocks(name, 64, rng, scales=(-0.1, 0.1))
    want = gguf.quants.dequantize(raw, getattr(Q, name)).reshape(-1)
    got = reader.dequantize_blocks(raw.reshape(-1), getattr(reader, name))
    np.testing.assert_array_equal(got, want)


def _linear_model(path, n, k):
    g = reader.GGUFFile(path)
    builder = _LlamaBuilder(g, None, "int4")
    out = builder.linear("x", "w", n, k)
    h = builder.onnx.helper
    graph = h.make_graph(builder.b.nodes, "g", [h.make_tensor_value_info("x", 1, [3, k])],
                         [h.make_tensor_value_info(out, 1, [3, n])], builder.b.inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17),
                                               h.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return g, builder, model.SerializeToString()


@pytest.mark.parametrize("name", sorted(HALVES))
def test_int4_conversion_multiplies_like_the_float_weights(name, tmp_path):
    n, k = 48, 512
    block = gguf.GGML_QUANT_SIZES[getattr(Q, name)][0]
    rng = np.random.default_rng(5)
    raw = _blocks(name, n * k // block, rng)
    if name in ("Q4_K", "Q5_K"):
        raw[0, 4] &= 0xC0  # sub-block 0 of block 0: scale 0 with a minimum (all values equal)
        raw[0, 8] |= 0x05
    path = str(tmp_path / f"{name}.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_tensor("w", raw.reshape(n, -1), raw_dtype=getattr(Q, name))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    g, builder, model = _linear_model(path, n, k)
    assert [node.op_type for node in builder.b.nodes] == ["MatMulNBits"]
    x = rng.standard_normal((3, k)).astype(np.float32)
    want = x.astype(np.float64) @ g.array("w").astype(np.float64).T
    (got,) = nxrt.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    ort = pytest.importorskip("onnxruntime")
    if name in ORT_REFUSES:
        with pytest.raises(Exception, match="floating-point zero points"):
            ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    else:
        (theirs,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
            None, {"x": x})
        np.testing.assert_allclose(theirs, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_unsupported_quant_type_is_named(tmp_path):
    path = str(tmp_path / "iq.gguf")
    writer = gguf.GGUFWriter(path, "llama")
    size = gguf.GGML_QUANT_SIZES[Q.IQ4_NL][1]
    writer.add_tensor("w", np.zeros((4, 2 * size), np.uint8), raw_dtype=Q.IQ4_NL)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(reader.GGUFError, match="tensor 'w': IQ4_NL is not supported"):
        reader.GGUFFile(path).array("w")


def test_rows_that_are_not_whole_blocks_are_refused(tmp_path):
    # ggml quantizes each row by itself: a Q4_K matrix with rows of 128 elements is corrupt
    # even when its total (4 x 128) is a whole number of 256-element blocks.
    import struct

    def text(t):
        return struct.pack("<Q", len(t)) + t.encode()

    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + text("w") + struct.pack("<IQQ", 2, 128, 4)
    head += struct.pack("<IQ", reader.Q4_K, 0)
    path = tmp_path / "rows.gguf"
    path.write_bytes(head + b"\0" * (-len(head) % 32) + b"\0" * 288)
    with pytest.raises(reader.GGUFError, match="rows of 128 elements are not a whole number of "
                                               "Q4_K blocks of 256"):
        reader.GGUFFile(str(path))
