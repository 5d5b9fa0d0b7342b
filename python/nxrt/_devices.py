"""onnxruntime's descriptions of devices, memory and execution-provider devices.

nxrt computes on the CPU only, with one built-in provider, so what these describe that nxrt
has is host memory and that provider: ``get_ep_devices()`` lists it, sessions report CPU
memory for their inputs and outputs. The descriptors themselves (``OrtDevice.make("cuda", 0)``,
``OrtMemoryInfo("Cuda", ...)``) can name other devices, as onnxruntime's can without such a
device; using one for data is refused where it happens. Shared allocators and sync streams,
which nxrt does not have, raise onnxruntime's NotImplemented with the reason."""

import enum
import functools

from . import _nxrt
from ._errors import ort_error, unsupported

# The enums keep onnxruntime's member names and values (its C API's), so values stored or
# compared by code written for onnxruntime mean the same.


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1  # another name of CPU_OUTPUT
    DEFAULT = 0


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtMemoryInfoDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    FPGA = 2
    NPU = 3


class OrtDeviceMemoryType(enum.IntEnum):
    DEFAULT = 0
    HOST_ACCESSIBLE = 5


class OrtHardwareDeviceType(enum.IntEnum):
    CPU = 0
    GPU = 1
    NPU = 2


class OrtExecutionProviderDevicePolicy(enum.IntEnum):
    DEFAULT = 0
    PREFER_CPU = 1
    PREFER_NPU = 2
    PREFER_GPU = 3
    MAX_PERFORMANCE = 4
    MAX_EFFICIENCY = 5
    MIN_OVERALL_POWER = 6


class OrtDeviceVendorId(enum.IntEnum):
    """PCI vendor ids, as onnxruntime numbers device vendors."""

    NONE = 0x0000
    AMD = 0x1002
    NVIDIA = 0x10DE
    ARM = 0x13B5
    MICROSOFT = 0x1414
    HUAWEI = 0x19E5
    QUALCOMM = 0x5143
    INTEL = 0x8086


# OrtDevice.make's device names: (device type, the vendor a name implies or None).
_DEVICE_NAMES = {
    "cpu": (OrtMemoryInfoDeviceType.CPU, None),
    "gpu": (OrtMemoryInfoDeviceType.GPU, None),
    "npu": (OrtMemoryInfoDeviceType.NPU, None),
    "cuda": (OrtMemoryInfoDeviceType.GPU, OrtDeviceVendorId.NVIDIA),
    "dml": (OrtMemoryInfoDeviceType.GPU, OrtDeviceVendorId.MICROSOFT),
    "webgpu": (OrtMemoryInfoDeviceType.GPU, OrtDeviceVendorId.NONE),
    "cann": (OrtMemoryInfoDeviceType.NPU, OrtDeviceVendorId.HUAWEI),
}


class OrtDevice:
    """Describes a device (type, vendor, id, memory type); made with ``OrtDevice.make``."""

    def __init__(self, c_ort_device):
        """Internal constructor: use ``OrtDevice.make(name, device_id)``."""
        if not (isinstance(c_ort_device, tuple) and len(c_ort_device) == 4):
            raise ValueError("OrtDevice objects are made with OrtDevice.make(device_name, "
                             "device_id)")
        self._spec = tuple(int(v) for v in c_ort_device)  # (type, mem type, vendor, id)

    @staticmethod
    def make(ort_device_name, device_id, vendor_id=-1):
        """A device of type `ort_device_name` ("cpu", "cuda", "gpu", "npu", "dml", "webgpu",
        "cann"); `vendor_id` (an OrtDeviceVendorId) when the name implies none."""
        if ort_device_name not in _DEVICE_NAMES:
            raise ValueError(f"Unsupported device type: {ort_device_name!r} (known: "
                             f"{', '.join(_DEVICE_NAMES)})")
        kind, implied = _DEVICE_NAMES[ort_device_name]
        vendor = implied if vendor_id < 0 and implied is not None else max(int(vendor_id), 0)
        return OrtDevice((kind, OrtDeviceMemoryType.DEFAULT, vendor, device_id))

    def device_id(self):
        return self._spec[3]

    def device_type(self):
        """0 for the CPU, 1 a GPU, 2 an FPGA, 3 an NPU (OrtMemoryInfoDeviceType's values)."""
        return self._spec[0]

    def device_vendor_id(self):
        return self._spec[2]

    def device_mem_type(self):
        return self._spec[1]

    def __eq__(self, other):
        return isinstance(other, OrtDevice) and self._spec == other._spec

    def __hash__(self):
        return hash(self._spec)

    def __repr__(self):
        kind = OrtMemoryInfoDeviceType(self._spec[0]).name
        return f"OrtDevice(type={kind}, id={self._spec[3]}, vendor_id={self._spec[2]})"


def is_cpu(device):
    """Whether `device` (an OrtDevice or None) is host memory."""
    return device is None or device.device_type() == OrtMemoryInfoDeviceType.CPU


# OrtMemoryInfo's allocator names: (device type, device memory type, vendor id).
_MEMORY_NAMES = {
    "Cpu": (OrtMemoryInfoDeviceType.CPU, OrtDeviceMemoryType.DEFAULT, OrtDeviceVendorId.NONE),
    "Cuda": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, OrtDeviceVendorId.NVIDIA),
    "CudaPinned": (OrtMemoryInfoDeviceType.CPU, OrtDeviceMemoryType.HOST_ACCESSIBLE,
                   OrtDeviceVendorId.NVIDIA),
    "DML": (OrtMemoryInfoDeviceType.GPU, OrtDeviceMemoryType.DEFAULT, OrtDeviceVendorId.MICROSOFT),
}


class OrtMemoryInfo:
    """Describes memory: allocator name, allocator type, device id and memory type.

    ``OrtMemoryInfo(name, allocator_type, device_id, mem_type)`` knows the names "Cpu",
    "Cuda", "CudaPinned" and "DML"; ``OrtMemoryInfo.create_v2`` describes any device."""

    def __init__(self, name, allocator_type, device_id, mem_type):
        if name not in _MEMORY_NAMES:
            raise ort_error("InvalidArgument",
                            f"unknown allocator name {name!r} (known: {', '.join(_MEMORY_NAMES)}); "
                            f"use OrtMemoryInfo.create_v2 for other devices")
        kind, device_mem_type, vendor = _MEMORY_NAMES[name]
        self._set(name, kind, vendor, device_id, device_mem_type, allocator_type, mem_type)

    def _set(self, name, kind, vendor_id, device_id, device_mem_type, allocator_type, mem_type):
        self._name = str(name)
        self._kind = OrtMemoryInfoDeviceType(kind)
        self._vendor_id = int(vendor_id)
        self._device_id = int(device_id)
        self._device_mem_type = OrtDeviceMemoryType(device_mem_type)
        self._allocator_type = OrtAllocatorType(allocator_type)
        self._mem_type = OrtMemType(mem_type)
        return self

    @staticmethod
    def create_v2(name, device_type, vendor_id, device_id, device_mem_type, alignment,
                  allocator_type):
        """Describes memory of any device (an OrtMemoryInfoDeviceType, a vendor id, an
        OrtDeviceMemoryType); `alignment` is not kept, as onnxruntime's reports none."""
        # As onnxruntime reports it: host-accessible memory is CPU memory to the session.
        host = OrtDeviceMemoryType(device_mem_type) == OrtDeviceMemoryType.HOST_ACCESSIBLE
        info = object.__new__(OrtMemoryInfo)
        return info._set(name, device_type, vendor_id, device_id, device_mem_type,
                         allocator_type, OrtMemType.CPU if host else OrtMemType.DEFAULT)

    @property
    def name(self):
        """The allocator's name ("Cpu" for host memory)."""
        return self._name

    @property
    def device_id(self):
        return self._device_id

    @property
    def mem_type(self):
        return self._mem_type

    @property
    def allocator_type(self):
        return self._allocator_type

    @property
    def device_mem_type(self):
        """DEFAULT (the device's own memory) or HOST_ACCESSIBLE."""
        return self._device_mem_type

    @property
    def device_vendor_id(self):
        return self._vendor_id

    def _key(self):
        return (self._name, self._kind, self._vendor_id, self._device_id, self._device_mem_type,
                self._allocator_type, self._mem_type)

    def __eq__(self, other):
        return isinstance(other, OrtMemoryInfo) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"OrtMemoryInfo(name={self._name!r}, device_id={self._device_id}, "
                f"mem_type={self._mem_type.name}, allocator_type={self._allocator_type.name})")


def is_host_memory(info):
    """Whether the OrtMemoryInfo `info` describes memory the CPU computes on."""
    if not isinstance(info, OrtMemoryInfo):
        raise TypeError(f"memory_info must be an OrtMemoryInfo, not {type(info).__name__}")
    return (info._kind == OrtMemoryInfoDeviceType.CPU
            or info.device_mem_type == OrtDeviceMemoryType.HOST_ACCESSIBLE)


def cpu_memory_info(arena):
    """What a session reports for its inputs and outputs: host memory (arena or not, as
    SessionOptions.enable_cpu_mem_arena says, as onnxruntime reports it)."""
    kind = OrtAllocatorType.ORT_ARENA_ALLOCATOR if arena else OrtAllocatorType.ORT_DEVICE_ALLOCATOR
    return OrtMemoryInfo("Cpu", kind, 0, OrtMemType.DEFAULT)


_ARENA_KEYS = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes",
               "max_dead_bytes_per_chunk", "initial_growth_chunk_size_bytes",
               "max_power_of_two_extend_bytes")


class OrtArenaCfg:
    """Settings of an arena allocator: ``OrtArenaCfg(max_mem, arena_extend_strategy,
    initial_chunk_size_bytes, max_dead_bytes_per_chunk)`` or ``OrtArenaCfg({key: value})``
    with the attribute names as keys; -1 means onnxruntime's default.

    nxrt plans each session's memory itself and has no arena to configure: the object holds
    the values, and create_and_register_allocator, which would use them, raises."""

    def __init__(self, *args):
        values = dict.fromkeys(_ARENA_KEYS, -1)
        if len(args) == 1 and isinstance(args[0], dict):
            for key, value in args[0].items():
                if key not in values:
                    raise ort_error("InvalidArgument", f"unknown OrtArenaCfg option {key!r} "
                                                       f"(known: {', '.join(_ARENA_KEYS)})")
                values[key] = int(value)
        elif len(args) == 4:
            values.update(zip(_ARENA_KEYS, (int(a) for a in args)))
        else:
            raise TypeError("OrtArenaCfg takes (max_mem, arena_extend_strategy, "
                            "initial_chunk_size_bytes, max_dead_bytes_per_chunk) or one dict")
        self.__dict__.update(values)

    def __repr__(self):
        return "OrtArenaCfg(" + ", ".join(f"{k}={self.__dict__[k]}" for k in _ARENA_KEYS) + ")"


def _cpu_vendor():
    """(vendor name, PCI vendor id) of this machine's CPU, from /proc/cpuinfo where there is
    one; ("", 0) when unknown."""
    known = {"GenuineIntel": ("Intel", OrtDeviceVendorId.INTEL),
             "AuthenticAMD": ("AMD", OrtDeviceVendorId.AMD)}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    name, vendor_id = known.get(line.split(":", 1)[1].strip(), ("", 0))
                    return name, int(vendor_id)
    except OSError:
        pass
    return "", 0


def _no_constructor(cls):
    raise TypeError(f"{cls.__name__} has no constructor: the devices come from "
                    f"get_ep_devices()")


class OrtHardwareDevice:
    """A hardware device (for nxrt, the CPU): its type, vendor, vendor id, id, metadata."""

    def __init__(self, *args, **kwargs):
        _no_constructor(OrtHardwareDevice)

    @property
    def type(self):
        return self._type

    @property
    def vendor(self):
        return self._vendor

    @property
    def vendor_id(self):
        return self._vendor_id

    @property
    def device_id(self):
        return 0

    @property
    def metadata(self):
        return {}


class OrtEpDevice:
    """An execution provider and the device it runs on. nxrt has one: CPUExecutionProvider
    on the CPU (``get_ep_devices()``)."""

    def __init__(self, *args, **kwargs):
        _no_constructor(OrtEpDevice)

    @property
    def ep_name(self):
        return "CPUExecutionProvider"

    @property
    def ep_vendor(self):
        return "nxrt"

    @property
    def ep_metadata(self):
        return {"version": _nxrt.__version__}

    @property
    def ep_options(self):
        return {}

    @property
    def device(self):
        return self._device

    def memory_info(self, memory_type):
        """None, as onnxruntime answers for its CPU provider: the provider has no device
        memory of its own; its tensors are in host memory."""
        OrtDeviceMemoryType(memory_type)
        return None

    def create_sync_stream(self):
        raise unsupported("sync streams (OrtEpDevice.create_sync_stream)",
                          "CPUExecutionProvider computes synchronously, on the calling thread's "
                          "data, and has no streams")


@functools.lru_cache(maxsize=None)
def _cpu_ep_device():
    hardware = object.__new__(OrtHardwareDevice)
    hardware._type = OrtHardwareDeviceType.CPU
    hardware._vendor, hardware._vendor_id = _cpu_vendor()
    device = object.__new__(OrtEpDevice)
    device._device = hardware
    return device


def get_ep_devices():
    """The execution-provider devices nxrt can run on: CPUExecutionProvider on the CPU."""
    return [_cpu_ep_device()]


def copy_tensors(src, dst, stream=None):
    """Copies the data of each OrtValue in `src` into the OrtValue at the same position of
    `dst` (same element type and shape; both in CPU memory, where nxrt keeps them)."""
    if stream is not None:
        raise unsupported("sync streams (copy_tensors with a stream)",
                          "nxrt copies host memory synchronously; pass stream=None")
    src, dst = list(src), list(dst)
    if len(src) != len(dst):
        raise ort_error("InvalidArgument", f"copy_tensors needs as many destinations as "
                                           f"sources: got {len(src)} and {len(dst)}")
    for i, (s, d) in enumerate(zip(src, dst)):
        if not (hasattr(s, "_native_tensor") and hasattr(d, "_native_tensor")):
            raise TypeError(f"copy_tensors copies OrtValues; item {i} is "
                            f"{type(s).__name__} -> {type(d).__name__}")
        d._native_tensor().copy_from(s._native_tensor())


def create_and_register_allocator(mem_info, arena_cfg):
    raise unsupported("shared allocators (create_and_register_allocator)",
                      "each nxrt session plans and allocates its own CPU memory")


def create_and_register_allocator_v2(provider_type, mem_info, provider_options, arena_cfg):
    raise unsupported("shared allocators (create_and_register_allocator_v2)",
                      "each nxrt session plans and allocates its own CPU memory")
