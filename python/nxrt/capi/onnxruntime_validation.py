"""onnxruntime's start-up checks of its own install, for code that calls them: nxrt has
nothing of the kind to check (no training module, no platform-specific builds to warn of)."""

from .._module_api import cuda_version, package_name, version


def check_distro_info():
    """Nothing to check: nxrt does not warn about untested platforms."""


def check_training_module():
    """False: nxrt has no training module."""
    return False


def get_package_name_and_version_info():
    """(package name, version, CUDA version): ("nxrt", nxrt's version, "")."""
    return package_name, version, cuda_version
