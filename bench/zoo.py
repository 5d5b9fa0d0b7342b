"""The model zoo of ../shared/zoo/manifest.json: paths, inputs, state and comparison.

Used by bench/bench_zoo.py and tests/python/test_zoo.py. The models themselves are fetched
into a cache outside the repository by scripts/fetch_zoo.py (`fetch()` here calls it).

    entries = load_manifest()
    entry = get_entry("gtcrn_simple")
    path = model_path(entry)                       # None until fetched
    feeds = make_feeds(entry, seed=0, input_names=[i.name for i in sess.get_inputs()])
    out = sess.run(None, feeds)
    feeds = carry(entry, out, feeds)               # stateful models: outputs -> inputs
    msg = compare_outputs(entry, got, expected)    # None when within tolerance
"""

import fnmatch
import importlib.util
import os
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.normpath(os.path.join(REPO, "..", "shared", "zoo", "manifest.json"))
FETCH_SCRIPT = os.path.join(REPO, "scripts", "fetch_zoo.py")

# Defaults of the manifest's tolerance classes.
FLOAT_RTOL, FLOAT_ATOL = 1e-3, 1e-4
QUANTIZED_TOL = 1e-2

_fetch_module = None


def _fetcher():
    """scripts/fetch_zoo.py as a module (it is a script, not part of a package)."""
    global _fetch_module
    if _fetch_module is None:
        spec = importlib.util.spec_from_file_location("nxrt_fetch_zoo", FETCH_SCRIPT)
        _fetch_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_fetch_module)
    return _fetch_module


def cache_dir():
    """Where fetch_zoo.py puts the models: $NXRT_ZOO_CACHE or ~/.cache/nxrt-zoo."""
    return _fetcher().default_cache()


def fetch(ids=None, out=None, verbose=False):
    """Fetches the models IDS (default all) that are not in the cache yet; returns
    {id: (ok, message)} with ok True, False (failed) or None (skipped: a 'build' entry)."""
    return _fetcher().fetch(ids, cache_dir(), out=out, verbose=verbose)


def load_manifest(path=MANIFEST):
    """The manifest's model entries (dicts), in manifest order."""
    return _fetcher().load_manifest(path)


def first_line(err):
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]


def get_entry(model_id, entries=None):
    for e in entries if entries is not None else load_manifest():
        if e["id"] == model_id:
            return e
    raise KeyError(f"no model '{model_id}' in {MANIFEST}")


def model_path(entry):
    """The model file of ENTRY, or None when it has not been fetched (or built). An entry
    with a 'path' key (a model outside the zoo) names its file directly; a 'build' entry's
    model is the folder build() writes."""
    if "build" in entry:
        path = os.path.join(cache_dir(), entry["id"], "model.onnx")
    else:
        path = entry.get("path") or os.path.join(cache_dir(), entry["id"] + ".onnx")
    return path if os.path.isfile(path) else None


def fetch_errors():
    """The exception type fetching raises (network, pip, checksum)."""
    return _fetcher().FetchError


def build(entry, out=None):
    """Builds a 'build' entry: fetches its GGUF file (scripts/fetch_zoo.py, sha256 pinned)
    and converts it with nxrt.genai into <cache>/<id>/ (weights int4 for an id ending in
    'int4', else fp32); returns the model path."""
    path = model_path(entry)
    if path:
        return path
    from nxrt.genai.convert import convert_gguf

    log = (lambda s: print(s, file=out, flush=True)) if out else (lambda s: None)
    gguf = _fetcher().fetch_source(entry, cache_dir(), log)
    weights = "int4" if entry["id"].endswith("int4") else "fp32"
    # attention="ops": the manifest's input recipe is the optimum-style decoder I/O
    # (position_ids fed, a past of 63 positions), which standard attention ops take.
    convert_gguf(gguf, os.path.join(cache_dir(), entry["id"]), weights=weights,
                 attention="ops")
    log(f"{entry['id']:<24} built from {os.path.basename(gguf)} ({weights})")
    return model_path(entry)


def side_file(entry, name):
    """Path of side file NAME of ENTRY (extracted by fetch_zoo.py into <cache>/<id>/)."""
    return os.path.join(cache_dir(), entry["id"], name)


# ---------------------------------------------------------------------------------------
# Inputs


def _is_pattern(name):
    return any(c in name for c in "*?[")


def _resolve_names(entry, input_names):
    """[(actual input name, recipe)] for the entry's input recipe; patterns are matched
    against INPUT_NAMES (the session's inputs), in the session's order."""
    recipes = entry["inputs"]
    if input_names is None:
        if any(_is_pattern(k) for k in recipes):
            input_names = _model_input_names(entry)
        else:
            return list(recipes.items())
    resolved, covered = [], set()
    for key, recipe in recipes.items():
        if _is_pattern(key):
            hits = [n for n in input_names if fnmatch.fnmatchcase(n, key)]
        else:
            hits = [key] if key in input_names else []
        if not hits:
            raise ValueError(f"{entry['id']}: the input recipe '{key}' matches none of the "
                             f"model's inputs {list(input_names)}")
        for n in hits:
            if n not in covered:
                covered.add(n)
                resolved.append((n, recipe))
    missing = [n for n in input_names if n not in covered]
    if missing:
        raise ValueError(f"{entry['id']}: no input recipe for {missing}")
    order = {n: i for i, n in enumerate(input_names)}
    resolved.sort(key=lambda item: order[item[0]])
    return resolved


def _model_input_names(entry):
    path = model_path(entry)
    if path is None:
        raise FileNotFoundError(f"{entry['id']} is not fetched: cannot list its inputs")
    import onnxruntime

    sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return [i.name for i in sess.get_inputs()]


def _fill(entry, name, recipe, seed):
    shape = tuple(int(d) for d in recipe["shape"])
    dtype = np.dtype(recipe.get("dtype", "float32"))
    kind = recipe["fill"]
    # One generator per input, from the seed and the name: an input's values do not depend
    # on which other inputs there are or on their order.
    rng = np.random.default_rng([int(seed), zlib.crc32(name.encode())])
    if kind == "normal":
        x = rng.normal(recipe.get("mean", 0.0), recipe.get("std", 1.0), shape)
    elif kind == "uniform":
        x = rng.uniform(recipe.get("low", 0.0), recipe.get("high", 1.0), shape)
    elif kind == "randint":
        x = rng.integers(recipe["low"], recipe["high"], shape, dtype=np.int64)
    elif kind == "const":
        x = np.full(shape, recipe.get("value", 0))
    elif kind == "sine":
        n = int(np.prod(shape, dtype=np.int64))
        t = np.arange(n, dtype=np.float64) / float(recipe["rate"])
        x = recipe.get("amp", 1.0) * np.sin(2 * np.pi * float(recipe["freq"]) * t)
        if recipe.get("noise"):
            x = x + recipe["noise"] * rng.standard_normal(n)
        x = x.reshape(shape)
    elif kind == "values":
        x = np.asarray(recipe["values"])
        if x.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{entry['id']}: input '{name}' has {x.size} values for shape "
                             f"{list(shape)}")
        x = x.reshape(shape)
    elif kind == "npz":
        path = side_file(entry, recipe["file"])
        with np.load(path) as data:
            x = np.asarray(data[recipe["key"]])
        if "index" in recipe:
            x = x[recipe["index"]]
        if x.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{entry['id']}: {recipe['file']}[{recipe['key']}]"
                             f"[{recipe.get('index')}] has shape {list(x.shape)}, not "
                             f"{list(shape)}")
        x = x.reshape(shape)
    else:
        raise ValueError(f"{entry['id']}: input '{name}' has an unknown fill '{kind}'")
    if dtype.kind in "iu" and np.asarray(x).dtype.kind == "f":
        x = np.rint(x)
    if dtype.kind == "b":
        x = np.rint(x) != 0 if np.asarray(x).dtype.kind == "f" else np.asarray(x) != 0
    return np.ascontiguousarray(np.asarray(x).astype(dtype))


def make_feeds(entry, seed=0, input_names=None, session=None):
    """The input feed dict of ENTRY's recipe. Names with fnmatch patterns are matched
    against the actual input names: INPUT_NAMES, else SESSION's inputs, else the model
    file's (read with onnxruntime). An entry may instead carry a 'feeds' callable
    (models outside the zoo): it is called with the seed."""
    if callable(entry.get("feeds")):
        return dict(entry["feeds"](seed))
    if input_names is None and session is not None:
        input_names = [i.name for i in session.get_inputs()]
    return {name: _fill(entry, name, recipe, seed)
            for name, recipe in _resolve_names(entry, input_names)}


def carry(entry, outputs, feeds):
    """The feeds of the next call of a stateful model: FEEDS with output i (of OUTPUTS,
    the full output list of the last call) placed at the input the manifest's 'carry'
    names. Returns FEEDS itself when the entry has no state."""
    mapping = entry.get("carry")
    if not mapping:
        return feeds
    nxt = dict(feeds)
    for index, name in mapping.items():
        nxt[name] = outputs[int(index)]
    return nxt


# ---------------------------------------------------------------------------------------
# Comparison


def tolerance(entry):
    """(class, params) of ENTRY: ('float', {'rtol', 'atol'}), ('quantized', {'tol'}) or
    ('int', {})."""
    cls = entry.get("tolerance", "float")
    if cls == "quantized":
        return cls, {"tol": float(entry.get("tol", QUANTIZED_TOL))}
    if cls == "int":
        return cls, {}
    return "float", {"rtol": float(entry.get("rtol", FLOAT_RTOL)),
                     "atol": float(entry.get("atol", FLOAT_ATOL))}


def _fmt_index(shape, flat):
    return str(tuple(int(i) for i in np.unravel_index(flat, shape))) if shape else "()"


def _compare_arrays(cls, params, got, exp, label):
    got, exp = np.asarray(got), np.asarray(exp)
    if got.shape != exp.shape:
        return f"{label}: shape {list(got.shape)}, expected {list(exp.shape)}"
    if got.dtype != exp.dtype:
        return f"{label}: dtype {got.dtype}, expected {exp.dtype}"
    if exp.dtype.kind not in "fc" or cls == "int":
        if exp.dtype.kind in "fc":
            equal = (got == exp) | (np.isnan(got) & np.isnan(exp))
        else:
            equal = got == exp
        if np.all(equal):
            return None
        bad = np.flatnonzero(~np.asarray(equal).reshape(-1))
        i = int(bad[0])
        return (f"{label}: {bad.size} of {exp.size} elements differ (exact match needed); "
                f"first at {_fmt_index(exp.shape, i)}: got {got.reshape(-1)[i].item()!r}, "
                f"expected {exp.reshape(-1)[i].item()!r}")
    if exp.size == 0:
        return None
    g = got.astype(np.float64).reshape(-1)
    e = exp.astype(np.float64).reshape(-1)
    gn, en = np.isnan(g), np.isnan(e)
    if np.any(gn != en):
        i = int(np.flatnonzero(gn != en)[0])
        return (f"{label}: NaN mismatch, {int(np.sum(gn != en))} elements; first at "
                f"{_fmt_index(exp.shape, i)}: got {g[i]}, expected {e[i]}")
    ok = ~en
    # Infinities must match exactly.
    inf = ok & (np.isinf(g) | np.isinf(e))
    if np.any(g[inf] != e[inf]):
        i = int(np.flatnonzero(inf & (g != e))[0])
        return f"{label}: at {_fmt_index(exp.shape, i)} got {g[i]}, expected {e[i]}"
    fin = ok & ~inf
    diff = np.zeros_like(e)
    diff[fin] = np.abs(g[fin] - e[fin])
    if not np.any(fin):
        return None
    if cls == "quantized":
        span = float(np.max(e[fin]) - np.min(e[fin]))
        scale = span if span > 0 else max(float(np.max(np.abs(e[fin]))), 1.0)
        worst = int(np.argmax(diff))
        err = float(diff[worst]) / scale
        if err <= params["tol"]:
            return None
        return (f"{label}: max abs diff {diff[worst]:.4g} is {err:.3g} of the output range "
                f"{scale:.4g} (tol {params['tol']:g}); at {_fmt_index(exp.shape, worst)}: got "
                f"{g[worst]:.6g}, expected {e[worst]:.6g}")
    limit = params["atol"] + params["rtol"] * np.abs(e)
    bad = fin & (diff > limit)
    if not np.any(bad):
        return None
    excess = np.where(bad, diff - limit, -np.inf)
    worst = int(np.argmax(excess))
    rel = diff[worst] / abs(e[worst]) if e[worst] != 0 else float("inf")
    return (f"{label}: {int(np.sum(bad))} of {exp.size} elements outside rtol "
            f"{params['rtol']:g} atol {params['atol']:g}; max abs diff "
            f"{float(np.max(diff)):.4g}; worst at {_fmt_index(exp.shape, worst)}: got "
            f"{g[worst]:.7g}, expected {e[worst]:.7g} (abs {diff[worst]:.3g}, rel {rel:.3g})")


def _compare_values(cls, params, got, exp, label):
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            return f"{label}: got {type(got).__name__}, expected a map"
        if set(got) != set(exp):
            return f"{label}: map keys {sorted(got)}, expected {sorted(exp)}"
        for k in exp:
            msg = _compare_values(cls, params, got[k], exp[k], f"{label}[{k!r}]")
            if msg:
                return msg
        return None
    if isinstance(exp, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"{label}: got {type(got).__name__}, expected a sequence"
        if len(got) != len(exp):
            return f"{label}: sequence of {len(got)}, expected {len(exp)}"
        for i, (a, b) in enumerate(zip(got, exp)):
            msg = _compare_values(cls, params, a, b, f"{label}[{i}]")
            if msg:
                return msg
        return None
    if exp is None or got is None:
        return None if exp is None and got is None else f"{label}: got {got!r}, expected {exp!r}"
    if not isinstance(exp, np.ndarray):  # a scalar, e.g. a value of a map
        exp, got = np.asarray(exp), np.asarray(got)
        if got.dtype.kind == exp.dtype.kind:
            got = got.astype(exp.dtype)
    return _compare_arrays(cls, params, got, exp, label)


def compare_outputs(entry, got, expected, names=None):
    """Compares the output lists GOT and EXPECTED with ENTRY's tolerance class: float
    (|got - expected| <= atol + rtol * |expected|, rtol 1e-3 atol 1e-4 unless the entry
    overrides them), quantized (max abs diff / range of expected <= tol, default 1e-2) or
    int (exact); integer, bool and string outputs are always exact. Returns a readable
    message about the first mismatching output, or None when all match."""
    if len(got) != len(expected):
        return f"{entry['id']}: {len(got)} outputs, expected {len(expected)}"
    cls, params = tolerance(entry)
    for i, (a, b) in enumerate(zip(got, expected)):
        label = f"{entry['id']} output {i}" + (f" '{names[i]}'" if names else "")
        msg = _compare_values(cls, params, a, b, label)
        if msg:
            return msg
    return None
