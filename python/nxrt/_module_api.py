"""onnxruntime's module-level functions and constants, for code that calls them on the
module it imported as onnxruntime.

nxrt writes no log and sends no telemetry, so the logger and telemetry switches have
nothing to switch; they check their arguments as onnxruntime does. What nxrt cannot do
(plug-in execution provider libraries) raises onnxruntime's exception type with the
reason, never an AttributeError."""

import platform
import sys

from ._errors import Fail, ort_error
from . import _nxrt

version = _nxrt.__version__
package_name = "nxrt"
cuda_version = ""  # the CPU package: no CUDA build


def disable_telemetry_events():
    """Accepted for compatibility: nxrt sends no telemetry."""


def enable_telemetry_events():
    """Accepted for compatibility: nxrt sends no telemetry, and this does not start any."""


def _check_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}(): incompatible function arguments: expected an int, "
                        f"got {type(value).__name__}")


def set_default_logger_severity(severity):
    """Checks the severity (0 verbose .. 4 fatal) as onnxruntime does; nxrt writes no log
    (errors are raised as exceptions), so there is nothing else to set."""
    _check_int("set_default_logger_severity", severity)
    if not 0 <= severity <= 4:
        raise RuntimeError(f"Invalid logging severity level {severity}: expected 0 (verbose) "
                           f"to 4 (fatal)")


def set_default_logger_callback(callback, severity=2):
    """Checks the callback (a callable, or None) and severity as onnxruntime does. nxrt
    writes no log messages (it raises its errors), so the callback is never called."""
    if callback is not None and not callable(callback):
        raise TypeError(f"the logger callback must be callable or None, not "
                        f"{type(callback).__name__}")
    set_default_logger_severity(severity)


def set_default_logger_verbosity(verbosity):
    """Accepted for compatibility (onnxruntime's VLOG level); nxrt writes no log."""
    _check_int("set_default_logger_verbosity", verbosity)


_global_thread_pool_sizes = [0, 0]  # intra-op, inter-op; 0: nxrt's default


def set_global_thread_pool_sizes(intra_op_num_threads=0, inter_op_num_threads=0):
    """Sets the thread pool sizes of sessions whose SessionOptions.use_per_session_threads
    is False. nxrt has no pools shared between sessions: each such session gets its own
    pools, of these sizes (0 lets nxrt choose)."""
    for name, value in (("intra_op_num_threads", intra_op_num_threads),
                        ("inter_op_num_threads", inter_op_num_threads)):
        _check_int("set_global_thread_pool_sizes", value)
        if value < 0:
            raise ort_error("InvalidArgument", f"{name} must be 0 or more, not {value}")
    _global_thread_pool_sizes[:] = [intra_op_num_threads, inter_op_num_threads]


def global_thread_pool_sizes():
    """(intra-op, inter-op) sizes of set_global_thread_pool_sizes()."""
    return tuple(_global_thread_pool_sizes)


def set_seed(seed):
    """Seeds, process-wide, the random ops that have no seed attribute (RandomNormal,
    RandomUniform and their -Like forms, Bernoulli, Multinomial): after it, runs draw the
    same values in the same order."""
    _check_int("set_seed", seed)
    if not -(2**63) <= seed < 2**63:
        raise TypeError(f"set_seed(): the seed must fit in 64 bits, got {seed}")
    _nxrt.set_seed(seed)


def get_version_string():
    """nxrt's version."""
    return version


def get_build_info():
    """A one-line description of this build."""
    return (f"nxrt Build Info: version={version}, python={platform.python_version()}, "
            f"machine={platform.machine()}, providers=CPUExecutionProvider")


def has_collective_ops():
    """False: nxrt has no collective (multi-device) ops."""
    return False


def preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):
    """Accepted for compatibility: the CPU package loads no CUDA, cuDNN or MSVC DLLs."""


def print_debug_info():
    """Prints the version, build and platform, to paste into a bug report."""
    print(f"nxrt {version}")
    print(get_build_info())
    print(f"python {sys.version}")
    print(f"platform {platform.platform()}")


def register_execution_provider_library(registration_name, path):
    raise Fail(f"nxrt cannot load execution provider libraries ('{registration_name}' from "
               f"'{path}'): its CPU provider is built in, and there are no plug-in providers")


def unregister_execution_provider_library(registration_name):
    raise Fail(f"nxrt has no execution provider library registered as '{registration_name}': "
               f"it cannot load them")
