"""scikit-learn models converted by skl2onnx (the ai.onnx.ml ops), run by nxrt and
onnxruntime on the same rows: labels exact, scores and probabilities close."""
import numpy as np
import onnxruntime as ort
import pytest

import nxrt

skl2onnx = pytest.importorskip("skl2onnx")
sklearn = pytest.importorskip("sklearn")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import load_diabetes, load_iris  # noqa: E402
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,  # noqa: E402
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR, LinearSVC  # noqa: E402


def _iris():
    x, y = load_iris(return_X_y=True)
    return x.astype(np.float32), y


def _iris_two_classes_named():
    x, y = _iris()
    keep = y > 0
    return x[keep], np.array(["versicolor", "virginica"])[y[keep] - 1]


def _diabetes():
    x, y = load_diabetes(return_X_y=True)
    return x.astype(np.float32), y


def _mixed():
    """Numeric columns with gaps and one categorical column, as a pipeline meets them."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((120, 4)).astype(np.float32)
    x[:, 3] = rng.integers(0, 3, 120)
    y = (x[:, 0] + x[:, 3] > 1).astype(np.int64)
    numeric = x[:, :3]
    numeric[rng.random(numeric.shape) < 0.1] = np.nan  # gaps in the numeric columns only
    return x, y


def _mixed_pipeline():
    numeric = Pipeline([("impute", SimpleImputer(strategy="mean")), ("scale", StandardScaler())])
    columns = ColumnTransformer([("num", numeric, [0, 1, 2]),
                                 ("cat", OneHotEncoder(handle_unknown="ignore"), [3])])
    return Pipeline([("prep", columns), ("clf", LogisticRegression(max_iter=500))])


MODELS = {
    "logistic_regression": (lambda: LogisticRegression(max_iter=500), _iris),
    "linear_svc": (lambda: LinearSVC(max_iter=5000), _iris),
    "svc_rbf": (lambda: SVC(kernel="rbf"), _iris),
    "svc_poly_probability": (lambda: SVC(kernel="poly", degree=2, probability=True), _iris),
    "random_forest_classifier": (lambda: RandomForestClassifier(n_estimators=8, max_depth=5,
                                                                random_state=0), _iris),
    "gradient_boosting_classifier": (lambda: GradientBoostingClassifier(n_estimators=10,
                                                                        random_state=0), _iris),
    "svc_binary_string_labels": (lambda: SVC(kernel="rbf"), _iris_two_classes_named),
    "svc_binary_probability": (lambda: SVC(kernel="linear", probability=True),
                               _iris_two_classes_named),
    "logistic_binary_string_labels": (lambda: LogisticRegression(max_iter=500),
                                      _iris_two_classes_named),
    "linear_regression": (LinearRegression, _diabetes),
    "svr": (lambda: SVR(kernel="rbf", C=10.0), _diabetes),
    "random_forest_regressor": (lambda: RandomForestRegressor(n_estimators=8, max_depth=5,
                                                              random_state=0), _diabetes),
    "gradient_boosting_regressor": (lambda: GradientBoostingRegressor(n_estimators=10,
                                                                      random_state=0), _diabetes),
    "impute_scale_onehot_logistic": (_mixed_pipeline, _mixed),
}


def _compare(got, want, name):
    if isinstance(want, list):  # ZipMap's list of dicts
        assert isinstance(got, list) and len(got) == len(want), name
        for g, w in zip(got, want):
            assert sorted(g) == sorted(w), name
            np.testing.assert_allclose([g[k] for k in sorted(w)], [w[k] for k in sorted(w)],
                                       rtol=1e-4, atol=1e-5, err_msg=name)
    elif want.dtype.kind in "iuOU":
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_sklearn_model_matches_onnxruntime(name):
    from skl2onnx import to_onnx
    make, data = MODELS[name]
    x, y = data()
    model = make().fit(x, y)
    onx = to_onnx(model, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    blob = onx.SerializeToString()
    feeds = {onx.graph.input[0].name: x[:40]}
    got = nxrt.InferenceSession(blob).run(None, feeds)
    want = ort.InferenceSession(blob, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert len(got) == len(want)
    for out, g, w in zip(onx.graph.output, got, want):
        _compare(g, w, f"{name} output {out.name}")


@pytest.mark.parametrize("key_type", ["string", "int64"])
def test_dict_vectorizer_pipeline_matches_onnxruntime(key_type):
    """A DictVectorizer pipeline takes one dict per run (a map input), as onnxruntime does."""
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import (DictionaryType, FloatTensorType, Int64TensorType,
                                            StringTensorType)
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.pipeline import make_pipeline
    rng = np.random.default_rng(3)
    keys = ["age", "height", "score", "visits"] if key_type == "string" else [3, 17, 42, 99]
    rows = [{k: float(rng.normal()) for k in keys if rng.random() < 0.7} for _ in range(60)]
    labels = [int(sum(r.values()) > 0) for r in rows]
    pipe = make_pipeline(DictVectorizer(sparse=False), LogisticRegression()).fit(rows, labels)
    key = StringTensorType([]) if key_type == "string" else Int64TensorType([])
    onx = convert_sklearn(pipe, initial_types=[("input", DictionaryType(key, FloatTensorType([])))],
                          target_opset={"": 17, "ai.onnx.ml": 3})
    blob = onx.SerializeToString()
    ours = nxrt.InferenceSession(blob)
    theirs = ort.InferenceSession(blob, providers=["CPUExecutionProvider"])
    assert ours.get_inputs()[0].type == theirs.get_inputs()[0].type
    extra = {"unknown": 5.0} if key_type == "string" else {7: 5.0}  # not in the vocabulary
    # (onnxruntime refuses an empty dict: "Size of dictionary is empty")
    for row in rows[:10] + [{**rows[0], **extra}]:
        got = ours.run(None, {"input": row})
        want = theirs.run(None, {"input": row})
        for out, g, w in zip(onx.graph.output, got, want):
            _compare(g, w, f"dict_vectorizer output {out.name} for {row}")
