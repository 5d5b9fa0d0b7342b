"""nxrt.eager (single-op execution) and nxrt.ops (generated op functions)."""

import glob
import inspect
import json
import os
import threading

import numpy as np
import pytest

import nxrt
import nxrt.eager as eager
import nxrt.ops as ops

import backend_cases

A = np.arange(4, dtype=np.float32)
B = np.ones(4, dtype=np.float32)


@pytest.fixture
def fresh_cache():
    eager.clear_cache()
    yield
    eager.clear_cache()


# ---- dispatch behaviour ----

def test_dispatch_returns_list_of_outputs():
    out = eager.dispatch("Add", [A, B])
    assert isinstance(out, list) and len(out) == 1
    assert out[0].dtype == np.float32
    np.testing.assert_array_equal(out[0], A + B)


def test_dispatch_multi_output_topk():
    values, indices = eager.dispatch("TopK", [A, np.array([2])])
    np.testing.assert_array_equal(values, [3, 2])
    np.testing.assert_array_equal(indices, [3, 2])
    assert indices.dtype == np.int64


def test_dispatch_split_output_count_from_arguments():
    x = np.arange(6, dtype=np.float32)
    assert [o.tolist() for o in eager.dispatch("Split", [x], {"num_outputs": 3})] == [
        [0, 1], [2, 3], [4, 5]]
    assert [o.tolist() for o in eager.dispatch("Split", [x, np.array([2, 4])])] == [
        [0, 1], [2, 3, 4, 5]]
    assert len(eager.dispatch("Split", [x], num_outputs=2)) == 2
    with pytest.raises(TypeError, match=r"\[Split\] has a variable number of outputs"):
        eager.dispatch("Split", [x])


def test_dispatch_inputs_scalars_lists_none_and_views():
    # A Python float takes the dtype of the float array beside it; lists become int64.
    assert eager.dispatch("Add", [A, 2.0])[0].dtype == np.float32
    out = eager.dispatch("Reshape", [np.arange(6.0), [2, 3]])[0]
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(eager.dispatch("Clip", [A, None, np.float32(2)])[0], [0, 1, 2, 2])
    # Non-contiguous and byte-swapped arrays are converted, not misread.
    np.testing.assert_array_equal(eager.dispatch("Add", [A[::2], A[::2]])[0], [0, 4])
    np.testing.assert_array_equal(eager.dispatch("Add", [A.astype(">f4"), B])[0], A + B)


def test_dispatch_sequences_strings_and_bfloat16():
    out = eager.dispatch("ConcatFromSequence", [eager.Sequence([A, B])], {"axis": 0})[0]
    np.testing.assert_array_equal(out, np.concatenate([A, B]))
    seq = eager.dispatch("SplitToSequence", [A], {"axis": 0})[0]
    assert isinstance(seq, list) and len(seq) == 4
    strings = eager.dispatch("StringConcat", [np.array(["a", "b"]), np.array(["c", "d"])])[0]
    assert strings.tolist() == ["ac", "bd"]
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf = eager.dispatch("Cast", [A], {"to": 16})[0]
    assert bf.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(bf.astype(np.float32), A)


def test_attribute_types():
    c = lambda **attrs: eager.dispatch("Constant", [], attrs)[0]  # noqa: E731
    assert c(value_int=True).tolist() == 1 and c(value_int=True).dtype == np.int64
    assert c(value_int=np.int32(7)).tolist() == 7
    assert c(value_float=2.5).dtype == np.float32
    assert c(value_ints=(1, 2)).tolist() == [1, 2]
    assert c(value_floats=[1, 2.5]).tolist() == [1.0, 2.5]  # ints among floats are floats
    assert c(value_string="hé").tolist() == "hé"
    assert c(value_strings=["a", b"b"]).tolist() == ["a", "b"]
    assert c(value=np.array([[1, 2]], dtype=np.int32)).tolist() == [[1, 2]]
    assert c(value=np.array([1, 2], dtype=np.int32)[::-1]).tolist() == [2, 1]  # converted
    # bytes for STRING, numpy scalars for FLOAT/INT, bool for INT:
    np.testing.assert_array_equal(
        eager.dispatch("Pad", [A, [1, 1]], {"mode": b"reflect"})[0], [1, 0, 1, 2, 3, 2])
    np.testing.assert_allclose(
        eager.dispatch("LeakyRelu", [A - 2], {"alpha": np.float32(0.5)})[0], [-1, -0.5, 0, 1])
    out = eager.dispatch("ReduceSum", [np.ones((2, 2), np.float32), [1]], {"keepdims": False})[0]
    assert out.shape == (2,)
    # None leaves an attribute at its default.
    np.testing.assert_allclose(eager.dispatch("Softmax", [A], {"axis": None})[0],
                               eager.dispatch("Softmax", [A])[0])


def test_attribute_errors():
    with pytest.raises(TypeError, match=r"\[Softmax\] attribute 'axis' has unsupported type 'dict'"):
        eager.dispatch("Softmax", [A], {"axis": {}})
    with pytest.raises(TypeError, match=r"attribute 'value_ints': a sequence attribute must be homogeneous"):
        eager.dispatch("Constant", [], {"value_ints": [1, "a"]})
    with pytest.raises(TypeError, match=r"attribute 'x': element 0 has type 'dict'"):
        eager.dispatch("Constant", [], {"x": [{}]})
    with pytest.raises(TypeError, match="attribute names must be str"):
        eager.dispatch("Softmax", [A], {1: 2})
    with pytest.raises(nxrt.InvalidArgument, match=r"\[Cast\] node 'eager': attribute 'to' \(INT\) is required by opset \d+ of Cast") as e:
        eager.dispatch("Cast", [A])
    assert isinstance(e.value, ValueError)


def test_call_errors():
    with pytest.raises(TypeError, match="inputs must be a list or tuple"):
        eager.dispatch("Add", A)
    with pytest.raises(TypeError, match=r"attributes must be a dict \(or None\)"):
        eager.dispatch("Add", [A, B], [1])
    with pytest.raises(nxrt.NotImplemented, match=r"\[Nope\] node 'eager': op 'Nope' \(domain 'ai.onnx', opset \d+\) is not implemented") as e:
        eager.dispatch("Nope", [A])
    assert isinstance(e.value, NotImplementedError)
    with pytest.raises(nxrt.NotImplemented, match=r"implements op 'LessOrEqual' but not for opset 11"):
        eager.dispatch("LessOrEqual", [A, B], opset=11)
    with pytest.raises(nxrt.NotImplemented, match=r"domain 'com.example', opset 1"):
        eager.dispatch("Add", [A, B], domain="com.example")
    with pytest.raises(nxrt.InvalidArgument, match=r"\[Add\] node 'eager': type parameter T of Add is bound to tensor\(float\) by "
                       r"input 0 \('input_0'\) and to tensor\(int64\) by input 1"):
        eager.dispatch("Add", [A, np.arange(4)])
    with pytest.raises(nxrt.InvalidArgument, match=r"\[TopK\] node 'eager': has 3 outputs; opset \d+ of TopK produces at most 2"):
        eager.dispatch("TopK", [A, np.array([2])], num_outputs=3)
    with pytest.raises(TypeError, match="num_outputs must be at least 1"):
        eager.dispatch("Add", [A, B], num_outputs=-1)
    with pytest.raises(TypeError, match="does not support"):
        eager.dispatch("Add", [A, np.array([1 + 2j])])
    # Run-time errors (shapes) name the op too.
    with pytest.raises(nxrt.NxrtError, match=r"^\[ONNXRuntimeError\] : \d+ : \w+ : \[Add\] node 'eager'"):
        eager.dispatch("Add", [A, np.ones(3, np.float32)])


def test_opset_constants():
    assert eager.opset() == eager.LATEST_ONNX_OPSET
    assert isinstance(eager.LATEST_ONNX_OPSET, int) and eager.LATEST_ONNX_OPSET >= 21
    from nxrt import _op_table
    assert _op_table.SCHEMA_OPSET == eager.LATEST_ONNX_OPSET


# ---- the cache ----

def test_cache_counts_hits_and_misses(fresh_cache):
    assert eager.cache_stats() == {"entries": 0, "hits": 0, "misses": 0}
    eager.dispatch("Add", [A, B])
    eager.dispatch("Add", [B, A])
    assert eager.cache_stats() == {"entries": 1, "hits": 1, "misses": 1}
    eager.dispatch("Add", [A.astype(np.float64), B.astype(np.float64)])  # dtype
    eager.dispatch("Add", [A.reshape(2, 2), B.reshape(2, 2)])  # rank
    eager.dispatch("Add", [A, B], opset=13)  # opset
    assert eager.cache_stats() == {"entries": 4, "hits": 1, "misses": 4}
    eager.dispatch("Softmax", [A], {"axis": 0})
    eager.dispatch("Softmax", [A], {"axis": -1})  # attribute value
    eager.dispatch("Softmax", [A], {"axis": 0})
    eager.dispatch("Add", [A + 5, B * 3])  # values do not matter
    assert eager.cache_stats() == {"entries": 6, "hits": 3, "misses": 6}
    # Tensor attributes are keyed by content: equal arrays share, others do not.
    shape = np.array([2])
    eager.dispatch("ConstantOfShape", [shape], {"value": np.array([1.0], np.float32)})
    eager.dispatch("ConstantOfShape", [shape], {"value": np.array([1.0], np.float32)})
    out = eager.dispatch("ConstantOfShape", [shape], {"value": np.array([2.0], np.float32)})[0]
    assert out.tolist() == [2.0, 2.0]
    assert eager.cache_stats() == {"entries": 8, "hits": 4, "misses": 8}
    eager.clear_cache()
    assert eager.cache_stats() == {"entries": 0, "hits": 0, "misses": 0}


def test_failed_prepare_is_not_cached(fresh_cache):
    for _ in range(2):
        with pytest.raises(nxrt.NotImplemented):
            eager.dispatch("Nope", [A])
    assert eager.cache_stats() == {"entries": 0, "hits": 0, "misses": 2}


def test_concurrent_dispatch():
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(300):
                x = rng.random(8).astype(np.float32)
                y = rng.random(8).astype(np.float32)
                np.testing.assert_array_equal(eager.dispatch("Mul", [x, y])[0], x * y)
                v, i = eager.dispatch("TopK", [x, np.array([3])])
                np.testing.assert_array_equal(i, np.argsort(-x, kind="stable")[:3])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# ---- nxrt.ops ----

def test_ops_functions():
    np.testing.assert_allclose(ops.softmax(A, axis=-1), eager.dispatch("Softmax", [A])[0])
    x = np.random.rand(1, 2, 5, 5).astype(np.float32)
    w = np.random.rand(3, 2, 3, 3).astype(np.float32)
    b = np.zeros(3, np.float32)
    assert ops.conv(x, w, b, pads=[1, 1, 1, 1]).shape == (1, 3, 5, 5)
    assert ops.conv(x, w).shape == (1, 3, 3, 3)
    np.testing.assert_array_equal(ops.concat(A, B, A, axis=0), np.concatenate([A, B, A]))
    values, indices = ops.top_k(A, np.array([2]))
    assert values.tolist() == [3, 2] and indices.tolist() == [3, 2]
    assert [p.tolist() for p in ops.split(A, num_outputs=2)] == [[0, 1], [2, 3]]
    assert ops.max_pool(x, kernel_shape=[2, 2]).shape == (1, 2, 4, 4)
    y, idx = ops.max_pool(x, kernel_shape=[2, 2], num_outputs=2)
    assert idx.dtype == np.int64
    assert ops.and_(np.array([True, False]), np.array([True, True])).tolist() == [True, False]
    assert ops.matmul(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)).shape == (2, 4)
    assert ops.reduce_mean(np.ones((2, 3), np.float32), keepdims=0).shape == ()


def test_ops_signatures_and_docs():
    sig = inspect.signature(ops.conv)
    params = sig.parameters
    assert list(params)[:3] == ["x", "w", "b"]
    assert params["b"].default is None
    assert params["pads"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["group"].default == 1 and params["auto_pad"].default == "NOTSET"
    assert "Attributes:" in ops.conv.__doc__ and "group (INT, default 1)" in ops.conv.__doc__
    assert "Inputs:" in ops.conv.__doc__
    concat = inspect.signature(ops.concat).parameters
    assert concat["inputs"].kind is inspect.Parameter.VAR_POSITIONAL
    assert concat["axis"].default is inspect.Parameter.empty  # required attribute
    assert ops.softmax.__doc__.startswith("The operator computes the normalized exponential")
    for name in ops.__all__:
        fn = getattr(ops, name)
        assert fn.__doc__ and "ONNX ``" in fn.__doc__, name
        inspect.signature(fn)
    assert len(ops.__all__) > 180


def test_generated_files_match_generator():
    """ops.py and _op_table.py are what tools/gen_ops.py writes (when the same onnx is
    installed)."""
    onnx = pytest.importorskip("onnx")
    ops_path = os.path.join(os.path.dirname(ops.__file__), "ops.py")
    with open(ops_path) as f:
        head = f.read(600)
    if f"onnx {onnx.__version__} op schemas" not in head:
        pytest.skip("generated with another onnx version")
    import importlib.util
    import tempfile

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    spec = importlib.util.spec_from_file_location("gen_ops", os.path.join(root, "tools", "gen_ops.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with tempfile.TemporaryDirectory() as tmp:
        gen.OPS_PATH = os.path.join(tmp, "ops.py")
        gen.TABLE_PATH = os.path.join(tmp, "_op_table.py")
        gen.main()
        for name in ("ops.py", "_op_table.py"):
            with open(os.path.join(tmp, name)) as a, open(os.path.join(os.path.dirname(ops.__file__), name)) as b:
                assert a.read() == b.read(), f"{name} is stale: rerun tools/gen_ops.py"


# ---- eager results equal session results on the ONNX node tests ----

def _single_node_cases():
    try:
        import onnx
        from onnx import AttributeProto
    except ImportError:  # pragma: no cover
        return []
    unsupported = {AttributeProto.GRAPH, AttributeProto.GRAPHS, AttributeProto.SPARSE_TENSOR,
                   AttributeProto.SPARSE_TENSORS, AttributeProto.TYPE_PROTO,
                   AttributeProto.TYPE_PROTOS}
    cases = []
    for suite, name, path in backend_cases.discover():
        if suite == "light":
            continue
        model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
        if len(model.graph.node) != 1:
            continue
        if any(a.type in unsupported for a in model.graph.node[0].attribute):
            continue
        cases.append(pytest.param(suite, path, model, id=f"{suite}/{name}"))
    return cases


def _attribute_value(attr):
    from onnx import AttributeProto, helper, numpy_helper
    value = helper.get_attribute_value(attr)
    if attr.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(value)
    if attr.type == AttributeProto.TENSORS:
        return [numpy_helper.to_array(t) for t in value]
    return list(value) if isinstance(value, (list, tuple)) else value


KNOWN_FAILURES = backend_cases.load_known_failures()


@pytest.mark.parametrize("suite,path,model", _single_node_cases())
def test_eager_matches_backend_case(request, suite, path, model):
    from onnx import numpy_helper
    case_id = request.node.callspec.id
    node = model.graph.node[0]
    rtol, atol = 1e-3, 1e-7
    data_json = os.path.join(path, "data.json")
    if os.path.exists(data_json):
        with open(data_json) as f:
            meta = json.load(f)
        rtol, atol = meta.get("rtol", rtol), meta.get("atol", atol)
    domain = "" if node.domain == "ai.onnx" else node.domain
    opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    attributes = {a.name: _attribute_value(a) for a in node.attribute}
    try:
        for data_set in sorted(glob.glob(os.path.join(path, "test_data_set_*"))):
            values = dict(initializers)
            n_in = len(glob.glob(os.path.join(data_set, "input_*.pb")))
            for k in range(n_in):
                info = graph_inputs[k] if k < len(graph_inputs) else model.graph.input[k]
                values[info.name] = backend_cases._read_proto(
                    os.path.join(data_set, f"input_{k}.pb"), info.type)
            inputs = []
            for name in node.input:
                value = values.get(name) if name else None
                inputs.append(eager.Sequence(value) if isinstance(value, list) else value)
            outputs = eager.dispatch(node.op_type, inputs, attributes, domain=domain,
                                     opset=opsets.get(domain, 1), num_outputs=len(node.output))
            n_out = len(glob.glob(os.path.join(data_set, "output_*.pb")))
            for k in range(n_out):
                info = model.graph.output[k]
                expected = backend_cases._read_proto(
                    os.path.join(data_set, f"output_{k}.pb"), info.type)
                actual = outputs[list(node.output).index(info.name)]
                backend_cases._compare(info.name, expected, actual, rtol, atol)
    except Exception:
        if case_id in KNOWN_FAILURES:
            pytest.xfail(KNOWN_FAILURES[case_id])
        raise
