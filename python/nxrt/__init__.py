"""nxrt: a fast ONNX inference runtime with onnxruntime's Python API.

Swap ``import onnxruntime as ort`` for ``import nxrt as ort`` and existing code runs.
"""

from ._errors import (EngineError, EPFail, Fail, InvalidArgument, InvalidGraph,
                      InvalidProtobuf, ModelLoaded, NoModel, NoSuchFile, NotImplemented,
                      NxrtError, RuntimeException)
from ._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession, ModelMetadata,
                       NodeArg, RunOptions, SessionOptions, get_all_providers,
                       get_available_providers, get_device)
from . import capi  # noqa: F401  (onnxruntime.capi.onnxruntime_pybind11_state names)

__version__ = "0.1.0"

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "ModelMetadata",
    "GraphOptimizationLevel", "ExecutionMode", "get_available_providers", "get_all_providers",
    "get_device", "NxrtError", "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError",
    "RuntimeException", "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph",
    "EPFail", "__version__",
]
