"""Property-based differential testing of nxrt's ops (issue 11, item 6): the generator and
the harness that tests/python/test_property_ops.py drives.

Each entry of SPECS draws, through hypothesis, one single-node ONNX model and its inputs
for one op: the dtype (those of the op's schema that the table names), the shapes
(broadcasting, empty tensors, ranks 0 to 4), the attributes and the opset (where the op's
meaning or signature changed between opsets) and the values (ranges the op needs, with
NaN, infinities and signed zeros for float ops where the spec defines their results). It
also draws how nxrt runs the model: its inputs as graph inputs or as constant
initializers, 1 or 2 intra-op threads, all graph passes or none.

The reference is onnxruntime's CPU provider with its graph optimizations off; where
onnxruntime does not run a case, onnx.reference.ReferenceEvaluator. A draw is rejected
(hypothesis.reject) when the model is invalid by onnx's checker, when onnxruntime and nxrt
both reject it, or when onnxruntime rejects it and the reference evaluator errors. nxrt
raising on a case a reference runs is a failure, and so is any difference of dtype,
shape, NaN positions, integer or bool values, or float values beyond the tolerances:
TOLERANCE (the ONNX backend tests' rtol 1e-3, atol 1e-7; float16 looser), with atol raised
only to a rounding bound where an output is a sum (any summation order stays within it),
the log of a sum, an interpolation or a normalization, each bound derived where it is set.
Regions where a reference is wrong or the spec leaves the result open are not drawn; the
comment at each exclusion says which reference and why.

Run (CI profile, the default: few examples per op, derandomized):

    PYTHONPATH=python .venv/bin/python -m pytest tests/python/test_property_ops.py -q -p no:cacheprovider

By hand, 200+ examples per op, fresh draws each run (under 2 minutes; `-k Conv` for one
op; -s prints each op's counts):

    NXRT_PROPERTY_PROFILE=long PYTHONPATH=python .venv/bin/python -m pytest \\
        tests/python/test_property_ops.py -q -s -p no:cacheprovider

A failing example is shrunk by hypothesis and saved as a regression case in
tests/python/property_regressions/ (model .onnx, inputs .npz, description .json), which
test_property_ops.py replays against the reference on every run.
"""

import dataclasses
import hashlib
import json
import math
import os
import warnings

import numpy as np
import onnx
from hypothesis import reject
from hypothesis import strategies as st
from onnx import helper, numpy_helper

F32, F64, F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
I8, U8, I32, I64 = np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.int64)
U32, U64, BOOL = np.dtype(np.uint32), np.dtype(np.uint64), np.dtype(bool)
# The dtypes the suite draws from (each op: those its schema allows).
CORE = (F32, F64, F16, I32, I64, I8, U8, BOOL)
_TYPE_STR = {"tensor(float)": F32, "tensor(double)": F64, "tensor(float16)": F16,
             "tensor(int32)": I32, "tensor(int64)": I64, "tensor(int8)": I8,
             "tensor(uint8)": U8, "tensor(bool)": BOOL, "tensor(uint32)": U32,
             "tensor(uint64)": U64}

NAN, INF = float("nan"), float("inf")
# Values the spec (IEEE 754 through the op's formula) gives a result for.
IEEE = (NAN, INF, -INF, 0.0, -0.0)
NO_NAN = (INF, -INF, 0.0, -0.0)
ZEROS = (0.0, -0.0)


def schema_types(op, opset, constraint=None, domain="", extra=()):
    """The dtypes of CORE (and `extra`) that `op`'s type constraint (by default: its first
    input's) allows at `opset`."""
    schema = onnx.defs.get_schema(op, opset, domain)
    constraint = constraint or schema.inputs[0].type_str
    for tc in schema.type_constraints:
        if tc.type_param_str == constraint:
            allowed = {_TYPE_STR[t] for t in tc.allowed_type_strs if t in _TYPE_STR}
            return [t for t in (*CORE, *extra) if t in allowed]
    raise KeyError(f"{op} has no type constraint {constraint}")


# ---- the case: one node, its inputs, how nxrt runs it and how results compare -------------

@dataclasses.dataclass
class Case:
    op: str
    inputs: list  # [(name, array)]; ("", None) for an omitted optional input
    attrs: dict = dataclasses.field(default_factory=dict)
    n_outputs: int = 1
    opset: int = 21
    domain: str = ""
    constant: tuple = ()  # names of inputs stored as initializers
    exact: bool = False  # bitwise equal results (data movement): signed zeros too
    signed_zeros: bool = False  # the sign of a zero result is checked
    rtol: float = None  # None: by dtype (TOLERANCE)
    atol: float = None
    sum_terms: int = 0  # > 0: each output is a sum of this many products (see tolerance)
    bound_attrs: dict = None  # attributes of the |inputs| model that bounds the rounding
    threads: int = 1  # nxrt's intra-op threads
    level: int = 99  # nxrt's graph optimization level
    winograd: tuple = None  # Conv: (c, m, kernel, dilation, group, strides), see check()
    int_atol: int = 0  # integer outputs may differ by this much (rounding the spec leaves open)
    infer: bool = True  # validate with onnx's strict shape inference (see validate)
    # why onnx.reference is wrong on this draw (the draw is rejected where onnxruntime does
    # not run it, instead of compared with the reference); "" where it is right
    reference_wrong: str = ""
    tag: str = ""  # what the draw picked, shown in failures

    def __post_init__(self):
        # (numpy turns 0-d arrays into scalars in places; runtimes take arrays only)
        self.inputs = [(n, None if a is None else np.asarray(a)) for n, a in self.inputs]

    def model(self):
        return make_model(self.op, self.inputs, self.attrs, self.n_outputs, self.opset,
                          self.domain, self.constant)

    def feeds(self):
        return {n: a for n, a in self.inputs if n and n not in self.constant}


def make_model(op, inputs, attrs, n_outputs, opset, domain="", constant=()):
    graph_inputs, inits = [], []
    for name, array in inputs:
        if not name:
            continue
        if name in constant:
            inits.append(numpy_helper.from_array(array, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)))
    outputs = [f"out{i}" for i in range(n_outputs)]
    node = helper.make_node(op, [n for n, _ in inputs], outputs, domain=domain or None,
                            **attrs)
    graph = helper.make_graph([node], f"prop_{op}", graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              inits)
    opsets = [helper.make_opsetid("", opset if not domain else 21)]
    if domain:
        opsets.append(helper.make_opsetid(domain, opset))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="nxrt-property")
    try:
        model.ir_version = max(8, helper.find_min_ir_version_for(opsets))
    except ValueError:
        model.ir_version = 8
    return model


# ---- drawing --------------------------------------------------------------------------------

class Draw:
    """hypothesis' `data.draw` with the helpers the generators share."""

    def __init__(self, draw):
        self.draw = draw

    def __call__(self, strategy, label=None):
        return self.draw(strategy, label=label)

    def int(self, lo, hi, label=None):
        return self.draw(st.integers(lo, hi), label=label)

    def pick(self, seq, label=None):
        return self.draw(st.sampled_from(list(seq)), label=label)

    def flag(self, label=None):
        return self.draw(st.booleans(), label=label)

    def one_in(self, n):
        """True about once in n draws (False when shrunk)."""
        return self.draw(st.integers(0, n - 1)) == n - 1

    def shape(self, min_rank=0, max_rank=4, max_side=5, empty=True, label=None):
        """A shape; now and then one dimension is 0 (an empty tensor), and a rank-1 shape
        may be long (vector tails)."""
        rank = self.int(min_rank, max_rank, label)
        long = rank == 1 and self.one_in(3)
        dims = [self.int(1, 70 if long else max_side) for _ in range(rank)]
        if empty and rank and self.one_in(12):
            dims[self.int(0, rank - 1)] = 0
        return dims

    def broadcast(self, n, min_rank=0, max_rank=4, max_side=5, empty=True):
        """n shapes that broadcast together (numpy rules): suffixes of one shape, some
        dimensions 1."""
        full = self.shape(min_rank, max_rank, max_side, empty)
        shapes = []
        for _ in range(n):
            rank = self.int(0, len(full)) if self.flag() else len(full)
            suffix = full[len(full) - rank:]
            shapes.append([1 if self.one_in(3) else s for s in suffix])
        return shapes

    def dtype(self, types, label="dtype"):
        return np.dtype(self.pick(types, label))

    def values(self, shape, dtype, kind="normal", specials=(), lo=None, hi=None):
        """An array of `shape` and `dtype`. Floats: `kind` is normal (scaled, or exact
        eighths), positive, unit ([-1, 1]), ge1, near1 (+-[0.5, 1.5]), halves (ties of
        rounding), small (small integers), range ([lo, hi]); ints: [lo, hi] (kind small: a
        range products cannot overflow). Up to three elements are then replaced by values
        of `specials`."""
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        rng = np.random.default_rng(self.int(0, 2**32 - 1))
        if dtype == BOOL:
            a = rng.random(n) < 0.5
        elif dtype.kind == "f":
            style = kind
            if kind == "normal":
                style = self.pick(["normal", "eighths", "small"])
            scale = self.pick([1.0, 0.25, 4.0, 40.0]) if style in ("normal", "positive") else 1
            if style == "normal":
                a = rng.standard_normal(n) * scale
            elif style == "eighths":  # exact sums in any order
                a = rng.integers(-32, 33, n) / 8.0
            elif style == "small":
                a = rng.integers(-3, 4, n).astype(np.float64)
            elif style == "positive":
                a = np.abs(rng.standard_normal(n)) * scale + 1e-3
            elif style == "unit":
                a = rng.uniform(-1.0, 1.0, n)
            elif style == "near1":  # products of many stay in range
                a = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)
            elif style == "ge1":
                a = 1.0 + np.abs(rng.standard_normal(n)) * 3
            elif style == "halves":
                a = rng.integers(-12, 13, n) / 2.0 + rng.choice([0.0, 0.0, 0.25, 0.3], n)
            elif style == "range":
                a = rng.uniform(lo, hi, n)
            else:
                raise ValueError(style)
            if lo is not None and style != "range":
                a = np.clip(a, lo, hi)
        else:
            info = np.iinfo(dtype)
            if lo is None:
                if kind == "small":
                    lo, hi = (-3, 3) if info.min < 0 else (0, 6)
                elif kind == "positive":
                    lo, hi = 1, min(info.max, 100)
                else:
                    lo, hi = max(info.min, -1000), min(info.max, 1000)
            a = rng.integers(max(lo, info.min), min(hi, info.max), n, dtype=dtype, endpoint=True)
        a = np.asarray(a).astype(dtype).reshape(shape)
        if specials and n:
            flat = a.reshape(-1)
            for _ in range(self.int(0, 3)):
                flat[self.int(0, n - 1)] = self.pick(specials)
        return a

    def nxrt_config(self, case, weights=()):
        """How nxrt runs it: `weights` (input names) constant or fed, threads, passes."""
        case.constant = tuple(w for w in weights if self.flag())
        case.threads = self.pick([1, 2], "threads")
        case.level = self.pick([99, 0], "level")
        return case


def int_specials(dtype):
    info = np.iinfo(dtype)
    return (0, 1, info.max, info.min) if info.min < 0 else (0, 1, info.max)


# ---- the op table ---------------------------------------------------------------------------

@dataclasses.dataclass
class Spec:
    name: str  # the test id: the op, or op/variant
    op: str
    build: object  # Draw -> Case
    cost: float = 1.0  # relative number of examples (slower or simpler ops draw fewer)


SPECS = {}


def spec(name, op=None, cost=1.0):
    def register(fn):
        SPECS[name] = Spec(name, op or name.split("/")[0], fn, cost)
        return fn
    return register


# Elementwise unary ops: op -> (opsets, value kind, specials, attribute drawer, options).
def _a(**choices):
    """An attribute drawer: each attribute picked from its list of values."""
    return lambda d: {k: d.pick(v, k) for k, v in choices.items()}


ALPHAS = [0.0, 0.01, 0.2, 1.0, 1.6732632, 3.0]
UNARY = {
    "Relu": ([13, 14], "normal", IEEE, None, {}),
    "Sigmoid": ([13], "normal", IEEE, None, {}),
    "Tanh": ([13], "normal", IEEE, None, {}),
    "Erf": ([13], "normal", IEEE, None, {}),
    "Exp": ([13], "normal", IEEE, None, {}),
    "Log": ([13], "positive", IEEE + (-1.0,), None, {}),
    "Sqrt": ([13], "positive", IEEE + (-1.0,), None, {"signed_zeros": True}),
    "Reciprocal": ([13], "normal", IEEE, None, {}),
    "Abs": ([13], "normal", IEEE, None, {"signed_zeros": True}),
    "Neg": ([13], "normal", IEEE, None, {"signed_zeros": True}),
    "Sign": ([13], "normal", IEEE, None, {}),
    "Floor": ([13], "halves", IEEE, None, {}),
    "Ceil": ([13], "halves", IEEE, None, {}),
    "Round": ([11, 22], "halves", IEEE, None, {"signed_zeros": True}),
    "Softplus": ([1, 22], "normal", IEEE, None, {}),
    "Softsign": ([1, 22], "normal", IEEE, None, {}),
    "Sin": ([7, 22], "normal", IEEE, None, {}),
    "Cos": ([7, 22], "normal", IEEE, None, {}),
    "Tan": ([7, 22], "unit", IEEE, None, {}),
    "Asin": ([7, 22], "unit", IEEE, None, {}),
    "Acos": ([7, 22], "unit", IEEE, None, {}),
    "Atan": ([7, 22], "normal", IEEE, None, {}),
    "Sinh": ([9, 22], "unit", IEEE, None, {}),
    "Cosh": ([9, 22], "unit", IEEE, None, {}),
    "Asinh": ([9, 22], "normal", IEEE, None, {}),
    "Acosh": ([9, 22], "ge1", IEEE, None, {}),
    "Atanh": ([9, 22], "unit", (NAN, 0.0, -0.0, 1.0, -1.0), None, {}),
    "Elu": ([6, 22], "normal", IEEE, _a(alpha=ALPHAS), {}),
    "Selu": ([6, 22], "normal", IEEE, _a(alpha=ALPHAS, gamma=[1.0507, 0.5, 2.0]), {}),
    "Celu": ([12], "normal", IEEE, _a(alpha=[0.1, 1.0, 2.5]), {}),
    "LeakyRelu": ([6, 16], "normal", IEEE, _a(alpha=ALPHAS), {}),
    "ThresholdedRelu": ([10, 22], "normal", IEEE, _a(alpha=[0.0, 0.5, 1.0, -1.0]), {}),
    "HardSigmoid": ([6, 22], "normal", IEEE, _a(alpha=[0.2, 0.5, 1.0], beta=[0.5, 0.0, 0.7]),
                    {}),
    "HardSwish": ([14, 22], "normal", IEEE, None, {}),
    "Gelu": ([20], "normal", IEEE, _a(approximate=["none", "tanh"]), {}),
    "Mish": ([18, 22], "normal", IEEE, None, {}),
    "Swish": ([24], "normal", IEEE, _a(alpha=[1.0, 0.5, 1.702]), {}),
    "Shrink": ([9], "normal", IEEE, _a(bias=[0.0, 0.5, 1.5], lambd=[0.0, 0.5, 1.0]), {}),
    "IsNaN": ([13, 20], "normal", IEEE, None, {}),
    "IsInf": ([10, 20], "normal", IEEE,
              _a(detect_negative=[1, 0], detect_positive=[1, 0]), {}),
    "Not": ([1], "normal", (), None, {}),
    "BitwiseNot": ([18], "normal", (), None, {}),
    "Identity": ([16, 21], "normal", IEEE, None, {"exact": True}),
}


def _unary(op, opsets, kind, specials, attrs, options):
    def build(d):
        case_attrs = attrs(d) if attrs else {}
        opset = d.pick(opsets, "opset")
        dtype = d.dtype(schema_types(op, opset))
        shape = d.shape()
        if dtype.kind in "iu":
            # Abs and Neg of the lowest value overflow; Sign, Relu, BitwiseNot do not.
            unsafe = op in ("Abs", "Neg")
            info = np.iinfo(dtype)
            # Shrink: onnxruntime computes integers through float (2**31 - 1 becomes -2**31)
            x = d.values(shape, dtype, "normal",
                         () if unsafe or op == "Shrink" else int_specials(dtype),
                         lo=info.min + 1 if unsafe else None, hi=info.max if unsafe else None)
        elif dtype == BOOL:
            x = d.values(shape, dtype)
        else:
            x = d.values(shape, dtype, kind, specials)
            if op == "Sign" and dtype == F16:
                # onnxruntime's float16 Sign makes NaN 0 (its float and double, numpy and
                # onnx.reference keep NaN, as nxrt does for every float type): not drawn
                x = np.where(np.isnan(x), dtype.type(0), x).astype(dtype)
            if op == "Swish":
                # onnxruntime's float sigmoid is within ~5e-8 absolutely, so its relative
                # error grows in the tail: up to 3.2e-4 above -8, 2.2e-3 above -10, 1.8e-2
                # above -12 (measured on a 1e-4 grid), beyond rtol 1e-3 in x * sigmoid(x)
                # (alpha 0.5, x = -19.52: -1.12510e-03, the value is -1.12640e-03; nxrt
                # -1.12640e-03): alpha * x below -8 not drawn
                floor = -8.0 / case_attrs["alpha"]
                x = np.where(x < floor, dtype.type(floor), x).astype(dtype)
            if op == "Gelu" and case_attrs["approximate"] == "tanh":
                # the same for onnxruntime's 1 + tanh(...): beyond rtol 1e-3 below
                # x = -3.5 (at -4.448: -6.7607e-06, the value is -6.8904e-06)
                x = np.where(x < -3.5, dtype.type(-3.5), x).astype(dtype)
        case = Case(op, [("x", x)], case_attrs, opset=opset, **options)
        return d.nxrt_config(case)
    return build


for _op, _entry in UNARY.items():
    spec(_op)(_unary(_op, *_entry))


@spec("Clip")
def clip(d):
    opset = d.pick([6, 11, 13], "opset")
    dtype = d.dtype(schema_types("Clip", opset))
    x = d.values(d.shape(), dtype, "normal", IEEE if dtype.kind == "f" else int_specials(dtype))
    bounds = sorted(d.values([2], dtype, "normal").tolist())
    if d.one_in(4):
        bounds.reverse()  # min > max: every value becomes max (opset 11+)
    lo, hi = bounds
    if opset == 6:
        attrs = {}
        if d.flag():
            attrs["min"] = float(np.float32(lo))
        if d.flag():
            attrs["max"] = float(np.float32(hi))
        return d.nxrt_config(Case("Clip", [("x", x)], attrs, opset=opset))
    use_min, use_max = d.flag(), d.flag()
    if opset == 11 and dtype == F16:
        # onnxruntime has Clip-11 for float only: it runs float16 in float through inserted
        # Casts, where the absent bound's FLT_MAX rounds back to inf (the spec's
        # numeric_limits<float16>::max() is 65504, as onnxruntime's Clip-12+ gives; nxrt
        # too): an infinity on an absent bound's side not drawn
        if not use_max:
            x = np.where(np.isposinf(x), dtype.type(0), x).astype(dtype)
        if not use_min:
            x = np.where(np.isneginf(x), dtype.type(0), x).astype(dtype)
    inputs = [("x", x)]
    inputs.append(("min", np.array(lo, dtype)) if use_min else ("", None))
    if use_max:
        inputs.append(("max", np.array(hi, dtype)))
    # onnx.reference (ops/op_clip.py) skips an absent bound: inf stays inf where the spec
    # clamps to numeric_limits<T>::lowest() / max() (onnxruntime, nxrt)
    wrong = ("an absent bound is not numeric_limits' lowest() / max()"
             if dtype.kind == "f" and ((not use_max and np.isposinf(x).any())
                                       or (not use_min and np.isneginf(x).any())) else "")
    return d.nxrt_config(Case("Clip", inputs, opset=opset, reference_wrong=wrong),
                         ["min", "max"])


# ---- binary and variadic elementwise ops ----------------------------------------------------

def _binary(op, kind="normal", specials=IEEE, int_kind="normal", nonzero_b=False,
            opsets=(14,), constraint=None, options=None, extra=(), attrs=None):
    def build(d):
        opset = d.pick(opsets, "opset")
        dtype = d.dtype(schema_types(op, opset, constraint, extra=extra))
        sa, sb = d.broadcast(2)
        if dtype.kind in "iu":
            a = d.values(sa, dtype, int_kind)
            b = d.values(sb, dtype, int_kind)
            if nonzero_b:  # integer division by zero is undefined (and traps in C++)
                b = np.where(b == 0, np.array(1, dtype), b).astype(dtype)
                if dtype.kind == "i":  # nor is lowest / -1
                    a = np.where(a == np.iinfo(dtype).min, np.array(0, dtype), a).astype(dtype)
        else:
            a = d.values(sa, dtype, kind, specials)
            b = d.values(sb, dtype, kind, specials)
        case = Case(op, [("a", a), ("b", b)], attrs(d, dtype) if attrs else {}, opset=opset,
                    **(options or {}))
        return d.nxrt_config(case, ["b"])
    return build


for _op in ("Add", "Sub", "Mul"):
    spec(_op)(_binary(_op, int_kind="small" if _op == "Mul" else "normal"))
spec("Div")(_binary("Div", nonzero_b=True))
for _op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
    spec(_op)(_binary(_op, kind="small", opsets=(12, 16) if "Equal" in _op and _op != "Equal"
                      else (11, 13, 19)))
for _op in ("And", "Or", "Xor"):
    spec(_op)(_binary(_op, opsets=(7,)))
for _op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    spec(_op)(_binary(_op, opsets=(18,)))


# "If the input type is floating point, then fmod attribute must be set to 1." (Mod 13)
spec("Mod")(_binary("Mod", nonzero_b=True, opsets=(13,),
                    attrs=lambda d, t: {"fmod": d.pick([1] if t.kind == "f" else [0, 1],
                                                       "fmod")}))


@spec("Pow")
def pow_(d):
    opset = d.pick([12, 15], "opset")
    tb = d.dtype(schema_types("Pow", opset, "T"), "base dtype")
    te = d.dtype(schema_types("Pow", opset, "T1"), "exponent dtype")
    sa, sb = d.broadcast(2)
    if tb.kind in "iu":
        base = d.values(sa, tb, "range", lo=-4, hi=4)
    else:
        base = d.values(sa, tb, "normal", IEEE + (1.0, -1.0))
    if te.kind in "iu":
        # integer exponents: 0..4 (negative ones of integer bases are undefined)
        exponent = d.values(sb, te, lo=0, hi=4 if tb.kind in "iu" else 7)
    else:
        exponent = d.values(sb, te, "halves", IEEE if tb.kind == "f" else ())
        if tb.kind in "iu":  # integer bases: small non-negative integral exponents
            exponent = np.clip(np.round(np.abs(exponent)), 0, 4).astype(te)
    return d.nxrt_config(Case("Pow", [("a", base), ("b", exponent)], opset=opset), ["b"])


@spec("BitShift")
def bitshift(d):
    dtype = d.dtype([U8, U32, U64])
    sa, sb = d.broadcast(2)
    bits = dtype.itemsize * 8
    x = d.values(sa, dtype, lo=0, hi=np.iinfo(dtype).max)
    # a shift by the width or more is undefined in C++ (onnxruntime's kernel)
    amount = d.values(sb, dtype, lo=0, hi=bits - 1)
    direction = d.pick(["LEFT", "RIGHT"], "direction")
    return d.nxrt_config(Case("BitShift", [("x", x), ("s", amount)], {"direction": direction},
                              opset=11), ["s"])


def _variadic(op, opsets, kind="normal", specials=IEEE, sums=False):
    def build(d):
        opset = d.pick(opsets, "opset")
        dtype = d.dtype(schema_types(op, opset))
        n = d.int(1, 4, "inputs")
        shapes = d.broadcast(n)
        if op == "Mean" and dtype != F32:
            # onnx.reference's Mean adds into its first input (ops/op_mean.py: res += m),
            # which must then have the broadcast shape; onnxruntime runs float only
            shapes[0] = list(np.broadcast_shapes(*[tuple(s_) for s_ in shapes]))
        inputs = []
        for i, s in enumerate(shapes):
            int_kind = "normal"
            inputs.append((f"x{i}", d.values(s, dtype, kind if dtype.kind == "f" else int_kind,
                                              specials if dtype.kind == "f" else ())))
        case = Case(op, inputs, opset=opset, sum_terms=n if sums else 0)
        return d.nxrt_config(case, [f"x{i}" for i in range(1, n)])
    return build


spec("Max")(_variadic("Max", [8, 12, 13]))
spec("Min")(_variadic("Min", [8, 12, 13]))
spec("Sum")(_variadic("Sum", [8, 13], sums=True))
spec("Mean")(_variadic("Mean", [8, 13], sums=True))


@spec("PRelu")
def prelu(d):
    opset = d.pick([9, 16], "opset")
    dtype = d.dtype(schema_types("PRelu", opset))
    sx = d.shape(min_rank=1)
    # slope: unidirectionally broadcastable to x
    rank = d.int(0, len(sx))
    ss = [1 if d.one_in(3) else s for s in sx[len(sx) - rank:]]
    kind = "normal" if dtype.kind == "f" else "small"
    x = d.values(sx, dtype, kind, IEEE if dtype.kind == "f" else ())
    slope = d.values(ss, dtype, kind)
    return d.nxrt_config(Case("PRelu", [("x", x), ("slope", slope)], opset=opset), ["slope"])


@spec("Where")
def where(d):
    opset = d.pick([9, 16], "opset")
    dtype = d.dtype(schema_types("Where", opset, "T"))
    sc, sa, sb = d.broadcast(3)
    cond = d.values(sc, BOOL)
    # no -0.0: onnxruntime's float Where returns +0.0 for a selected -0.0 (a select
    # returns the value itself; onnx.reference and nxrt do)
    a = d.values(sa, dtype, "normal", (NAN, INF, -INF, 0.0) if dtype.kind == "f" else ())
    b = d.values(sb, dtype, "normal", (NAN, INF, -INF, 0.0) if dtype.kind == "f" else ())
    if dtype.kind == "f":
        a, b = a + dtype.type(0), b + dtype.type(0)  # -0.0 + 0.0 is +0.0
    case = Case("Where", [("c", cond), ("a", a), ("b", b)], opset=opset, exact=True)
    return d.nxrt_config(case, ["a", "b"])


# ---- reductions -----------------------------------------------------------------------------

REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


def _gamma(n, dtype):
    """gamma_n = n u / (1 - n u): the relative rounding of a float sum of n terms."""
    u = UNIT_ROUNDOFF[np.dtype(dtype)]
    return n * u / (1 - n * u)


def _reduce(op):
    def build(d):
        # axes: an attribute up to opset 17 (ReduceSum: 12), an input from 18 (13)
        opset = d.pick([13, 18] if op != "ReduceMax" and op != "ReduceMin" else [13, 18, 20],
                       "opset")
        dtype = d.dtype(schema_types(op, opset))
        shape = d.shape(max_side=6)
        rank = len(shape)
        kind = "normal"
        if op in ("ReduceProd",):
            kind = "small" if dtype.kind in "iu" else "near1"
        elif op in ("ReduceSumSquare", "ReduceL2") and dtype.kind in "iu":
            kind = "small"
        elif op in ("ReduceLogSum",):
            kind = "positive"
        specials = ()
        if dtype.kind == "f" and op in ("ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1"):
            specials = IEEE
        elif dtype.kind == "f" and op in ("ReduceMax", "ReduceMin"):
            # no NaN: the spec does not say what the max of a set holding NaN is (numpy and
            # onnx.reference: NaN; onnxruntime: NaN or a number, by the NaN's position)
            specials = NO_NAN
        x = d.values(shape, dtype, kind, specials)
        axes = d(st.lists(st.integers(0, rank - 1), max_size=rank, unique=True)) if rank else []
        axes = [a - rank if d.flag() else a for a in axes]
        attrs = {"keepdims": d.pick([1, 0], "keepdims")}
        inputs = [("x", x)]
        axes_input = opset >= 18 or (op == "ReduceSum" and opset >= 13)
        if axes_input:
            if d.flag():
                attrs["noop_with_empty_axes"] = 1
            if axes or d.flag():
                inputs.append(("axes", np.array(axes, np.int64)))
        elif axes:
            attrs["axes"] = axes
        reduced = (int(np.prod([shape[a % rank] for a in axes])) if axes
                   else (1 if attrs.get("noop_with_empty_axes") else int(np.prod(shape))))
        if reduced == 0 and (op == "ReduceMean" or op in ("ReduceLogSum", "ReduceLogSumExp")
                             and dtype.kind != "f"):
            reject()  # "Reduction over an empty set of values yields undefined."
        if op == "ReduceProd" and dtype.kind == "f" and x.size:
            # no partial product may overflow or underflow, in any order: otherwise inf *
            # (a product of small values that reached 0) is NaN in one order, -inf in another
            mags = np.abs(x.astype(np.float64))
            mags = np.where(np.isfinite(mags) & (mags > 0), mags, 1.0)
            red = tuple(a % rank for a in axes) if axes else (
                () if attrs.get("noop_with_empty_axes") else tuple(range(rank)))
            info = np.finfo(dtype)
            with np.errstate(divide="ignore"):
                hi = np.log(np.maximum(mags, 1.0)).sum(axis=red)
                lo = np.log(np.minimum(mags, 1.0)).sum(axis=red)
            if (hi > np.log(float(info.max))).any() or (lo < np.log(float(info.tiny))).any():
                reject()
        if dtype.kind in "iu" and x.size and op in ("ReduceProd", "ReduceSum", "ReduceMean",
                                                    "ReduceL1", "ReduceSumSquare", "ReduceL2"):
            # no integer overflow (the spec does not define it: onnxruntime's int32
            # ReduceProd saturates to 2**31 - 1, nxrt wraps)
            red = tuple(a % rank for a in axes) if axes else (
                () if attrs.get("noop_with_empty_axes") else tuple(range(rank)))
            mags = np.abs(x.astype(np.float64))
            if op == "ReduceProd":
                total = np.prod(np.maximum(mags, 1.0), axis=red)
            else:
                total = np.sum(mags ** 2 if op in ("ReduceSumSquare", "ReduceL2") else mags,
                               axis=red)
            if (total > np.iinfo(dtype).max).any():
                reject()
        sums = op in ("ReduceSum", "ReduceMean")
        case = Case(op, inputs, attrs, opset=opset, sum_terms=reduced if sums else 0)
        if op in ("ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp") and \
                dtype.kind in "iu":
            # the spec does not say how a fractional result becomes an integer: onnxruntime
            # floors log(exp(-919) + ...) = -918.99... to -919, nxrt truncates to -918
            case.int_atol = 1
        if op in ("ReduceLogSum", "ReduceLogSumExp") and dtype.kind == "f" and dtype != F16:
            # the log of a sum of positive terms: off by the sum's rounding (gamma_n)
            case.atol = max(TOLERANCE[dtype][1], 2 * _gamma(reduced + 2, dtype))
        return d.nxrt_config(case, ["axes"])
    return build


for _op in REDUCE:
    spec(_op)(_reduce(_op))


def _arg(op):
    def build(d):
        opset = d.pick([11, 12, 13], "opset")
        dtype = d.dtype(schema_types(op, opset))
        shape = d.shape(min_rank=1)
        # NaN excluded: the spec does not say what the max of a set with NaN is.
        x = d.values(shape, dtype, "small", NO_NAN if dtype.kind == "f" else ())
        attrs = {"axis": d.int(-len(shape), len(shape) - 1), "keepdims": d.pick([1, 0])}
        if opset >= 12:
            attrs["select_last_index"] = d.pick([0, 1], "select_last_index")
        return d.nxrt_config(Case(op, [("x", x)], attrs, opset=opset))
    return build


spec("ArgMax")(_arg("ArgMax"))
spec("ArgMin")(_arg("ArgMin"))


def _softmax(op):
    def build(d):
        # opset 11: the input is coerced to 2-D at axis; 13: one axis
        opset = d.pick([11, 13], "opset")
        # onnx.reference implements opset 13's meaning only (ops/op_softmax.py,
        # op_hardmax.py: one axis, default -1): opset 11 is drawn for float, which
        # onnxruntime runs
        dtype = d.dtype(schema_types(op, opset) if opset >= 13 else [F32])
        shape = d.shape(min_rank=1)
        kind = "small" if op == "Hardmax" else "normal"
        # no +inf: "Softmax(input, axis) = Exp(input) / ReduceSum(Exp(input), axis=axis,
        # keepdims=1)" makes softmax([inf, 0]) [nan, 0] (nxrt), its max-shifted form
        # (onnxruntime, onnx.reference) [nan, nan]
        # no NaN in double: onnxruntime's double LogSoftmax of [2.875, nan] is [46.05, nan]
        # (every value is NaN by the formula)
        specials = ((NAN, -INF, 0.0, -0.0) if op != "Hardmax" and dtype != F64 else
                    (-INF, 0.0, -0.0) if op != "Hardmax" else NO_NAN)
        x = d.values(shape, dtype, kind, specials)
        attrs = {}
        axis = 1 if opset < 13 else -1
        if d.flag() or len(shape) <= axis:
            axis = attrs["axis"] = d.int(-len(shape), len(shape) - 1)
        case = Case(op, [("x", x)], attrs, opset=opset)
        if op == "LogSoftmax" and dtype != F16:
            # log(sum(exp(x - max))) near 0 is off by the sum's rounding, up to gamma_n
            # absolutely (onnx.reference's float32 code too): atol 2 gamma_(n+2)
            n = (int(np.prod(shape[axis:])) if opset < 13 else shape[axis])
            case.atol = max(TOLERANCE[dtype][1], _gamma(n + 2, dtype) * 2)
        return d.nxrt_config(case)
    return build


for _op in ("Softmax", "LogSoftmax", "Hardmax"):
    spec(_op)(_softmax(_op))


@spec("CumSum")
def cumsum(d):
    opset = d.pick([11, 14], "opset")
    dtype = d.dtype(schema_types("CumSum", opset))
    shape = d.shape(min_rank=1, max_side=7)
    x = d.values(shape, dtype, "normal", IEEE if dtype.kind == "f" else ())
    axis = np.array(d.int(-len(shape), len(shape) - 1), d.pick([np.int64, np.int32]))
    if d.flag():
        axis = axis.reshape(1)
    attrs = {"exclusive": d.pick([0, 1]), "reverse": d.pick([0, 1])}
    case = Case("CumSum", [("x", x), ("axis", axis)], attrs, opset=opset,
                sum_terms=max(shape[int(axis.reshape(-1)[0])], 1))
    return d.nxrt_config(case, ["axis"])


@spec("TopK")
def topk(d):
    opset = d.pick([10, 11, 24], "opset")
    dtype = d.dtype(schema_types("TopK", opset))
    shape = d.shape(min_rank=1, max_side=8)
    # NaN excluded: the spec does not order it. Ties (small values): the lower index first.
    x = d.values(shape, dtype, d.pick(["small", "normal"]), NO_NAN if dtype.kind == "f" else ())
    axis = d.int(-len(shape), len(shape) - 1)
    k = d.int(0, shape[axis])
    attrs = {"axis": axis}
    if opset >= 11:
        attrs["largest"] = d.pick([1, 0], "largest")
        attrs["sorted"] = 1  # sorted=0: the order is undefined
    case = Case("TopK", [("x", x), ("k", np.array([k], np.int64))], attrs, n_outputs=2,
                opset=opset)
    return d.nxrt_config(case, ["k"])


# ---- data movement (results bitwise equal) --------------------------------------------------

def _any_values(d, shape, dtype):
    return d.values(shape, dtype, "normal", IEEE if dtype.kind == "f" else int_specials(dtype)
                    if dtype.kind in "iu" else ())


def _movement_types(op, opset, constraint=None):
    return schema_types(op, opset, constraint)


@spec("Transpose")
def transpose(d):
    dtype = d.dtype(_movement_types("Transpose", 21))
    shape = d.shape(max_rank=5, max_side=4)
    x = _any_values(d, shape, dtype)
    attrs = {}
    if shape and (d.flag() or len(shape) < 2):
        attrs["perm"] = d(st.permutations(list(range(len(shape)))), "perm")
    return d.nxrt_config(Case("Transpose", [("x", x)], attrs, opset=21, exact=True))


@spec("Reshape")
def reshape(d):
    opset = d.pick([13, 14, 21], "opset")
    dtype = d.dtype(_movement_types("Reshape", opset))
    shape = d.shape(max_side=4)
    x = _any_values(d, shape, dtype)
    n = int(np.prod(shape))
    # the target: a factorization of n, then a 0 (copy) or a -1 (infer) here and there
    target = []
    rest = n
    for _ in range(d.int(0, 4)):
        f = d.pick([f for f in range(1, rest + 1) if rest % f == 0] if rest else [0, 1])
        target.append(f)
        rest = rest // f if f else rest
    if rest != 1 or not target:
        target.append(rest)
    attrs = {}
    allowzero = opset >= 14 and d.one_in(3)
    if allowzero:
        attrs["allowzero"] = 1
    if not allowzero and 0 not in target:
        for i in range(min(len(target), len(shape))):
            if target[i] == shape[i] and d.one_in(3):
                target[i] = 0  # copy the input's dimension
    if d.flag() and n:
        i = d.int(0, len(target) - 1)
        if target[i] != 0:
            target[i] = -1
    case = Case("Reshape", [("x", x), ("shape", np.array(target, np.int64))], attrs,
                opset=opset, exact=True)
    return d.nxrt_config(case, ["shape"])


@spec("Flatten")
def flatten(d):
    opset = d.pick([11, 13, 21])
    dtype = d.dtype(_movement_types("Flatten", opset))
    shape = d.shape(min_rank=1, max_side=4)
    x = _any_values(d, shape, dtype)
    attrs = {}
    if d.flag():
        attrs["axis"] = d.int(-len(shape), len(shape))
    return d.nxrt_config(Case("Flatten", [("x", x)], attrs, opset=opset, exact=True))


@spec("Squeeze")
def squeeze(d):
    opset = d.pick([11, 13, 21])
    dtype = d.dtype(_movement_types("Squeeze", opset))
    shape = [d.pick([1, 1, 2, 3]) for _ in range(d.int(0, 5))]
    x = _any_values(d, shape, dtype)
    ones = [i for i, s in enumerate(shape) if s == 1]
    axes = [a - len(shape) if d.flag() else a for a in ones if d.flag()]
    inputs, attrs = [("x", x)], {}
    # an empty axes input: the spec says only "If axes is not provided, all the single
    # dimensions will be removed"; onnxruntime removes them all, onnx.reference and nxrt none
    if axes:
        if opset >= 13:
            inputs.append(("axes", np.array(axes, np.int64)))
        elif axes:
            attrs["axes"] = axes
    return d.nxrt_config(Case("Squeeze", inputs, attrs, opset=opset, exact=True), ["axes"])


@spec("Unsqueeze")
def unsqueeze(d):
    opset = d.pick([11, 13, 21])
    dtype = d.dtype(_movement_types("Unsqueeze", opset))
    shape = d.shape(max_side=4)
    x = _any_values(d, shape, dtype)
    out_rank = len(shape) + d.int(1, 3)
    axes = d(st.lists(st.integers(0, out_rank - 1), min_size=out_rank - len(shape),
                      max_size=out_rank - len(shape), unique=True))
    axes = [a - out_rank if d.flag() else a for a in axes]
    if opset >= 13:
        case = Case("Unsqueeze", [("x", x), ("axes", np.array(axes, np.int64))], opset=opset,
                    exact=True)
    else:
        case = Case("Unsqueeze", [("x", x)], {"axes": axes}, opset=opset, exact=True)
    return d.nxrt_config(case, ["axes"])


@spec("Concat")
def concat(d):
    opset = d.pick([11, 13])
    dtype = d.dtype(_movement_types("Concat", opset))
    shape = d.shape(min_rank=1, max_side=4)
    axis = d.int(-len(shape), len(shape) - 1)
    inputs = []
    for i in range(d.int(1, 4)):
        s = list(shape)
        s[axis] = d.int(0, 4)
        inputs.append((f"x{i}", _any_values(d, s, dtype)))
    case = Case("Concat", inputs, {"axis": axis}, opset=opset, exact=True)
    return d.nxrt_config(case, [n for n, _ in inputs[1:]])


@spec("Split")
def split(d):
    opset = d.pick([11, 13, 18])
    dtype = d.dtype(_movement_types("Split", opset))
    shape = d.shape(min_rank=1, max_side=7)
    axis = d.int(-len(shape), len(shape) - 1)
    length = shape[axis]
    inputs, attrs = [("x", _any_values(d, shape, dtype))], {"axis": axis}
    how = d.pick(["sizes", "equal"] + (["num_outputs"] if opset >= 18 else []))
    if how == "sizes":
        sizes = []
        rest = length
        while rest > 0 and len(sizes) < 4:
            sizes.append(d.int(0, rest))
            rest -= sizes[-1]
        sizes.append(rest)
        n = len(sizes)
        if opset >= 13:
            inputs.append(("split", np.array(sizes, np.int64)))
        else:
            attrs["split"] = sizes
    elif how == "equal":
        n = d.pick([k for k in range(1, 5) if length % k == 0 and (length or k == 1)])
        if opset >= 18:  # (an equal split needs num_outputs from 18 on)
            attrs["num_outputs"] = n
    else:  # num_outputs: ceil-sized parts, the last smaller
        n = d.int(1, 4)
        if n > max(length, 1):
            reject()
        attrs["num_outputs"] = n
    case = Case("Split", inputs, attrs, n_outputs=n, opset=opset, exact=True)
    return d.nxrt_config(case, ["split"])


@spec("Slice")
def slice_(d):
    opset = d.pick([10, 11, 13])
    dtype = d.dtype(_movement_types("Slice", opset))
    shape = d.shape(min_rank=1, max_side=6)
    rank = len(shape)
    x = _any_values(d, shape, dtype)
    n = d.int(1, rank)
    axes = d(st.lists(st.integers(0, rank - 1), min_size=n, max_size=n, unique=True))
    big = np.iinfo(np.int64).max
    starts, ends, steps = [], [], []
    for a in axes:
        dim = shape[a]
        step = d.pick([1, 1, 2, 3, -1, -2]) if opset >= 10 else 1
        bound = [-dim - 3, dim + 3]
        start = d.pick([d.int(*bound), 0, -1, big, -big])
        # (onnxruntime reads an end of INT_MAX as "to the end" in a negative step's direction
        # too; the spec clamps it "to [-1, dims[axes[i]]-1]" for negative stepping, the
        # last element: not drawn for negative steps)
        end = d.pick([d.int(*bound), big, -big, -1] if step > 0 else [d.int(*bound), -big, -1])
        starts.append(start)
        ends.append(end)
        steps.append(step)
    itype = d.pick([np.int64, np.int32])
    if itype == np.int32:
        lim = np.iinfo(np.int32)
        starts = [int(np.clip(s, lim.min, lim.max)) for s in starts]
        ends = [int(np.clip(e, lim.min, lim.max)) for e in ends]
    inputs = [("x", x), ("starts", np.array(starts, itype)), ("ends", np.array(ends, itype))]
    if d.flag() or any(s != 1 for s in steps) or axes != list(range(n)):
        inputs.append(("axes", np.array([a - rank if d.flag() else a for a in axes], itype)))
        if d.flag() or any(s != 1 for s in steps):
            inputs.append(("steps", np.array(steps, itype)))
    case = Case("Slice", inputs, opset=opset, exact=True)
    return d.nxrt_config(case, ["starts", "ends", "axes", "steps"])


def _indices(d, shape, dim, dtype=None):
    """Indices into a dimension of size dim, negative ones too."""
    itype = dtype or d.pick([np.int64, np.int32])
    if dim == 0:
        if int(np.prod(shape)):
            reject()
        return np.zeros(shape, itype)
    return d.values(shape, itype, lo=-dim, hi=dim - 1)


@spec("Gather")
def gather(d):
    dtype = d.dtype(_movement_types("Gather", 13))
    shape = d.shape(min_rank=1, max_side=5)
    axis = d.int(-len(shape), len(shape) - 1)
    idx = _indices(d, d.shape(max_rank=3, max_side=4), shape[axis])
    case = Case("Gather", [("x", _any_values(d, shape, dtype)), ("i", idx)], {"axis": axis},
                opset=13, exact=True)
    return d.nxrt_config(case, ["i"])


@spec("GatherElements")
def gather_elements(d):
    dtype = d.dtype(_movement_types("GatherElements", 13))
    shape = d.shape(min_rank=1, max_side=5)
    axis = d.int(-len(shape), len(shape) - 1)
    ishape = [d.int(0 if i == axis % len(shape) else 1, s) if s else 0
              for i, s in enumerate(shape)]
    ishape[axis] = d.int(1, 5) if shape[axis] else ishape[axis]
    idx = _indices(d, ishape, shape[axis])
    case = Case("GatherElements", [("x", _any_values(d, shape, dtype)), ("i", idx)],
                {"axis": axis}, opset=13, exact=True)
    return d.nxrt_config(case, ["i"])


@spec("GatherND")
def gather_nd(d):
    opset = d.pick([12, 13])
    dtype = d.dtype(_movement_types("GatherND", opset))
    shape = d.shape(min_rank=1, max_side=4, empty=False)
    batch = d.int(0, len(shape) - 1)
    last = d.int(1, len(shape) - batch)
    ishape = shape[:batch] + d.shape(max_rank=2, max_side=3) + [last]
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    idx = np.zeros(ishape, np.int64)
    for j in range(last):
        dim = shape[batch + j]
        idx[..., j] = rng.integers(-dim, dim, ishape[:-1])
    case = Case("GatherND", [("x", _any_values(d, shape, dtype)), ("i", idx)],
                {"batch_dims": batch}, opset=opset, exact=True)
    return d.nxrt_config(case, ["i"])


@spec("ScatterElements")
def scatter_elements(d):
    opset = d.pick([13, 16, 18])
    dtype = d.dtype(_movement_types("ScatterElements", opset))
    shape = d.shape(min_rank=1, max_side=5, empty=False)
    axis = d.int(-len(shape), len(shape) - 1)
    reduction = d.pick(["none", "add", "mul", "max", "min"][: {13: 1, 16: 3, 18: 5}[opset]])
    ishape = [d.int(1, s) for s in shape]
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    dim = shape[axis]
    if reduction == "none":
        # duplicate indices with reduction none: the spec leaves the result undefined
        ishape[axis] = d.int(1, dim)
        idx = np.argsort(rng.random(ishape[:axis % len(shape)] + [dim]
                                    + ishape[axis % len(shape) + 1:]), axis=axis)
        idx = np.take(idx, np.arange(ishape[axis]), axis=axis)
    else:
        idx = rng.integers(0, dim, ishape)
    idx = np.where(rng.random(idx.shape) < 0.3, idx - dim, idx).astype(np.int64)
    kind = "small" if reduction == "mul" else "normal"
    x = d.values(shape, dtype, kind, NO_NAN if dtype.kind == "f" and reduction != "none" else ())
    u = d.values(ishape, dtype, kind)
    attrs = {"axis": axis}
    if opset >= 16:
        attrs["reduction"] = reduction
    # (bitwise only without reduction: max(-0.0, 0.0) may be either zero, nxrt keeps x's
    # -0.0, onnxruntime takes 0.0)
    case = Case("ScatterElements", [("x", x), ("i", idx), ("u", u)], attrs, opset=opset,
                exact=reduction == "none")
    return d.nxrt_config(case, ["i", "u"])


@spec("ScatterND")
def scatter_nd(d):
    opset = d.pick([13, 16, 18])
    dtype = d.dtype(_movement_types("ScatterND", opset))
    shape = d.shape(min_rank=1, max_side=4, empty=False)
    last = d.int(1, len(shape))
    reduction = d.pick(["none", "add", "mul", "max", "min"][: {13: 1, 16: 3, 18: 5}[opset]])
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    cells = int(np.prod(shape[:last]))
    count = d.int(1, min(cells, 6))
    if reduction == "none":  # duplicates: undefined, as above
        flat = rng.permutation(cells)[:count]
    else:
        flat = rng.integers(0, cells, count)
    idx = np.stack(np.unravel_index(flat, shape[:last]), axis=-1).astype(np.int64)
    idx = np.where(rng.random(idx.shape) < 0.3, idx - np.array(shape[:last]), idx)
    ushape = [count] + shape[last:]
    kind = "small" if reduction == "mul" else "normal"
    x = d.values(shape, dtype, kind)
    u = d.values(ushape, dtype, kind)
    attrs = {"reduction": reduction} if opset >= 16 else {}
    case = Case("ScatterND", [("x", x), ("i", idx), ("u", u)], attrs, opset=opset,
                exact=reduction == "none")
    return d.nxrt_config(case, ["i", "u"])


@spec("Pad")
def pad(d):
    opset = d.pick([11, 13, 18, 19, 21])
    dtype = d.dtype(_movement_types("Pad", opset))
    modes = ["constant", "reflect", "edge"] + (["wrap"] if opset >= 19 else [])
    mode = d.pick(modes, "mode")
    shape = d.shape(min_rank=1, max_side=5, empty=mode == "constant")
    rank = len(shape)
    axes = list(range(rank))
    if opset >= 18 and d.flag():
        axes = d(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    pads_begin, pads_end = [], []
    for a in axes:
        dim = shape[a]
        # reflect needs pads below the dimension (numpy and onnxruntime differ past it)
        hi = dim - 1 if mode == "reflect" else (dim if mode == "wrap" else 4)
        lo = -dim if mode == "constant" else 0
        pads_begin.append(d.int(lo, max(lo, min(hi, 4))))
        pads_end.append(d.int(lo, max(lo, min(hi, 4))))
    if mode == "edge" and any(shape[a] == 0 for a in axes):
        reject()
    pads = np.array(pads_begin + pads_end, np.int64)
    attrs = {"mode": mode}
    inputs = [("x", _any_values(d, shape, dtype)), ("pads", pads)]
    if mode == "constant" and d.flag():
        inputs.append(("value", _any_values(d, [], dtype)))
    elif len(axes) != rank:
        inputs.append(("", None))
    if len(axes) != rank or (opset >= 18 and d.flag()):
        if inputs[-1][0] == "pads":
            inputs.append(("", None))
        inputs.append(("axes", np.array([a - rank if d.flag() else a for a in axes], np.int64)))
    case = Case("Pad", inputs, attrs, opset=opset, exact=True)
    return d.nxrt_config(case, ["pads", "value", "axes"])


@spec("Tile")
def tile(d):
    dtype = d.dtype(_movement_types("Tile", 13))
    shape = d.shape(min_rank=1, max_side=4)
    repeats = np.array([d.int(0, 3) for _ in shape], np.int64)
    case = Case("Tile", [("x", _any_values(d, shape, dtype)), ("r", repeats)], opset=13,
                exact=True)
    return d.nxrt_config(case, ["r"])


@spec("Expand")
def expand(d):
    dtype = d.dtype(_movement_types("Expand", 13))
    sx, ss = d.broadcast(2)
    case = Case("Expand", [("x", _any_values(d, sx, dtype)), ("shape", np.array(ss, np.int64))],
                opset=13, exact=True)
    return d.nxrt_config(case, ["shape"])


@spec("DepthToSpace")
def depth_to_space(d):
    dtype = d.dtype(_movement_types("DepthToSpace", 13))
    b = d.int(1, 3)
    shape = [d.int(1, 2), b * b * d.int(1, 3), d.int(1, 4), d.int(1, 4)]
    case = Case("DepthToSpace", [("x", _any_values(d, shape, dtype))],
                {"blocksize": b, "mode": d.pick(["DCR", "CRD"])}, opset=13, exact=True)
    return d.nxrt_config(case)


@spec("SpaceToDepth")
def space_to_depth(d):
    dtype = d.dtype(_movement_types("SpaceToDepth", 13))
    b = d.int(1, 3)
    shape = [d.int(1, 2), d.int(1, 3), b * d.int(1, 3), b * d.int(1, 3)]
    case = Case("SpaceToDepth", [("x", _any_values(d, shape, dtype))], {"blocksize": b},
                opset=13, exact=True)
    return d.nxrt_config(case)


@spec("Trilu")
def trilu(d):
    dtype = d.dtype(_movement_types("Trilu", 14))
    shape = d.shape(min_rank=2, max_side=5)
    inputs = [("x", _any_values(d, shape, dtype))]
    if d.flag():
        inputs.append(("k", np.array(d.int(-6, 6), np.int64)))
    case = Case("Trilu", inputs, {"upper": d.pick([1, 0])}, opset=14, exact=True)
    return d.nxrt_config(case, ["k"])


@spec("Compress")
def compress(d):
    dtype = d.dtype(_movement_types("Compress", 11))
    shape = d.shape(min_rank=1, max_side=5)
    attrs = {}
    if d.flag():
        attrs["axis"] = d.int(-len(shape), len(shape) - 1)
        length = shape[attrs["axis"]]
    else:
        length = int(np.prod(shape))
    cond = d.values([d.int(0, length)], BOOL)
    case = Case("Compress", [("x", _any_values(d, shape, dtype)), ("c", cond)], attrs,
                opset=11, exact=True)
    return d.nxrt_config(case, ["c"])


@spec("ReverseSequence")
def reverse_sequence(d):
    dtype = d.dtype(_movement_types("ReverseSequence", 10))
    batch_axis = d.pick([0, 1])
    shape = [d.int(1, 4), d.int(1, 4)] + d.shape(max_rank=2, max_side=3)
    time_axis = 1 - batch_axis
    lens = d.values([shape[batch_axis]], np.int64, lo=0, hi=shape[time_axis])
    case = Case("ReverseSequence", [("x", _any_values(d, shape, dtype)), ("len", lens)],
                {"batch_axis": batch_axis, "time_axis": time_axis}, opset=10, exact=True)
    return d.nxrt_config(case, ["len"])


@spec("Shape")
def shape_op(d):
    opset = d.pick([13, 15, 21])
    shape = d.shape(max_rank=5)
    attrs = {}
    if opset >= 15:
        if d.flag():
            attrs["start"] = d.int(-7, 7)
        if d.flag():
            attrs["end"] = d.int(-7, 7)
    return d.nxrt_config(Case("Shape", [("x", d.values(shape, F32))], attrs, opset=opset))


@spec("Size")
def size_op(d):
    return d.nxrt_config(Case("Size", [("x", d.values(d.shape(), d.dtype(CORE)))], opset=21))


@spec("OneHot")
def one_hot(d):
    shape = d.shape(min_rank=1, max_rank=3, max_side=4)
    depth = d.int(1, 6)
    tind = d.pick([np.int64, np.int32, np.float32])
    idx = d.values(shape, tind, "range", lo=-depth, hi=depth - 1)
    if np.dtype(tind).kind == "f":
        idx = np.round(idx).astype(tind)
    tout = d.dtype([F32, I64, I32])
    values = np.array([0, 1], tout) if tout == BOOL else d.values([2], tout, "small")
    axis = d.int(-len(shape) - 1, len(shape))
    case = Case("OneHot", [("i", idx), ("depth", np.array(depth, np.int64)), ("v", values)],
                {"axis": axis}, opset=11)
    return d.nxrt_config(case, ["depth", "v"])


@spec("Range")
def range_op(d):
    dtype = d.dtype([F32, F64, I32, I64])
    if dtype.kind == "f":
        start, delta = d.pick([0.0, 1.5, -2.25, 3.0]), d.pick([1.0, 0.5, -0.75, 2.0, 0.3])
        limit = start + delta * d.pick([0, 1, 3.5, 7, -2])
    else:
        start, delta = d.int(-5, 5), d.pick([1, 2, -1, -3, 4])
        limit = start + delta * d.int(-2, 8) + d.int(0, 1)
    inputs = [(n, np.array(v, dtype)) for n, v in (("start", start), ("limit", limit),
                                                   ("delta", delta))]
    return d.nxrt_config(Case("Range", inputs, opset=11), ["start", "limit", "delta"])


@spec("EyeLike")
def eye_like(d):
    shape = [d.int(0, 5), d.int(0, 5)]
    tin = d.dtype(schema_types("EyeLike", 9, "T1"))
    attrs = {"k": d.int(-6, 6)}
    if d.flag():
        attrs["dtype"] = helper.np_dtype_to_tensor_dtype(d.dtype([F32, I64, I32, F64]))
    return d.nxrt_config(Case("EyeLike", [("x", d.values(shape, tin))], attrs, opset=9))


@spec("ConstantOfShape")
def constant_of_shape(d):
    shape = np.array(d.shape(max_side=4), np.int64)
    attrs = {}
    if d.flag():
        dtype = d.dtype([F32, F64, F16, I32, I64, I8, U8, BOOL])
        attrs["value"] = numpy_helper.from_array(_any_values(d, [1], dtype), "value")
    return d.nxrt_config(Case("ConstantOfShape", [("s", shape)], attrs, opset=21, exact=True),
                         ["s"])


# ---- casts ----------------------------------------------------------------------------------

def _cast_source(d, src, dst, shape):
    """Values of dtype src whose cast to dst the spec defines: floats to integers within
    the destination's range ("fixed point: undefined if OOR"), nothing else restricted."""
    if src.kind == "f" and dst.kind in "iu":
        info = np.iinfo(dst)
        lo, hi = max(info.min, -60000), min(info.max, 60000)
        x = d.values(shape, src, d.pick(["range", "halves"]), lo=lo, hi=hi)
        return np.clip(x, lo, hi).astype(src)
    if src.kind == "f":
        return d.values(shape, src, "normal", IEEE + ((1e30, -1e30, 70000.0, 1e-8)
                                                        if src != F16 else ()))
    if src == BOOL:
        return d.values(shape, src)
    return d.values(shape, src, "normal", int_specials(src))


@spec("Cast")
def cast(d):
    opset = d.pick([13, 19, 21])
    src, dst = d.dtype(CORE, "from"), d.dtype(CORE, "to")
    x = _cast_source(d, src, dst, d.shape())
    attrs = {"to": helper.np_dtype_to_tensor_dtype(dst)}
    return d.nxrt_config(Case("Cast", [("x", x)], attrs, opset=opset, exact=True))


@spec("CastLike")
def cast_like(d):
    src, dst = d.dtype(CORE, "from"), d.dtype(CORE, "to")
    x = _cast_source(d, src, dst, d.shape())
    like = d.values(d.shape(max_rank=1), dst)
    return d.nxrt_config(Case("CastLike", [("x", x), ("like", like)], opset=21, exact=True),
                         ["like"])


# ---- matrix products ------------------------------------------------------------------------

@spec("MatMul")
def matmul(d):
    opset = d.pick([9, 13])
    dtype = d.dtype(schema_types("MatMul", opset))
    m, k, n = d.int(1, 9), d.int(0, 17), d.int(1, 9)
    batch = d.broadcast(2, max_rank=2, max_side=3)
    sa = batch[0] + [m, k] if not d.one_in(5) else [k]
    sb = batch[1] + [k, n] if not d.one_in(5) else [k]
    kind = "normal" if dtype.kind == "f" else "small"
    a = d.values(sa, dtype, kind, IEEE if dtype.kind == "f" and d.one_in(4) else ())
    b = d.values(sb, dtype, kind)
    case = Case("MatMul", [("a", a), ("b", b)], opset=opset, sum_terms=k)
    return d.nxrt_config(case, ["b"])


@spec("Gemm")
def gemm(d):
    opset = d.pick([9, 11, 13])
    dtype = d.dtype(schema_types("Gemm", opset))
    m, k, n = d.int(1, 9), d.int(1, 17), d.int(1, 9)
    ta, tb = d.pick([0, 1]), d.pick([0, 1])
    kind = "normal" if dtype.kind == "f" else "small"
    a = d.values([k, m] if ta else [m, k], dtype, kind)
    b = d.values([n, k] if tb else [k, n], dtype, kind)
    attrs = {"transA": ta, "transB": tb}
    if dtype.kind == "f":
        attrs["alpha"] = d.pick([1.0, 0.5, -2.0, 0.0])
        attrs["beta"] = d.pick([1.0, 0.25, 0.0, -1.5])
    inputs = [("a", a), ("b", b)]
    if opset < 11 or d.flag():
        sc = d.pick([[], [1], [n], [1, n], [m, 1], [m, n], [1, 1]])
        inputs.append(("c", d.values(sc, dtype, kind)))
    bound_attrs = {k_: abs(v) if isinstance(v, float) else v for k_, v in attrs.items()}
    case = Case("Gemm", inputs, attrs, opset=opset, sum_terms=k + 1, bound_attrs=bound_attrs)
    return d.nxrt_config(case, ["b", "c"])


EINSUM = ["ij,jk->ik", "bij,bjk->bik", "ij,kj->ik", "i,i->", "i,j->ij", "ij->ji", "ii->i",
          "ij->", "ij->i", "bhqd,bhkd->bhqk", "...ij,...jk->...ik", "ij,ij->ij", "ijk->ikj",
          "ij,jk", "ab,bc,cd->ad", "ii", "bi,bi->b", "i->i"]


@spec("Einsum")
def einsum(d):
    dtype = d.dtype(schema_types("Einsum", 12))
    eq = d.pick(EINSUM, "equation")
    lhs = eq.split("->")[0].split(",")
    sizes = {c: d.int(1, 5) for c in sorted(set("".join(lhs).replace(".", "")))}
    ell = d.shape(max_rank=2, max_side=3, empty=False) if "..." in eq else []
    inputs = []
    for i, term in enumerate(lhs):
        shape = (ell if term.startswith("...") else []) + [sizes[c] for c in
                                                           term.replace("...", "")]
        kind = "normal" if dtype.kind == "f" else "small"
        inputs.append((f"x{i}", d.values(shape, dtype, kind)))
    out = eq.split("->")[1] if "->" in eq else None
    summed = [c for c in sizes if out is not None and c not in out]
    terms = int(np.prod([sizes[c] for c in summed])) if summed else 1
    if out is None:
        terms = int(np.prod(list(sizes.values())))
    case = Case("Einsum", inputs, {"equation": eq}, opset=12,
                sum_terms=terms * len(lhs) if dtype.kind == "f" else 0)
    return d.nxrt_config(case, [n for n, _ in inputs[1:]])


# ---- convolution and pooling ----------------------------------------------------------------

def _window(d, spatial, max_kernel=3, dilations=True):
    """kernel, strides, dilations, explicit pads (or auto_pad) for `spatial` dims."""
    kernel = [d.int(1, max_kernel) for _ in spatial]
    strides = [d.pick([1, 1, 2, 3]) for _ in spatial]
    dil = [d.pick([1, 1, 2]) for _ in spatial] if dilations else [1] * len(spatial)
    auto = d.pick(["NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
    pads = None
    if auto == "NOTSET":
        pads = [d.int(0, k - 1) for k in kernel] + [d.int(0, k - 1) for k in kernel]
    return kernel, strides, dil, auto, pads


def _window_attrs(kernel, strides, dil, auto, pads, with_dil=True):
    attrs = {"kernel_shape": kernel, "strides": strides}
    if with_dil:
        attrs["dilations"] = dil
    if auto != "NOTSET":
        attrs["auto_pad"] = auto
    else:
        attrs["pads"] = pads
    return attrs


def _out_size(size, k, s, dl, auto, pb, pe, ceil=False):
    eff = (k - 1) * dl + 1
    if auto == "VALID":
        return (size - eff) // s + 1 if size >= eff else 0
    if auto.startswith("SAME"):
        return -(-size // s)
    num = size + pb + pe - eff
    if num < 0:
        return 0
    return (-(-num // s) if ceil else num // s) + 1


@spec("Conv", cost=1.5)
def conv(d):
    opset = d.pick([11, 22])
    dtype = d.dtype(schema_types("Conv", opset))
    nsp = d.pick([2, 1, 2, 3] if d.one_in(6) else [2, 1])
    group = d.pick([1, 1, 2, 3])
    depthwise = d.one_in(4)
    cin = group * d.int(1, 3) if not depthwise else group
    cout = group * d.int(1, 3)
    if d.one_in(8):  # the wider channel counts of nxrt's blocked and Winograd paths
        group, cin, cout = 1, d.pick([8, 16]), d.pick([8, 16])
    spatial = [d.int(1, 9 if nsp < 3 else 5) for _ in range(nsp)]
    kernel, strides, dil, auto, pads = _window(d, spatial)
    outs = [_out_size(s, k, st_, dl, auto, p, q)
            for s, k, st_, dl, p, q in zip(spatial, kernel, strides, dil,
                                           (pads or [0] * 6)[:nsp], (pads or [0] * 6)[nsp:])]
    if min(outs) < 1:
        reject()
    n = d.int(1, 2)
    # (onnxruntime refuses dilations with SAME padding; onnx.reference's result there is NaN
    # where a NaN input lies outside every window: no NaN or infinity drawn then)
    # onnx.reference dilates the kernel with zeros, so a NaN between the taps makes NaN
    # (0 * nan): with dilations, NaN and infinities in float only (onnxruntime)
    same_dilated = auto.startswith("SAME") and max(dil) > 1
    zero_taps = max(dil) > 1 and dtype != F32
    x = d.values([n, cin] + spatial, dtype, "normal",
                 IEEE if d.one_in(8) and not same_dilated and not zero_taps else ())
    w = d.values([cout, cin // group] + kernel, dtype, "normal")
    attrs = _window_attrs(kernel, strides, dil, auto, pads)
    if group > 1:
        attrs["group"] = group
    if d.flag():
        del attrs["kernel_shape"]  # inferred from W
    inputs = [("x", x), ("w", w)]
    if d.flag():
        inputs.append(("b", d.values([cout], dtype, "normal")))
    terms = cin // group * int(np.prod(kernel)) + 1
    case = Case("Conv", inputs, attrs, opset=opset, sum_terms=terms,
                winograd=(cin, cout, kernel, dil[0], group, strides),
                tag=f"{nsp}d g{group} c{cin} m{cout}")
    return d.nxrt_config(case, ["w", "b"])


@spec("ConvTranspose", cost=1.5)
def conv_transpose(d):
    opset = d.pick([11, 22])
    dtype = d.dtype(schema_types("ConvTranspose", opset))
    nsp = d.pick([2, 1])
    # onnx.reference's grouped ConvTranspose slices W by output channels and adds all of B
    # to each group (ops/op_conv_transpose.py): groups for float, which onnxruntime runs
    group = d.pick([1, 1, 2]) if dtype == F32 else 1
    cin, cout = group * d.int(1, 3), group * d.int(1, 3)
    spatial = [d.int(1, 6) for _ in range(nsp)]
    kernel = [d.int(1, 3) for _ in spatial]
    strides = [d.pick([1, 2, 3]) for _ in spatial]
    dil = [d.pick([1, 1, 2]) for _ in spatial]
    attrs = {"kernel_shape": kernel, "strides": strides, "dilations": dil}
    how = d.pick(["pads", "pads", "auto_pad", "output_shape"])
    if how == "pads":
        attrs["pads"] = [d.int(0, k - 1) for k in kernel] * 2
        if d.flag():
            attrs["output_padding"] = [d.int(0, s - 1) for s in strides]
    elif how == "auto_pad":
        attrs["auto_pad"] = d.pick(["SAME_UPPER", "SAME_LOWER", "VALID"])
        if attrs["auto_pad"] != "VALID" and any(
                s * (i - 1) + (k - 1) * dl + 1 < i * s
                for i, s, k, dl in zip(spatial, strides, kernel, dil)):
            # "total_padding[i] = stride[i] * (input_size[i] - 1) + output_padding[i] +
            # ((kernel_shape[i] - 1) * dilations[i] + 1) - output_shape[i]" is negative
            # (kernel under the stride): onnxruntime's output is then one short of SAME's
            # "output_shape[i] = input_shape[i] * strides[i]", onnx.reference's differs too
            reject()
    else:
        full = [(i - 1) * s + (k - 1) * dl + 1 for i, s, k, dl in zip(spatial, strides,
                                                                   kernel, dil)]
        attrs["output_shape"] = [f + d.int(0, s - 1) for f, s in zip(full, strides)]
    pads = attrs.get("pads", [0] * 2 * nsp)
    for i, s, k, dl, p, q, op_ in zip(spatial, strides, kernel, dil, pads[:nsp], pads[nsp:],
                                      attrs.get("output_padding", [0] * nsp)):
        if (i - 1) * s + (k - 1) * dl + 1 + op_ - p - q < 1:
            reject()
    if group > 1:
        attrs["group"] = group
    x = d.values([d.int(1, 2), cin] + spatial, dtype, "normal")
    w = d.values([cin, cout // group] + kernel, dtype, "normal")
    inputs = [("x", x), ("w", w)]
    if d.flag():
        inputs.append(("b", d.values([cout], dtype, "normal")))
    terms = cin // group * int(np.prod(kernel)) + 1
    case = Case("ConvTranspose", inputs, attrs, opset=opset, sum_terms=terms, tag=how)
    return d.nxrt_config(case, ["w", "b"])


def _pool_geometry(size, k, s, dl, auto, pb, pe, ceil):
    """(output size, begin pad) of one spatial axis by the pooling spec's formulas."""
    eff = (k - 1) * dl + 1
    if auto == "VALID":
        num = size - eff
        if num < 0:
            return 0, 0
        return (-(-(num + 1) // s) if ceil else num // s + 1), 0
    if auto.startswith("SAME"):
        out = -(-size // s)
        total = (out - 1) * s + eff - size
        if total < 0:
            # "pad_shape[i] = (output_spatial_shape[i] - 1) * strides_spatial_shape[i] +
            # ((kernel_spatial_shape[i] - 1) * dilations[i] + 1) - input_spatial_shape[i]"
            # is negative when the stride passes the kernel: onnxruntime refuses MaxPool
            # ("padding values must be non-negative") and splits it with C++'s truncating
            # division for AveragePool 19+, onnx.reference floors it or fails, nxrt pads 0
            # (as for Conv, where all three agree). The spec does not say: not drawn.
            return -1, 0
        return out, (total // 2 if auto == "SAME_UPPER" else total - total // 2)
    num = size + pb + pe - eff
    if num < 0:
        return 0, pb
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= size + pb:
        out -= 1  # "Sliding windows that would start in the right padded region are ignored."
    return out, pb


def _empty_window(size, k, s, dl, out, pb):
    """Whether a window of the axis holds padding only."""
    return any(all(not 0 <= o * s - pb + j * dl < size for j in range(k)) for o in range(out))


def _pool(op):
    def build(d):
        opsets = {"MaxPool": [11, 12, 22], "AveragePool": [11, 19, 22], "LpPool": [11, 18, 22]}
        opset = d.pick(opsets[op])
        dtype = d.dtype(schema_types(op, opset))
        nsp = d.pick([2, 1, 2, 3] if d.one_in(6) else [2, 1])
        spatial = [d.int(1, 9) for _ in range(nsp)]
        # (dilated AveragePool and LpPool of other types than float, which onnxruntime runs:
        # onnx.reference leaves the dilation out of VALID's output size and pools the wrong
        # values)
        with_dil = op == "MaxPool" and opset >= 10 or op in ("AveragePool", "LpPool") and (
            opset >= (19 if op == "AveragePool" else 18) and dtype == F32)
        kernel, strides, dil, auto, pads = _window(d, spatial, dilations=with_dil)
        ceil = opset >= 10 and op != "LpPool" or op == "LpPool" and opset >= 18
        if auto == "VALID" and ceil and opset >= 10:
            # onnxruntime takes VALID with ceil_mode as pads 0 (3 values, kernel 2, stride 2:
            # 2 outputs), the spec's "VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i]
            # - ((kernel_spatial_shape[i] - 1) * dilations[i] + 1) + 1) / strides_spatial_shape[i])"
            # makes 1; onnx.reference refuses it: ceil_mode not drawn with VALID
            ceil = False
        if auto.startswith("SAME") and max(dil) > 1:
            # onnxruntime leaves the dilation out of the SAME padding: its output is
            # smaller than "output_shape[i] = ceil(input_shape[i] / strides[i])"
            # (auto_pad's description), e.g. MaxPool of 4 values, kernel 2, dilation 2,
            # SAME_UPPER: 3 values, not 4
            dil = [1] * nsp
        attrs = _window_attrs(kernel, strides, dil, auto, pads, with_dil)
        if op in ("LpPool", "AveragePool") and dtype != F32:
            # onnx.reference's LpPool fills a window past the input's end (ceil_mode) with
            # copies of the values (4 values, kernel 2, stride 3: the last window [x3] gives
            # sqrt(2) |x3|), its AveragePool takes the wrong windows with ceil_mode and a
            # begin pad ([2.875, 1.125, 0.125], pads [1, 0], kernel 3, stride 3: [2.875,
            # 1.125], not [2.0, 0.125]); onnxruntime runs float only
            ceil = False
        if ceil and d.flag():
            attrs["ceil_mode"] = 1
        pads = pads or [0] * (2 * nsp)
        count_pad = op == "AveragePool" and d.flag()
        if count_pad:
            attrs["count_include_pad"] = 1
        for i in range(nsp):
            out, pb = _pool_geometry(spatial[i], kernel[i], strides[i], dil[i], auto, pads[i],
                                     pads[nsp + i], attrs.get("ceil_mode", 0))
            if out < 1:
                reject()
            # a window of padding only: the spec leaves the max of no element, and the
            # average of none (pads not counted), undefined
            if op != "LpPool" and not count_pad and _empty_window(
                    spatial[i], kernel[i], strides[i], dil[i], out, pb):
                reject()
        n_outputs = 1
        if op == "LpPool":
            attrs["p"] = d.pick([2, 1, 3])
        if op == "MaxPool":
            if d.flag():
                attrs["storage_order"] = d.pick([0, 1])
            if dtype in (F32, F64) and d.one_in(3):
                n_outputs = 2
        # NaN only in float (onnxruntime): onnx.reference pads with NaN and drops every NaN
        # of a window (ops/op_pool_common.py), so [nan, x] averages to x there. No -inf in
        # MaxPool: onnxruntime's max of [-inf] is -FLT_MAX (the max of the elements: -inf)
        x = d.values([d.int(1, 2), d.int(1, 3)] + spatial, dtype, "normal",
                     ((INF, 0.0, -0.0) if op == "MaxPool" else NO_NAN if dtype != F32 else IEEE)
                     if dtype.kind == "f" and d.one_in(6) else ())
        terms = int(np.prod(kernel)) if op != "MaxPool" else 0
        case = Case(op, [("x", x)], attrs, n_outputs=n_outputs, opset=opset, sum_terms=terms)
        return d.nxrt_config(case)
    return build


for _op in ("MaxPool", "AveragePool", "LpPool"):
    spec(_op, cost=1.5)(_pool(_op))


def _global_pool(op):
    def build(d):
        # onnxruntime implements GlobalLpPool up to opset 21, and for float only; onnx.reference
        # not at all
        opset = d.pick([2, 18] if op == "GlobalLpPool" else [1, 22])
        dtype = d.dtype(schema_types(op, opset) if op != "GlobalLpPool" else [F32])
        # at least one spatial dimension: of an N x C input, onnx.reference's GlobalMaxPool
        # returns a scalar (the spec: N x C x 1 x ... x 1, here N x C) and onnxruntime
        # refuses it
        shape = [d.int(1, 2), d.int(1, 4)] + [d.int(1, 6) for _ in range(d.int(1, 3))]
        if op == "GlobalMaxPool" and dtype != F32:
            # onnx.reference's GlobalMaxPool reduces axes ndim-2 and ndim-1
            # (ops/op_global_max_pool.py): right for 4-D input only; onnxruntime runs float
            shape = shape[:2] + [d.int(1, 6), d.int(1, 6)]
        # no NaN in GlobalMaxPool: as for ReduceMax the spec does not say (onnxruntime skips
        # it, nxrt returns NaN)
        x = d.values(shape, dtype, "normal",
                     ((INF, 0.0, -0.0) if op == "GlobalMaxPool" else IEEE) if d.one_in(6) else ())
        attrs = {"p": d.pick([2, 1, 3])} if op == "GlobalLpPool" else {}
        terms = int(np.prod(shape[2:])) if op != "GlobalMaxPool" else 0
        return d.nxrt_config(Case(op, [("x", x)], attrs, opset=opset, sum_terms=terms))
    return build


for _op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
    spec(_op)(_global_pool(_op))


# ---- normalizations -------------------------------------------------------------------------

@spec("BatchNormalization")
def batch_norm(d):
    opset = d.pick([9, 14, 15])
    dtype = d.dtype(schema_types("BatchNormalization", opset))
    shape = [d.int(1, 3), d.int(1, 5)] + [d.int(1, 5) for _ in range(d.int(0, 2))]
    c = shape[1]
    x = d.values(shape, dtype, "normal", IEEE if d.one_in(6) else ())
    stat = dtype if opset < 15 else d.dtype(schema_types("BatchNormalization", opset, "T1"))
    scale_t = stat if opset < 15 else d.dtype([stat, dtype])
    ins = [("x", x), ("scale", d.values([c], scale_t)), ("bias", d.values([c], scale_t)),
           ("mean", d.values([c], stat)), ("var", d.values([c], stat, "positive"))]
    attrs = {"epsilon": d.pick([1e-5, 1e-3, 0.1])}
    per_channel = [1, c] + [1] * (len(shape) - 2)
    if opset >= 14 and d.one_in(4) and scale_t == stat == dtype:
        # (mixed types: onnx.reference returns running mean and variance in X's type, the
        # spec's type U is the input mean's)
        # training mode: the batch's statistics; outputs running mean and variance too
        attrs["training_mode"] = 1
        attrs["momentum"] = d.pick([0.9, 0.5])
        axes = (0,) + tuple(range(2, len(shape)))
        atol = _norm_atol(dtype, x, ins[1][1].reshape(per_channel),
                          ins[2][1].reshape(per_channel), axes, attrs["epsilon"])
        case = Case("BatchNormalization", ins, attrs, n_outputs=3, opset=opset, atol=atol)
    else:
        atol = _norm_atol(dtype, x, ins[1][1].reshape(per_channel),
                          ins[2][1].reshape(per_channel), None, attrs["epsilon"],
                          ins[3][1].reshape(per_channel), ins[4][1].reshape(per_channel))
        case = Case("BatchNormalization", ins, attrs, opset=opset, atol=atol)
    return d.nxrt_config(case, ["scale", "bias", "mean", "var"])


def _norm_atol(dtype, x, scale, bias, axes, eps, mean=None, var=None, stash=False):
    """Per element: the rounding a backward-stable normalization makes, (n + 8) u (|scale|
    (|x| + |mean|) / sqrt(var + eps) + |bias|), statistics over `axes` (n values) or given;
    scale and bias broadcast to x. x is itself known to u |x| only: where the spread is
    small next to the mean, y is ill-conditioned (a group holding one value 2.875, scale
    2.875, bias 0.0314: bias exactly by (x - mean) * scale / sqrt(var + eps) + bias,
    bias + 6.2e-05 by x * a + (bias - mean * a), the folded form onnxruntime's
    InstanceNormalization and BatchNormalization use too). With `stash` (LayerNormalization,
    GroupNormalization: stash_type, by default float, "the floating-point precision used in
    stage one of the computation") u is float's for double too: onnxruntime and
    onnx.reference normalize a double input in float, nxrt in double."""
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if mean is None:
            mean = x64.mean(axis=axes, keepdims=True)
            var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
            n = int(np.prod([x.shape[a] for a in axes]))
        else:
            n = 1
        inv = 1 / np.sqrt(var.astype(np.float64) + eps)
        terms = np.abs(scale.astype(np.float64)) * (np.abs(x64) + np.abs(mean)) * inv
        if bias is not None:
            terms = terms + np.abs(bias.astype(np.float64))
        u = max(UNIT_ROUNDOFF[dtype], UNIT_ROUNDOFF[F32]) if stash else UNIT_ROUNDOFF[dtype]
        bound = (n + 8) * u * np.broadcast_to(terms, x.shape)
    bound = np.where(np.isfinite(bound), bound, 0.0)
    return np.maximum(TOLERANCE[dtype][1], bound)


@spec("LayerNormalization")
def layer_norm(d):
    dtype = d.dtype(schema_types("LayerNormalization", 17))
    shape = d.shape(min_rank=1, max_side=6)
    axis = d.int(-len(shape), len(shape) - 1)
    norm = shape[axis:] if axis >= 0 else shape[axis:]
    # Mean and InvStdDev are float (stash_type 1, the default) for every input type:
    # onnx.reference returns them in the input's type, so other types (which onnxruntime
    # runs only in part) draw Y only
    n_outputs = d.pick([1, 1, 3]) if dtype == F32 else 1
    # (with them, no infinity: onnxruntime's Mean of [inf, 1.125] is NaN, not inf)
    x = d.values(shape, dtype, "normal",
                 (IEEE if n_outputs == 1 else (NAN, 0.0, -0.0)) if d.one_in(8) else ())
    if d.one_in(4) and x.size:
        # a mean of 10 or 30 standard deviations: onnxruntime's variance, E[x^2] - E[x]^2,
        # loses u mean^2 / var of it (a mean of 1000 deviations: 3e-3 off, where nxrt and
        # onnx.reference are 5e-4 from the float64 value), so not more
        spread = float(np.std(x[np.isfinite(x)].astype(np.float64))) if np.isfinite(
            x).any() else 0.0
        x = (x + dtype.type(d.pick([10.0, -30.0]) * max(spread, 1.0))).astype(dtype)
    scale_shape = norm if d.flag() else [1] * d.int(0, 1) + norm[1:]
    scale = d.values(norm if d.flag() else scale_shape, dtype)
    inputs = [("x", x), ("scale", scale)]
    bias = None
    if d.flag():
        bias = d.values(norm, dtype)
        inputs.append(("bias", bias))
    attrs = {"axis": axis, "epsilon": d.pick([1e-5, 1e-3, 0.5])}
    axes = tuple(range(axis % len(shape), len(shape)))
    atol = _norm_atol(dtype, x, scale, bias, axes, attrs["epsilon"], stash=True) \
        if x.size else None
    case = Case("LayerNormalization", inputs, attrs, n_outputs=n_outputs, opset=17, atol=atol)
    return d.nxrt_config(case, ["scale", "bias"])


@spec("InstanceNormalization")
def instance_norm(d):
    dtype = d.dtype(schema_types("InstanceNormalization", 22))
    shape = [d.int(1, 3), d.int(1, 4)] + [d.int(1, 6) for _ in range(d.int(1, 2))]
    c = shape[1]
    inputs = [("x", d.values(shape, dtype, "normal")), ("scale", d.values([c], dtype)),
              ("bias", d.values([c], dtype))]
    attrs = {"epsilon": d.pick([1e-5, 1e-3, 0.5])}
    per_channel = [1, c] + [1] * (len(shape) - 2)
    atol = _norm_atol(dtype, inputs[0][1], inputs[1][1].reshape(per_channel),
                      inputs[2][1].reshape(per_channel), tuple(range(2, len(shape))),
                      attrs["epsilon"])
    return d.nxrt_config(Case("InstanceNormalization", inputs, attrs, opset=22, atol=atol),
                         ["scale", "bias"])


@spec("GroupNormalization")
def group_norm(d):
    opset = 21
    dtype = d.dtype(schema_types("GroupNormalization", opset))
    groups = d.int(1, 3)
    c = groups * d.int(1, 3)
    shape = [d.int(1, 2), c] + [d.int(1, 5) for _ in range(d.int(0, 2))]
    inputs = [("x", d.values(shape, dtype)), ("scale", d.values([c], dtype)),
              ("bias", d.values([c], dtype))]
    attrs = {"num_groups": groups, "epsilon": d.pick([1e-5, 1e-3])}
    # statistics per group: x as [N, G, C/G * spatial]
    grouped = inputs[0][1].reshape(shape[0], groups, -1)
    per_channel = [1, c] + [1] * (len(shape) - 2)
    scale_b = np.broadcast_to(inputs[1][1].reshape(per_channel), shape).reshape(grouped.shape)
    bias_b = np.broadcast_to(inputs[2][1].reshape(per_channel), shape).reshape(grouped.shape)
    atol = _norm_atol(dtype, grouped, scale_b, bias_b, (2,), attrs["epsilon"],
                      stash=True).reshape(shape)
    return d.nxrt_config(Case("GroupNormalization", inputs, attrs, opset=opset, atol=atol),
                         ["scale", "bias"])


@spec("LpNormalization")
def lp_norm(d):
    dtype = d.dtype(schema_types("LpNormalization", 22))
    shape = d.shape(min_rank=1, max_side=6)
    attrs = {"axis": d.int(-len(shape), len(shape) - 1), "p": d.pick([2, 1])}
    return d.nxrt_config(Case("LpNormalization", [("x", d.values(shape, dtype))], attrs,
                              opset=22))


@spec("MeanVarianceNormalization")
def mvn(d):
    # float only: the function body's Epsilon and Exponent constants are float, so for
    # double and float16 both references fail (Add of double and float)
    dtype = F32
    shape = d.shape(min_rank=1, max_side=5, empty=False)
    if d.one_in(3):
        shape = [d.int(1, 3), d.int(1, 3), d.int(1, 4), d.int(1, 4)]
    axes = [0, 2, 3]
    if d.flag() or len(shape) != 4:
        axes = sorted(d(st.lists(st.integers(0, len(shape) - 1), min_size=1,
                                 max_size=len(shape), unique=True)))
    x = d.values(shape, dtype, "normal")
    # no group of equal values: the function body divides by Sqrt(Variance) + 1e-9, so
    # such a group is 0 (nxrt, onnx.reference), onnxruntime's kernel divides by 0 (NaN)
    if x.astype(np.float64).var(axis=tuple(axes)).min() < 1e-4:
        reject()
    attrs = {"axes": axes} if axes != [0, 2, 3] or d.flag() else {}
    # (onnx's shape inference fails on the function body when axes is left to its default)
    return d.nxrt_config(Case("MeanVarianceNormalization", [("x", x)], attrs, opset=13,
                              infer="axes" in attrs))


@spec("LRN")
def lrn(d):
    dtype = d.dtype(schema_types("LRN", 13))
    # 4-D: onnxruntime and onnx.reference run no other rank
    shape = [d.int(1, 2), d.int(1, 7), d.int(1, 4), d.int(1, 4)]
    attrs = {"size": d.pick([1, 3, 5, 2]), "alpha": d.pick([1e-4, 0.1, 1.0]),
             "beta": d.pick([0.75, 0.5, 1.0]), "bias": d.pick([1.0, 2.0])}
    if dtype != F32 or attrs["size"] % 2 == 0:
        # onnxruntime runs float and odd sizes only; onnx.reference's LRN (ops/op_lrn.py)
        # loops its channels over range(x.shape[0]), the batch: right only when N == C
        shape[0] = shape[1]
    return d.nxrt_config(Case("LRN", [("x", d.values(shape, dtype))], attrs, opset=13))


# ---- Resize ---------------------------------------------------------------------------------

def _nearest_ambiguous(shape, scales, out_sizes, ctm, nearest_mode):
    """Whether a nearest-mode source coordinate lies on a rounding boundary (an integer for
    floor and ceil, a half for the round modes) that the float arithmetic of an
    implementation may put on either side: the scale (or align_corners' ratio) is not a
    power of two, so its quotients are inexact. (Scales 0.6 is 0.60000002 in float:
    half_pixel's (1 + 0.5) / 0.60000002 - 0.5 = 1.9999999 floors to 1 in onnx.reference
    and nxrt, to 2 in onnxruntime; half_pixel_symmetric from 3 to 1: 1.0, floored to 1
    by onnx.reference and nxrt, to 0 by onnxruntime.)"""
    for length, scale, out in zip(shape, scales, out_sizes):
        scale = float(scale)
        if out == length and scale == 1:
            continue
        x = np.arange(out, dtype=np.float64)
        if ctm == "align_corners":
            ratio = (length - 1) / (out - 1) if out > 1 else 1.0
            xo = x * ratio
        else:
            ratio = scale
            xo = (x + 0.5) / scale - 0.5
            if ctm == "asymmetric":
                xo = x / scale
            elif ctm == "pytorch_half_pixel" and out == 1:
                xo = np.zeros(1)
            elif ctm == "half_pixel_symmetric":
                adjust = out / (length * scale)
                xo = xo + length / 2 * (1 - adjust)
        if ratio > 0 and math.log2(ratio).is_integer():
            continue  # exact in any order
        if nearest_mode in ("floor", "ceil"):
            distance = np.abs(xo - np.round(xo))
        else:
            distance = np.abs(xo - np.floor(xo) - 0.5)
        if (distance < 1e-4).any():
            return True
    return False


def _crop_ambiguous(shape, out_sizes, starts, ends):
    """Whether a tf_crop_and_resize coordinate is inside [0, length - 1] or not depending on
    how it is computed (roi 1.2 is 1.20000005 in float: 5 * 1.2 / 6 over 2 values is
    1.00000004, outside and extrapolated in onnx.reference and nxrt, inside in onnxruntime)."""
    for length, out, lo, hi in zip(shape, out_sizes, starts, ends):
        if out <= 1:
            continue
        x = np.arange(out)
        inside = []
        for t in (np.float64, np.float32):
            a, b, n, m = t(np.float32(lo)), t(np.float32(hi)), t(length - 1), t(out - 1)
            xs = x.astype(t)
            for xo in (a * n + xs * (b - a) * n / m, a * n + xs * ((b - a) * n / m)):
                inside.append((xo >= 0) & (xo <= n))
        if any((i != inside[0]).any() for i in inside[1:]):
            return True
    return False


@spec("Resize", cost=1.5)
def resize(d):
    opset = d.pick([11, 13, 18, 19])
    mode = d.pick(["nearest", "linear", "cubic"], "mode")
    # (bool: nearest only; onnxruntime and nxrt refuse to interpolate bools)
    dtype = d.dtype([t for t in schema_types("Resize", opset, "T1")
                     if mode == "nearest" or t != BOOL])
    shape = [d.int(1, 2), d.int(1, 3), d.int(1, 6), d.int(1, 6)]
    if mode == "nearest" and d.one_in(4):
        shape = shape[:d.pick([1, 2, 3])] if d.flag() else shape + [d.int(1, 3)]
    rank = len(shape)
    ctm = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]
    if mode != "nearest":
        ctm.append("tf_crop_and_resize")
    if opset >= 19:
        ctm.append("half_pixel_symmetric")
    attrs = {"mode": mode, "coordinate_transformation_mode": d.pick(ctm, "ctm")}
    if mode == "nearest":
        attrs["nearest_mode"] = d.pick(["round_prefer_floor", "round_prefer_ceil", "floor",
                                        "ceil"])
    if mode == "cubic":
        attrs["cubic_coeff_a"] = d.pick([-0.75, -0.5])
        attrs["exclude_outside"] = d.pick([0, 1])
    # only the spatial (last two) axes resized, as onnxruntime's linear and cubic kernels want
    resized = list(range(max(rank - 2, 0), rank)) if mode != "nearest" else list(range(rank))
    use_scales = d.flag()
    scales = np.ones(rank, np.float32)
    sizes = np.array(shape, np.int64)
    for a in resized:
        if a < 2 and rank >= 3 and mode != "nearest":
            continue
        if use_scales:
            scales[a] = d.pick([1.0, 2.0, 0.5, 1.5, 3.0, 0.75, 0.6])
        else:
            sizes[a] = d.int(1, 9)
    out_sizes = ([int(np.floor(s * f)) for s, f in zip(shape, scales)] if use_scales
                 else list(sizes))
    policy_axes = None
    if not use_scales and opset >= 18 and rank >= 2 and d.one_in(3) and mode != "nearest":
        # sizes of the last two axes ("axes" attribute), their aspect ratio kept
        policy = d.pick(["not_larger", "not_smaller"])
        attrs["keep_aspect_ratio_policy"] = policy
        policy_axes = attrs["axes"] = [rank - 2, rank - 1]
        ratios = [sizes[a] / shape[a] for a in policy_axes]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        # "round_int stands for computing the nearest integer value, rounding halfway
        # cases up"
        for a in policy_axes:
            out_sizes[a] = int(np.floor(scale * shape[a] + 0.5))
    if min(out_sizes) < 1:
        reject()
    if (attrs["coordinate_transformation_mode"] == "pytorch_half_pixel" and dtype != F32
            and any(out_sizes[a] == 1 and shape[a] != 1 for a in resized)):
        # "x_original = length_resized > 1 ? (x_resized + 0.5) / scale - 0.5 : 0":
        # onnx.reference takes -0.5 for 0 (ops/op_resize.py); onnxruntime runs float
        reject()
    # NaN and infinities in nearest mode of float only: a neighbour of weight 0 makes linear
    # and cubic results NaN in onnxruntime (0 * nan), not in onnx.reference and nxrt
    # (skipped); onnx.reference's nearest mode weighs its neighbours too (0 * nan again)
    x = d.values(shape, dtype, "normal", (IEEE if mode == "nearest" and dtype == F32 else ZEROS)
                 if dtype.kind == "f" and d.one_in(10) else ())
    roi = ("", None)
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        starts = [0.0] * rank
        ends = [1.0] * rank
        for a in range(max(rank - 2, 0), rank):
            starts[a] = d.pick([0.0, 0.1, 0.25])
            ends[a] = d.pick([1.0, 0.8, 1.2])
        if any(out_sizes[a] == shape[a] and (starts[a], ends[a]) != (0.0, 1.0)
               for a in range(rank)):
            # onnxruntime leaves an axis whose size does not change as it is, its roi
            # ignored (a crop to [0, 0.8] of 3 values, resized to 3: [x0, x1, x2]; the
            # spec's formula samples 0, 0.8, 1.6)
            reject()
        if _crop_ambiguous(shape, out_sizes, starts, ends):
            reject()
        if policy_axes is not None:
            starts, ends = [starts[a] for a in policy_axes], [ends[a] for a in policy_axes]
        roi = ("roi", np.array(starts + ends, np.float32))
        # (-1 of uint8: a float outside the type's range, whose conversion is undefined)
        attrs["extrapolation_value"] = d.pick([0.0, -1.0] if dtype.kind != "u" else [0.0, 3.0])
    elif opset < 13:
        roi = ("roi", np.zeros(0, np.float32))
    if use_scales:
        inputs = [("x", x), roi, ("scales", scales)]
    else:
        inputs = [("x", x), roi, ("", None) if opset >= 13 else ("scales", np.zeros(0, F32)),
                  ("sizes", sizes if policy_axes is None else sizes[policy_axes])]
    if mode == "nearest":
        used = scales if use_scales else [o / s_ for o, s_ in zip(out_sizes, shape)]
        if _nearest_ambiguous(shape, used, out_sizes, attrs["coordinate_transformation_mode"],
                              attrs["nearest_mode"]):
            reject()
    if mode != "nearest" and dtype.kind == "f":
        # each value is a weighted sum of up to 16 inputs, weights (sum of |w| at most 1.5)
        # computed in the input's precision: its rounding is within 32 u max|x| (a sum that
        # cancels to 0 is -5.4e-07 in onnxruntime, 3.4e-08 in nxrt, for |x| <= 2). u is
        # float's for double too: onnx.reference computes the weights in float
        finite = np.abs(x[np.isfinite(x)].astype(np.float64))
        if finite.size and dtype != F16:
            atol = max(TOLERANCE[dtype][1], 32 * UNIT_ROUNDOFF[F32] * float(finite.max()))
        else:
            atol = None
    else:
        atol = None
    # linear and cubic of integer types: the spec does not say how an interpolated value is
    # rounded (onnxruntime -15.5 -> -15, onnx.reference and nxrt -> -16): 1 apart allowed
    int_atol = 1 if mode != "nearest" and dtype.kind in "iu" else 0
    # onnx.reference (ops/op_resize.py) divides align_corners' and tf_crop_and_resize's
    # coordinates by output_width - 1 with output_width = scale * length, not by the
    # resized length - 1 (the spec's length_resized; onnxruntime, nxrt)
    lengths = ([float(s_) * n for s_, n in zip(scales, shape)] if use_scales
               else [float(o) for o in out_sizes])
    for a in policy_axes or ():
        lengths[a] = scale * shape[a]
    fractional = any(abs(n - o) > 1e-4 for n, o in zip(lengths, out_sizes))
    wrong = ("it divides by scale * length - 1, not by the resized length - 1"
             if fractional and attrs["coordinate_transformation_mode"] in
             ("align_corners", "tf_crop_and_resize") else "")
    case = Case("Resize", inputs, attrs, opset=opset, int_atol=int_atol, atol=atol,
                reference_wrong=wrong, tag=f"{mode} "
                f"{attrs['coordinate_transformation_mode']}")
    return d.nxrt_config(case, ["roi", "scales", "sizes"])


# ---- running and comparing ------------------------------------------------------------------

# The ONNX backend tests' tolerances (onnx/backend/test/case/node: rtol 1e-3, atol 1e-7),
# by output dtype. float16 is looser: its spacing at 1.0 is 2**-10 = 9.8e-4, so rtol 1e-3
# is one unit in the last place, less than the rounding that an implementation which keeps
# intermediate values in float16 (onnx.reference's numpy code does) accumulates against one
# that computes in float32 and rounds once (onnxruntime, nxrt).
TOLERANCE = {F32: (1e-3, 1e-7), F64: (1e-3, 1e-7), F16: (4e-3, 1e-3)}
UNIT_ROUNDOFF = {F32: 2.0**-24, F64: 2.0**-53, F16: 2.0**-11}


def _ort():
    import onnxruntime as ort
    return ort


def run_onnxruntime(model_bytes, feeds):
    ort = _ort()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, feeds)]


def run_reference(model, feeds):
    from onnx.reference import ReferenceEvaluator
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


def run_nxrt(model_bytes, feeds, threads=1, level=99):
    import nxrt
    options = nxrt.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = level
    return [np.asarray(o) for o in nxrt.InferenceSession(model_bytes, options).run(None, feeds)]


def _first_line(e):
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


class Rejected(Exception):
    """The draw is not a valid test (see the module docstring)."""


class Mismatch(AssertionError):
    pass


def expected_outputs(model, model_bytes, feeds):
    """(source, outputs) of the reference, or raises Rejected."""
    try:
        return "onnxruntime", run_onnxruntime(model_bytes, feeds), None
    except Exception as e:  # noqa: BLE001 (any refusal: the fallback decides)
        ort_error = e
    return "onnx.reference", None, ort_error


def sum_bound(case, model, source, feeds, outputs, dtype):
    """For sums of `case.sum_terms` products: twice the worst-case rounding of a float
    sum in any order (Higham, Accuracy and Stability of Numerical Algorithms, (3.4)-(3.5):
    |fl(sum) - sum| <= gamma_n * sum |terms|, gamma_n = n u / (1 - n u)), with sum |terms|
    computed by the same reference on |inputs| (and |alpha|, |beta|)."""
    u = UNIT_ROUNDOFF[dtype]
    n = case.sum_terms + 2
    gamma = n * u / (1 - n * u)
    abs_inputs = [(name, np.asarray(np.abs(a)) if a is not None and a.dtype.kind == "f" else a)
                  for name, a in case.inputs]
    abs_model = make_model(case.op, abs_inputs, case.bound_attrs or case.attrs,
                           case.n_outputs, case.opset, case.domain, case.constant)
    abs_feeds = {n_: a for n_, a in abs_inputs if n_ and n_ not in case.constant}
    runs = [lambda: run_onnxruntime(abs_model.SerializeToString(), abs_feeds),
            lambda: run_reference(abs_model, abs_feeds)]
    for run in runs if source == "onnxruntime" else runs[::-1]:
        try:
            mags = run()
            break
        except Exception:  # noqa: BLE001 (the other one, else no bound)
            continue
    else:
        return None
    with np.errstate(all="ignore"):
        return [2 * gamma * np.abs(m.astype(np.float64)) for m in mags]


def compare(got, want, rtol, atol, exact=False, signed_zeros=False, name="out", int_atol=0):
    """A list of problems (empty when `got` matches `want`)."""
    if got.dtype != want.dtype:
        return [f"{name}: dtype {got.dtype}, expected {want.dtype}"]
    if got.shape != want.shape:
        return [f"{name}: shape {list(got.shape)}, expected {list(want.shape)}"]
    if got.size == 0:
        return []
    if want.dtype.kind in "iu" and int_atol:
        bad = np.abs(got.astype(np.float64) - want.astype(np.float64)) > int_atol
    elif want.dtype.kind != "f":
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        gnan, wnan = np.isnan(g), np.isnan(w)
        with np.errstate(all="ignore"):
            if exact:
                close = (g == w) | (gnan & wnan)
            else:
                finite = np.isfinite(g) & np.isfinite(w)
                diff = np.where(finite, np.abs(g - w), 0.0)
                close = np.where(finite, diff <= atol + rtol * np.abs(w), g == w)
                close |= gnan & wnan
        close &= gnan == wnan
        if exact or signed_zeros:
            zeros = (g == 0) & (w == 0)
            close &= ~zeros | (np.signbit(g) == np.signbit(w))
        bad = ~close
    if not bad.any():
        return []
    i = tuple(int(v) for v in np.unravel_index(int(np.argmax(bad)), bad.shape))
    return [f"{name}: {int(bad.sum())} of {bad.size} values differ, first at {list(i)}: "
            f"got {got[i]!r}, expected {want[i]!r}"]


def tolerance(case, dtype, shape=None):
    """(rtol, atol) of an output of `dtype` and `shape`: the case's own where it has one
    (an array of atol applies to the outputs of its shape)."""
    rtol, atol = TOLERANCE.get(dtype, (0.0, 0.0))
    if case.rtol is not None:
        rtol = case.rtol
    if case.atol is not None and dtype.kind == "f" and (
            not isinstance(case.atol, np.ndarray) or case.atol.shape == shape):
        atol = case.atol
    return rtol, atol


def describe(case, model=None, feeds=None, limit=60):
    model = model if model is not None else case.model()
    feeds = feeds if feeds is not None else case.feeds()
    lines = [f"op {case.op} opset {case.opset} attrs {case.attrs}"
             + (f" ({case.tag})" if case.tag else ""),
             f"nxrt: {case.threads} thread(s), level {case.level}; constant inputs "
             f"{list(case.constant)}", onnx.printer.to_text(model.graph)]
    for name, array in case.inputs:
        if name:
            text = np.array2string(array, threshold=limit, precision=9,
                                   floatmode="maxprec_equal")
            lines.append(f"{name}: {array.dtype}{list(array.shape)} = {text}")
    return "\n".join(lines)


def validate(model, infer=True):
    """Raises Rejected unless onnx's strict shape inference and checker accept `model`
    (its outputs typed by the inference: the runtimes get them untyped)."""
    try:
        if not infer:
            onnx.checker.check_model(_typed_outputs(model))
            return
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        # (outputs of function ops may stay untyped: the checker wants types)
        typed = [o for o in inferred.graph.output if o.type.tensor_type.HasField("shape")]
        del inferred.graph.output[:]
        inferred.graph.output.extend(typed)
        onnx.checker.check_model(inferred)
    except Exception as e:  # noqa: BLE001
        raise Rejected(f"onnx checker: {_first_line(e)}") from None


def _typed_outputs(model):
    """A copy of `model` without its (untyped) outputs, for the checker."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.output[:]
    return copy


def check(case):
    """Runs nxrt and the reference on `case`. Returns the reference's name; raises
    Rejected for an invalid draw and Mismatch for a disagreement."""
    model = case.model()
    validate(model, case.infer)
    model_bytes = model.SerializeToString()
    feeds = case.feeds()
    source, want, ort_error = expected_outputs(model, model_bytes, feeds)
    try:
        got = run_nxrt(model_bytes, feeds, case.threads, case.level)
        nxrt_error = None
    except Exception as e:  # noqa: BLE001
        got, nxrt_error = None, e
    if want is None:
        if nxrt_error is not None:
            raise Rejected(f"onnxruntime and nxrt both reject it: {_first_line(ort_error)}")
        if case.reference_wrong:
            raise Rejected(f"onnxruntime rejects it ({_first_line(ort_error)}) and "
                           f"onnx.reference is wrong here ({case.reference_wrong})")
        try:
            want = run_reference(model, feeds)
        except Exception as e:  # noqa: BLE001
            raise Rejected(f"onnxruntime rejects it ({_first_line(ort_error)}) and "
                           f"onnx.reference errors ({_first_line(e)})") from None
    if nxrt_error is not None:
        raise Mismatch(f"nxrt raised where {source} runs the case: "
                       f"{_first_line(nxrt_error)}\n{describe(case, model, feeds)}")
    problems = []
    if len(got) != len(want):
        problems.append(f"{len(got)} outputs, expected {len(want)}")
    bounds = None
    for i, (g, w) in enumerate(zip(got, want)):
        rtol, atol = tolerance(case, w.dtype, w.shape)
        if case.sum_terms and w.dtype.kind == "f" and not case.exact:
            if bounds is None:
                bounds = sum_bound(case, model, source, feeds, want, w.dtype) or []
            if i < len(bounds) and bounds[i].shape == w.shape:
                atol = np.maximum(atol, bounds[i])
            winograd = case.winograd
            if winograd and w.size:
                from winograd_tolerance import winograd_atol
                c, m, kernel, dil, group, strides = winograd
                if len(kernel) == 2:
                    finite = w[np.isfinite(w)]
                    scale = float(np.abs(finite).max()) if finite.size else 0.0
                    atol = np.maximum(atol, winograd_atol(0.0, c, m, kernel, w, dil, group,
                                                          strides, scale=scale))
        problems += compare(g, w, rtol, atol, case.exact, case.signed_zeros, f"output {i}",
                            case.int_atol)
    if problems:
        raise Mismatch(f"nxrt differs from {source}:\n  " + "\n  ".join(problems) + "\n"
                       + describe(case, model, feeds) + "\n"
                       + _triage(case, model, feeds, source, got, want))
    return source


def _triage(case, model, feeds, source, got, want):
    """Which runtime the other reference sides with (for whoever reads the failure)."""
    lines = []
    for i, (g, w) in enumerate(zip(got, want)):
        if g.size <= 40:
            lines.append(f"output {i}: nxrt {g.dtype}{list(g.shape)} = {g.tolist()}")
            lines.append(f"output {i}: {source} {w.dtype}{list(w.shape)} = {w.tolist()}")
    if source == "onnxruntime":
        try:
            other = run_reference(model, feeds)
        except Exception as e:  # noqa: BLE001
            lines.append(f"onnx.reference: {_first_line(e)}")
        else:
            for i, (g, w, o) in enumerate(zip(got, want, other)):
                o = np.asarray(o)
                rtol, atol = tolerance(case, w.dtype, w.shape)
                sides = []
                if not compare(g, o.astype(g.dtype) if o.shape == g.shape else o, rtol, atol,
                               case.exact, case.signed_zeros):
                    sides.append("nxrt")
                if not compare(w, o.astype(w.dtype) if o.shape == w.shape else o, rtol, atol,
                               case.exact, case.signed_zeros):
                    sides.append("onnxruntime")
                lines.append(f"output {i}: onnx.reference agrees with "
                             f"{' and '.join(sides) or 'neither'}")
    return "\n".join(lines)


# ---- regression cases -----------------------------------------------------------------------

REGRESSION_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "property_regressions")


def save_regression(spec_name, case, message, directory=REGRESSION_DIR):
    """Writes `case` as <spec>-<hash>.onnx/.npz/.json into `directory`; returns the base
    path. The .json says how nxrt ran it and how to compare; "xfail" (added by hand) makes
    the replay an expected failure with that reason."""
    os.makedirs(directory, exist_ok=True)
    model_bytes = case.model().SerializeToString()
    feeds = case.feeds()
    digest = hashlib.sha1(model_bytes)
    for name in sorted(feeds):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(feeds[name]).tobytes())
    digest.update(f"{case.threads} {case.level}".encode())
    base = os.path.join(directory, f"{spec_name.replace('/', '_')}-{digest.hexdigest()[:10]}")
    with open(base + ".onnx", "wb") as f:
        f.write(model_bytes)
    arrays = dict(feeds)
    if isinstance(case.atol, np.ndarray):
        arrays["__atol__"] = case.atol  # (input names are never that)
    np.savez(base + ".npz", **arrays)
    meta = {"spec": spec_name, "op": case.op, "opset": case.opset, "threads": case.threads,
            "level": case.level, "exact": case.exact, "signed_zeros": case.signed_zeros,
            "rtol": case.rtol,
            "atol": "__atol__" if isinstance(case.atol, np.ndarray) else case.atol, "int_atol": case.int_atol,
            "infer": case.infer, "sum_terms": case.sum_terms,
            "bound_attrs": case.bound_attrs, "winograd": case.winograd, "failure": message[:4000], "xfail": None}
    with open(base + ".json", "w") as f:
        json.dump(meta, f, indent=1, default=_json_default)
        f.write("\n")
    return base


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value))


def load_regression(base):
    """The Case saved at `base` (without extension) and its .json description."""
    with open(base + ".json") as f:
        meta = json.load(f)
    model = onnx.load(base + ".onnx")
    with np.load(base + ".npz") as z:
        feeds = {k: z[k] for k in z.files}
    atol = feeds.pop("__atol__") if meta["atol"] == "__atol__" else meta["atol"]
    node = model.graph.node[0]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    inputs = []
    for name in node.input:
        if not name:
            inputs.append(("", None))
        else:
            inputs.append((name, feeds[name] if name in feeds else inits[name]))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    for k, v in attrs.items():
        if isinstance(v, bytes):
            attrs[k] = v.decode()
    opset = next(o.version for o in model.opset_import if o.domain == node.domain)
    case = Case(node.op_type, inputs, attrs, n_outputs=len(node.output), opset=opset,
                domain=node.domain, constant=tuple(inits), exact=meta["exact"],
                signed_zeros=meta["signed_zeros"], rtol=meta["rtol"], atol=atol,
                sum_terms=meta["sum_terms"], bound_attrs=meta["bound_attrs"],
                winograd=tuple(meta["winograd"]) if meta.get("winograd") else None,
                int_atol=meta.get("int_atol", 0), infer=meta.get("infer", True),
                threads=meta["threads"], level=meta["level"])
    return case, meta


def regression_cases(directory=REGRESSION_DIR):
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, f[:-5]) for f in os.listdir(directory)
                  if f.endswith(".json"))
