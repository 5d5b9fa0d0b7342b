"""nxrt: a fast ONNX inference runtime with onnxruntime's Python API.

Swap ``import onnxruntime as ort`` for ``import nxrt as ort`` and existing code runs.
"""

from ._errors import (EngineError, EPFail, Fail, InvalidArgument, InvalidGraph,
                      InvalidProtobuf, ModelLoaded, NoModel, NoSuchFile, NotImplemented,
                      NxrtError, RuntimeException)
from ._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession, ModelMetadata,
                       NodeArg, RunOptions, SessionOptions, get_all_providers,
                       get_available_providers, get_device)
from ._call import BoundOutputs, Outputs, load
from ._value import NxrtValue, OrtValue
from ._iobinding import IOBinding, SessionIOBinding
from ._module_api import (cuda_version, disable_telemetry_events, enable_telemetry_events,
                          get_build_info, get_version_string, has_collective_ops,
                          package_name, preload_dlls, print_debug_info,
                          register_execution_provider_library, set_default_logger_severity,
                          set_default_logger_verbosity, set_seed,
                          unregister_execution_provider_library, version)
from . import capi  # noqa: F401  (onnxruntime.capi.onnxruntime_pybind11_state names)

__version__ = "0.1.0"

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "ModelMetadata",
    "GraphOptimizationLevel", "ExecutionMode", "get_available_providers", "get_all_providers",
    "get_device", "NxrtError", "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError",
    "RuntimeException", "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph",
    "EPFail", "__version__", "load", "Outputs", "BoundOutputs",
    "NxrtValue", "OrtValue", "IOBinding", "SessionIOBinding",
    "disable_telemetry_events", "enable_telemetry_events", "set_default_logger_severity",
    "set_default_logger_verbosity", "set_seed", "get_version_string", "get_build_info",
    "has_collective_ops", "preload_dlls", "print_debug_info",
    "register_execution_provider_library", "unregister_execution_provider_library",
    "version", "package_name", "cuda_version",
]


def __getattr__(name):
    # nxrt.eager and nxrt.ops (about 200 generated functions) load on first use, so a
    # plain `import nxrt` stays fast.
    if name in ("eager", "ops"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'nxrt' has no attribute {name!r}")
