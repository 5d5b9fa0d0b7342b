"""The names libraries import from onnxruntime.capi.onnxruntime_pybind11_state: the
exception classes and the module-level functions."""

from .._errors import (DeviceReset, EngineError, EPFail, Fail, InvalidArgument,  # noqa: F401
                       InvalidGraph, InvalidProtobuf, ModelLoadCanceled, ModelLoaded,
                       ModelRequiresCompilation, NoModel, NoSuchFile, NotFound, NotImplemented,
                       RuntimeException)
from .._module_api import (disable_telemetry_events, enable_telemetry_events,  # noqa: F401
                           get_build_info, get_version_string, has_collective_ops,
                           register_execution_provider_library, set_default_logger_severity,
                           set_default_logger_verbosity, set_seed,
                           unregister_execution_provider_library)
from .._providers import get_all_providers, get_available_providers, get_device  # noqa: F401
from .._session import (ExecutionMode, GraphOptimizationLevel, InferenceSession,  # noqa: F401
                        ModelMetadata, NodeArg, RunOptions, SessionOptions)
