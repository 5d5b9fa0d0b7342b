"""Exception classes, named as onnxruntime names them.

Each also derives from the built-in exception a Python user would expect, so
``except FileNotFoundError`` and ``except ValueError`` work as well as
``except nxrt.NoSuchFile``.
"""


class NxrtError(Exception):
    """Base class of every error raised by the nxrt native core."""


class Fail(NxrtError, RuntimeError):
    """A generic failure (also raised when a run is terminated)."""


class InvalidArgument(NxrtError, ValueError):
    """A bad argument: unknown input or output name, wrong dtype, rank or dims."""


class NoSuchFile(NxrtError, FileNotFoundError):
    """The model file does not exist or is not a regular file."""


class NoModel(NxrtError, RuntimeError):
    """No model was loaded."""


class EngineError(NxrtError, RuntimeError):
    """An internal error of the runtime."""


class RuntimeException(NxrtError, RuntimeError):
    """An error while running the model (out of memory, failed kernel)."""


class InvalidProtobuf(NxrtError, ValueError):
    """The model bytes are not a valid ONNX protobuf (truncated or corrupt)."""


class ModelLoaded(NxrtError, RuntimeError):
    """A model was already loaded."""


class NotImplemented(NxrtError, NotImplementedError):  # noqa: A001 - onnxruntime's name
    """The model uses an op, opset or dtype that nxrt does not implement."""


class InvalidGraph(NxrtError, ValueError):
    """The graph is malformed: missing producers, cycles, duplicate names, bad attributes."""


class EPFail(NxrtError, RuntimeError):
    """An execution provider failed."""


class ModelLoadCanceled(NxrtError, RuntimeError):
    """Loading the model was canceled (onnxruntime's name; nxrt does not cancel loads)."""


class ModelRequiresCompilation(NxrtError, RuntimeError):
    """The model must be compiled for an execution provider first (onnxruntime's name)."""


class NotFound(NxrtError, LookupError):
    """A named thing (a provider, an option) was not found."""


class DeviceReset(NxrtError, RuntimeError):
    """The device was reset (onnxruntime's name, for GPU providers)."""


ALL = {
    cls.__name__: cls
    for cls in (Fail, InvalidArgument, NoSuchFile, NoModel, EngineError, RuntimeException,
                InvalidProtobuf, ModelLoaded, NotImplemented, InvalidGraph, EPFail,
                ModelLoadCanceled, ModelRequiresCompilation, NotFound, DeviceReset)
}

# onnxruntime's status code number and spelling of each class, for errors raised in Python
# with the message format that code handling onnxruntime's errors parses.
_ORT_CODES = {
    "Fail": (1, "FAIL"), "InvalidArgument": (2, "INVALID_ARGUMENT"),
    "NoSuchFile": (3, "NO_SUCHFILE"), "NoModel": (4, "NO_MODEL"),
    "EngineError": (5, "ENGINE_ERROR"), "RuntimeException": (6, "RUNTIME_EXCEPTION"),
    "InvalidProtobuf": (7, "INVALID_PROTOBUF"), "ModelLoaded": (8, "MODEL_LOADED"),
    "NotImplemented": (9, "NOT_IMPLEMENTED"), "InvalidGraph": (10, "INVALID_GRAPH"),
    "EPFail": (11, "EP_FAIL"), "ModelLoadCanceled": (12, "MODEL_LOAD_CANCELED"),
    "ModelRequiresCompilation": (13, "MODEL_REQUIRES_COMPILATION"), "NotFound": (14, "NOT_FOUND"),
}


def ort_error(name, message):
    """An exception of the class onnxruntime names `name`, its text in onnxruntime's format
    "[ONNXRuntimeError] : <code> : <CODE_NAME> : <message>"."""
    code, code_name = _ORT_CODES[name]
    return ALL[name](f"[ONNXRuntimeError] : {code} : {code_name} : {message}")


def unsupported(feature, reason):
    """onnxruntime's NotImplemented for a feature of its API that nxrt does not have."""
    return ort_error("NotImplemented", f"nxrt does not support {feature}: {reason}")
