"""The names libraries import from onnxruntime.capi.onnxruntime_pybind11_state: the
exception classes, the module-level functions, and the classes and enums onnxruntime defines
there."""

from .._errors import (DeviceReset, EngineError, EPFail, Fail, InvalidArgument,  # noqa: F401
                       InvalidGraph, InvalidProtobuf, ModelLoadCanceled, ModelLoaded,
                       ModelRequiresCompilation, NoModel, NoSuchFile, NotFound, NotImplemented,
                       RuntimeException)
from .._devices import (OrtAllocatorType, OrtArenaCfg, OrtDeviceMemoryType,  # noqa: F401
                        OrtEpDevice, OrtExecutionProviderDevicePolicy, OrtHardwareDevice,
                        OrtHardwareDeviceType, OrtMemoryInfo, OrtMemoryInfoDeviceType,
                        OrtMemType, create_and_register_allocator,
                        create_and_register_allocator_v2, get_ep_devices)
from .._module_api import (disable_telemetry_events, enable_telemetry_events,  # noqa: F401
                           get_build_info, get_version_string, has_collective_ops,
                           register_execution_provider_library, set_default_logger_callback,
                           set_default_logger_severity, set_default_logger_verbosity, set_seed,
                           set_global_thread_pool_sizes, unregister_execution_provider_library)
from .._providers import get_all_providers, get_available_providers, get_device  # noqa: F401
from .._session import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel,  # noqa: F401
                        InferenceSession, ModelMetadata, NodeArg, RunOptions, SessionOptions)
from .._unsupported import (LoraAdapter, ModelPackage, ModelPackageComponentContext,  # noqa: F401
                            ModelPackageContext, ModelPackageOptions, ModelPackageWriteMode,
                            OrtCompileApiFlags, OrtEpAssignedNode, OrtEpAssignedSubgraph,
                            OrtEpContextData, OrtEpContextDataBuffer, OrtExternalInitializerInfo,
                            OrtSparseFormat, OrtSyncStream)
