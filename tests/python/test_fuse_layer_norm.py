"""LayerNorm and RMSNorm written out as elementwise ops and means become one
normalization node (the fuse_layer_norm pass), with onnxruntime's results; patterns the
rewrite would change are left alone."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from profiled_run import profiled_run

RNG = np.random.default_rng(11)


def _const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _mean(inp, out, axes, opset, extra_inits, keepdims=1):
    """ReduceMean over `axes`: an attribute before opset 18, a constant input after."""
    if opset < 18:
        return helper.make_node("ReduceMean", [inp], [out], axes=axes, keepdims=keepdims)
    extra_inits.append(_const(out + "_axes", axes, np.int64))
    return helper.make_node("ReduceMean", [inp, out + "_axes"], [out], keepdims=keepdims)


def _divide(nodes, inits, numerator, root, form):
    """numerator / root in one of the written-out forms; returns the quotient's name."""
    if form == "div":
        nodes.append(helper.make_node("Div", [numerator, root], ["n"]))
    elif form == "reciprocal":
        nodes += [helper.make_node("Reciprocal", [root], ["inv"]),
                  helper.make_node("Mul", [numerator, "inv"], ["n"])]
    else:  # one_over
        inits.append(_const("one", 1.0))
        nodes += [helper.make_node("Div", ["one", root], ["inv"]),
                  helper.make_node("Mul", ["inv", numerator], ["n"])]
    return "n"


def _norm_model(kind="layer", square="pow", form="div", axes=(-1,), shape=(2, 5, 48),
                opset=13, beta=True, gamma_shape=None, two_subs=False, extra_output=None):
    nodes, inits = [], [_const("eps", 1e-5)]
    k = len(axes)
    norm_shape = tuple(shape[-k:]) if gamma_shape is None else gamma_shape
    inits.append(_const("gamma", RNG.uniform(0.5, 1.5, norm_shape)))
    if kind == "layer":
        nodes += [_mean("x", "m", list(axes), opset, inits),
                  helper.make_node("Sub", ["x", "m"], ["d"])]
        centred = "d"
    else:
        centred = "x"
    if square == "pow":
        inits.append(_const("two", 2.0))
        nodes.append(helper.make_node("Pow", [centred, "two"], ["sq"]))
    else:
        nodes.append(helper.make_node("Mul", [centred, centred], ["sq"]))
    nodes += [_mean("sq", "v", list(axes), opset, inits),
              helper.make_node("Add", ["v", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["sd"])]
    numerator = centred
    if two_subs:
        nodes.append(helper.make_node("Sub", ["x", "m"], ["d2"]))
        numerator = "d2"
    n = _divide(nodes, inits, numerator, "sd", form)
    nodes.append(helper.make_node("Mul", [n, "gamma"], ["g" if beta else "y"]))
    if beta:
        inits.append(_const("beta", RNG.standard_normal(norm_shape)))
        nodes.append(helper.make_node("Add", ["beta", "g"], ["y"]))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info(extra_output, TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "norm", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def _check(model, shape, want_ops):
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    ops, got = profiled_run(model, {"x": x})
    assert ops == want_ops
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
    _, unfused = profiled_run(model, {"x": x}, disabled=["fuse_layer_norm"])
    np.testing.assert_allclose(got[0], unfused[0], rtol=1e-4, atol=1e-5)
    return ops


@pytest.mark.parametrize("square", ["pow", "mul"])
@pytest.mark.parametrize("form", ["div", "reciprocal", "one_over"])
@pytest.mark.parametrize("opset", [13, 18])
def test_written_out_layer_norm_becomes_one_node(square, form, opset):
    model = _norm_model("layer", square, form, opset=opset)
    _check(model, (2, 5, 48), ["LayerNormalization"])


@pytest.mark.parametrize("form", ["div", "reciprocal"])
@pytest.mark.parametrize("opset,op", [(17, "SimplifiedLayerNormalization"),
                                      (23, "RMSNormalization")])
def test_written_out_rms_norm_becomes_one_node(form, opset, op):
    # Llama-style: x * Reciprocal(Sqrt(mean(x * x) + eps)) * gamma, no shift.
    model = _norm_model("rms", "mul", form, opset=opset, beta=False)
    _check(model, (2, 5, 48), [op])


@pytest.mark.parametrize("axes,opset", [((-2, -1), 13), ((1, 2), 13), ((2,), 18)])
def test_trailing_axes_by_any_spelling_fuse(axes, opset):
    # Positive axes count only when the input's rank is known (here from the graph input).
    model = _norm_model("layer", "pow", "div", axes=axes, opset=opset)
    _check(model, (2, 5, 48), ["LayerNormalization"])


def test_layer_norm_without_shift_and_with_a_second_sub():
    model = _norm_model("layer", "pow", "div", beta=False, two_subs=True)
    _check(model, (2, 5, 48), ["LayerNormalization"])


WRITTEN_OUT = ["Add", "Add", "Div", "Mul", "Pow", "ReduceMean", "ReduceMean", "Sqrt", "Sub"]


@pytest.mark.parametrize("case", ["inner_axis", "variance_is_an_output", "gamma_wider",
                                  "gamma_of_another_size", "no_keepdims"])
def test_patterns_the_rewrite_would_change_stay_as_they_are(case):
    shape = (2, 5, 48)
    if case == "inner_axis":  # a mean over axis 1 is not LayerNormalization's
        model = _norm_model("layer", "pow", "div", axes=(1,), gamma_shape=(5, 1))
    elif case == "variance_is_an_output":
        model = _norm_model("layer", "pow", "div", extra_output="v")
    elif case == "gamma_wider":  # gamma [5, 48] over a norm of the last axis
        model = _norm_model("layer", "pow", "div", gamma_shape=(5, 48))
    elif case == "gamma_of_another_size":  # broadcasting a size-1 axis up to 48
        model = _norm_model("layer", "pow", "div", shape=(2, 5, 1), gamma_shape=(48,))
        shape = (2, 5, 1)
    else:  # [48] variances then divide [48, 48] along the other axis
        shape = (48, 48)
        model = _no_keepdims(_norm_model("layer", "pow", "div", shape=shape))
    _check(model, shape, WRITTEN_OUT)


def _no_keepdims(model_bytes):
    """The variance mean without keepdims: its result no longer broadcasts per row."""
    import onnx
    model = onnx.load_from_string(model_bytes)
    for node in model.graph.node:
        if node.output[0] == "v":
            for a in node.attribute:
                if a.name == "keepdims":
                    a.i = 0
    return model.SerializeToString()
