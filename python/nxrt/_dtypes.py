"""numpy dtype <-> ONNX element type conversions for feeds and results."""

import numpy as np

try:  # bfloat16, float8 and the sub-byte types are exchanged as ml_dtypes types
    import ml_dtypes

    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
    # ONNX codes of the one-byte float types; they cross the native boundary as uint8 bits.
    _BYTE_FLOATS = {17: np.dtype(ml_dtypes.float8_e4m3fn), 18: np.dtype(ml_dtypes.float8_e4m3fnuz),
                    19: np.dtype(ml_dtypes.float8_e5m2), 20: np.dtype(ml_dtypes.float8_e5m2fnuz),
                    24: np.dtype(ml_dtypes.float8_e8m0fnu)}
    # ONNX codes of the sub-byte types. nxrt keeps them unpacked, one element per byte:
    # int4/int2 as int8 values, uint4/uint2 as uint8 values, float4e2m1 as its 4-bit code
    # in a uint8 (ml_dtypes arrays hold the same one element per byte).
    _SUB_BYTE = {21: np.dtype(ml_dtypes.uint4), 22: np.dtype(ml_dtypes.int4),
                 23: np.dtype(ml_dtypes.float4_e2m1fn), 25: np.dtype(ml_dtypes.uint2),
                 26: np.dtype(ml_dtypes.int2)}
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    BFLOAT16 = None
    _BYTE_FLOATS = {}
    _SUB_BYTE = {}
_BYTE_FLOAT_CODES = {dt: code for code, dt in _BYTE_FLOATS.items()}
_SUB_BYTE_CODES = {dt: code for code, dt in _SUB_BYTE.items()}
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
    if BFLOAT16 is not None and dtype == BFLOAT16:
        return BFLOAT16_CODE
    if dtype in _BYTE_FLOAT_CODES:
        return _BYTE_FLOAT_CODES[dtype]
    if dtype in _SUB_BYTE_CODES:
        return _SUB_BYTE_CODES[dtype]
    return _NUMPY_TO_CODE.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)


def numpy_dtype(code):
    """numpy dtype for an ONNX element type code (object for strings)."""
    if code == STRING:
        return np.dtype(object)
    if code == BFLOAT16_CODE:
        return BFLOAT16 if BFLOAT16 is not None else np.dtype(np.uint16)
    if code in _BYTE_FLOATS:
        return _BYTE_FLOATS[code]
    if code in _SUB_BYTE:
        return _SUB_BYTE[code]
    return _CODE_TO_NUMPY.get(code)


def is_byte_float(code):
    """True for the float8 codes, which travel as uint8 bits."""
    return code in _BYTE_FLOATS


def is_sub_byte(code):
    """True for int4, uint4, float4e2m1, int2 and uint2."""
    return code in _SUB_BYTE


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
    if code in _SIGNED_SUB_BYTE:
        return value.astype(_SUB_BYTE[code])
    return value.view(_SUB_BYTE[code])
