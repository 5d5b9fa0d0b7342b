"""Zero-copy values: ``NxrtValue`` (from ``run_with_values``), onnxruntime's ``OrtValue``,
and DLPack export and import. The memory lives in a native ``_nxrt.Value`` whose tensor
owner keeps it alive (a run's result buffer, a numpy array, a DLPack producer)."""

import numpy as np

from . import _devices
from . import _dtypes
from . import _nxrt
from ._errors import ALL as _ERRORS, unsupported as _unsupported

_KDLCPU = 1
_CPU_DEVICE = (_KDLCPU, 0)


def check_device(device_type, device_id=0):
    """Accepts the CPU; any other device is refused with what to do instead."""
    name = str(device_type).lower()
    if name == "cpu":
        return
    raise _ERRORS["EPFail"](
        f"device '{device_type}' (id {device_id}) is not available: this build of nxrt runs on "
        f"the CPU only (available providers: ['CPUExecutionProvider']); use device_type='cpu' "
        f"and copy device tensors to host memory first (e.g. tensor.cpu())")


def element_code(element_type):
    """ONNX element type code of a numpy type or an ONNX TensorProto integer."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        code = int(element_type)
        if code not in _dtypes.TYPE_NAMES:
            raise TypeError(f"unknown ONNX element type {code}")
        return code
    try:
        dtype = np.dtype(element_type)
    except TypeError as e:
        raise TypeError(f"element_type must be a numpy type (np.float32) or an ONNX element "
                        f"type integer, not {element_type!r}") from e
    code = _dtypes.code_of(dtype)
    if code is None:
        raise TypeError(f"element type {dtype} is not supported by nxrt")
    return code


def _typed(code, arr):
    """The storage view `arr` (what the native side hands out) typed as ONNX type `code`."""
    if code == _dtypes.BFLOAT16_CODE and _dtypes.BFLOAT16 is not None:
        return arr.view(_dtypes.BFLOAT16)
    if _dtypes.is_byte_float(code):
        return arr.view(_dtypes.numpy_dtype(code))
    if _dtypes.is_sub_byte(code):
        # One element per byte both ways; ml_dtypes reads a sign-extended byte as its value.
        return arr.view(_dtypes.numpy_dtype(code))
    return arr


def native_view(native):
    """A numpy array over the native value's memory (strings: an object array copy)."""
    code = native.code
    if code == _dtypes.STRING:
        out = np.empty(int(np.prod(native.shape, dtype=np.int64)), dtype=object)
        out[:] = [b.decode("utf-8", errors="surrogateescape") for b in native.strings()]
        return out.reshape(native.shape)
    return _typed(code, native.numpy_view())


def native_from_numpy(arr):
    """A native value over a numpy array: shared memory when the array is contiguous and
    native-endian, otherwise over one converted copy."""
    code = _dtypes.code_of(arr.dtype)
    if code is None:
        raise TypeError(f"numpy dtype {arr.dtype} is not supported by nxrt")
    if code == _dtypes.STRING:
        items = [v.decode() if isinstance(v, bytes) else str(v) for v in arr.reshape(-1).tolist()]
        return _nxrt.Value.from_strings(items, list(arr.shape))
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "<" and not np.little_endian):
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if code == _dtypes.BFLOAT16_CODE:
        arr = arr.view(np.uint16)
    elif _dtypes.is_byte_float(code):
        arr = arr.view(np.uint8)
    elif _dtypes.is_sub_byte(code):
        arr = _dtypes.sub_byte_to_native(code, arr)
    # numpy's own DLPack export carries the reference that keeps `arr` alive; version 1
    # lets it export read-only arrays too (flagged, so they are never bound as outputs).
    return _nxrt.Value.from_capsule(arr.__dlpack__(max_version=(1, 0)), code)


def native_from_dlpack(obj, what="value"):
    """A native value over any ``__dlpack__`` producer: in place when CPU, compact and of a
    supported dtype, one copy when strided; refused (with the producer's reason) otherwise."""
    if isinstance(obj, np.ndarray):
        return native_from_numpy(obj)
    if not hasattr(obj, "__dlpack__"):  # a raw capsule (onnxruntime's OrtValue.from_dlpack)
        return _nxrt.Value.from_capsule(obj)
    device = None
    if hasattr(obj, "__dlpack_device__"):
        device = tuple(int(d) for d in obj.__dlpack_device__())
    kwargs = {"max_version": (1, 1)}
    if device is not None and device[0] != _KDLCPU:
        kwargs["dl_device"] = _CPU_DEVICE  # the producer moves it, or says why it cannot
    try:
        try:
            capsule = obj.__dlpack__(**kwargs)
        except TypeError:
            if "dl_device" in kwargs:
                raise
            capsule = obj.__dlpack__()  # a producer older than DLPack 1.0's keywords
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise type(e)(f"{what}: {type(obj).__name__} cannot hand nxrt its data through DLPack: "
                      f"{e}") from e
    try:
        return _nxrt.Value.from_capsule(capsule)
    except (BufferError, TypeError, ValueError) as e:
        raise type(e)(f"{what}: {e}") from e


class _DLPackMixin:
    __slots__ = ()

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this value's memory (the versioned ``dltensor_versioned``
        when ``max_version`` is 1.0 or later, else the legacy ``dltensor``). The capsule
        keeps the memory alive after this object is gone."""
        native = self._native_tensor()
        if stream is not None and stream != -1:
            raise BufferError("nxrt values live in CPU memory: stream must be None")
        if dl_device is not None and tuple(int(d) for d in dl_device) != _CPU_DEVICE:
            raise BufferError(f"nxrt values live in CPU memory (device {_CPU_DEVICE}); cannot "
                              f"export to device {tuple(dl_device)}")
        versioned = max_version is not None and int(tuple(max_version)[0]) >= 1
        return native.to_dlpack(versioned, bool(copy))

    def __dlpack_device__(self):
        """(kDLCPU, 0): nxrt values are in CPU memory."""
        return _CPU_DEVICE


class NxrtValue(_DLPackMixin):
    """A run output that stays in nxrt's memory: ``np.asarray(v)`` and ``np.from_dlpack(v)``
    view it without a copy; ``v.numpy()`` returns an owned copy."""

    __slots__ = ("_native", "__weakref__")

    def __init__(self, native):
        if not isinstance(native, _nxrt.Value):
            raise TypeError("NxrtValue objects come from InferenceSession.run_with_values()")
        self._native = native

    def _native_tensor(self):
        return self._native

    @property
    def shape(self):
        return tuple(self._native.shape)

    @property
    def dtype(self):
        return _dtypes.numpy_dtype(self._native.code)

    @property
    def ndim(self):
        return len(self._native.shape)

    @property
    def size(self):
        return int(np.prod(self._native.shape, dtype=np.int64))

    @property
    def nbytes(self):
        return int(self._native.nbytes)

    def data_ptr(self):
        """Address of the first element."""
        return int(self._native.data_ptr)

    def __len__(self):
        shape = self._native.shape
        if not shape:
            raise TypeError("len() of a 0-d NxrtValue")
        return shape[0]

    def __array__(self, dtype=None, copy=None):
        view = native_view(self._native)
        view_shares = self._native.code != _dtypes.STRING
        if copy is False and not view_shares:
            raise ValueError("a tensor(string) value cannot be viewed without a copy")
        if dtype is not None and np.dtype(dtype) != view.dtype:
            if copy is False:
                raise ValueError(f"converting {view.dtype} to {np.dtype(dtype)} needs a copy")
            return view.astype(dtype)
        return view.copy() if copy else view

    def numpy(self):
        """An owned copy of the value as a numpy array."""
        view = native_view(self._native)
        return view if self._native.code == _dtypes.STRING else view.copy()

    def __repr__(self):
        return f"NxrtValue(shape={self.shape}, dtype={self.dtype})"


def wrap_result(code, value, cls=NxrtValue):
    """A native run result (code, native value) as `cls`; sequences as lists, none as None."""
    if code == -1:
        return [wrap_result(c, v, cls) for c, v in value]
    if code == 0:
        return None if cls is NxrtValue else cls._none()
    return cls(value) if cls is NxrtValue else cls._from_native(value)


class OrtValue(_DLPackMixin):
    """onnxruntime's ``OrtValue``: a tensor in CPU memory, shared with the numpy array it was
    made from (``ortvalue_from_numpy``) or allocated (``ortvalue_from_shape_and_type``)."""

    def __init__(self, ortvalue=None, numpy_obj=None, session=None):
        # `session`, as onnxruntime's: a session the value belongs to, kept alive with it.
        if isinstance(ortvalue, OrtValue):
            ortvalue = ortvalue._native
        if ortvalue is not None and not isinstance(ortvalue, _nxrt.Value):
            raise ValueError("OrtValue objects are made with OrtValue.ortvalue_from_numpy(), "
                             "ortvalue_from_shape_and_type() or from_dlpack()")
        self._native = ortvalue  # None: an empty optional
        self._numpy_obj = numpy_obj
        self._session = session

    @classmethod
    def _from_native(cls, native, numpy_obj=None):
        return cls(native, numpy_obj)

    @classmethod
    def _none(cls):
        return cls(None)

    def _native_tensor(self):
        if self._native is None:
            raise ValueError("the OrtValue holds no value (an empty optional)")
        return self._native

    def _get_c_value(self):
        return self._native

    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj, /, device_type="cpu", device_id=0, vendor_id=-1):
        """An OrtValue over the numpy array's memory (contiguous arrays are not copied)."""
        check_device(device_type, device_id)
        if not isinstance(numpy_obj, np.ndarray):
            numpy_obj = np.asarray(numpy_obj)
        return cls(native_from_numpy(numpy_obj), numpy_obj)

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data, /, onnx_element_type):
        """An OrtValue over `data` reinterpreted as ONNX type `onnx_element_type` (same
        element size, no copy)."""
        code = element_code(int(onnx_element_type))
        if code == _dtypes.STRING or not data.flags.c_contiguous:
            raise ValueError("ortvalue_from_numpy_with_onnx_type needs a contiguous numeric array")
        storage = data.view(np.uint8) if data.dtype.itemsize == 1 else data
        if code == _dtypes.BFLOAT16_CODE or storage.dtype.kind not in "biuf":
            storage = data.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[data.dtype.itemsize])
        return cls(_nxrt.Value.from_capsule(storage.__dlpack__(max_version=(1, 0)), code), data)

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type, device_type="cpu", device_id=0,
                                     vendor_id=-1, memory_info=None):
        """A zero-filled OrtValue of the given shape and element type (numpy type or ONNX
        element type integer). `memory_info` (an OrtMemoryInfo), when given, replaces the
        device arguments and must describe host memory."""
        if memory_info is not None:
            if not _devices.is_host_memory(memory_info):
                check_device(memory_info.name, memory_info.device_id)  # refused, with why
        else:
            check_device(device_type, device_id)
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise ValueError(f"shape {list(shape)} has a negative dimension")
        return cls(_nxrt.Value.allocate(element_code(element_type), dims))

    @classmethod
    def from_dlpack(cls, data, /):
        """An OrtValue sharing memory with a DLPack producer (or a raw DLPack capsule)."""
        return cls(native_from_dlpack(data, "OrtValue.from_dlpack"))

    def data_ptr(self):
        return int(self._native_tensor().data_ptr)

    def device_name(self):
        return "cpu"

    def shape(self):
        return list(self._native_tensor().shape)

    def data_type(self):
        return f"tensor({_dtypes.TYPE_NAMES[self._native_tensor().code]})"

    def element_type(self):
        """The ONNX element type (TensorProto.DataType integer)."""
        return int(self._native_tensor().code)

    def tensor_size_in_bytes(self):
        return int(self._native_tensor().nbytes)

    def has_value(self):
        return self._native is not None

    def is_tensor(self):
        return self._native is not None

    def is_sparse_tensor(self):
        return False

    def is_tensor_sequence(self):
        return False

    def as_sparse_tensor(self):
        raise _unsupported("sparse tensors (OrtValue.as_sparse_tensor)",
                           "nxrt's OrtValues hold dense tensors only")

    @classmethod
    def ort_value_from_sparse_tensor(cls, sparse_tensor):
        raise _unsupported("sparse tensors (OrtValue.ort_value_from_sparse_tensor)",
                           "nxrt's OrtValues hold dense tensors only")

    def numpy(self):
        """A numpy array over the OrtValue's memory (as onnxruntime's, for CPU values)."""
        return native_view(self._native_tensor())

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        if copy is not None:
            return np.array(arr, dtype=dtype, copy=copy)
        if dtype is not None:
            return np.asarray(arr, dtype=dtype)
        return arr

    def update_inplace(self, data):
        """Copies `data` (a numpy array or OrtValue of the same type and shape) into this
        OrtValue's memory; its address does not change."""
        src = data._native_tensor() if isinstance(data, OrtValue) else native_from_numpy(np.asarray(data))
        self._native_tensor().copy_from(src)

    def __repr__(self):
        if self._native is None:
            return "OrtValue(None)"
        return f"OrtValue(shape={self.shape()}, type={self.data_type()})"


def as_native_feed(value, name):
    """The native value for a feed that can be read in place: NxrtValue, OrtValue, or a
    non-numpy ``__dlpack__`` producer; None for everything else (numpy arrays, lists)."""
    if isinstance(value, (NxrtValue, OrtValue)):
        return value._native_tensor()
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
        return None
    try:
        return native_from_dlpack(value, f"input '{name}'")
    except TypeError:
        if hasattr(value, "__array__"):
            return None  # a dtype DLPack cannot carry: numpy's protocol may still read it
        raise
