"""Mirror of ``onnxruntime.capi`` so imports of its exception module keep working."""

# Imported with the package, as onnxruntime's are: code may reach them as attributes
# (onnxruntime.capi.onnxruntime_pybind11_state.Fail) without importing them itself.
from . import onnxruntime_pybind11_state, onnxruntime_validation  # noqa: F401
