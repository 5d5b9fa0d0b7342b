"""numpy dtype <-> ONNX element type conversions for feeds and results."""

import numpy as np

# bfloat16, float8 and the sub-byte types are exchanged as ml_dtypes types. ml_dtypes is
# imported on first need, not with nxrt: its import registers hundreds of numpy ufunc
# loops and took 0.5 s, most of `import nxrt`, for models that never see these types.
_BYTE_FLOAT_CODE_SET = frozenset((17, 18, 19, 20, 24))
_SUB_BYTE_CODE_SET = frozenset((21, 22, 23, 25, 26))
_tables = None  # (bfloat16 dtype or None, byte floats, sub-byte types, their reverse maps)


def _ml_tables():
    global _tables
    if _tables is None:
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - exercised only without ml_dtypes
            _tables = (None, {}, {}, {}, {})
        else:
            # ONNX codes of the one-byte float types; they cross the native boundary as
            # uint8 bits.
            byte_floats = {17: np.dtype(ml_dtypes.float8_e4m3fn),
                           18: np.dtype(ml_dtypes.float8_e4m3fnuz),
                           19: np.dtype(ml_dtypes.float8_e5m2),
                           20: np.dtype(ml_dtypes.float8_e5m2fnuz),
                           24: np.dtype(ml_dtypes.float8_e8m0fnu)}
            # ONNX codes of the sub-byte types. nxrt keeps them unpacked, one element per
            # byte: int4/int2 as int8 values, uint4/uint2 as uint8 values, float4e2m1 as
            # its 4-bit code in a uint8 (ml_dtypes arrays hold the same one element per byte).
            sub_byte = {21: np.dtype(ml_dtypes.uint4), 22: np.dtype(ml_dtypes.int4),
                        23: np.dtype(ml_dtypes.float4_e2m1fn), 25: np.dtype(ml_dtypes.uint2),
                        26: np.dtype(ml_dtypes.int2)}
            _tables = (np.dtype(ml_dtypes.bfloat16), byte_floats, sub_byte,
                       {dt: code for code, dt in byte_floats.items()},
                       {dt: code for code, dt in sub_byte.items()})
    return _tables


def __getattr__(name):
    if name == "BFLOAT16":  # the ml_dtypes bfloat16 dtype, or None without ml_dtypes
        return _ml_tables()[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FLOAT4_CODE = 23
_SIGNED_SUB_BYTE = (22, 26)

STRING = 8
BFLOAT16_CODE = 16

_NUMPY_TO_CODE = {
    np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4, np.dtype(np.int16): 5, np.dtype(np.int32): 6,
    np.dtype(np.int64): 7, np.dtype(np.bool_): 9, np.dtype(np.float16): 10,
    np.dtype(np.float64): 11, np.dtype(np.uint32): 12, np.dtype(np.uint64): 13,
}
_CODE_TO_NUMPY = {code: dt for dt, code in _NUMPY_TO_CODE.items()}

# ONNX spelling of each element type, as in NodeArg.type ("tensor(float)").
TYPE_NAMES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
    18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2",
}


def code_of(dtype):
    """ONNX element type code of a numpy dtype, or None when unsupported."""
    if dtype.kind in "OUS":
        return STRING
    if dtype.type.__module__.startswith("ml_dtypes"):  # the caller imported ml_dtypes already
        bfloat16, _, _, byte_float_codes, sub_byte_codes = _ml_tables()
        if dtype == bfloat16:
            return BFLOAT16_CODE
        return byte_float_codes.get(dtype, sub_byte_codes.get(dtype))
    return _NUMPY_TO_CODE.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)


def numpy_dtype(code):
    """numpy dtype for an ONNX element type code (object for strings)."""
    if code == STRING:
        return np.dtype(object)
    if code == BFLOAT16_CODE:
        bfloat16 = _ml_tables()[0]
        return bfloat16 if bfloat16 is not None else np.dtype(np.uint16)
    if code in _BYTE_FLOAT_CODE_SET or code in _SUB_BYTE_CODE_SET:
        _, byte_floats, sub_byte, _, _ = _ml_tables()
        return byte_floats.get(code, sub_byte.get(code))
    return _CODE_TO_NUMPY.get(code)


def is_byte_float(code):
    """True for the float8 codes, which travel as uint8 bits (when ml_dtypes is there)."""
    return code in _BYTE_FLOAT_CODE_SET and bool(_ml_tables()[1])


def is_sub_byte(code):
    """True for int4, uint4, float4e2m1, int2 and uint2 (when ml_dtypes is there)."""
    return code in _SUB_BYTE_CODE_SET and bool(_ml_tables()[2])


def sub_byte_to_native(code, value):
    """The one-byte-per-element array nxrt reads for a sub-byte ml_dtypes array: int8
    values for int4/int2, uint8 values for uint4/uint2, and the 4-bit codes of float4e2m1
    (bits above an element's width are cleared, whatever the array holds there)."""
    if code == _FLOAT4_CODE:
        codes = value.view(np.uint8).copy()
        codes &= np.uint8(0x0F)  # in place: keeps 0-d arrays arrays
        return codes
    return value.astype(np.int8 if code in _SIGNED_SUB_BYTE else np.uint8)


def sub_byte_from_native(code, value):
    """The ml_dtypes array for a sub-byte result that nxrt returns one element per byte."""
    sub_byte = _ml_tables()[2]
    if code in _SIGNED_SUB_BYTE:
        return value.astype(sub_byte[code])
    return value.view(sub_byte[code])
