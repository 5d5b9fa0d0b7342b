"""Runs ort_api_suite.py against onnxruntime and, with only its import changed, nxrt."""

import importlib.util
import os
import sys
import types

import pytest

SUITE = os.path.join(os.path.dirname(__file__), "ort_api_suite.py")
IMPORT_LINE = "import onnxruntime as ort"


def _load(module_name, source):
    module = types.ModuleType(module_name)
    module.__file__ = SUITE
    sys.modules[module_name] = module
    exec(compile(source, SUITE, "exec"), module.__dict__)
    return module


def _suite_for(runtime):
    with open(SUITE) as f:
        source = f.read()
    assert source.count(IMPORT_LINE) == 1
    if runtime == "nxrt":
        source = source.replace(IMPORT_LINE, "import nxrt as ort").replace(
            "from onnxruntime.capi.onnxruntime_pybind11_state", "from nxrt.capi.onnxruntime_pybind11_state")
    return _load(f"ort_api_suite_{runtime}", source)


def _tests(module):
    return sorted(n for n in dir(module) if n.startswith("test_"))


RUNTIMES = ["onnxruntime", "nxrt"]
if importlib.util.find_spec("onnxruntime") is None:  # pragma: no cover
    RUNTIMES = ["nxrt"]
SUITES = {r: _suite_for(r) for r in RUNTIMES}


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", _tests(SUITES["nxrt"]))
def test_compat(runtime, name, request, tmp_path):
    module = SUITES[runtime]
    fn = getattr(module, name)
    import inspect

    kwargs = {}
    params = inspect.signature(fn).parameters
    if "model_path" in params:
        import onnx

        path = tmp_path / "model.onnx"
        onnx.save(module.make_model(), str(path))
        kwargs["model_path"] = str(path)
    fn(**kwargs)
