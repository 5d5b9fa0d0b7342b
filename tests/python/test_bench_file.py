"""bench/bench_file.py: random feeds follow the model's declared inputs (symbolic dims from
--dim, whole shapes from --shape, dtypes as declared), and a run prints one row per thread
count."""
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)
import bench_file  # noqa: E402


def _model(tmp_path):
    nodes = [helper.make_node("Cast", ["ids"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "f"], ["y"])]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = str(tmp_path / "add.onnx")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def test_feeds_follow_declared_inputs(tmp_path):
    session = ort.InferenceSession(_model(tmp_path), providers=["CPUExecutionProvider"])
    feeds = bench_file.random_feeds(session, {"ids": [4, 3]}, {"batch": 5})
    assert feeds["x"].shape == (5, 3) and feeds["x"].dtype == np.float32
    assert feeds["ids"].shape == (4, 3) and feeds["ids"].dtype == np.int64


def test_prints_a_row_per_thread_count(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, os.path.join(BENCH, "bench_file.py"), _model(tmp_path), "--dim",
         "batch=2", "--rounds", "2", "--block", "2", "--threads", "1", "2"],
        capture_output=True, text=True, env=env, timeout=120, check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("add.onnx")]
    assert len(rows) == 2 and "threads=1" in rows[0] and "threads=2" in rows[1], out
    assert "max |difference| 0.00e+00" in rows[0], out


def _run(args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, os.path.join(BENCH, "bench_file.py")] + args,
                          capture_output=True, text=True, env=env, timeout=120)


def test_bad_input_is_a_one_line_error(tmp_path):
    model = _model(tmp_path)
    truncated = str(tmp_path / "truncated.onnx")
    with open(model, "rb") as f, open(truncated, "wb") as g:
        g.write(f.read()[:40])
    cases = [
        ([truncated], "nxrt:"),
        ([model, "--shape", "x=2,a"], "expected NAME=D0,D1"),
        ([model, "--shape", "nope=2,3"], "not inputs of the model"),
        ([model, "--dim", "batch=1,2"], "expected SYMBOL=SIZE"),
        ([model, "--shape", "x=100000,100000,1000"], "more than"),
        ([model, "--shape", "x=2,4", "--shape", "ids=2,4"], "nxrt:"),  # the model wants [*, 3]
    ]
    for args, message in cases:
        result = _run(args + ["--threads", "1", "--rounds", "1", "--block", "1"])
        assert result.returncode != 0, (args, result.stdout)
        assert message in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
