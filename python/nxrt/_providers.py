"""Execution providers: which this build has, and what a providers list or a device asks
for. A leaf module (it imports nothing of nxrt), shared by the session,
the call layer and the module-level functions."""

import re

_AVAILABLE_PROVIDERS = ["CPUExecutionProvider"]


def get_available_providers():
    """Execution providers this build can use, in priority order."""
    return list(_AVAILABLE_PROVIDERS)


def get_all_providers():
    """Every execution provider nxrt knows of (available or not)."""
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def get_device():
    """The device nxrt computes on by default ("CPU")."""
    return "CPU"


def parse_providers(providers, provider_options):
    if providers is None:
        return ["CPUExecutionProvider"], [{}]
    if isinstance(providers, str):
        providers = [providers]
    names, options = [], []
    for i, entry in enumerate(providers):
        if isinstance(entry, (tuple, list)):
            if len(entry) != 2 or not isinstance(entry[1], dict):
                raise ValueError("a provider given as a tuple must be (name, options dict)")
            name, opts = entry
        else:
            name, opts = entry, (provider_options[i] if provider_options else {})
        if name not in _AVAILABLE_PROVIDERS:
            known = "known" if name in get_all_providers() else "unknown"
            raise ValueError(
                f"{known} execution provider '{name}' is not available in this build of nxrt; "
                f"available providers: {get_available_providers()}")
        names.append(name)
        options.append({str(k): str(v) for k, v in opts.items()})
    if not names:
        raise ValueError("providers must name at least one execution provider")
    return names, options


DEVICE_PATTERN = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def providers_for_device(device):
    """The providers list that ``device`` ("cpu", "cuda", "cuda:N") asks for.

    Raises ValueError for a malformed device and for one this build cannot compute on:
    a session never falls back to the CPU silently when a GPU was asked for."""
    if not isinstance(device, str):
        if hasattr(device, "type"):  # torch.device and alikes print as "cuda:0"
            device = str(device)
        else:
            raise TypeError(f"device must be a str such as 'cpu', 'cuda' or 'cuda:0', not "
                            f"{type(device).__name__}")
    m = DEVICE_PATTERN.match(device.strip().lower())
    if not m:
        raise ValueError(f"unknown device {device!r}; use 'cpu', 'cuda' or 'cuda:N' "
                         f"(N = GPU index)")
    kind, index = m.group(1), int(m.group(2) or 0)
    available = get_available_providers()
    if kind == "cpu":
        if index != 0:
            raise ValueError(f"device {device!r}: there is only one CPU device, 'cpu' (or "
                             f"'cpu:0')")
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in available:
        raise ValueError(
            f"device {device!r} is not available: this build of nxrt has no CUDA execution "
            f"provider (available providers: {available}); use device='cpu', or install a "
            f"build of nxrt with CUDA support")
    return [("CUDAExecutionProvider", {"device_id": str(index)}), "CPUExecutionProvider"]
