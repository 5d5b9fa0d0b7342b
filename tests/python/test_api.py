"""The ergonomic Python API: nxrt.load, calling sessions, Outputs, bind_outputs, threads,
and the type stubs checked against the module."""

import ast
import inspect
import pathlib
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import nxrt

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model.SerializeToString()


def _vi(name, shape=(2,), dtype=F):
    return helper.make_tensor_value_info(name, dtype, list(shape) if shape is not None else None)


@pytest.fixture(scope="module")
def two_out():
    """S = A + B, P = A * B (float32[2])."""
    return _model([helper.make_node("Add", ["A", "B"], ["S"]),
                   helper.make_node("Mul", ["A", "B"], ["P"])],
                  [_vi("A"), _vi("B")], [_vi("S"), _vi("P")])


@pytest.fixture(scope="module")
def sess(two_out):
    return nxrt.load(two_out)


@pytest.fixture(scope="module")
def one_out():
    """Y = Relu(X) (float32, any shape)."""
    return _model([helper.make_node("Relu", ["X"], ["Y"])], [_vi("X", None)], [_vi("Y", None)])


@pytest.fixture(scope="module")
def with_default():
    """Y = X + W where W is a graph input with an initializer default [10, 20] (IR 8:
    overridable, so it is not among get_inputs())."""
    w = helper.make_tensor("W", F, [2], [10.0, 20.0])
    return _model([helper.make_node("Add", ["X", "W"], ["Y"])], [_vi("X"), _vi("W")],
                  [_vi("Y")], initializers=[w])


A = np.array([1.0, 2.0], np.float32)
B = np.array([3.0, 5.0], np.float32)


def _check(out):
    assert isinstance(out, nxrt.Outputs)
    np.testing.assert_array_equal(out[0], A + B)
    np.testing.assert_array_equal(out[1], A * B)


# ---------------------------------------------------------------- load and devices


def test_load_path_pathlike_and_bytes(tmp_path, two_out):
    path = tmp_path / "m.onnx"
    path.write_bytes(two_out)
    for source in (str(path), path, two_out):
        s = nxrt.load(source)
        assert isinstance(s, nxrt.InferenceSession)
        _check(s(A, B))


def test_load_devices_cpu(two_out):
    for device in (None, "cpu", "CPU", "cpu:0", " cpu "):
        s = nxrt.load(two_out, device=device)
        assert s.get_providers() == ["CPUExecutionProvider"]


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3", "CUDA:1"])
def test_load_cuda_is_an_actionable_error(two_out, device):
    # This build has no CUDA provider: a GPU request must fail, never run on the CPU.
    assert "CUDAExecutionProvider" not in nxrt.get_available_providers()
    with pytest.raises(ValueError, match=rf"device '{device}' is not available: this build of "
                                         r"nxrt has no CUDA execution provider .*use "
                                         r"device='cpu'"):
        nxrt.load(two_out, device=device)


@pytest.mark.parametrize("device", ["gpu", "cuda:", "cuda:-1", "cuda:x", "tpu:0", ""])
def test_load_malformed_device(two_out, device):
    with pytest.raises(ValueError, match=r"unknown device .*use 'cpu', 'cuda' or 'cuda:N'"):
        nxrt.load(two_out, device=device)


def test_load_device_errors(two_out):
    with pytest.raises(ValueError, match=r"only one CPU device"):
        nxrt.load(two_out, device="cpu:1")
    with pytest.raises(TypeError, match=r"device must be a str such as 'cpu'.*not int"):
        nxrt.load(two_out, device=0)


def test_load_device_objects_with_type(two_out):
    class Device:  # how torch.device prints
        type = "cpu"

        def __str__(self):
            return "cpu"

    assert nxrt.load(two_out, device=Device()).get_providers() == ["CPUExecutionProvider"]


def test_load_providers_win_over_device(two_out):
    s = nxrt.load(two_out, device="cuda", providers=["CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    _check(s(A, B))
    # ... but a malformed device is still reported.
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        nxrt.load(two_out, device="gpu", providers=["CPUExecutionProvider"])
    with pytest.raises(ValueError, match="CUDAExecutionProvider' is not available"):
        nxrt.load(two_out, providers=["CUDAExecutionProvider"])


def test_load_bad_path(tmp_path):
    with pytest.raises(TypeError, match=r"nxrt.load takes a file path .* not int"):
        nxrt.load(42)
    with pytest.raises(nxrt.NoSuchFile):
        nxrt.load(str(tmp_path / "missing.onnx"))


def test_load_sess_options(two_out):
    opts = nxrt.SessionOptions()
    opts.intra_op_num_threads = 1
    s = nxrt.load(two_out, sess_options=opts)
    assert s.get_session_options() is opts


# ---------------------------------------------------------------- names


def test_input_and_output_names(sess):
    assert sess.input_names == ["A", "B"]
    assert sess.output_names == ["S", "P"]
    sess.input_names.append("junk")  # a copy: the session cannot be changed through it
    assert sess.input_names == ["A", "B"]
    assert sess.input_names == [i.name for i in sess.get_inputs()]
    assert sess.output_names == [o.name for o in sess.get_outputs()]


def test_names_exclude_overridable_initializers(with_default):
    s = nxrt.load(with_default)
    assert s.input_names == ["X"]
    assert [i.name for i in s.get_overridable_initializers()] == ["W"]


# ---------------------------------------------------------------- call forms


def test_call_forms(sess):
    _check(sess(A, B))
    _check(sess(A=A, B=B))
    _check(sess(B=B, A=A))
    _check(sess({"A": A, "B": B}))
    _check(sess(A, B=B))
    _check(sess({"A": A}, B=B))
    from collections import OrderedDict

    _check(sess(OrderedDict(A=A, B=B)))


def test_call_keyword_named_self(tmp_path):
    # Input names are arbitrary strings; 'self' must not clash with the method's receiver.
    m = _model([helper.make_node("Neg", ["self"], ["y"])], [_vi("self")], [_vi("y")])
    s = nxrt.load(m)
    np.testing.assert_array_equal(s(self=A), -A)


def test_one_output_returns_the_value(one_out):
    s = nxrt.load(one_out)
    y = s(np.array([-1.0, 2.0], np.float32))
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, [0.0, 2.0])


def test_unknown_input(sess):
    with pytest.raises(nxrt.InvalidArgument,
                       match=r"^unknown input 'C'; the model's inputs are \['A', 'B'\]$"):
        sess(A, B, C=A)
    with pytest.raises(TypeError, match=r"unknown input 'a'; .* did you mean 'A'\?"):
        sess({"A": A, "B": B, "a": A})  # also a TypeError


def test_unknown_input_suggests_close_name():
    m = _model([helper.make_node("Neg", ["input_ids"], ["y"])], [_vi("input_ids")], [_vi("y")])
    s = nxrt.load(m)
    with pytest.raises(nxrt.InvalidArgument,
                       match=r"unknown input 'input_id'; .* did you mean 'input_ids'\?"):
        s(input_id=A)


def test_duplicate_feed(sess):
    with pytest.raises(nxrt.InvalidArgument,
                       match=r"^input 'A' was given twice: positionally \(argument 0\) and by "
                             r"keyword$"):
        sess(A, B, A=A)
    with pytest.raises(TypeError,
                       match=r"^input 'B' was given twice: in the feed dict and by keyword$"):
        sess({"A": A, "B": B}, B=B)


def test_missing_input(sess):
    with pytest.raises(nxrt.InvalidArgument,
                       match=r"^missing required input 'B'; the model's inputs are "
                             r"\['A', 'B'\]$"):
        sess(A)
    with pytest.raises(TypeError, match=r"^missing required inputs 'A', 'B'; "):
        sess()
    with pytest.raises(TypeError, match=r"^missing required input 'A'"):
        sess({"B": B})


def test_too_many_positionals(sess, with_default):
    with pytest.raises(nxrt.InvalidArgument,
                       match=r"^the model takes 2 positional inputs \['A', 'B'\] but 3 were "
                             r"given$"):
        sess(A, B, A)
    s = nxrt.load(with_default)
    with pytest.raises(TypeError,
                       match=r"^the model takes 1 positional input \['X'\] but 2 were given; "
                             r"initializers with defaults \['W'\] can only be fed by name$"):
        s(A, A)


def test_dict_must_be_the_only_positional(sess):
    with pytest.raises(TypeError, match=r"positional argument 1 is a dict; a dict of feeds must "
                                        r"be the only positional argument"):
        sess(A, {"B": B})
    with pytest.raises(TypeError, match=r"but 3 were given; a dict of feeds must be the only"):
        sess({"A": A}, {"B": B}, B)
    with pytest.raises(TypeError, match=r"feed dict keys must be input names \(str\), got int 0"):
        sess({0: A, "B": B})


def test_feed_errors_from_run_still_surface(sess):
    with pytest.raises(nxrt.InvalidArgument, match=r"Unexpected input data type.*input 'A'"):
        sess(np.zeros(2, np.float64), B)


def test_initializer_defaults_may_be_left_out(with_default):
    s = nxrt.load(with_default)
    np.testing.assert_array_equal(s(A), A + [10.0, 20.0])
    np.testing.assert_array_equal(s(A, W=B), A + B)
    np.testing.assert_array_equal(s({"X": A, "W": B}), A + B)


def test_optional_input_may_be_left_out():
    opt = helper.make_value_info(
        "O", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    m = _model([helper.make_node("OptionalHasElement", ["O"], ["H"])], [opt],
               [_vi("H", (), TensorProto.BOOL)], opset=18)
    s = nxrt.load(m)
    assert not s()
    assert s(A)
    assert s(O=[1.0, 2.0])
    assert not s(O=None)


# ---------------------------------------------------------------- input kinds


def test_sequence_input_takes_a_list():
    seq = helper.make_value_info(
        "xs", helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2])))
    m = _model([helper.make_node("SequenceLength", ["xs"], ["n"])], [seq],
               [_vi("n", (), TensorProto.INT64)])
    s = nxrt.load(m)
    assert s([A, B]) == 2  # the list is the sequence, not one stacked tensor
    assert s(xs=[A]) == 1


def test_python_scalars_and_lists_take_the_declared_dtype(sess):
    _check(sess([1.0, 2.0], [3, 5]))  # float64 and int64 literals for float32 inputs
    m = _model([helper.make_node("Add", ["x", "y"], ["z"])],
               [_vi("x", (), TensorProto.INT64), _vi("y", (), TensorProto.INT64)],
               [_vi("z", (), TensorProto.INT64)])
    s = nxrt.load(m)
    z = s(2, 40)
    assert z.dtype == np.int64 and z == 42
    # No silent truncation: a float literal for an int input reaches run() as float64.
    with pytest.raises(nxrt.InvalidArgument, match=r"Actual: \(tensor\(double\)\)"):
        s(2.5, 1)
    b = _model([helper.make_node("Not", ["x"], ["y"])], [_vi("x", (2,), TensorProto.BOOL)],
               [_vi("y", (2,), TensorProto.BOOL)])
    np.testing.assert_array_equal(nxrt.load(b)([True, False]), [False, True])


def test_int_literal_out_of_range_is_not_wrapped():
    m = _model([helper.make_node("Neg", ["x"], ["y"])], [_vi("x", (1,), TensorProto.INT32)],
               [_vi("y", (1,), TensorProto.INT32)])
    s = nxrt.load(m)
    np.testing.assert_array_equal(s([7]), [-7])
    # 2**40 does not fit int32: kept as int64, so run() reports the dtype instead of wrapping.
    with pytest.raises(nxrt.InvalidArgument, match=r"tensor\(int64\)"):
        s([2 ** 40])


def test_string_inputs_from_lists():
    m = _model([helper.make_node("Identity", ["s"], ["t"])],
               [_vi("s", (2,), TensorProto.STRING)], [_vi("t", (2,), TensorProto.STRING)])
    assert list(nxrt.load(m)(["a", "bc"])) == ["a", "bc"]


class _ArrayLike:
    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


class _DLPackOnly:
    """A CPU DLPack producer without __array__ (as jax and cupy arrays can be)."""

    def __init__(self, a, device=(1, 0)):
        self.a = a
        self.device = device

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def test_array_like_and_dlpack_inputs(sess):
    _check(sess(_ArrayLike(A), B))
    _check(sess(A, _DLPackOnly(B)))
    _check(sess(A=_DLPackOnly(A), B=_ArrayLike(B)))


def test_dlpack_input_goes_to_run_unconverted(sess):
    # run() imports DLPack producers in place; the call layer must not copy them first.
    seen = {}
    real_run = sess.run

    def spy(names, feed, run_options=None):
        seen.update(feed)
        return real_run(names, feed, run_options)

    b = _DLPackOnly(B)
    sess.run = spy
    try:
        _check(sess(A, b))
    finally:
        del sess.run
    assert seen["B"] is b and seen["A"] is A


def test_dlpack_on_a_gpu_is_an_actionable_error(sess):
    with pytest.raises(ValueError, match=r"input 'B' is a _DLPackOnly on cuda:1, but this "
                                         r"session computes on the CPU .*e\.g\. x\.cpu\(\)"):
        sess(A, _DLPackOnly(B, device=(2, 1)))
    with pytest.raises(ValueError, match=r"on DLPack device type 99:0"):
        sess(A, _DLPackOnly(B, device=(99, 0)))


def test_dlpack_export_refused_gives_the_producers_reason(sess):
    class Refusing:
        def __dlpack__(self, **kwargs):
            raise BufferError("Can't export tensors that require gradient")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(BufferError, match=r"input 'A'.*Refusing.*DLPack: Can't export tensors "
                                          r"that require gradient"):
        sess(Refusing(), B)


def test_torch_inputs_when_installed(sess):
    torch = pytest.importorskip("torch")
    _check(sess(torch.from_numpy(A), torch.tensor([3.0, 5.0])))


# ---------------------------------------------------------------- Outputs


def test_outputs_container(sess):
    out = sess(A, B)
    assert len(out) == 2
    s, p = out
    np.testing.assert_array_equal(s, A + B)
    np.testing.assert_array_equal(p, A * B)
    assert out[0] is out["S"] is out.S is out[-2]
    assert out[1] is out["P"] is out.P is out[-1]
    assert out[0:2] == (out[0], out[1]) and out[1:] == (out.P,)
    assert out[np.int64(1)] is out.P
    assert out.keys() == ["S", "P"]
    assert [v is w for v, w in zip(out.values(), (out.S, out.P))] == [True, True]
    assert [k for k, _ in out.items()] == ["S", "P"] and out.items()[1][1] is out.P
    assert list(out.to_dict()) == ["S", "P"]
    assert "S" in out and "Q" not in out
    assert "S" in dir(out) and "keys" in dir(out)
    assert repr(out) == "Outputs(S=<float32 array (2,)>, P=<float32 array (2,)>)"


def test_outputs_errors(sess):
    out = sess(A, B)
    with pytest.raises(IndexError, match=r"^output index 2 is out of range: there are 2 "
                                         r"outputs \['S', 'P'\]$"):
        out[2]
    with pytest.raises(IndexError, match="output index -3 is out of range"):
        out[-3]
    with pytest.raises(KeyError, match=r"no output named 'Q'; the outputs are \['S', 'P'\]"):
        out["Q"]
    with pytest.raises(AttributeError, match=r"^no output named 'Q'; the outputs are "
                                             r"\['S', 'P'\]$"):
        out.Q
    with pytest.raises(TypeError, match=r"outputs are indexed by position \(int\) or name "
                                        r"\(str\), not float"):
        out[1.0]
    with pytest.raises(AttributeError, match="Outputs is read-only"):
        out.S = 1
    with pytest.raises(ValueError, match="one value per name: 2 names, 1 values"):
        nxrt.Outputs(["a", "b"], [1])


def test_outputs_names_that_clash_or_are_not_identifiers():
    m = _model([helper.make_node("Neg", ["x"], ["keys"]),
                helper.make_node("Abs", ["x"], ["out:0"])],
               [_vi("x")], [_vi("keys"), _vi("out:0")])
    out = nxrt.load(m)(np.array([-1.0, 2.0], np.float32))
    assert callable(out.keys)  # the method wins over the output name ...
    np.testing.assert_array_equal(out["keys"], [1.0, -2.0])  # ... and [] always works
    np.testing.assert_array_equal(out["out:0"], [1.0, 2.0])
    assert "out:0" not in dir(out)


# ---------------------------------------------------------------- bind_outputs


class _Recorder:
    """Wraps the native session to see which output names reach the native run."""

    def __init__(self, native):
        self.native = native
        self.calls = []

    def run(self, names, feeds, flag, *rest):
        self.calls.append(list(names))
        return self.native.run(names, feeds, flag, *rest)

    def run_plain(self, names, feeds):  # run()'s fast path for plain numpy feeds
        self.calls.append(list(names or []))
        return self.native.run_plain(names, feeds)

    def __getattr__(self, name):
        return getattr(self.native, name)


def test_bind_outputs_computes_only_those(two_out):
    s = nxrt.load(two_out)
    s._sess = _Recorder(s._sess)
    p = s.bind_outputs("P")
    y = p(A, B)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, A * B)
    assert s._sess.calls == [["P"]]  # S was not asked for, so not copied out
    assert p.output_names == ["P"] and p.input_names == ["A", "B"] and p.session is s
    both = s.bind_outputs("P", "S")(A=A, B=B)
    assert both.keys() == ["P", "S"]
    np.testing.assert_array_equal(both.S, A + B)
    assert s.bind_outputs(["S", "P"])({"A": A, "B": B}).keys() == ["S", "P"]
    s(A, B)
    assert s._sess.calls[-1] == ["S", "P"]


def test_bind_outputs_context_manager(sess):
    with sess.bind_outputs("S") as f:
        assert not f.closed
        np.testing.assert_array_equal(f(A, B), A + B)
        assert repr(f) == "BoundOutputs('S')"
    assert f.closed and repr(f) == "BoundOutputs('S') (closed)"
    with pytest.raises(RuntimeError, match=r"^this bind_outputs\('S'\) proxy is closed \(its "
                                           r"with-block ended\); call session.bind_outputs"):
        f(A, B)
    with pytest.raises(RuntimeError, match="is closed"):
        with f:
            pass
    _check(sess(A, B))  # the session itself is unaffected


def test_bind_outputs_errors(sess):
    with pytest.raises(nxrt.InvalidArgument, match=r"^unknown output 'logits'; the model's "
                                                   r"outputs are \['S', 'P'\]$"):
        sess.bind_outputs("logits")
    with pytest.raises(nxrt.InvalidArgument, match=r"did you mean 'S'\?"):
        sess.bind_outputs("s")
    with pytest.raises(ValueError, match=r"^output 'S' is listed twice in bind_outputs$"):
        sess.bind_outputs("S", "S")
    with pytest.raises(ValueError, match=r"^bind_outputs needs at least one output name; the "
                                         r"outputs are \['S', 'P'\]$"):
        sess.bind_outputs()
    with pytest.raises(TypeError, match=r"^output names must be str, got int 0$"):
        sess.bind_outputs(0)
    with pytest.raises(nxrt.InvalidArgument, match="missing required input 'B'"):
        sess.bind_outputs("S")(A)


# ---------------------------------------------------------------- threads


def test_threads_share_one_session():
    # 8 threads x 500 calls on one session, each with its own values and every result checked:
    # runs release the GIL and share the immutable session, so a race shows as a wrong sum.
    m = _model([helper.make_node("Add", ["A", "B"], ["S"]),
                helper.make_node("Mul", ["A", "B"], ["P"])],
               [_vi("A", (4,)), _vi("B", (4,))], [_vi("S", (4,)), _vi("P", (4,))])
    s = nxrt.load(m)
    runs, errors, done = 500, [], [0] * 8
    start = threading.Barrier(8)

    def worker(t):
        try:
            start.wait()
            for i in range(runs):
                a = np.full(4, t, np.float32) + np.arange(4, dtype=np.float32)
                b = np.full(4, i, np.float32)
                if i % 2:
                    out = s(a, b)
                    sum_, prod = out.S, out.P
                else:
                    sum_, prod = s.run(None, {"A": a, "B": b})
                if not (np.array_equal(sum_, a + b) and np.array_equal(prod, a * b)):
                    errors.append((t, i, sum_, prod))
                    return
                done[t] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert done == [runs] * 8


# ---------------------------------------------------------------- stubs and packaging

PKG = pathlib.Path(nxrt.__file__).parent
# Dunder methods whose signatures the stubs must carry when a class defines them.
_DUNDERS = {"__init__", "__call__", "__len__", "__iter__", "__contains__", "__getitem__",
            "__getattr__", "__enter__", "__exit__", "__array__", "__dlpack__",
            "__dlpack_device__"}


def _stub_namespace():
    """The stub executed as Python (annotations left unevaluated) and its top-level names."""
    tree = ast.parse((PKG / "__init__.pyi").read_text())
    public = set()
    body = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            continue  # submodule re-exports (capi) are not part of __all__
        body.append(node)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            public.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            public.add(node.target.id)
        elif isinstance(node, ast.Assign):
            public.update(t.id for t in node.targets if isinstance(t, ast.Name))
    tree.body = [ast.ImportFrom("__future__", [ast.alias("annotations")], 0)] + body
    ns = {"__name__": "nxrt_stub"}
    exec(compile(ast.fix_missing_locations(tree), str(PKG / "__init__.pyi"), "exec"), ns)
    public = {n for n in public if not n.startswith("_") or n == "__version__"}
    return ns, public


def _shape(fn):
    """What must agree between stub and implementation: names, kinds, which have defaults."""
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default is not inspect.Parameter.empty)
            for p in sig.parameters.values()]


def _members(cls):
    found = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__ == "builtins" or klass.__module__ == "enum":
            continue
        for name, value in vars(klass).items():
            if isinstance(value, (classmethod, staticmethod)):
                value = value.__func__  # compared with cls/no receiver as written
            if (not name.startswith("_") or name in _DUNDERS) and (
                    callable(value) or isinstance(value, property)):
                found[name] = value
    return found


def test_stubs_cover_all_and_nothing_else():
    _, public = _stub_namespace()
    assert set(nxrt.__all__) == public, (
        f"in __all__ but not stubbed: {sorted(set(nxrt.__all__) - public)}; "
        f"stubbed but not in __all__: {sorted(public - set(nxrt.__all__))}")
    for name in nxrt.__all__:
        assert hasattr(nxrt, name), name


def test_stub_signatures_match():
    ns, public = _stub_namespace()
    mismatches = []
    for name in sorted(public & set(nxrt.__all__)):  # coverage is the other test's job
        real, stub = getattr(nxrt, name), ns.get(name)
        if stub is None:  # annotated only (__version__: str)
            assert isinstance(real, str), name
            continue
        if inspect.isclass(real):
            assert inspect.isclass(stub), name
            bases = [b.__name__ for b in real.__bases__]
            assert bases == [b.__name__ for b in stub.__bases__], name
            if issubclass(real, BaseException):
                continue
            if issubclass(real, __import__("enum").Enum):
                assert {m.name: m.value for m in real} == {m.name: m.value for m in stub}, name
                continue
            rm, sm = _members(real), _members(stub)
            if set(rm) != set(sm):
                mismatches.append(f"{name}: only in module {sorted(set(rm) - set(sm))}, "
                                  f"only in stub {sorted(set(sm) - set(rm))}")
            for member in set(rm) & set(sm):
                r, s = rm[member], sm[member]
                if isinstance(r, property) or isinstance(s, property):
                    if not (isinstance(r, property) and isinstance(s, property)):
                        mismatches.append(f"{name}.{member}: property in one only")
                    elif (r.fset is None) != (s.fset is None):
                        mismatches.append(f"{name}.{member}: settable in one only")
                elif _shape(r) != _shape(s):
                    mismatches.append(f"{name}.{member}: {inspect.signature(r)} vs stub "
                                      f"{inspect.signature(s)}")
        elif callable(real):
            if _shape(real) != _shape(stub):
                mismatches.append(f"{name}: {inspect.signature(real)} vs stub "
                                  f"{inspect.signature(stub)}")
    assert mismatches == [], "\n".join(mismatches)


def test_package_is_typed():
    assert (PKG / "py.typed").is_file()
    assert (PKG / "__init__.pyi").is_file()


def test_public_api_has_docstrings():
    for obj in (nxrt.load, nxrt.Outputs, nxrt.BoundOutputs, nxrt.InferenceSession.__call__,
                nxrt.InferenceSession.bind_outputs, nxrt.InferenceSession.input_names,
                nxrt.InferenceSession.output_names, nxrt.Outputs.keys, nxrt.Outputs.values,
                nxrt.Outputs.items, nxrt.BoundOutputs.__call__):
        assert inspect.getdoc(obj), obj


def test_package_modules_import_without_cycles():
    """No module of python/nxrt imports one that imports it back, directly or through
    others, not even inside a function (the providers and conversions are leaf modules)."""
    import ast

    edges = {}
    for path in PKG.glob("*.py"):
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                deps.update([node.module.split(".")[0]] if node.module
                            else [a.name for a in node.names])
        edges[path.stem] = deps - {path.stem}
    assert {"_providers", "_convert"} <= set(edges)

    def cycle_from(start, path):
        for dep in sorted(edges.get(path[-1], ())):
            if dep == start:
                return path + [dep]
            if dep not in path and (found := cycle_from(start, path + [dep])):
                return found
        return None

    for module in sorted(edges):
        cycle = cycle_from(module, [module])
        assert cycle is None, " -> ".join(cycle)


def test_operators_doc_is_generated_from_the_kernel_table():
    """docs/OPERATORS.md is what tools/gen_operators_md.py makes of the kernel table."""
    import subprocess
    import sys

    root = PKG.parent.parent
    proc = subprocess.run([sys.executable, str(root / "tools" / "gen_operators_md.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    table = nxrt._nxrt.kernel_table()
    assert ("", "Conv", 1, 99, "CPUExecutionProvider", ["float", "float16", "double", "bfloat16"]) in table
    text = (root / "docs" / "OPERATORS.md").read_text()
    assert "## com.microsoft" in text and "| OneHotMatMul |" in text
    assert "| Conv | 1 and later | float, double, float16, bfloat16 | CPUExecutionProvider |" in text


# The element types the check covers, by nxrt's name; TensorProto spells each in capitals.
_CHECKED_TYPES = {"float", "double", "float16", "bfloat16", "bool", "string"} | {
    f"{k}{b}" for k in ("int", "uint") for b in (8, 16, 32, 64)}


def test_operator_types_are_what_sessions_accept():
    """The types column of docs/OPERATORS.md (the kernels' answer to a probe) agrees with
    planning real sessions: for each one-input, one-output ai.onnx op without required
    attributes, a model whose input has a listed type loads, and one with any other type
    the spec allows is refused with an error naming that type."""
    from onnx import defs

    accepted = refused = 0
    for domain, op, since, until, _, types in nxrt._nxrt.kernel_table():
        if domain or types is None:
            continue
        opset = min(until, defs.onnx_opset_version())
        try:
            schema = defs.get_schema(op, opset, "")
        except defs.SchemaError:  # rows for opsets before the op entered ai.onnx
            continue
        if (schema.min_input != 1 or schema.max_input != 1 or schema.min_output != 1
                or any(a.required for a in schema.attributes.values())):
            continue
        param = schema.inputs[0].type_str
        allowed = next((c.allowed_type_strs for c in schema.type_constraints
                        if c.type_param_str == param), [param])  # or a fixed "tensor(float)"
        for type_str in allowed:
            name = type_str.removeprefix("tensor(").removesuffix(")")
            if name not in _CHECKED_TYPES:  # float8, sub-byte, complex: left out
                continue
            elem = getattr(TensorProto, name.upper())
            model = _model([helper.make_node(op, ["x"], ["y"])], [_vi("x", None, elem)],
                           [helper.make_empty_tensor_value_info("y")], opset=schema.since_version)
            if name in types:
                nxrt.InferenceSession(model)
                accepted += 1
            else:
                with pytest.raises(Exception, match=f"type tensor\\({name}\\)|{name}"):
                    nxrt.InferenceSession(model)
                refused += 1
    assert accepted > 300 and refused > 10, (accepted, refused)


# ---------------------------------------------------------------- run's fast path


def _identity_model(elem_type, shape):
    return _model([helper.make_node("Identity", ["x"], ["y"]),
                   helper.make_node("Shape", ["x"], ["s"])],
                  [_vi("x", shape, elem_type)], [_vi("y", shape, elem_type), _vi("s", [None],
                                                                                  TensorProto.INT64)])


@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],         # not contiguous
    np.arange(6, dtype=">f4").reshape(2, 3),                       # byte-swapped
    np.float32(2.5) * np.ones((), np.float32),                     # 0-d
    np.zeros((0, 3), np.float32),                                  # empty
    np.frombuffer(np.arange(6, dtype=np.float32).tobytes(), np.float32).reshape(2, 3),  # read-only
    np.ma.masked_array(np.ones((2, 3), np.float32)),               # a subclass
    [[1.0, 2.0, 3.0]],                                             # a list
])
def test_run_fast_path_agrees_with_the_slow_path(value):
    """run() reads plain C-contiguous native-endian arrays in place and hands everything
    else to the Python conversions; both give the same results."""
    s = nxrt.InferenceSession(_identity_model(F, None))
    expected = np.asarray(value, dtype=np.float32)
    plain = s._sess.run_plain(None, {"x": value})
    fast_ok = isinstance(value, np.ndarray) and type(value) is np.ndarray and \
        value.flags.c_contiguous and value.dtype.isnative
    assert (plain is not None) == fast_ok
    y, shape = s.run(None, {"x": value})
    np.testing.assert_array_equal(y, expected)
    assert y.dtype == np.float32 and y.shape == expected.shape
    np.testing.assert_array_equal(shape, expected.shape)


@pytest.mark.parametrize("dtype,elem", [(np.float16, TensorProto.FLOAT16),
                                        (np.float64, TensorProto.DOUBLE),
                                        (np.int8, TensorProto.INT8), (np.uint16, TensorProto.UINT16),
                                        (np.int32, TensorProto.INT32), (np.int64, TensorProto.INT64),
                                        (np.uint64, TensorProto.UINT64), (np.bool_, TensorProto.BOOL)])
def test_run_fast_path_dtypes(dtype, elem):
    s = nxrt.InferenceSession(_identity_model(elem, [2, 2]))
    x = (np.arange(4) % 2).astype(dtype).reshape(2, 2)
    assert s._sess.run_plain(["y"], {"x": x}) is not None
    (y,) = s.run(["y"], {"x": x})
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, x)


def test_run_fast_path_errors_match():
    """A wrong dtype or a missing input fails as onnxruntime's does on either path."""
    s = nxrt.InferenceSession(_identity_model(F, [2]))
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidArgument, match="tensor\\(double\\)"):
        s.run(None, {"x": np.zeros(2)})
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidArgument, match="missing"):
        s.run(None, {})
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidArgument, match="Invalid input name"):
        s.run(None, {"x": np.zeros(2, np.float32), "z": np.zeros(2, np.float32)})


def test_run_fast_path_non_plain_outputs():
    """Plain feeds with a bfloat16 and a string output: the outputs are finished in Python."""
    m = _model([helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
                helper.make_node("Cast", ["x"], ["t"], to=TensorProto.STRING),
                helper.make_node("Identity", ["x"], ["y"])],
               [_vi("x")], [_vi("b", (2,), TensorProto.BFLOAT16),
                            _vi("t", (2,), TensorProto.STRING), _vi("y")])
    s = nxrt.InferenceSession(m)
    x = np.array([1.5, -2.5], np.float32)
    assert isinstance(s._sess.run_plain(None, {"x": x}), tuple)
    b, t, y = s.run(None, {"x": x})
    assert b.dtype.name == "bfloat16" and b.astype(np.float32).tolist() == [1.5, -2.5]
    assert t.dtype == object and list(t) == ["1.5", "-2.5"]
    np.testing.assert_array_equal(y, x)
