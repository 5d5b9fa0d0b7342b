"""Single ops of the zoo's shapes, nxrt next to onnxruntime (bench/harness.py: one process,
same inputs, interleaved blocks, medians and p99): the kernels behind a model's profile
line, measured without the rest of the model.

Usage:
  PYTHONPATH=python .venv/bin/python bench/bench_ops.py [--threads 1 2] [--cases NAME ...]
"""
import argparse

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import harness
import nxrt

RNG = np.random.default_rng(0)


def one_node(op, x, inits=(), out_type=TensorProto.FLOAT, **attrs):
    """A model of one `op` node reading x (and the constant `inits`, name and array)."""
    in_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    node = helper.make_node(op, ["x"] + [n for n, _ in inits], ["y"], **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info("x", in_type, list(x.shape))],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(v, n) for n, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model.SerializeToString()


def self_attention(x, heads):
    """BERT's attention core as torch.onnx.export writes it, x [B, S, hidden] as query, key
    and value (no projections): head transposes, Q K^T / sqrt(d), a key mask, Softmax,
    weights times V, heads merged. nxrt runs it as one FusedAttention."""
    d = x.shape[2] // heads
    t = helper.make_node
    nodes = [t("Reshape", ["x", "split"], ["x4"]),
             t("Transpose", ["x4"], ["q"], perm=[0, 2, 1, 3]),
             t("Transpose", ["x4"], ["kt"], perm=[0, 2, 3, 1]),
             t("Transpose", ["x4"], ["v"], perm=[0, 2, 1, 3]),
             t("MatMul", ["q", "kt"], ["s"]), t("Div", ["s", "root"], ["sd"]),
             t("Add", ["sd", "mask"], ["sm"]), t("Softmax", ["sm"], ["p"], axis=-1),
             t("MatMul", ["p", "v"], ["o"]), t("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
             t("Reshape", ["ot", "merge"], ["y"])]
    mask = np.zeros((x.shape[0], 1, 1, x.shape[1]), np.float32)
    mask[..., -x.shape[1] // 8:] = -10000.0  # padding keys
    inits = {"split": np.array([0, -1, heads, d], np.int64),
             "merge": np.array([0, -1, heads * d], np.int64),
             "root": np.array(np.sqrt(d), np.float32), "mask": mask}
    graph = helper.make_graph(
        nodes, "attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def cases():
    scores = RNG.standard_normal((1, 6, 400, 400)).astype(np.float32) * 3
    quant = [("scale", np.array(0.02, np.float32)), ("zero", np.array(128, np.uint8))]
    codes = RNG.integers(0, 255, (1, 6, 400, 400)).astype(np.uint8)
    heads = RNG.standard_normal((1, 128, 12, 32)).astype(np.float32)
    row = RNG.standard_normal((1, 1, 576)).astype(np.float32)
    hidden = RNG.standard_normal((1, 128, 384)).astype(np.float32)
    weights = [("w", (RNG.standard_normal((576, 1536)) * 0.05).astype(np.float32))]
    return {
        "softmax_6x400x400": (one_node("Softmax", scores, axis=-1), scores),
        "quantize_u8_960k": (one_node("QuantizeLinear", scores, quant, TensorProto.UINT8), scores),
        "dequantize_u8_960k": (one_node("DequantizeLinear", codes, quant), codes),
        "transpose_0213_128x12x32": (one_node("Transpose", heads, perm=[0, 2, 1, 3]), heads),
        "gelu_tanh_6x400x400": (one_node("Gelu", scores, approximate="tanh"), scores),
        "matmul_1x576x1536": (one_node("MatMul", row, weights), row),
        "attention_128x12x32": (self_attention(hidden, 12), hidden),
    }


def sessions(model, threads):
    """An onnxruntime and an nxrt session of `model` with `threads` intra-op threads."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    reference = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = threads
    return nxrt.InferenceSession(model, options), reference


def check(session, reference, x):
    """Both runtimes compute the same: within 1e-4 for floats, exactly for integers."""
    want, got = reference.run(None, {"x": x})[0], session.run(None, {"x": x})[0]
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cases", nargs="+")
    args = parser.parse_args()
    table = cases()
    for name in args.cases or table:
        model, x = table[name]
        for threads in args.threads:
            session, reference = sessions(model, threads)
            check(session, reference, x)
            r = harness.compare(lambda: session.run(None, {"x": x}),
                                lambda: reference.run(None, {"x": x}),
                                settle_s=harness.settle_for(threads))
            print(harness.format_row(name, threads, r))


if __name__ == "__main__":
    main()
