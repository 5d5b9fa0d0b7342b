"""Run inside a clean virtual environment that has only the nxrt wheel, numpy and
onnxruntime installed (scripts/test_wheel.sh makes it): the drop-in API must work from the
installed package, give onnxruntime's results, and carry the files C users need.
Usage: python check_installed.py SHARED_MODELS_DIR"""

import os
import pathlib
import sys
import tempfile

import numpy as np
import onnxruntime

import nxrt


def check_is_installed_copy():
    package = pathlib.Path(nxrt.__file__).resolve().parent
    assert "site-packages" in package.parts, f"nxrt imported from {package}, not the wheel"
    for relative in ("include/nxrt/nxrt.h", "include/nxrt/nxrt.hpp", "lib/libnxrt.so",
                     "lib/pkgconfig/nxrt.pc", "lib/cmake/nxrt/nxrtConfig.cmake"):
        assert (package / relative).is_file(), f"the wheel lacks nxrt/{relative}"
    print(f"installed package: {package}")


def vad_feeds(rng):
    return {"input": rng.uniform(-1, 1, (1, 512)).astype(np.float32),
            "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64)}


def check_drop_in(models):
    path = os.path.join(models, "silero_vad_v5.onnx")
    ours = nxrt.InferenceSession(path, providers=["CPUExecutionProvider"])
    theirs = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert ours.get_providers() == theirs.get_providers()
    assert [i.name for i in ours.get_inputs()] == [i.name for i in theirs.get_inputs()]
    assert [o.name for o in ours.get_outputs()] == [o.name for o in theirs.get_outputs()]
    rng = np.random.default_rng(0)
    for _ in range(4):  # a few frames, the state carried as an application would
        feeds = vad_feeds(rng)
        got = ours.run(None, feeds)
        want = theirs.run(None, feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
    # onnxruntime's error classes, from the module path libraries import them by.
    from nxrt.capi.onnxruntime_pybind11_state import InvalidArgument
    try:
        ours.run(None, {"input": np.zeros((1, 512), np.float32)})
    except InvalidArgument as error:
        assert "state" in str(error) or "sr" in str(error), str(error)
    else:
        raise AssertionError("a run without its state input did not fail")
    print("drop-in InferenceSession on silero_vad_v5: same outputs as onnxruntime")


def check_extras(models):
    model = nxrt.load(os.path.join(models, "silero_vad_v5.onnx"))
    feeds = vad_feeds(np.random.default_rng(1))
    out = model(**feeds)
    assert out.output.shape == (1, 1) and out.stateN.shape == (2, 1, 128), out
    print(f"nxrt {nxrt.__version__}: nxrt.load and calling the session work")


def check_genai_engine(tmp):
    """A wheel built where nlohmann-json is installed (as here) carries the C++ generation
    engine under nxrt.genai.Engine; its errors reach Python as GenAIError."""
    from nxrt import _nxrt
    from nxrt.genai.engine import GenAIError

    assert hasattr(_nxrt, "CppEngine"), "the wheel's nxrt has no C++ generation engine"
    with open(os.path.join(tmp, "genai_config.json"), "w") as f:
        f.write('{"model": {}}')
    try:
        _nxrt.CppEngine.load(tmp, 1, {})
    except GenAIError as error:
        assert "genai_config.json" in str(error), str(error)
    else:
        raise AssertionError("a genai_config.json without a decoder loaded")
    print("nxrt.genai: the C++ engine is in the wheel")


if __name__ == "__main__":
    check_is_installed_copy()
    check_drop_in(sys.argv[1])
    check_extras(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        check_genai_engine(tmp)
