"""numpy dtype <-> ONNX element type conversions for feeds and results."""

import numpy as np

try:  # bfloat16 and float8 are exchanged as ml_dtypes types when ml_dtypes is installed
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
    # ONNX codes of the one-byte float types; they cross the native boundary as uint8.
    _BYTE_FLOATS = {17: np.dtype(ml_dtypes.float8_e4m3fn), 18: np.dtype(ml_dtypes.float8_e4m3fnuz),
                    19: np.dtype(ml_dtypes.float8_e5m2), 20: np.dtype(ml_dtypes.float8_e5m2fnuz)}
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    BFLOAT16 = None
    _BYTE_FLOATS = {}
_BYTE_FLOAT_CODES = {dt: code for code, dt in _BYTE_FLOATS.items()}

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
    23: "float4e2m1",
}


def code_of(dtype):
    """ONNX element type code of a numpy dtype, or None when unsupported."""
    if dtype.kind in "OUS":
        return STRING
    if BFLOAT16 is not None and dtype == BFLOAT16:
        return BFLOAT16_CODE
    if dtype in _BYTE_FLOAT_CODES:
        return _BYTE_FLOAT_CODES[dtype]
    return _NUMPY_TO_CODE.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)


def numpy_dtype(code):
    """numpy dtype for an ONNX element type code (object for strings)."""
    if code == STRING:
        return np.dtype(object)
    if code == BFLOAT16_CODE:
        return BFLOAT16 if BFLOAT16 is not None else np.dtype(np.uint16)
    if code in _BYTE_FLOATS:
        return _BYTE_FLOATS[code]
    return _CODE_TO_NUMPY.get(code)


def is_byte_float(code):
    """True for the float8 codes, which travel as uint8 bits."""
    return code in _BYTE_FLOATS
