"""Conversions between Python values and the native module's feed and result tuples:
arrays, strings, sequences, OrtValue / DLPack handles. Shared by sessions and eager ops."""

import numpy as np

from . import _dtypes
from . import _value


def map_types(type_string):
    """(key code, value code) of a NodeArg type "map(string,tensor(float))", else None."""
    if not type_string.startswith("map(") or ",tensor(" not in type_string:
        return None
    key, value = type_string[len("map("):-1].split(",", 1)
    codes = {n: c for c, n in _dtypes.TYPE_NAMES.items()}
    value = value[len("tensor("):-1]
    if key not in codes or value not in codes:
        return None
    return codes[key], codes[value]


def to_map_feed(name, value, types):
    """(name, -3, [keys, values], None, None) for a map input fed a dict, its keys and
    values as arrays of the declared key and value types (onnxruntime takes a dict)."""
    if not isinstance(value, dict):
        raise TypeError(f"input '{name}' is a map: feed a dict, not {type(value).__name__}")
    key_code, value_code = types
    try:
        keys = np.array(list(value.keys()), dtype=_dtypes.numpy_dtype(key_code))
        values = np.array(list(value.values()), dtype=_dtypes.numpy_dtype(value_code))
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"input '{name}' is a map of {_dtypes.TYPE_NAMES[key_code]} to "
                        f"{_dtypes.TYPE_NAMES[value_code]}: {e}") from None
    if key_code == _dtypes.STRING and not all(isinstance(k, str) for k in value):
        raise TypeError(f"input '{name}' is a map with string keys: {list(value)[:3]}")
    return (name, -3, [to_feed(name, keys)[1:], to_feed(name, values)[1:]], None, None)


def to_feed(name, value, is_sequence=False):
    """(name, code, array, strings, shape) for the native run call."""
    if value is None:
        return (name, 0, None, None, None)
    if is_sequence:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"input '{name}' is a sequence: feed a list of arrays")
        return (name, -1, [to_feed(name, v)[1:] for v in value], None, None)
    if not isinstance(value, np.ndarray):
        native = _value.as_native_feed(value, name)  # NxrtValue, OrtValue, DLPack: in place
        if native is not None:
            return (name, native.code, native, None, None)
        value = np.asarray(value)
    code = _dtypes.code_of(value.dtype)
    if code is None:
        raise TypeError(
            f"input '{name}' has dtype {value.dtype}, which nxrt does not support; cast it "
            f"first, e.g. x.astype(np.float32) (supported: bool, int8/16/32/64, "
            f"uint8/16/32/64, float16, float32, float64, str, and from ml_dtypes bfloat16, "
            f"float8, float4_e2m1fn, int4, uint4, int2, uint2)")
    if code == _dtypes.STRING:
        flat = [v.decode() if isinstance(v, bytes) else str(v) for v in value.reshape(-1).tolist()]
        return (name, code, None, flat, list(value.shape))
    if value.dtype.byteorder == ">" or (value.dtype.byteorder == "<" and np.little_endian is False):
        value = value.astype(value.dtype.newbyteorder("="))
    if not value.flags.c_contiguous:  # (np.ascontiguousarray would turn 0-d into 1-d)
        value = value.copy(order="C")
    if code == _dtypes.BFLOAT16_CODE:
        value = value.view(np.uint16)
    elif code == 9 or _dtypes.is_byte_float(code):
        value = value.view(np.uint8)
    elif _dtypes.is_sub_byte(code):
        value = _dtypes.sub_byte_to_native(code, value)
    return (name, code, value, None, None)


def from_result(code, value):
    if code == -1:
        return [from_result(c, v) for c, v in value]
    if code == -2:  # a sequence of maps (ZipMap): the list of dicts, as onnxruntime returns it
        return value
    if code == 0:
        return None
    if code == _dtypes.STRING:
        items, shape = value
        out = np.empty(len(items), dtype=object)
        out[:] = [b.decode("utf-8", errors="surrogateescape") for b in items]
        return out.reshape(shape)
    if code == _dtypes.BFLOAT16_CODE and _dtypes.BFLOAT16 is not None:
        return value.view(_dtypes.BFLOAT16)
    if _dtypes.is_byte_float(code):
        return value.view(_dtypes.numpy_dtype(code))
    if _dtypes.is_sub_byte(code):
        return _dtypes.sub_byte_from_native(code, value)
    return value
