"""Every supported dtype in and out, odd memory layouts, and the errors for unsupported ones."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import nxrt

ml_dtypes = pytest.importorskip("ml_dtypes")

CASES = [
    (np.bool_, TensorProto.BOOL), (np.int8, TensorProto.INT8), (np.int16, TensorProto.INT16),
    (np.int32, TensorProto.INT32), (np.int64, TensorProto.INT64), (np.uint8, TensorProto.UINT8),
    (np.uint16, TensorProto.UINT16), (np.uint32, TensorProto.UINT32),
    (np.uint64, TensorProto.UINT64), (np.float16, TensorProto.FLOAT16),
    (np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
    (ml_dtypes.bfloat16, TensorProto.BFLOAT16), (ml_dtypes.float8_e4m3fn, TensorProto.FLOAT8E4M3FN),
    (ml_dtypes.float8_e5m2, TensorProto.FLOAT8E5M2),
    (ml_dtypes.int4, TensorProto.INT4), (ml_dtypes.uint4, TensorProto.UINT4),
]
if hasattr(TensorProto, "INT2") and hasattr(ml_dtypes, "int2"):
    CASES += [(ml_dtypes.int2, TensorProto.INT2), (ml_dtypes.uint2, TensorProto.UINT2)]
if hasattr(ml_dtypes, "float4_e2m1fn"):
    CASES.append((ml_dtypes.float4_e2m1fn, TensorProto.FLOAT4E2M1))


def _identity_model(elem_type, shape=None):
    x = helper.make_tensor_value_info("x", elem_type, shape)
    y = helper.make_tensor_value_info("y", elem_type, shape)
    # Identity takes float4e2m1 from opset 23 and int2/uint2 from opset 25 (ir_version 11).
    late = {getattr(TensorProto, "INT2", -1): 25, getattr(TensorProto, "UINT2", -1): 25,
            getattr(TensorProto, "FLOAT4E2M1", -1): 23}
    opset = late.get(elem_type, 21)
    model = helper.make_model(helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id", [x], [y]),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 11 if opset >= 25 else 10
    return model.SerializeToString()


@pytest.mark.parametrize("np_type,onnx_type", CASES, ids=[str(np.dtype(c[0])) for c in CASES])
def test_round_trip(np_type, onnx_type):
    sess = nxrt.InferenceSession(_identity_model(onnx_type))
    assert sess.get_inputs()[0].type.startswith("tensor(")
    x = (np.arange(24).reshape(2, 3, 4) % 2).astype(np_type)  # 0/1 fit every narrow type
    y = sess.run(None, {"x": x})[0]
    assert y.dtype == np.dtype(np_type)
    assert y.shape == x.shape
    np.testing.assert_array_equal(y.astype(np.float64), x.astype(np.float64))


def test_strings_round_trip():
    sess = nxrt.InferenceSession(_identity_model(TensorProto.STRING))
    x = np.array([["a", "héllo"], ["", "z" * 100]], dtype=object)
    y = sess.run(None, {"x": x})[0]
    assert y.dtype == object and y.shape == (2, 2)
    assert y.tolist() == x.tolist()
    y2 = sess.run(None, {"x": np.array(["u", "v"])})[0]  # numpy unicode arrays work too
    assert y2.tolist() == ["u", "v"]


def test_non_contiguous_and_byte_swapped():
    sess = nxrt.InferenceSession(_identity_model(TensorProto.FLOAT))
    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    view = base[::2, 1::3]
    np.testing.assert_array_equal(sess.run(None, {"x": view})[0], view)
    swapped = base.astype(">f4")
    out = sess.run(None, {"x": swapped})[0]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, base)
    np.testing.assert_array_equal(sess.run(None, {"x": base.T})[0], base.T)


def test_scalars_lists_and_zero_sized():
    sess = nxrt.InferenceSession(_identity_model(TensorProto.FLOAT))
    assert sess.run(None, {"x": np.float32(2.5)})[0].shape == ()
    np.testing.assert_array_equal(sess.run(None, {"x": np.zeros((0, 3), np.float32)})[0], np.zeros((0, 3)))
    sess64 = nxrt.InferenceSession(_identity_model(TensorProto.INT64))
    np.testing.assert_array_equal(sess64.run(None, {"x": [1, 2, 3]})[0], [1, 2, 3])


def test_unsupported_and_mismatched_dtypes():
    sess = nxrt.InferenceSession(_identity_model(TensorProto.FLOAT))
    with pytest.raises(TypeError, match="complex128"):
        sess.run(None, {"x": np.ones(2, np.complex128)})
    with pytest.raises(nxrt.InvalidArgument, match="tensor\\(int32\\).*tensor\\(float\\)"):
        sess.run(None, {"x": np.ones(2, np.int32)})


def test_outputs_own_their_memory():
    sess = nxrt.InferenceSession(_identity_model(TensorProto.FLOAT))
    x = np.arange(6, dtype=np.float32)
    y = sess.run(None, {"x": x})[0]
    x[:] = -1
    np.testing.assert_array_equal(y, np.arange(6))
    y2 = sess.run(None, {"x": x})[0]
    assert y.ctypes.data != y2.ctypes.data
    y[:] = 7  # writable, and independent of later runs
    np.testing.assert_array_equal(y2, -1)


def test_packed_int4_initializer():
    # ONNX packs two int4 values per byte; nxrt unpacks them at load.
    values = np.array([-8, -1, 0, 3, 7], dtype=np.int8)
    w = helper.make_tensor("w", TensorProto.INT4, [5], values.tolist())
    y = helper.make_tensor_value_info("y", TensorProto.INT4, [5])
    model = helper.make_model(helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    for level in (nxrt.GraphOptimizationLevel.ORT_DISABLE_ALL, nxrt.GraphOptimizationLevel.ORT_ENABLE_ALL):
        so = nxrt.SessionOptions()
        so.graph_optimization_level = level
        out = nxrt.InferenceSession(model.SerializeToString(), so).run(None, {})[0]
        np.testing.assert_array_equal(out.astype(np.int8), values)


@pytest.mark.parametrize("op,ref", [("Sin", np.sin), ("Cos", np.cos)])
def test_sin_cos_float32_vector_forms_match_double(op, ref):
    # The vector forms (|x| <= 8192) and the blocks that fall back to double (larger
    # phases, inf, NaN) in one tensor.
    rng = np.random.default_rng(11)
    parts = [rng.uniform(-10, 10, 3000), rng.uniform(-8192, 8192, 3000),
             np.array([0.0, -0.0, np.pi / 4, np.pi / 2, np.pi, 1e-30, -1e-30]),
             rng.uniform(-1e6, 1e6, 1500), np.array([np.inf, -np.inf, np.nan]),
             rng.uniform(-3, 3, 1100)]
    x = np.concatenate(parts).astype(np.float32)
    node = helper.make_node(op, ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    got = nxrt.InferenceSession(data).run(None, {"x": x})[0]
    with np.errstate(invalid="ignore"):  # sin(inf) is NaN, as intended
        want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
