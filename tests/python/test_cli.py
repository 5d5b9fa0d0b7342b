"""The `nxrt` command line tool (build/tools/nxrt): run, bench and info on Silero VAD and a
backend case, the .npy reader/writer, and error cases (clear message, non-zero exit)."""
import os
import pty
import re
import subprocess

import numpy as np
import pytest
from onnx import numpy_helper

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("NXRT_BUILD_DIR", os.path.join(ROOT, "build"))
NXRT = os.path.join(BUILD, "tools", "nxrt")
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
SILERO = os.path.join(SHARED, "models", "silero_vad_v5.onnx")
ADD_CASE = os.path.join(SHARED, "onnx-backend-data", "node", "test_add")

pytestmark = pytest.mark.skipif(not os.path.exists(NXRT), reason=f"{NXRT} is not built (scripts/build.sh builds it)")

SILERO_SHAPES = ["--shape", "input=1,512", "--fill", "sr=16000"]


def nxrt(*args, check=True, timeout=120):
    proc = subprocess.run([NXRT, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"nxrt {' '.join(map(str, args))} failed ({proc.returncode}):\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


def fails(*args, match):
    proc = nxrt(*args, check=False)
    assert proc.returncode != 0, proc.stdout
    assert re.search(match, proc.stderr), proc.stderr
    assert "nxrt: error:" in proc.stderr or "Error" in proc.stderr or "error" in proc.stderr.lower()
    return proc


def load_pb(path):
    t = __import__("onnx").TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


# ---- info ----------------------------------------------------------------------------

def test_info_silero():
    out = nxrt("info", SILERO).stdout
    assert "ir_version: 8" in out
    assert re.search(r"ai\.onnx\s+16", out)
    assert re.search(r"^\s+input\s+tensor\(float\)\s+\[\?,\?\]", out, re.M)
    assert re.search(r"^\s+state\s+tensor\(float\)\s+\[2,\?,128\]", out, re.M)
    assert re.search(r"^\s+sr\s+tensor\(int64\)\s+\[\]", out, re.M)
    assert re.search(r"^\s+stateN\s+tensor\(float\)", out, re.M)
    # Ops inside the If branches count: only 5 nodes are at the top level.
    m = re.search(r"ops: (\d+) nodes \((\d+) top level, (\d+) in (\d+) subgraphs\)", out)
    assert m and int(m.group(2)) == 5 and int(m.group(3)) > 600, out
    assert re.search(r"^\s+If\s+25$", out, re.M)
    assert re.search(r"^\s+LSTM\s+4$", out, re.M)


def test_info_plan_lists_steps_with_their_provider():
    out = nxrt("info", "--plan", SILERO).stdout
    plan = out[out.index("plan ("):]
    # After the passes 4 steps remain at the top level (the If holds the network).
    assert re.search(r"^plan \(4 steps, top level\):$", plan, re.M), plan
    assert re.search(r"^1  If 'If_0'  \[CPUExecutionProvider\]  Equal_0_C -> ", plan, re.M), plan


def test_info_symbolic_dims_and_metadata(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import helper, TensorProto
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, producer_name="cli-test", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    helper.set_model_props(model, {"author": "nxrt"})
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    out = nxrt("info", path).stdout
    assert "producer: cli-test" in out
    assert "author = nxrt" in out
    assert re.search(r"x\s+tensor\(float\)\s+\[batch,3\]", out)
    # --dim sets the symbolic dim of random inputs.
    out = nxrt("run", path, "--dim", "batch=4").stdout
    assert re.search(r"y\s+float\s+\[4,3\]", out), out


# ---- run -----------------------------------------------------------------------------

def test_run_silero_random_inputs():
    out = nxrt("run", SILERO, *SILERO_SHAPES).stdout
    assert re.search(r"input\s+float\s+\[1,512\]\s+random", out)
    assert re.search(r"sr\s+int64\s+\[\]\s+filled with 16000", out)
    m = re.search(r"output\s+float\s+\[1,1\]\s+\[([-\d.e+]+)\]", out)
    assert m and 0.0 <= float(m.group(1)) <= 1.0, out
    assert re.search(r"stateN\s+float\s+\[2,1,128\]\s+min ", out)


def test_run_silero_npy_inputs_match_python(tmp_path):
    import nxrt as ort
    rng = np.random.default_rng(3)
    feeds = {"input": (rng.standard_normal((1, 512)) * 0.1).astype(np.float32),
             "state": (rng.standard_normal((2, 1, 128)) * 0.1).astype(np.float32),
             "sr": np.array(16000, np.int64)}
    args = []
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    outdir = tmp_path / "out"
    outdir.mkdir()
    nxrt("run", SILERO, *args, "--save", outdir)
    expected = ort.InferenceSession(SILERO).run(None, feeds)
    np.testing.assert_allclose(np.load(outdir / "output.npy"), expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.load(outdir / "stateN.npy"), expected[1], rtol=1e-5, atol=1e-6)


def test_run_backend_case_with_npy_version_2(tmp_path):
    a = load_pb(os.path.join(ADD_CASE, "test_data_set_0", "input_0.pb"))
    b = load_pb(os.path.join(ADD_CASE, "test_data_set_0", "input_1.pb"))
    want = load_pb(os.path.join(ADD_CASE, "test_data_set_0", "output_0.pb"))
    np.save(tmp_path / "x.npy", a)
    with open(tmp_path / "y.npy", "wb") as f:  # format 2.0 header
        np.lib.format.write_array(f, b, version=(2, 0))
    nxrt("run", os.path.join(ADD_CASE, "model.onnx"), "-i", f"x={tmp_path / 'x.npy'}",
         "-i", f"y={tmp_path / 'y.npy'}", "--save", tmp_path)
    np.testing.assert_allclose(np.load(tmp_path / "sum.npy"), want, rtol=1e-6)


def test_run_backend_case_random_inputs():
    out = nxrt("run", os.path.join(ADD_CASE, "model.onnx")).stdout
    assert re.search(r"sum\s+float\s+\[3,4,5\]\s+min -?[\d.]+ max", out), out


def test_run_fortran_order_rank1_and_bool(tmp_path):
    # A 1-d Fortran-order array has the C layout, so it is accepted.
    a = np.asfortranarray(np.arange(4, dtype=np.float32))
    np.save(tmp_path / "a.npy", a)
    onnx = pytest.importorskip("onnx")
    from onnx import helper, TensorProto
    graph = helper.make_graph([helper.make_node("Neg", ["a"], ["b"])], "g",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "neg.onnx")
    out = nxrt("run", tmp_path / "neg.onnx", "-i", f"a={tmp_path / 'a.npy'}").stdout
    assert "[-0, -1, -2, -3]" in out, out


# ---- bench ---------------------------------------------------------------------------

def test_bench_silero():
    out = nxrt("bench", SILERO, *SILERO_SHAPES, "--runs", "200", "--warmup", "5").stdout
    m = re.search(r"latency \(ms\): p50 ([\d.]+)\s+p90 ([\d.]+)\s+p99 ([\d.]+)\s+min ([\d.]+)\s+max ([\d.]+)", out)
    assert m, out
    p50, p90, p99, lo, hi = map(float, m.groups())
    assert 0 < lo <= p50 <= p90 <= p99 <= hi
    assert re.search(r"throughput: [\d.]+ runs/s", out)
    assert re.search(r"heap allocations per warm run: [\d.]+ \(\d+ in 200 runs; 2 of 2 outputs bound", out), out
    assert re.search(r"peak resident memory \(VmHWM\): [\d.]+ MiB", out)
    # The verdict is on what loading the session added (this CLI's own code, CLI11 and the
    # server included, is no part of it); the whole-process bar of an embedding app is
    # held by tests/c/memory_test.c.
    m = re.search(r"resident memory \(VmRSS\): [\d.]+ MiB, of which the session holds ([\d.]+) "
                  r"(KiB|MiB) .*budget for the session 2 x model \+ 10 MiB = 14\.\d MiB: "
                  r"(within|OVER) budget", out)
    assert m, out
    held_mib = float(m.group(1)) / (1024 if m.group(2) == "KiB" else 1)
    assert (held_mib <= 14.4) == (m.group(3) == "within"), out
    assert "threads created: 0" in out
    assert "\r" not in out  # no progress bar when stdout is not a terminal


def test_bench_counts_allocations():
    # Without bound outputs the runtime allocates every output, so the interposed
    # allocator must see at least one allocation per run.
    out = nxrt("bench", SILERO, *SILERO_SHAPES, "--runs", "50", "--no-bind").stdout
    m = re.search(r"heap allocations per warm run: ([\d.]+)", out)
    assert m and float(m.group(1)) >= 2, out
    assert "outputs allocated by the runtime" in out


def test_bench_progress_bar_on_a_terminal():
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([NXRT, "bench", os.path.join(ADD_CASE, "model.onnx"), "--runs", "3000000",
                                 "--warmup", "0"], stdout=slave, stderr=subprocess.PIPE)
        os.close(slave)
        data = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(master)
    text = data.decode()
    assert re.search(r"\r  \[#*\.*\]\s+\d+% \d+/3000000", text), text[-500:]
    assert "p50" in text


# ---- errors --------------------------------------------------------------------------

def test_error_missing_model(tmp_path):
    for cmd in ("run", "bench", "info"):
        proc = fails(cmd, tmp_path / "nope.onnx", match=r"model file '.*nope\.onnx' does not exist")
        assert proc.returncode == 2


def test_error_not_a_model(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xff\xff garbage")
    fails("run", bad, match=r"cannot load '.*bad\.onnx'")


def test_error_bad_input_spec(tmp_path):
    fails("run", SILERO, "--input", "input", match=r"bad --input 'input': expected NAME=FILE\.npy")
    fails("run", SILERO, "--input", "=x.npy", match=r"expected NAME=FILE\.npy")
    fails("run", SILERO, "--input", "bogus=x.npy", match=r"the model has no input 'bogus' \(inputs: input, state, sr\)")
    fails("run", SILERO, "--input", f"input={tmp_path / 'missing.npy'}", match=r"cannot open '.*missing\.npy'")
    fails("run", SILERO, "--dim", "batch=2", match=r"no input has a dimension named 'batch'")
    fails("run", SILERO, "--dim", "batch", match=r"bad --dim 'batch'")
    fails("run", SILERO, "--shape", "input=1,x", match=r"bad --shape")
    fails("run", SILERO, "--fill", "sr=abc", match=r"'abc' is not a number")


def test_error_wrong_dtype_in_npy(tmp_path):
    np.save(tmp_path / "input.npy", np.zeros((1, 512), np.int32))
    fails("run", SILERO, "-i", f"input={tmp_path / 'input.npy'}",
          match=r"input 'input' expects float but '.*input\.npy' holds int32")


def test_error_wrong_shape_in_npy(tmp_path):
    np.save(tmp_path / "state.npy", np.zeros((3, 1, 128), np.float32))
    fails("run", SILERO, *SILERO_SHAPES, "-i", f"state={tmp_path / 'state.npy'}",
          match=r"Got invalid dimensions for input: state")


def test_error_unsupported_npy_files(tmp_path):
    big = tmp_path / "big.npy"
    np.save(big, np.zeros((1, 512), ">f4"))
    fails("run", SILERO, "-i", f"input={big}", match=r"big-endian data \('>f4'\) is not supported")
    fortran = tmp_path / "fortran.npy"
    np.save(fortran, np.asfortranarray(np.zeros((2, 3), np.float32)))
    fails("run", SILERO, "-i", f"input={fortran}", match=r"Fortran-order arrays are not supported")
    truncated = tmp_path / "truncated.npy"
    np.save(truncated, np.zeros((1, 512), np.float32))
    truncated.write_bytes(truncated.read_bytes()[:-10])
    fails("run", SILERO, "-i", f"input={truncated}", match=r"needs 2048 data bytes but the file has 2038")
    text = tmp_path / "text.npy"
    text.write_text("not numpy")
    fails("run", SILERO, "-i", f"input={text}", match=r"not a \.npy file")
    strings = tmp_path / "strings.npy"
    np.save(strings, np.array(["a", "b"]))
    fails("run", SILERO, "-i", f"input={strings}", match=r"string/object arrays .* not supported")
    v3 = tmp_path / "v3.npy"
    data = bytearray((tmp_path / "big.npy").read_bytes())
    data[6] = 3
    v3.write_bytes(bytes(data))
    fails("run", SILERO, "-i", f"input={v3}", match=r"format version 3\.0 is not supported")


def test_error_run_failure_is_reported():
    # Random sr (not 16000/8000) and a 1-sample input: the model itself fails; the CLI
    # must say so and exit non-zero rather than crash.
    fails("run", SILERO, match=r"run failed: ")


def test_error_usage():
    proc = nxrt(check=False)
    assert proc.returncode != 0
    proc = nxrt("frobnicate", check=False)
    assert proc.returncode != 0
    proc = nxrt("bench", SILERO, "--runs", "0", check=False)
    assert proc.returncode != 0 and "runs" in proc.stderr


def test_info_shapes_infers_every_value():
    ppocr = os.path.join(SHARED, "models", "ppocr_v4_det.onnx")
    out = nxrt("info", "--shapes", ppocr).stdout
    # Declared [N, 3, H, W] with symbols: the batch symbol flows to the output, the sizes
    # after strided convolutions are unknown until given.
    assert re.search(r"^  sigmoid_0\.tmp_0\s+\[p2o\.DynamicDimension\.0,1,", out, re.M), out
    out = nxrt("info", "--shapes", "--shape", "x=1,3,320,256", ppocr).stdout
    assert "330 all numbers, 0 symbolic or partly known, 0 unknown" in out, out
    assert re.search(r"^  sigmoid_0\.tmp_0\s+\[1,1,320,256\]\s+Sigmoid 'p2o\.Sigmoid\.0'$", out,
                     re.M), out
    legacy = os.path.join(SHARED, "models", "silero_vad_legacy.onnx")
    out = nxrt("info", "--shapes", "--dim", "batch=1", "--dim", "sequence=512", legacy).stdout
    assert re.search(r"^  hn\s+\[2,1,64\]\s+If", out, re.M), out


def test_info_shapes_options_are_checked():
    r = nxrt("info", "--shapes", "--shape", "nope=1", SILERO, check=False)
    assert r.returncode != 0 and "the model has no input 'nope'" in r.stderr
    assert r.stdout == ""  # checked before anything is printed
    r = nxrt("info", "--dim", "batch=1", SILERO, check=False)
    assert r.returncode != 0 and "--dim and --shape go with --shapes" in r.stderr
