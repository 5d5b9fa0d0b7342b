"""Seeded random ops against numpy's legacy RandomState, the generator onnx's reference
implementation draws from (kernels/numpy_random.h reproduces its stream bit for bit).

Each expectation is written here with numpy the way onnx.reference computes it, so a
drift in nxrt's Mersenne Twister, its 53-bit doubles, the polar Box-Muller pairs or the
binomial inversion shows up as a mismatch.
"""

import numpy as np
import pytest
from onnx import TensorProto, helper

import nxrt

NP_OF = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
         TensorProto.FLOAT16: np.float16}


def _run(node, feeds=None, inputs=()):
    graph = helper.make_graph([node], "random", list(inputs),
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    return nxrt.InferenceSession(model.SerializeToString()).run(None, feeds or {})[0]


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
@pytest.mark.parametrize("seed", [0.0, 7.0, 123456.0])
def test_random_uniform_is_numpys_rand(dtype, seed):
    got = _run(helper.make_node("RandomUniform", [], ["y"], shape=[3, 17], low=-2.0, high=5.0,
                                seed=seed, dtype=dtype))
    np_type = NP_OF[dtype]
    want = np.random.RandomState(int(seed)).rand(3, 17).astype(np_type)
    want *= np_type(5.0 - -2.0)
    want += np_type(-2.0)
    assert got.dtype == np_type
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE])
@pytest.mark.parametrize("seed", [0.0, 11.0])
def test_random_normal_is_numpys_randn(dtype, seed):
    # An odd count: the last value comes from a pair whose second half is never used.
    got = _run(helper.make_node("RandomNormal", [], ["y"], shape=[5, 7], mean=1.0, scale=3.0,
                                seed=seed, dtype=dtype))
    np_type = NP_OF[dtype]
    want = np.random.RandomState(int(seed)).randn(5, 7).astype(np_type)
    want *= np_type(3.0)
    want += np_type(1.0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,draw", [("RandomUniformLike", "rand"), ("RandomNormalLike", "randn")])
def test_like_forms_take_the_input_shape_and_type(op, draw):
    x = np.zeros((2, 3, 4), np.float64)
    got = _run(helper.make_node(op, ["x"], ["y"], seed=5.0), {"x": x},
               [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3, 4])])
    want = getattr(np.random.RandomState(5), draw)(2, 3, 4)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("out_type,np_type", [(None, np.float32), (TensorProto.BOOL, np.bool_),
                                              (TensorProto.INT32, np.int32)])
def test_bernoulli_is_numpys_binomial(out_type, np_type):
    # Probabilities on both sides of 0.5 (numpy flips those above) and the ends 0 and 1.
    p = np.random.default_rng(3).random((6, 9)).astype(np.float32)
    p[0, :3] = [0.0, 1.0, 0.5]
    attrs = {"seed": 9.0} if out_type is None else {"seed": 9.0, "dtype": out_type}
    got = _run(helper.make_node("Bernoulli", ["p"], ["y"], **attrs), {"p": p},
               [helper.make_tensor_value_info("p", TensorProto.FLOAT, [6, 9])])
    want = np.random.RandomState(9).binomial(1, p=p).astype(np_type)
    assert got.dtype == np_type
    np.testing.assert_array_equal(got, want)


def test_multinomial_inverts_numpys_uniform_draws():
    # Per row: softmax weights summed in class order, each sample the class whose running
    # sum first passes random_sample() * total; a -inf logit is never drawn.
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [5.0, 1.0, 1e-3, 2.0], [1.0, 1.0, 1.0, 1.0]],
                             np.float32))
    logits[1, 2] = -np.inf
    got = _run(helper.make_node("Multinomial", ["x"], ["y"], sample_size=50, seed=4.0),
               {"x": logits}, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])])
    state = np.random.RandomState(4)
    want = np.empty((3, 50), np.int32)
    for b, row in enumerate(logits.astype(np.float64)):
        running = np.cumsum(np.exp(row - row.max()))
        for s in range(50):
            want[b, s] = np.searchsorted(running, state.random_sample() * running[-1], "right")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    assert not (got[1] == 2).any()


def test_unseeded_ops_follow_set_seed():
    node = helper.make_node("RandomNormal", [], ["y"], shape=[4])
    nxrt.set_seed(2024)
    first = _run(node)
    nxrt.set_seed(2024)
    np.testing.assert_array_equal(_run(node), first)
    assert not np.array_equal(_run(node), first)  # the next draw moves on
