"""Zero-copy values: NxrtValue and DLPack export/import, OrtValue, IoBinding."""

import ctypes
import gc

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import nxrt  # noqa: E402

ml_dtypes = pytest.importorskip("ml_dtypes")

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


def _model(nodes, inputs, outputs, path):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="module")
def neg_model(tmp_path_factory):
    """y = -x, z = x (a pass-through output), x float [N, 3]."""
    return _model([helper.make_node("Neg", ["x"], ["y"]), helper.make_node("Identity", ["x"], ["z"])],
                  [("x", TensorProto.FLOAT, ["N", 3])],
                  [("y", TensorProto.FLOAT, ["N", 3]), ("z", TensorProto.FLOAT, ["N", 3])],
                  tmp_path_factory.mktemp("m") / "neg.onnx")


@pytest.fixture(scope="module")
def sess(neg_model):
    return nxrt.InferenceSession(neg_model)


X = np.arange(6, dtype=np.float32).reshape(2, 3)


class Producer:
    """A DLPack-only producer (no __array__), like a framework tensor."""

    def __init__(self, array, device=(1, 0), error=None):
        self.array, self.device, self.error = array, device, error
        self.calls = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"max_version": max_version, "dl_device": dl_device})
        if self.error:
            raise BufferError(self.error)
        return self.array.__dlpack__(max_version=max_version)


# ---- NxrtValue ----------------------------------------------------------------------------

def test_run_with_values_attributes(sess):
    y, z = sess.run_with_values(None, {"x": X})
    assert isinstance(y, nxrt.NxrtValue)
    assert y.shape == (2, 3) and y.dtype == np.float32 and len(y) == 2
    assert repr(y) == "NxrtValue(shape=(2, 3), dtype=float32)"
    np.testing.assert_array_equal(np.asarray(y), -X)
    np.testing.assert_array_equal(z.numpy(), X)
    (only,) = sess.run_with_values(["z"], {"x": X})
    np.testing.assert_array_equal(np.asarray(only), X)


def test_array_is_a_view_and_numpy_a_copy(sess):
    (y,) = sess.run_with_values(["y"], {"x": X})
    view = np.asarray(y)
    assert view.ctypes.data == y.data_ptr()
    copy = y.numpy()
    assert copy.ctypes.data != y.data_ptr() and not np.shares_memory(copy, view)
    with pytest.raises(ValueError, match="needs a copy"):
        y.__array__(dtype=np.float64, copy=False)
    assert np.asarray(y, dtype=np.float64).dtype == np.float64


def test_from_dlpack_shares_memory_and_is_writable(sess):
    (y,) = sess.run_with_values(["y"], {"x": X})
    a = np.from_dlpack(y)
    assert a.ctypes.data == y.data_ptr()
    a[0, 0] = 42.0  # the versioned capsule is not read-only
    assert np.asarray(y)[0, 0] == 42.0
    assert y.__dlpack_device__() == (1, 0)


def test_consumer_outlives_producer(sess):
    results = sess.run_with_values(["y"], {"x": X})
    a = np.from_dlpack(results[0])
    b = np.asarray(results[0])
    del results
    gc.collect()
    np.testing.assert_array_equal(a, -X)
    np.testing.assert_array_equal(b, -X)
    # A capsule taken, then consumed after its NxrtValue is gone.
    (y,) = sess.run_with_values(["y"], {"x": X})
    capsule = y.__dlpack__(max_version=(1, 0))
    del y
    gc.collect()
    value = nxrt.OrtValue.from_dlpack(capsule)
    np.testing.assert_array_equal(value.numpy(), -X)
    # An unconsumed capsule frees its tensor when collected.
    (y,) = sess.run_with_values(["y"], {"x": X})
    y.__dlpack__()
    y.__dlpack__(max_version=(1, 0))
    gc.collect()


def test_capsule_kinds(sess):
    (y,) = sess.run_with_values(["y"], {"x": X})
    legacy = y.__dlpack__()
    assert _get_name(legacy) == b"dltensor"
    assert _get_name(y.__dlpack__(max_version=(0, 8))) == b"dltensor"
    versioned = y.__dlpack__(max_version=(1, 0))
    assert _get_name(versioned) == b"dltensor_versioned"
    managed = _DLManagedTensorVersioned.from_address(_get_pointer(versioned, b"dltensor_versioned"))
    assert managed.major == 1
    assert managed.flags & 1 == 0  # not read-only
    assert managed.dl_tensor.data == y.data_ptr()
    assert (managed.dl_tensor.dtype.code, managed.dl_tensor.dtype.bits) == (2, 32)
    copied = y.__dlpack__(max_version=(1, 0), copy=True)
    managed = _DLManagedTensorVersioned.from_address(_get_pointer(copied, b"dltensor_versioned"))
    assert managed.flags & 2 and managed.dl_tensor.data != y.data_ptr()
    # Consumed capsules are renamed, so their deleter runs exactly once.
    nxrt.OrtValue.from_dlpack(versioned)
    assert _get_name(versioned) == b"used_dltensor_versioned"
    with pytest.raises(TypeError, match="capsules can be consumed only once"):
        nxrt.OrtValue.from_dlpack(versioned)


def test_bfloat16_exports_as_kdlbfloat(tmp_path):
    path = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
                  [("x", TensorProto.FLOAT, [3])], [("y", TensorProto.BFLOAT16, [3])],
                  tmp_path / "bf16.onnx")
    (y,) = nxrt.InferenceSession(path).run_with_values(None, {"x": np.array([1, 2.5, -3], np.float32)})
    assert y.dtype == ml_dtypes.bfloat16
    view = np.asarray(y)
    assert view.dtype == ml_dtypes.bfloat16 and view.ctypes.data == y.data_ptr()
    np.testing.assert_array_equal(view.astype(np.float32), [1, 2.5, -3])
    capsule = y.__dlpack__(max_version=(1, 0))
    managed = _DLManagedTensorVersioned.from_address(_get_pointer(capsule, b"dltensor_versioned"))
    dtype = managed.dl_tensor.dtype
    assert (dtype.code, dtype.bits, dtype.lanes) == (4, 16, 1)  # kDLBfloat
    # nxrt reads its own bfloat16 capsule back in place.
    back = nxrt.OrtValue.from_dlpack(y)
    assert back.data_type() == "tensor(bfloat16)" and back.data_ptr() == y.data_ptr()


def test_export_errors(sess, tmp_path):
    (y,) = sess.run_with_values(["y"], {"x": X})
    with pytest.raises(BufferError, match="cannot export to device"):
        y.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream must be None"):
        y.__dlpack__(stream=1)
    path = _model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)],
                  [("x", TensorProto.FLOAT, [3])], [("y", TensorProto.FLOAT, [])],
                  tmp_path / "sum.onnx")
    (scalar,) = nxrt.InferenceSession(path).run_with_values(None, {"x": np.ones(3, np.float32)})
    assert scalar.shape == () and float(np.asarray(scalar)) == 3.0
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d NxrtValue"):
        len(scalar)
    path = _model([helper.make_node("Identity", ["x"], ["y"])], [("x", TensorProto.STRING, [2])],
                  [("y", TensorProto.STRING, [2])], tmp_path / "str.onnx")
    (strings,) = nxrt.InferenceSession(path).run_with_values(None, {"x": np.array(["a", "bc"])})
    assert list(strings.numpy()) == ["a", "bc"]
    with pytest.raises(BufferError, match="tensor\\(string\\).*no matching element type"):
        strings.__dlpack__()
    with pytest.raises(TypeError, match="come from InferenceSession.run_with_values"):
        nxrt.NxrtValue(np.zeros(3))


def test_torch_shares_memory(sess):
    torch = pytest.importorskip("torch")
    (y,) = sess.run_with_values(["y"], {"x": X})
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.data_ptr()
    del y
    gc.collect()
    assert t.tolist() == (-X).tolist()
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert nxrt.OrtValue.from_dlpack(x).data_ptr() == x.data_ptr()


# ---- DLPack import -----------------------------------------------------------------------

def test_dlpack_inputs_are_read_in_place(sess):
    base = X.copy()
    producer = Producer(base)
    assert nxrt.OrtValue.from_dlpack(producer).data_ptr() == base.ctypes.data
    assert producer.calls[-1]["max_version"] == (1, 1)
    (y,) = sess.run(["y"], {"x": Producer(base)})
    assert type(y) is np.ndarray  # run() keeps onnxruntime's contract: fresh arrays
    np.testing.assert_array_equal(y, -X)
    # Values from one run feed the next without a copy through numpy.
    (v,) = sess.run_with_values(["y"], {"x": base})
    np.testing.assert_array_equal(sess.run(["y"], {"x": v})[0], X)


def test_strided_dlpack_inputs_are_copied(sess):
    wide = np.arange(12, dtype=np.float32).reshape(2, 6)
    strided = wide[:, ::2]
    value = nxrt.OrtValue.from_dlpack(Producer(strided))
    assert value.data_ptr() != wide.ctypes.data
    np.testing.assert_array_equal(value.numpy(), strided)
    np.testing.assert_array_equal(sess.run(["y"], {"x": Producer(strided)})[0], -strided)


def test_dlpack_import_refusals(sess):
    with pytest.raises(BufferError, match="input 'x': Producer cannot hand nxrt its data "
                                          "through DLPack: not on this device"):
        sess.run(["y"], {"x": Producer(X, device=(2, 0), error="not on this device")})
    with pytest.raises(TypeError, match="cannot read the DLPack element type \\(code 5"):
        nxrt.OrtValue.from_dlpack(Producer(np.ones(3, np.complex64)))

    class OnGpu(Producer):  # ignores dl_device: hands over a GPU capsule anyway
        def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
            cap = self.array.__dlpack__(max_version=max_version)
            managed = _DLManagedTensorVersioned.from_address(_get_pointer(cap, b"dltensor_versioned"))
            managed.dl_tensor.device_type = 2
            return cap

    with pytest.raises(BufferError, match="CPU only.*device type 2"):
        nxrt.OrtValue.from_dlpack(OnGpu(X, device=(2, 0)))


# ---- OrtValue ----------------------------------------------------------------------------

def test_ortvalue_from_numpy_shares_memory():
    a = X.copy()
    v = nxrt.OrtValue.ortvalue_from_numpy(a)
    assert v.data_ptr() == a.ctypes.data
    assert np.shares_memory(v.numpy(), a)
    assert v.shape() == [2, 3] and v.data_type() == "tensor(float)" and v.element_type() == 1
    assert v.device_name() == "cpu" and v.is_tensor() and v.has_value()
    assert v.tensor_size_in_bytes() == 24 and not v.is_tensor_sequence()
    a[0, 0] = 7.0
    assert v.numpy()[0, 0] == 7.0
    ptr = v.data_ptr()
    v.update_inplace(np.full((2, 3), 5, np.float32))
    assert v.data_ptr() == ptr and (a == 5).all()


def test_ortvalue_from_shape_and_type():
    v = nxrt.OrtValue.ortvalue_from_shape_and_type([2, 4], np.int64)
    assert v.data_type() == "tensor(int64)" and v.numpy().shape == (2, 4)
    b = nxrt.OrtValue.ortvalue_from_shape_and_type([3], TensorProto.BFLOAT16)
    assert b.data_type() == "tensor(bfloat16)" and b.numpy().dtype == ml_dtypes.bfloat16
    with pytest.raises(ValueError, match="negative dimension"):
        nxrt.OrtValue.ortvalue_from_shape_and_type([-1], np.float32)
    with pytest.raises(TypeError, match="unknown ONNX element type 99"):
        nxrt.OrtValue.ortvalue_from_shape_and_type([1], 99)


def test_cuda_requests_are_refused_with_advice(sess):
    with pytest.raises(nxrt.EPFail, match="device 'cuda' .*CPU only.*device_type='cpu'"):
        nxrt.OrtValue.ortvalue_from_numpy(X, "cuda", 0)
    with pytest.raises(nxrt.EPFail, match="CPU only"):
        nxrt.OrtValue.ortvalue_from_shape_and_type([1], np.float32, "cuda")
    with pytest.raises(RuntimeError, match="CPU only"):  # EPFail is a RuntimeError, as in ort
        sess.io_binding().bind_output("y", "cuda", 0)


def test_run_with_ort_values(sess):
    v = nxrt.OrtValue.ortvalue_from_numpy(X)
    out = sess.run_with_ort_values(["y", "z"], {"x": v})
    assert all(isinstance(o, nxrt.OrtValue) for o in out)
    np.testing.assert_array_equal(out[0].numpy(), -X)
    assert len(sess.run_with_ort_values(None, {"x": v})) == 2
    with pytest.raises(TypeError, match="input 'x' must be an OrtValue, not ndarray"):
        sess.run_with_ort_values(["y"], {"x": X})


# ---- IoBinding ---------------------------------------------------------------------------

def test_preallocated_output_is_written_in_place(sess):
    binding = sess.io_binding()
    out = np.zeros((2, 3), np.float32)
    ptr = out.ctypes.data
    binding.bind_output("y", "cpu", 0, np.float32, [2, 3], out.ctypes.data)
    for k in range(3):
        x = X + k
        binding.bind_cpu_input("x", x)
        sess.run_with_iobinding(binding)
        assert out.ctypes.data == ptr
        np.testing.assert_array_equal(out, -x)
        (y,) = binding.get_outputs()
        assert y.data_ptr() == ptr


def test_bound_ortvalue_output_and_pass_through(sess):
    binding = sess.io_binding()
    y = nxrt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    z = nxrt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    yp, zp = y.data_ptr(), z.data_ptr()
    binding.bind_ortvalue_input("x", nxrt.OrtValue.ortvalue_from_numpy(X))
    binding.bind_ortvalue_output("z", z)  # a graph input passed straight through
    binding.bind_ortvalue_output("y", y)
    sess.run_with_iobinding(binding)
    assert [o.data_ptr() for o in binding.get_outputs()] == [zp, yp]
    np.testing.assert_array_equal(z.numpy(), X)
    np.testing.assert_array_equal(y.numpy(), -X)


def test_output_bound_by_device_and_copies(sess):
    binding = sess.io_binding()
    x = X.copy()
    binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_output("y")
    sess.run_with_iobinding(binding)
    synced = binding.synchronize_outputs()
    assert synced is None
    (y,) = binding.get_outputs()
    (copy,) = binding.copy_outputs_to_cpu()
    np.testing.assert_array_equal(copy, -X)
    assert copy.ctypes.data != y.data_ptr()


def test_iobinding_errors(sess):
    binding = sess.io_binding()
    with pytest.raises(nxrt.InvalidArgument, match="Invalid input name: 'nope'"):
        binding.bind_cpu_input("nope", X)
    with pytest.raises(nxrt.InvalidArgument, match="Invalid output name: 'nope'"):
        binding.bind_output("nope")
    with pytest.raises(ValueError, match="`element_type` and `shape` are to be provided"):
        binding.bind_output("y", "cpu", 0, None, None, X.ctypes.data)
    binding.bind_cpu_input("x", X)
    with pytest.raises(nxrt.InvalidArgument, match="At least one output should be requested"):
        sess.run_with_iobinding(binding)
    wrong = np.zeros((3, 3), np.float32)
    binding.bind_output("y", "cpu", 0, np.float32, [3, 3], wrong.ctypes.data)
    with pytest.raises(nxrt.InvalidArgument, match="'y' is bound to a tensor\\(float\\) buffer "
                                                   "of shape \\[3,3\\] but the model produces "):
        sess.run_with_iobinding(binding)
    readonly = X.copy()
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="cannot be bound to a read-only OrtValue"):
        binding.bind_ortvalue_output("y", nxrt.OrtValue.ortvalue_from_numpy(readonly))
    with pytest.raises(TypeError, match="needs an OrtValue, not ndarray"):
        binding.bind_ortvalue_input("x", X)
    binding.clear_binding_outputs()
    binding.clear_binding_inputs()
    binding.bind_output("y")
    with pytest.raises(nxrt.InvalidArgument, match="Required inputs \\(\\['x'\\]\\) are missing"):
        sess.run_with_iobinding(binding)
    with pytest.raises(TypeError, match="needs an IOBinding"):
        sess.run_with_iobinding(object())


def test_session_iobinding_alias():
    assert nxrt.SessionIOBinding is nxrt.IOBinding


def test_ortvalue_with_onnx_type_reinterprets_in_place():
    bits = np.array([0x3F80, 0x4000], np.uint16)  # bfloat16 1.0, 2.0
    v = nxrt.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)
    assert v.data_type() == "tensor(bfloat16)" and v.data_ptr() == bits.ctypes.data
    np.testing.assert_array_equal(v.numpy().astype(np.float32), [1.0, 2.0])


# ---- the same IoBinding code against onnxruntime and nxrt ----------------------------------

def _iobinding_usage(ort, model_path):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")
    z = np.zeros((2, 3), np.float32)
    binding.bind_output("z", "cpu", 0, np.float32, [2, 3], z.ctypes.data)
    sess.run_with_iobinding(binding)
    binding.synchronize_outputs()
    outs = binding.get_outputs()
    result = {
        "copies": [a.tolist() for a in binding.copy_outputs_to_cpu()],
        "shapes": [o.shape() for o in outs],
        "types": [o.data_type() for o in outs],
        "devices": [o.device_name() for o in outs],
        "z": z.tolist(),
        "z_in_place": outs[1].data_ptr() == z.ctypes.data,
    }
    v = ort.OrtValue.ortvalue_from_numpy(x)
    result["ortvalue_shares"] = v.data_ptr() == x.ctypes.data
    result["run_with_ort_values"] = [o.numpy().tolist()
                                     for o in sess.run_with_ort_values(["y"], {"x": v})]
    buf = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "cpu", 0)
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("y", buf)
    sess.run_with_iobinding(binding)
    result["ortvalue_output"] = buf.numpy().tolist()
    result["ortvalue_output_in_place"] = binding.get_outputs()[0].data_ptr() == buf.data_ptr()
    return result


def test_iobinding_matches_onnxruntime(neg_model):
    ort = pytest.importorskip("onnxruntime")
    assert _iobinding_usage(nxrt, neg_model) == _iobinding_usage(ort, neg_model)
