"""A per-op harness in the spirit of onnxruntime's OpTester: one op (with the nodes a
fusion needs around it) through every path nxrt has for it, against onnxruntime.

Each case is drawn from a seed: shapes, attributes and data. Each runs under every
variant: weights as constant initializers (packed, blocked, folded into fusions) or as
graph inputs (the per-run paths); 1 or 2 intra-op threads; all graph passes (fusions,
the NCHWc layout) or none. The ISA is chosen per process by nxrt's environment caps
(NXRT_GEMM_KERNEL, NXRT_VMATH, ...), so test_op_paths.py runs this module once more in a
subprocess per cap: `python op_paths.py --isa avx2` checks every case and prints the
failures.

The reference is onnxruntime with its optimizations off, or onnx.reference for a case
onnxruntime's CPU provider does not run.
"""

import argparse
import dataclasses
import os
import sys
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import nxrt

NP_TYPE = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
           TensorProto.FLOAT16: np.float16}

# nxrt's environment caps, per ISA level the harness checks. "default" is the best the
# CPU has; the others force the narrower kernels (and the non-Winograd, im2col paths).
ISA_CAPS = {
    "default": {},
    "avx2": {"NXRT_GEMM_KERNEL": "avx2", "NXRT_VMATH": "avx2", "NXRT_QGEMM": "avx2"},
    "portable": {"NXRT_GEMM_KERNEL": "portable", "NXRT_VMATH": "portable",
                 "NXRT_QGEMM": "portable", "NXRT_CONV_IM2COL": "1",
                 "NXRT_CONV_NO_WINOGRAD": "1", "NXRT_NCHWC_NO_WINOGRAD": "1"},
}


@dataclasses.dataclass
class Case:
    name: str
    nodes: list
    inputs: dict  # name -> array, fed at run time
    weights: dict  # name -> array, initializers or graph inputs by variant
    outputs: list
    opset: int = 17
    rtol: float = 1e-3
    atol: float = 1e-4

    def model(self, weights_constant):
        def info(name, array):
            return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(
                array.dtype), list(array.shape))

        graph_inputs = [info(n, a) for n, a in self.inputs.items()]
        inits = []
        if weights_constant:
            inits = [numpy_helper.from_array(a, n) for n, a in self.weights.items()]
        else:
            graph_inputs += [info(n, a) for n, a in self.weights.items()]
        graph = helper.make_graph(
            self.nodes, self.name, graph_inputs,
            [helper.make_empty_tensor_value_info(o) for o in self.outputs],
            inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model.SerializeToString()

    def feeds(self, weights_constant):
        return dict(self.inputs) if weights_constant else {**self.inputs, **self.weights}


def _normal(rng, shape, dtype=np.float32, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


# ---- case generators: gen(rng) -> Case ----------------------------------------------------

def conv_case(rng):
    """Conv with bias, maybe depthwise or grouped, maybe followed by Relu and a residual Add
    (FusedConv's activation and sum input), and a MaxPool (a pool of a blocked input)."""
    n = int(rng.choice([1, 2]))
    c = int(rng.choice([3, 8, 16, 17, 32, 48]))
    kind = rng.choice(["dense", "dense", "depthwise", "grouped"])
    if kind == "depthwise":
        group, m = c, c * int(rng.choice([1, 2]))
    elif kind == "grouped" and c % 2 == 0:
        group, m = 2, int(rng.choice([16, 32]))
    else:
        kind, group, m = "dense", 1, int(rng.choice([8, 16, 20, 64, 72]))
    k = int(rng.choice([1, 3, 3, 5]))
    stride = int(rng.choice([1, 1, 2]))
    dilation = int(rng.choice([1, 1, 2])) if k > 1 and stride == 1 else 1
    h, w = int(rng.integers(k * dilation, 16)), int(rng.integers(k * dilation, 16))
    pad = int(rng.integers(0, k // 2 + 1))
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], dilations=[dilation, dilation],
                 pads=[pad, pad, pad, pad], group=group)
    x = _normal(rng, (n, c, h, w))
    weights = {"W": _normal(rng, (m, c // group, k, k), scale=0.3), "B": _normal(rng, (m,))}
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["conv"], **attrs)]
    out = "conv"
    if rng.random() < 0.5:
        nodes.append(helper.make_node("Relu", [out], ["act"]))
        out = "act"
    oh = (h + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dilation * (k - 1) - 1) // stride + 1
    inputs = {"x": x}
    if rng.random() < 0.4:
        inputs["z"] = _normal(rng, (n, m, oh, ow))
        nodes.append(helper.make_node("Add", [out, "z"], ["sum"]))
        out = "sum"
    if rng.random() < 0.3 and oh >= 2 and ow >= 2:
        nodes.append(helper.make_node("MaxPool", [out], ["pool"], kernel_shape=[2, 2],
                                      strides=[2, 2], ceil_mode=int(rng.integers(0, 2))))
        out = "pool"
    return Case(f"conv_{kind}", nodes, inputs, weights, [out])


def matmul_case(rng):
    """MatMul by a weight matrix (packed once when constant) or of two activations,
    with batch dimensions, broadcasting and 1-D operands."""
    m, k, n = (int(rng.integers(1, 70)) for _ in range(3))
    batch = [int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    a_shape = batch + [m, k] if rng.random() < 0.85 else [k]
    if rng.random() < 0.7:
        b_shape = [k, n]
    else:
        b_shape = batch + [k, n]
    return Case("matmul", [helper.make_node("MatMul", ["a", "b"], ["y"])],
                {"a": _normal(rng, a_shape)}, {"b": _normal(rng, b_shape, scale=0.3)}, ["y"])


def gemm_case(rng):
    m, k, n = (int(rng.integers(1, 60)) for _ in range(3))
    trans_a, trans_b = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    c_shape = [[n], [1, n], [m, n], [m, 1], []][int(rng.integers(0, 5))]
    attrs = dict(transA=trans_a, transB=trans_b, alpha=float(rng.choice([1.0, 0.5])),
                 beta=float(rng.choice([1.0, 2.0])))
    a = _normal(rng, (k, m) if trans_a else (m, k))
    weights = {"b": _normal(rng, (n, k) if trans_b else (k, n), scale=0.3),
               "c": _normal(rng, c_shape)}
    return Case("gemm", [helper.make_node("Gemm", ["a", "b", "c"], ["y"], **attrs)], {"a": a},
                weights, ["y"])


def pool_case(rng):
    """MaxPool / AveragePool after a 16-channel Conv (so the blocked layout pools it) or on
    a plain input."""
    op = str(rng.choice(["MaxPool", "AveragePool"]))
    k = int(rng.choice([2, 3]))
    stride = int(rng.choice([1, 2]))
    pad = int(rng.integers(0, k // 2 + 1))
    h, w = int(rng.integers(k, 14)), int(rng.integers(k, 14))
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                 ceil_mode=int(rng.integers(0, 2)))
    if op == "AveragePool":
        attrs["count_include_pad"] = int(rng.integers(0, 2))
    elif stride == 1 and rng.random() < 0.3:
        attrs["dilations"] = [2, 2]
        h, w = h + 2, w + 2
    blocked = rng.random() < 0.6
    c = 16 if blocked else int(rng.choice([3, 5, 16]))
    x = _normal(rng, (1, c, h, w))
    nodes, weights, src = [], {}, "x"
    if blocked:
        weights = {"W": _normal(rng, (16, c, 1, 1), scale=0.3)}
        nodes.append(helper.make_node("Conv", ["x", "W"], ["conv"], kernel_shape=[1, 1]))
        src = "conv"
    nodes.append(helper.make_node(op, [src], ["y"], **attrs))
    return Case(f"{op.lower()}", nodes, {"x": x}, weights, ["y"], opset=19)


UNARY_OPS = ["Sigmoid", "Tanh", "Exp", "Erf", "Softplus", "Relu", "Abs", "Neg", "Sqrt", "Log",
             "HardSigmoid", "LeakyRelu", "Elu", "Selu", "Gelu", "Mish", "HardSwish"]


def unary_case(rng):
    """The vectorized activations, at lengths that leave vector tails, in three dtypes."""
    op = str(rng.choice(UNARY_OPS))
    dtype = [np.float32, np.float32, np.float64, np.float16][int(rng.integers(0, 4))]
    x = _normal(rng, (int(rng.integers(1, 4)), int(rng.integers(1, 70))), dtype, scale=3.0)
    if op in ("Sqrt", "Log"):
        x = np.abs(x) + dtype(0.01)
    tol = dict(rtol=5e-3, atol=5e-3) if dtype == np.float16 else {}
    return Case(f"{op.lower()}_{np.dtype(dtype).name}", [helper.make_node(op, ["x"], ["y"])],
                {"x": x}, {}, ["y"], opset=20, **tol)


def binary_case(rng):
    """Broadcasting elementwise arithmetic: the scalar, row, column and general paths."""
    op = str(rng.choice(["Add", "Sub", "Mul", "Div", "Max", "Min"]))
    dtype = [np.float32, np.float32, np.float64][int(rng.integers(0, 3))]
    shape = [int(d) for d in rng.integers(1, 9, size=int(rng.integers(1, 4)))]
    other = [d if rng.random() < 0.6 else 1 for d in shape][int(rng.integers(0, len(shape))):]
    a, b = _normal(rng, shape, dtype), _normal(rng, other, dtype)
    if op == "Div":
        b = np.where(np.abs(b) < 0.1, dtype(0.5), b).astype(dtype)
    return Case(f"{op.lower()}", [helper.make_node(op, ["a", "b"], ["y"])], {"a": a}, {"b": b},
                ["y"])


def softmax_case(rng):
    op = str(rng.choice(["Softmax", "LogSoftmax"]))
    shape = [int(d) for d in rng.integers(1, 40, size=int(rng.integers(1, 4)))]
    axis = int(rng.integers(-len(shape), len(shape)))
    dtype = [np.float32, np.float64][int(rng.integers(0, 2))]
    return Case(f"{op.lower()}", [helper.make_node(op, ["x"], ["y"], axis=axis)],
                {"x": _normal(rng, shape, dtype, scale=4.0)}, {}, ["y"], opset=13)


def reduce_case(rng):
    """Reductions over inner, outer and all axes: the vector paths for contiguous float
    runs and the generic folds."""
    op = str(rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"]))
    shape = [int(d) for d in rng.integers(1, 30, size=int(rng.integers(1, 5)))]
    dtype = [np.float32, np.float32, np.float64][int(rng.integers(0, 3))]
    rank = len(shape)
    axes = sorted({int(a) % rank for a in rng.integers(-rank, rank, size=int(rng.integers(0, rank + 1)))})
    inputs, weights = ["x"], {}
    if axes:
        inputs.append("axes")
        weights["axes"] = np.array(axes, np.int64)
    node = helper.make_node(op, inputs, ["y"], keepdims=int(rng.integers(0, 2)))
    return Case(f"{op.lower()}_{np.dtype(dtype).name}", [node], {"x": _normal(rng, shape, dtype)},
                weights, ["y"], opset=18)


def batchnorm_case(rng):
    """BatchNormalization after a Conv (folded into it when constant) or alone (nxrt's
    ChannelAffine), maybe with a Relu."""
    c = int(rng.choice([4, 16, 24]))
    x = _normal(rng, (int(rng.integers(1, 3)), c, int(rng.integers(1, 9)), int(rng.integers(1, 9))))
    weights = {"scale": _normal(rng, (c,)), "bias": _normal(rng, (c,)), "mean": _normal(rng, (c,)),
               "var": (np.abs(_normal(rng, (c,))) + 0.5).astype(np.float32)}
    nodes, src = [], "x"
    if rng.random() < 0.5:
        weights["W"] = _normal(rng, (c, c, 3, 3), scale=0.2)
        nodes.append(helper.make_node("Conv", ["x", "W"], ["conv"], kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1]))
        src = "conv"
    nodes.append(helper.make_node("BatchNormalization", [src, "scale", "bias", "mean", "var"],
                                  ["bn"]))
    out = "bn"
    if rng.random() < 0.5:
        nodes.append(helper.make_node("Relu", ["bn"], ["act"]))
        out = "act"
    return Case("batchnorm", nodes, {"x": x}, weights, [out], opset=15)


def rnn_case(rng):
    """LSTM and GRU, forward or bidirectional, with and without sequence lengths."""
    op = str(rng.choice(["LSTM", "GRU"]))
    gates = 4 if op == "LSTM" else 3
    seq, batch, inp, hidden = (int(rng.integers(1, 7)), int(rng.integers(1, 4)),
                               int(rng.integers(1, 20)), int(rng.integers(1, 20)))
    direction = str(rng.choice(["forward", "bidirectional"]))
    dirs = 2 if direction == "bidirectional" else 1
    weights = {"W": _normal(rng, (dirs, gates * hidden, inp), scale=0.3),
               "R": _normal(rng, (dirs, gates * hidden, hidden), scale=0.3),
               "B": _normal(rng, (dirs, 2 * gates * hidden), scale=0.3)}
    attrs = dict(hidden_size=hidden, direction=direction)
    if op == "GRU":
        attrs["linear_before_reset"] = int(rng.integers(0, 2))
    node = helper.make_node(op, ["x", "W", "R", "B"], ["y", "y_h"], **attrs)
    return Case(op.lower(), [node], {"x": _normal(rng, (seq, batch, inp))}, weights, ["y", "y_h"],
                opset=14)


def layernorm_case(rng):
    shape = [int(d) for d in rng.integers(1, 30, size=int(rng.integers(2, 4)))]
    axis = int(rng.integers(1, len(shape)))
    norm = shape[axis:]
    return Case("layernorm",
                [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=axis)],
                {"x": _normal(rng, shape, scale=2.0)},
                {"g": _normal(rng, norm), "b": _normal(rng, norm)}, ["y"], opset=17)


GENERATORS = {"conv": (conv_case, 60), "matmul": (matmul_case, 25), "gemm": (gemm_case, 20),
              "pool": (pool_case, 30), "unary": (unary_case, 40), "binary": (binary_case, 25),
              "softmax": (softmax_case, 12), "batchnorm": (batchnorm_case, 16),
              "rnn": (rnn_case, 16), "layernorm": (layernorm_case, 12),
              "reduce": (reduce_case, 20)}


def all_cases():
    """(id, Case) for every generator and seed; the same list in every process."""
    out = []
    for family, (gen, count) in GENERATORS.items():
        for seed in range(count):
            case = gen(np.random.default_rng([zlib.crc32(family.encode()), seed]))
            out.append((f"{family}-{seed}-{case.name}", case))
    return out


# ---- running ------------------------------------------------------------------------------

def reference(case):
    model = case.model(weights_constant=True)
    feeds = case.feeds(weights_constant=True)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        if "NOT_IMPLEMENTED" not in str(e):  # only a kernel onnxruntime's CPU provider lacks
            raise
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(onnx.load_from_string(model)).run(None, feeds)
    return session.run(None, feeds)


VARIANTS = [(constant, threads, level) for constant in (True, False) for threads in (1, 2)
            for level in (99, 0)]


def check(case, expected=None):
    """Runs every variant; returns a list of failure descriptions (empty when all pass)."""
    expected = reference(case) if expected is None else expected
    failures = []
    for constant, threads, level in VARIANTS:
        label = (f"weights {'constant' if constant else 'fed'}, {threads} thread(s), "
                 f"level {level}")
        options = nxrt.SessionOptions()
        options.intra_op_num_threads = threads
        options.graph_optimization_level = level
        try:
            got = nxrt.InferenceSession(case.model(constant), options).run(None,
                                                                            case.feeds(constant))
        except Exception as e:  # noqa: BLE001 (reported, not raised: the rest still run)
            failures.append(f"{label}: {type(e).__name__}: {e}")
            continue
        for name, g, e in zip(case.outputs, got, expected):
            e = np.asarray(e)
            if g.shape != e.shape or g.dtype != e.dtype:
                failures.append(f"{label}: output {name} is {g.dtype}{list(g.shape)}, expected "
                                f"{e.dtype}{list(e.shape)}")
                continue
            bad = ~np.isclose(g.astype(np.float64), e.astype(np.float64), rtol=case.rtol,
                              atol=case.atol, equal_nan=True)
            if bad.any():
                i = np.unravel_index(int(np.argmax(bad)), bad.shape)
                failures.append(f"{label}: output {name}: {int(bad.sum())} of {bad.size} values "
                                f"differ, first at {[int(v) for v in i]}: {g[i]} vs {e[i]}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--isa", choices=sorted(ISA_CAPS), default="default",
                        help="the environment caps to check under (set before nxrt loads: "
                             "run this in a fresh process)")
    args = parser.parse_args()
    for key, value in ISA_CAPS[args.isa].items():
        if os.environ.get(key) != value:
            sys.exit(f"set {key}={value} before starting (test_op_paths.py does)")
    failed = 0
    cases = all_cases()
    for case_id, case in cases:
        for failure in check(case):
            failed += 1
            print(f"{args.isa} {case_id}: {failure}")
    print(f"{args.isa}: {len(cases)} cases x {len(VARIANTS)} variants, {failed} failures")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
