"""Discovery and execution of the official ONNX backend test cases in ../shared.

Used by test_onnx_backend.py (pytest) and update_known_failures.py (regenerates the
known-failure list from a real run, with each failure's actual error as its reason).
"""

import glob
import json
import os

import numpy as np
import onnx
from onnx import numpy_helper

import nxrt

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "onnx-backend-data")
ROOT = os.path.normpath(ROOT)
SUITES = ["node", "simple", "pytorch-converted", "pytorch-operator", "light"]
KNOWN_FAILURES = os.path.join(os.path.dirname(__file__), "known_failures.txt")


def discover():
    """Sorted list of (suite, case name, case path)."""
    cases = []
    for suite in SUITES:
        folder = os.path.join(ROOT, suite)
        if not os.path.isdir(folder):
            continue
        if suite == "light":
            for model in sorted(glob.glob(os.path.join(folder, "light_*.onnx"))):
                name = os.path.basename(model)[: -len(".onnx")]
                cases.append((suite, name, model))
            continue
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if os.path.isfile(os.path.join(path, "model.onnx")):
                cases.append((suite, name, path))
    return cases


def load_known_failures():
    """{case id: reason} from known_failures.txt ("suite/case  # reason" lines)."""
    known = {}
    if not os.path.exists(KNOWN_FAILURES):
        return known
    with open(KNOWN_FAILURES) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            case, _, reason = line.partition("#")
            known[case.strip()] = reason.strip()
    return known


def _read_proto(path, type_proto):
    """A test data file as numpy (tensor) or Python list (sequence)."""
    with open(path, "rb") as f:
        data = f.read()
    kind = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return [numpy_helper.to_array(t) for t in seq.tensor_values]
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        if opt.HasField("sequence_value"):
            return [numpy_helper.to_array(t) for t in opt.sequence_value.tensor_values]
        return numpy_helper.to_array(opt.tensor_value) if opt.HasField("tensor_value") else None
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def _light_inputs(model):
    inputs = {}
    initializers = {i.name for i in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in inp.type.tensor_type.shape.dim]
        n = int(np.prod(dims))
        inputs[inp.name] = (np.arange(n, dtype=np.float32) / n).reshape(dims)
    return inputs


def _compare(name, expected, actual, rtol, atol):
    if isinstance(expected, list):
        assert isinstance(actual, list), f"output '{name}': expected a sequence"
        assert len(actual) == len(expected), (
            f"output '{name}': sequence of {len(actual)}, expected {len(expected)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            _compare(f"{name}[{i}]", e, a, rtol, atol)
        return
    if expected is None:
        assert actual is None, f"output '{name}': expected an empty optional"
        return
    actual = np.asarray(actual)
    if expected.dtype == object or expected.dtype.kind in "US":
        np.testing.assert_array_equal(actual.astype(object), expected.astype(object), err_msg=name)
        return
    assert actual.dtype == expected.dtype, (
        f"output '{name}': dtype {actual.dtype}, expected {expected.dtype}")
    assert actual.shape == expected.shape, (
        f"output '{name}': shape {actual.shape}, expected {expected.shape}")
    if expected.dtype.kind == "V" and str(expected.dtype) != "bfloat16":  # float8: exact
        np.testing.assert_array_equal(actual.astype(np.float32), expected.astype(np.float32),
                                      err_msg=name, strict=True)
        return
    if expected.dtype.kind in "fc" or str(expected.dtype) == "bfloat16":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=name)


def run_case(suite, name, path, session_for=nxrt.InferenceSession):
    """Runs one case; raises (AssertionError or an nxrt error) when it fails.

    session_for(model path) makes the session (a test may run a rewritten model instead).
    """
    rtol, atol = 1e-3, 1e-7
    if suite == "light":
        model = onnx.load(path, load_external_data=False)
        session = session_for(path)
        feeds = _light_inputs(model)
        expected_path = path[: -len(".onnx")] + "_output_0.pb"
        expected = [_read_proto(expected_path, None)]
        outputs = session.run(None, feeds)
        for out, exp, info in zip(outputs, expected, model.graph.output):
            _compare(info.name, exp, out, rtol, atol)
        return
    model_path = os.path.join(path, "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    data_json = os.path.join(path, "data.json")
    if os.path.exists(data_json):
        with open(data_json) as f:
            meta = json.load(f)
        rtol, atol = meta.get("rtol", rtol), meta.get("atol", atol)
    session = session_for(model_path)
    initializers = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    sets = sorted(glob.glob(os.path.join(path, "test_data_set_*")))
    if not sets:
        raise AssertionError("case has no test data")
    for data_set in sets:
        n_in = len(glob.glob(os.path.join(data_set, "input_*.pb")))
        n_out = len(glob.glob(os.path.join(data_set, "output_*.pb")))
        feeds = {}
        for k in range(n_in):
            info = graph_inputs[k] if k < len(graph_inputs) else model.graph.input[k]
            value = _read_proto(os.path.join(data_set, f"input_{k}.pb"), info.type)
            feeds[info.name] = value
        expected = [_read_proto(os.path.join(data_set, f"output_{k}.pb"),
                                model.graph.output[k].type) for k in range(n_out)]
        outputs = session.run(None, feeds)
        assert len(outputs) == len(expected), f"{len(outputs)} outputs, expected {len(expected)}"
        for out, exp, info in zip(outputs, expected, model.graph.output):
            _compare(info.name, exp, out, rtol, atol)
