"""ai.onnx.ml ops as scikit-learn converters write them (LinearClassifier, LinearRegressor,
ZipMap, Imputer, FeatureVectorizer, CategoryMapper), against onnxruntime."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import nxrt

RNG = np.random.default_rng(11)


def _model(node, x_type, outputs):
    graph = helper.make_graph([node], "ml", [helper.make_tensor_value_info("x", x_type, None)],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _both(data, x):
    got = nxrt.InferenceSession(data).run(None, {"x": x})
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    return got, want


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"])
@pytest.mark.parametrize("classes,labels", [(3, "ints"), (3, "strings"), (1, "ints"),
                                            (1, "strings")],
                         ids=["multi-int", "multi-str", "binary-int", "binary-str"])
@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64])
def test_linear_classifier(post, classes, labels, x_type):
    if classes == 1 and post == "PROBIT":
        pytest.skip("onnxruntime's binary PROBIT scores mix probits, raw scores and NaN")
    features = 4
    n_labels = max(classes, 2)
    attrs = dict(coefficients=list(RNG.standard_normal(classes * features)),
                 intercepts=list(RNG.standard_normal(classes)), post_transform=post)
    if labels == "ints":
        attrs["classlabels_ints"] = [3, 7, 9][:n_labels]
    else:
        attrs["classlabels_strings"] = ["cat", "dog", "owl"][:n_labels]
    label_type = TensorProto.INT64 if labels == "ints" else TensorProto.STRING
    node = helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain="ai.onnx.ml",
                            **attrs)
    data = _model(node, x_type, [("label", label_type), ("scores", TensorProto.FLOAT)])
    dtype = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
             TensorProto.INT64: np.int64}[x_type]
    x = (RNG.standard_normal((6, features)) * 3).astype(dtype)
    (label, scores), (want_label, want_scores) = _both(data, x)
    np.testing.assert_array_equal(label, want_label)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("targets", [1, 3])
def test_linear_regressor(targets):
    features = 5
    node = helper.make_node("LinearRegressor", ["x"], ["y"], domain="ai.onnx.ml",
                            coefficients=list(RNG.standard_normal(targets * features)),
                            intercepts=list(RNG.standard_normal(targets)), targets=targets)
    data = _model(node, TensorProto.FLOAT, [("y", TensorProto.FLOAT)])
    x = RNG.standard_normal((7, features)).astype(np.float32)
    got, want = _both(data, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)


def test_linear_models_name_bad_features():
    node = helper.make_node("LinearRegressor", ["x"], ["y"], domain="ai.onnx.ml",
                            coefficients=[1.0, 2.0, 3.0], targets=1)
    data = _model(node, TensorProto.FLOAT, [("y", TensorProto.FLOAT)])
    with pytest.raises(nxrt.InvalidArgument, match="X has 4 features; the coefficients are for 3"):
        nxrt.InferenceSession(data).run(None, {"x": np.ones((2, 4), np.float32)})


@pytest.mark.parametrize("keys", ["ints", "strings"])
@pytest.mark.parametrize("shape", [(4, 3), (3,)], ids=["rows", "one-row"])
def test_zip_map_returns_a_list_of_dicts(keys, shape):
    attrs = ({"classlabels_int64s": [10, 20, 30]} if keys == "ints"
             else {"classlabels_strings": ["a", "b", "c"]})
    node = helper.make_node("ZipMap", ["x"], ["z"], domain="ai.onnx.ml", **attrs)
    key_type = TensorProto.INT64 if keys == "ints" else TensorProto.STRING
    z_type = helper.make_sequence_type_proto(helper.make_map_type_proto(
        key_type, helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    graph = helper.make_graph([node], "zm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_value_info("z", z_type)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    data = model.SerializeToString()
    x = RNG.random(shape).astype(np.float32)
    got, want = _both(data, x)
    assert got == want
    sess = nxrt.InferenceSession(data)
    expected_type = "seq(map(int64,tensor(float)))" if keys == "ints" else "seq(map(string,tensor(float)))"
    assert sess.get_outputs()[0].type == expected_type


def test_iris_pipeline_from_onnxruntime_datasets():
    # LinearClassifier -> Normalizer -> ZipMap, as onnxruntime ships it; its input declares
    # 2 features for coefficients of 4, which onnxruntime reads as [3, 2] (nxrt too).
    import os
    path = os.path.join(os.path.dirname(ort.__file__), "datasets", "logreg_iris.onnx")
    x = np.array([[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]], np.float32)
    got = nxrt.InferenceSession(path).run(None, {"float_input": x})
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"float_input": x})
    np.testing.assert_array_equal(got[0], want[0])
    assert [sorted(m) for m in got[1]] == [sorted(m) for m in want[1]]
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose([g[k] for k in sorted(g)], [w[k] for k in sorted(w)],
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("x_type,attrs", [
    (TensorProto.FLOAT, dict(imputed_value_floats=[1.5, -2.0, 7.0])),
    (TensorProto.FLOAT, dict(imputed_value_floats=[0.25], replaced_value_float=3.0)),
    (TensorProto.INT64, dict(imputed_value_int64s=[9, 8, 7], replaced_value_int64=-1))])
def test_imputer(x_type, attrs):
    node = helper.make_node("Imputer", ["x"], ["y"], domain="ai.onnx.ml", **attrs)
    data = _model(node, x_type, [("y", x_type)])
    if x_type == TensorProto.FLOAT:
        x = RNG.integers(0, 5, (6, 3)).astype(np.float32)
        x[x == 4] = np.nan
    else:
        x = RNG.integers(-1, 3, (6, 3)).astype(np.int64)
    got, want = _both(data, x)
    np.testing.assert_array_equal(got[0], want[0])


def test_feature_vectorizer_cuts_and_pads_its_inputs():
    node = helper.make_node("FeatureVectorizer", ["a", "b", "c"], ["y"], domain="ai.onnx.ml",
                            inputdimensions=[2, 3, 1])
    graph = helper.make_graph(
        [node], "fv", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "abc"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    data = model.SerializeToString()
    # (onnxruntime needs one type for all inputs.)
    feeds = {"a": RNG.standard_normal((4, 3)).astype(np.float32),  # cut to 2
             "b": RNG.standard_normal((4, 2)).astype(np.float32),  # padded to 3
             "c": RNG.standard_normal((4, 1)).astype(np.float32)}
    got = nxrt.InferenceSession(data).run(None, feeds)[0]
    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("direction", ["to_int", "to_string"])
def test_category_mapper(direction):
    attrs = dict(cats_strings=["red", "green", "blue"], cats_int64s=[4, 7, 1], default_int64=-5,
                 default_string="none")
    node = helper.make_node("CategoryMapper", ["x"], ["y"], domain="ai.onnx.ml", **attrs)
    if direction == "to_int":
        data = _model(node, TensorProto.STRING, [("y", TensorProto.INT64)])
        x = np.array([["red", "blue"], ["pink", "green"]], dtype=object)
    else:
        data = _model(node, TensorProto.INT64, [("y", TensorProto.STRING)])
        x = np.array([4, 1, 2, 7], np.int64)
    got, want = _both(data, x)
    np.testing.assert_array_equal(got[0], want[0])


# ---- map inputs: DictVectorizer and CastMap ------------------------------------------------

def _map_model(node, key_type, value_type, out_type):
    x = helper.make_value_info("x", helper.make_map_type_proto(
        key_type, helper.make_tensor_type_proto(value_type, None)))
    graph = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", out_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    return model.SerializeToString()


def _ml_node(op, **attrs):
    return helper.make_node(op, ["x"], ["y"], domain="ai.onnx.ml", name="m", **attrs)


def test_dict_vectorizer_against_onnxruntime():
    data = _map_model(_ml_node("DictVectorizer", string_vocabulary=["a", "b", "c"]),
                      TensorProto.STRING, TensorProto.FLOAT, TensorProto.FLOAT)
    feed = {"x": {"a": 1.5, "c": 2.0, "zz": 9.0}}
    (got,) = nxrt.InferenceSession(data).run(None, feed)
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    np.testing.assert_array_equal(got, want)
    assert got.shape == (1, 3)


def test_dict_vectorizer_int64_keys_and_string_values():
    # (onnxruntime's Python API cannot feed a map of strings: the expected values are the spec's)
    data = _map_model(_ml_node("DictVectorizer", int64_vocabulary=[5, 1, 3]),
                      TensorProto.INT64, TensorProto.STRING, TensorProto.STRING)
    (got,) = nxrt.InferenceSession(data).run(None, {"x": {1: "one", 3: "three", 7: "x"}})
    assert got.tolist() == [["", "one", "three"]]
    data = _map_model(_ml_node("DictVectorizer", int64_vocabulary=[5, 1, 3]),
                      TensorProto.INT64, TensorProto.DOUBLE, TensorProto.DOUBLE)
    (got,) = nxrt.InferenceSession(data).run(None, {"x": {1: 0.25}})
    assert got.dtype == np.float64 and got.tolist() == [[0.0, 0.25, 0.0]]


@pytest.mark.parametrize("cast_to,out_type", [("TO_FLOAT", TensorProto.FLOAT),
                                              ("TO_STRING", TensorProto.STRING),
                                              ("TO_INT64", TensorProto.INT64)])
@pytest.mark.parametrize("form", ["DENSE", "SPARSE"])
def test_cast_map_against_onnxruntime(cast_to, out_type, form):
    data = _map_model(_ml_node("CastMap", cast_to=cast_to, map_form=form, max_map=6),
                      TensorProto.INT64, TensorProto.FLOAT, out_type)
    feed = {"x": {4: 2.5, 1: 7.0, 2: -3.25}}
    (got,) = nxrt.InferenceSession(data).run(None, feed)
    (want,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_cast_map_of_strings():
    data = _map_model(_ml_node("CastMap", cast_to="TO_FLOAT"), TensorProto.INT64,
                      TensorProto.STRING, TensorProto.FLOAT)
    sess = nxrt.InferenceSession(data)
    (got,) = sess.run(None, {"x": {4: "2.5", 1: "7", 2: "-3.25"}})
    assert got.tolist() == [[7.0, -3.25, 2.5]]
    with pytest.raises(nxrt.InvalidArgument, match="value 'seven' is not a float"):
        sess.run(None, {"x": {1: "seven"}})


def test_map_inputs_bad_feeds_and_nodes_are_named():
    data = _map_model(_ml_node("CastMap", map_form="SPARSE", max_map=3), TensorProto.INT64,
                      TensorProto.FLOAT, TensorProto.FLOAT)
    sess = nxrt.InferenceSession(data)
    with pytest.raises(nxrt.InvalidArgument, match=r"key 5 is outside \[0, max_map = 3\)"):
        sess.run(None, {"x": {5: 1.0}})
    with pytest.raises(TypeError, match="input 'x' is a map: feed a dict"):
        sess.run(None, {"x": np.ones(3, np.float32)})
    with pytest.raises(TypeError, match="input 'x' is a map of int64 to float"):
        sess.run(None, {"x": {"a": 1.0}})
    # A map reaching an op whose spec takes no map is a type error at load.
    relu = helper.make_node("Relu", ["x"], ["y"], name="r")
    with pytest.raises(nxrt.capi.onnxruntime_pybind11_state.InvalidGraph,
                       match=r"\[Relu\] node 'r'.*has type map\(\.\.\., tensor\(float\)\); opset 17 "
                             r"of Relu takes T in \{tensor\(float\)"):
        nxrt.InferenceSession(_map_model(relu, TensorProto.INT64, TensorProto.FLOAT,
                                         TensorProto.FLOAT))
