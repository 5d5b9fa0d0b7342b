"""nxrt: a fast ONNX inference runtime with onnxruntime's Python API.

Swap ``import onnxruntime as ort`` for ``import nxrt as ort`` and existing code runs.
"""

from ._errors import (EngineError, EPFail, Fail, InvalidArgument, InvalidGraph,
                      InvalidProtobuf, ModelLoaded, NoModel, NoSuchFile, NotImplemented,
                      NxrtError, RuntimeException)
from ._providers import get_all_providers, get_available_providers, get_device
from ._session import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, InferenceSession,
                       ModelMetadata, NodeArg, RunOptions, SessionOptions, load)
from ._call import BoundOutputs, Outputs
from ._value import NxrtValue, OrtValue
from ._iobinding import IOBinding, SessionIOBinding
from ._module_api import (cuda_version, disable_telemetry_events, enable_telemetry_events,
                          get_build_info, get_version_string, has_collective_ops,
                          package_name, preload_dlls, print_debug_info,
                          register_execution_provider_library, set_default_logger_callback,
                          set_default_logger_severity, set_default_logger_verbosity, set_seed,
                          set_global_thread_pool_sizes, unregister_execution_provider_library,
                          version)
from ._devices import (OrtAllocatorType, OrtArenaCfg, OrtDevice, OrtDeviceMemoryType,
                       OrtDeviceVendorId, OrtEpDevice, OrtExecutionProviderDevicePolicy,
                       OrtHardwareDevice, OrtHardwareDeviceType, OrtMemoryInfo,
                       OrtMemoryInfoDeviceType, OrtMemType, copy_tensors,
                       create_and_register_allocator, create_and_register_allocator_v2,
                       get_ep_devices)
from ._unsupported import (AdapterFormat, LoraAdapter, ModelCompiler, ModelPackage,
                           ModelPackageComponentContext, ModelPackageContext, ModelPackageOptions,
                           ModelPackageWriteMode, OrtCompileApiFlags, OrtEpAssignedNode,
                           OrtEpAssignedSubgraph, OrtEpContextData, OrtEpContextDataBuffer,
                           OrtExternalInitializerInfo, OrtSparseFormat, OrtSyncStream, SparseTensor)
from . import capi  # noqa: F401  (onnxruntime.capi.onnxruntime_pybind11_state names)
from .capi import onnxruntime_validation  # noqa: F401  (onnxruntime has it at top level too)

# onnxruntime's namespace also holds these two by accident of its own imports (the standard
# contextlib, and None once its native module imported); mirrored so no name is missing.
import contextlib  # noqa: F401

import_capi_exception = None

__version__ = version  # the native module's, one source

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
    "version", "package_name", "cuda_version", "install_as_onnxruntime",
    "uninstall_as_onnxruntime", "ExecutionOrder", "set_default_logger_callback",
    "set_global_thread_pool_sizes",
    # Devices and memory (nxrt's: the CPU and host memory).
    "OrtAllocatorType", "OrtArenaCfg", "OrtDevice", "OrtDeviceMemoryType", "OrtDeviceVendorId",
    "OrtEpDevice", "OrtExecutionProviderDevicePolicy", "OrtHardwareDevice",
    "OrtHardwareDeviceType", "OrtMemoryInfo", "OrtMemoryInfoDeviceType", "OrtMemType",
    "copy_tensors", "create_and_register_allocator", "create_and_register_allocator_v2",
    "get_ep_devices",
    # Features nxrt does not have: their enums and records are plain values, the rest raise
    # NotImplemented when made or used.
    "AdapterFormat", "LoraAdapter", "ModelCompiler", "ModelPackage",
    "ModelPackageComponentContext", "ModelPackageContext", "ModelPackageOptions",
    "ModelPackageWriteMode", "OrtCompileApiFlags", "OrtEpAssignedNode", "OrtEpAssignedSubgraph",
    "OrtEpContextData", "OrtEpContextDataBuffer", "OrtExternalInitializerInfo", "OrtSparseFormat",
    "OrtSyncStream", "SparseTensor",
]


_ONNXRUNTIME_NAMES = ("onnxruntime", "onnxruntime.capi", "onnxruntime.capi.onnxruntime_pybind11_state",
                      "onnxruntime.capi._pybind_state", "onnxruntime.capi.onnxruntime_validation")


def install_as_onnxruntime():
    """Makes ``import onnxruntime`` (and its ``capi`` submodules) give nxrt, so a library
    written for onnxruntime runs on nxrt unchanged. Call it before importing the library;
    modules that already imported onnxruntime keep the one they have.
    ``uninstall_as_onnxruntime()`` undoes it."""
    import sys

    from .capi import onnxruntime_pybind11_state as state

    saved = sys.modules.get("nxrt._replaced_onnxruntime")
    if saved is None:
        sys.modules["nxrt._replaced_onnxruntime"] = {n: sys.modules.get(n) for n in _ONNXRUNTIME_NAMES}
    sys.modules["onnxruntime"] = sys.modules[__name__]
    sys.modules["onnxruntime.capi"] = capi
    sys.modules["onnxruntime.capi.onnxruntime_pybind11_state"] = state
    sys.modules["onnxruntime.capi._pybind_state"] = state
    sys.modules["onnxruntime.capi.onnxruntime_validation"] = onnxruntime_validation


def uninstall_as_onnxruntime():
    """Undoes install_as_onnxruntime(): ``import onnxruntime`` imports onnxruntime again
    (or whatever those module names held before)."""
    import sys

    saved = sys.modules.pop("nxrt._replaced_onnxruntime", None)
    if saved is None:
        return
    for name, module in saved.items():
        if module is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = module


def __getattr__(name):
    # nxrt.eager and nxrt.ops (about 200 generated functions) load on first use, so a
    # plain `import nxrt` stays fast.
    if name in ("eager", "ops"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'nxrt' has no attribute {name!r}")
