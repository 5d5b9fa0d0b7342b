"""Eager execution of single ONNX ops on numpy values.

``dispatch("Add", [a, b])`` runs one op and returns the list of its outputs. The op is
planned once per distinct (domain, op, opset, attributes, input dtypes and ranks, output
count) and the prepared kernel is cached, so warm calls pay only for the computation and
the argument conversion. ``nxrt.ops`` wraps every standard op as a Python function.

Inputs may be numpy arrays, Python scalars and (nested) lists, objects with
``__array__`` or ``__dlpack__``, ``None`` for an omitted optional input, and a
``Sequence`` (or a list of numpy arrays) for ops that take a sequence of tensors. A
Python int or float scalar takes the dtype of the first array input of the same kind
(``add(x_float32, 2.0)`` adds a float32 2), otherwise numpy's default (int64, float64).

Attributes are keyword values: bool and int (INT), float (FLOAT), str and bytes (STRING),
numpy arrays (TENSOR) and lists or tuples of one of those kinds (INTS, FLOATS, STRINGS,
TENSORS; ints among floats are floats; an empty list is INTS). ``None`` leaves an
attribute at its default.
"""

import numpy as np

from . import _nxrt
from ._op_table import DEFAULT_OUTPUTS as _DEFAULT_OUTPUTS
from ._convert import from_result as _from_result, to_feed as _to_feed

__all__ = ["dispatch", "cache_stats", "clear_cache", "opset", "Sequence", "LATEST_ONNX_OPSET"]

# The newest ai.onnx opset whose schemas nxrt.ops was generated from (onnx.defs at
# generation time, tools/gen_ops.py); nxrt's kernel table registers ai.onnx kernels with an
# open upper bound, so this is also the opset an eager call defaults to.
LATEST_ONNX_OPSET = 28


class Sequence(list):
    """Marks a list of arrays as one ONNX sequence input (``seq(tensor)``)."""


class _Feed(tuple):
    """An input or tensor attribute already converted by ``_session._to_feed``:
    (code, array, strings, shape); a sequence is (-1, [_Feed, ...], None, None)."""


_nxrt._eager_init(_Feed)
_run = _nxrt.eager_run


def opset():
    """The ai.onnx opset eager calls use when none is given (``LATEST_ONNX_OPSET``)."""
    return LATEST_ONNX_OPSET


def cache_stats():
    """Prepared-op cache counters: ``{"entries": ..., "hits": ..., "misses": ...}``."""
    entries, hits, misses = _nxrt.eager_cache_stats()
    return {"entries": entries, "hits": hits, "misses": misses}


def clear_cache():
    """Drops every prepared op and zeroes the counters."""
    _nxrt.eager_cache_clear()


def _weak_dtype(value, inputs):
    """The dtype a Python scalar takes: that of the first array input of its kind."""
    kinds = "f" if isinstance(value, float) else "iu"
    for x in inputs:
        if isinstance(x, np.ndarray) and x.dtype.kind in kinds:
            return x.dtype
    return None


def _convert_input(i, value, inputs):
    if value is None or isinstance(value, _Feed):
        return value
    name = f"input {i}"
    if isinstance(value, Sequence) or (
            isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value)):
        return _Feed((-1, [_Feed(_to_feed(name, v)[1:]) for v in value], None, None))
    if type(value) in (int, float):
        dtype = _weak_dtype(value, inputs)
        if dtype is not None:
            value = np.asarray(value, dtype=dtype)
    return _Feed(_to_feed(name, value)[1:])


def _convert_attribute(name, value):
    if isinstance(value, np.ndarray):
        return _Feed(_to_feed(f"attribute '{name}'", value)[1:])
    if isinstance(value, (list, tuple)) and any(isinstance(v, np.ndarray) for v in value):
        return [_convert_attribute(name, v) for v in value]
    return value


def dispatch(op_type, inputs, attributes=None, *, domain="", opset=None, num_outputs=None):
    """Runs one ONNX op and returns the list of its outputs (numpy arrays; a list for a
    sequence output, None for an empty optional).

    ``inputs``: list of values in the op's input order (None for an omitted optional
    input). ``attributes``: dict of attribute values. ``domain``: "" (ai.onnx) or another
    operator domain. ``opset``: the domain's opset version (default: ``opset()`` for
    ai.onnx, 1 otherwise). ``num_outputs``: how many of the op's outputs to compute
    (default: its required outputs; Split's count follows from its attributes or inputs).
    """
    if opset is None:
        opset = LATEST_ONNX_OPSET if not domain or domain == "ai.onnx" else 1
    if num_outputs is None:
        num_outputs = _DEFAULT_OUTPUTS.get(op_type, 1) if not domain else 1
        if num_outputs == 0:
            num_outputs = _split_outputs(op_type, inputs, attributes)
    result = _run(op_type, inputs, attributes, domain, opset, num_outputs)
    if result is None:  # something needs converting first: the slow path
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"inputs must be a list or tuple, not {type(inputs).__name__}")
        inputs = [_convert_input(i, x, inputs) for i, x in enumerate(inputs)]
        if attributes is not None:
            if not isinstance(attributes, dict):
                raise TypeError("attributes must be a dict (or None)")
            attributes = {k: _convert_attribute(k, v) for k, v in attributes.items()}
        result = _run(op_type, inputs, attributes, domain, opset, num_outputs)
        if result is None:
            raise TypeError(f"[{op_type}] an input or attribute could not be converted")
    if result.__class__ is list:
        return result
    return [_from_result(code, value) for code, value in result]


def _split_outputs(op_type, inputs, attributes):
    """Output count of an op with variadic outputs (Split), from its arguments."""
    attributes = attributes or {}
    if attributes.get("num_outputs") is not None:
        return int(attributes["num_outputs"])
    if attributes.get("split") is not None:
        return len(attributes["split"])
    if len(inputs) > 1 and inputs[1] is not None:
        return int(np.asarray(inputs[1]).size)
    raise TypeError(f"[{op_type}] has a variable number of outputs: pass num_outputs "
                    f"(or the attribute/input that determines it)")
