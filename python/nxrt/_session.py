"""onnxruntime-compatible session API on top of the native core."""

import enum
import os
import time

import numpy as np

from . import _dtypes
from ._errors import ALL as _ERROR_CLASSES
from . import _nxrt
from . import _call
from . import _convert
from . import _value
from . import _providers
from ._iobinding import IOBinding

_nxrt._register_errors(_ERROR_CLASSES)

class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """Options for creating a session; the same attributes as onnxruntime's."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_profiling = False
        self.profile_file_prefix = "nxrt_profile_"
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False
        self.use_per_session_threads = True  # nxrt's pools are always per session
        self._config_entries = {}

    def register_custom_ops_library(self, library_path):
        """onnxruntime loads custom op libraries here; nxrt cannot (its kernels are built in)."""
        raise _ERROR_CLASSES["Fail"](
            f"[ONNXRuntimeError] : 1 : FAIL : nxrt cannot load the custom op library "
            f"'{library_path}': custom op libraries are written against onnxruntime's C API")

    def add_session_config_entry(self, key, value):
        """Sets a string configuration entry (as onnxruntime's session config keys)."""
        self._config_entries[str(key)] = str(value)

    def get_session_config_entry(self, key):
        """Returns a configuration entry set with add_session_config_entry."""
        if key not in self._config_entries:
            raise _ERROR_CLASSES["InvalidArgument"](f"SessionOptions has no config entry '{key}'")
        return self._config_entries[key]

    def _native(self):
        return {
            "intra_op_num_threads": int(self.intra_op_num_threads),
            "inter_op_num_threads": int(self.inter_op_num_threads),
            "graph_optimization_level": int(self.graph_optimization_level),
            "enable_profiling": bool(self.enable_profiling),
            "config_entries": dict(self._config_entries),
        }


class RunOptions:
    """Per-run options. Setting ``terminate`` to True stops runs using these options."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""  # the C API name of logid
        self.only_execute_path_to_fetches = False
        self._flag = _nxrt.TerminateFlag()
        self._config_entries = {}

    def add_run_config_entry(self, key, value):
        """Sets a string configuration entry of this run (onnxruntime's run config keys)."""
        self._config_entries[str(key)] = str(value)

    def get_run_config_entry(self, key):
        """Returns an entry set with add_run_config_entry."""
        if key not in self._config_entries:
            raise RuntimeError(f"RunOptions does not have configuration with key: {key}")
        return self._config_entries[key]

    @property
    def terminate(self):
        return self._flag.get()

    @terminate.setter
    def terminate(self, value):
        self._flag.set(bool(value))


class NodeArg:
    """Name, type and shape of a graph input or output."""

    def __init__(self, name, type_string, dims):
        self.name = name
        self.type = type_string
        self.shape = list(dims) if dims is not None else None

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    """Model-level metadata: producer, graph name, domain, description, version, custom map."""

    def __init__(self, meta):
        self.producer_name = meta["producer_name"]
        self.graph_name = meta["graph_name"]
        self.domain = meta["domain"]
        self.description = meta["description"]
        self.graph_description = ""
        self.version = meta["version"]
        self.custom_metadata_map = dict(meta["custom_metadata_map"])


def _convert_python_feeds(session, input_feed):
    """input_feed with Python lists (and scalars) turned into arrays of each input's
    declared element type, as onnxruntime does: [[1, 2]] for an int32 input is int32, not
    np.asarray's int64. A value the type cannot hold (300 for int8) fails with
    onnxruntime's RuntimeError. Arrays and other objects pass through unchanged. (Calling
    the session, nxrt's own API, goes through _call._to_array instead, which never
    truncates: 2.5 for an int input stays a float there.)"""
    declared = None
    converted = None
    for name, value in input_feed.items():
        if not isinstance(value, (list, tuple, bool, int, float)) or name in session._sequence_inputs:
            continue
        if declared is None:
            declared = _call._plan(session).declared
        code = declared.get(name)
        target = _dtypes.numpy_dtype(code) if code is not None else None
        if target is None or code == _dtypes.STRING:
            continue
        try:
            array = np.array(value, dtype=target)
        except (OverflowError, ValueError, TypeError) as e:
            raise RuntimeError(f"Could not create tensor from given input list for input "
                               f"'{name}' ({_dtypes.TYPE_NAMES.get(code, code)}): {e}") from None
        if converted is None:
            converted = dict(input_feed)
        converted[name] = array
    return converted if converted is not None else input_feed


class InferenceSession:
    """Loads an ONNX model and runs it; a drop-in for ``onnxruntime.InferenceSession``."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._providers, self._provider_options = _providers.parse_providers(providers, provider_options)
        options = self._sess_options._native()
        disabled = kwargs.pop("disabled_optimizers", None)
        if disabled:
            options["disabled_optimizers"] = set(map(str, disabled))
        if self._sess_options.optimized_model_filepath:
            options["optimized_model_filepath"] = os.fspath(
                self._sess_options.optimized_model_filepath)
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
            self._sess = _nxrt.Session.from_bytes(bytes(path_or_bytes), options)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._sess = _nxrt.Session.from_path(self._model_path, options)
        else:
            raise TypeError(
                f"Unable to load from type '{type(path_or_bytes).__name__}': pass a file "
                f"path (str or os.PathLike) or the serialized model as bytes")
        private_ops = self._sess.optimized_model_nxrt_ops()
        if private_ops:
            import warnings

            # As onnxruntime warns when its file holds NCHWc ops: the file is for nxrt only.
            warnings.warn(
                f"the optimized model written to "
                f"{self._sess_options.optimized_model_filepath!r} holds nxrt's own ops "
                f"({', '.join(private_ops)}), which only nxrt runs; for a file other runtimes "
                f"load, use graph_optimization_level ORT_ENABLE_BASIC (or disable those "
                f"passes)", RuntimeWarning, stacklevel=2)
        self._inputs = [NodeArg(n, *t) for n, t in self._sess.inputs()]
        self._outputs = [NodeArg(n, *t) for n, t in self._sess.outputs()]
        self._overridable = [NodeArg(n, *t) for n, t in self._sess.overridable_initializers()]
        self._input_names = [i.name for i in self._inputs]
        self._sequence_inputs = frozenset(
            i.name for i in self._inputs if i.type.startswith(("seq(", "optional(seq(")))
        self._required_inputs = [i.name for i in self._inputs if not i.type.startswith("optional")]
        self._feedable = set(self._input_names) | {i.name for i in self._overridable}
        self._output_names = [o.name for o in self._outputs]
        self._profiling = bool(self._sess_options.enable_profiling)

    def get_inputs(self):
        """The inputs a caller feeds, in graph order (initializers excluded), as NodeArg."""
        return list(self._inputs)

    def get_outputs(self):
        """The graph outputs in order, as NodeArg."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Initializers that are also graph inputs and so may be fed to override them."""
        return list(self._overridable)

    # The ergonomic API (nxrt.load, session(x)); the logic lives in _call.py.
    @property
    def input_names(self):
        """Names of the inputs a call accepts positionally (those of get_inputs()), in
        graph order."""
        return list(self._input_names)

    @property
    def output_names(self):
        """Names of the model's outputs, in graph order."""
        return list(self._output_names)

    def __call__(self, /, *args, **kwargs):
        """Runs the model like a function: ``sess(x)``, ``sess(a, b)`` (input order),
        ``sess(A=a, B=b)``, ``sess({"A": a})`` or mixes. Values may be numpy arrays, Python
        scalars and lists, or objects with ``__array__`` or ``__dlpack__`` (CPU).
        Initializer-backed inputs keep their defaults unless fed by name. Returns the value
        itself for a one-output model, an ``nxrt.Outputs`` otherwise."""
        return _call.call(self, None, args, kwargs)

    def bind_outputs(self, *names):
        """A callable proxy (also a context manager) whose calls compute and return only
        the outputs ``names``; the other outputs are not copied out."""
        return _call.BoundOutputs(self, _call.check_output_names(self, names))

    def get_modelmeta(self):
        """Producer, graph name, domain, description, version and custom metadata."""
        return ModelMetadata(self._sess.metadata())

    def get_providers(self):
        """The execution providers this session uses, in priority order."""
        return list(self._providers)

    def get_provider_options(self):
        """Options per provider, as {name: {key: value}} with string values."""
        return {n: dict(o) for n, o in zip(self._providers, self._provider_options)}

    def get_session_options(self):
        """The SessionOptions the session was created with."""
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        """Changes the provider list (only CPUExecutionProvider is available)."""
        self._providers, self._provider_options = _providers.parse_providers(providers, provider_options)

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model; returns a list of numpy arrays, one per requested output."""
        if not isinstance(input_feed, dict):
            raise TypeError("input_feed must be a dict mapping input names to arrays")
        missing = [n for n in self._required_inputs if n not in input_feed]
        if missing:
            raise _ERROR_CLASSES["InvalidArgument"](
                f"Required inputs ({missing}) are missing from input feed "
                f"({list(input_feed)}).")
        for name in input_feed:
            if name not in self._feedable:
                raise _ERROR_CLASSES["InvalidArgument"](
                    f"Invalid input name: '{name}'; the model's inputs are {self._input_names}")
        input_feed = _convert_python_feeds(self, input_feed)
        feeds = [_convert.to_feed(n, v, n in self._sequence_inputs) for n, v in input_feed.items()]
        names = list(output_names) if output_names else []
        flag = run_options._flag if run_options is not None else None
        results = self._sess.run(names, feeds, flag)
        return [_convert.from_result(code, value) for code, value in results]

    # Zero-copy values and onnxruntime's IoBinding; the logic lives in _value.py/_iobinding.py.
    def run_with_values(self, output_names, input_feed, run_options=None):
        """Like ``run`` but returns ``NxrtValue`` objects that keep the outputs in nxrt's
        memory (``np.asarray``/``np.from_dlpack`` view them without a copy)."""
        if not isinstance(input_feed, dict):
            raise TypeError("input_feed must be a dict mapping input names to arrays")
        for name in input_feed:
            if name not in self._feedable:
                raise _ERROR_CLASSES["InvalidArgument"](
                    f"Invalid input name: '{name}'; the model's inputs are {self._input_names}")
        input_feed = _convert_python_feeds(self, input_feed)
        feeds = [_convert.to_feed(n, v, n in self._sequence_inputs) for n, v in input_feed.items()]
        flag = run_options._flag if run_options is not None else None
        results = self._sess.run(list(output_names or []), feeds, flag, None, True)
        return [_value.wrap_result(code, value) for code, value in results]

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Runs on another thread, then calls ``callback(results, user_data, err)``: the
        list of numpy outputs and "" on success, [] and the error's message on failure (as
        onnxruntime's run_async does). Returns at once."""
        import threading

        def work():
            try:
                results = self.run(output_names, input_feed, run_options)
            except Exception as e:  # the error goes to the callback, as onnxruntime's does
                text = str(e)
                if text.startswith("[ONNXRuntimeError] : "):  # onnxruntime passes the bare message
                    text = text.split(" : ", 3)[-1]
                callback([], user_data, text)
                return
            callback(results, user_data, "")

        threading.Thread(target=work, name="nxrt-run-async", daemon=True).start()

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """Runs on a dict of OrtValues; returns a list of OrtValues (onnxruntime's API)."""
        for name, v in input_dict_ort_values.items():
            if not isinstance(v, _value.OrtValue):
                raise TypeError(f"input '{name}' must be an OrtValue, not {type(v).__name__}")
        values = self.run_with_values(output_names, dict(input_dict_ort_values), run_options)
        return [_value.OrtValue._none() if v is None else
                [_value.OrtValue(x._native) for x in v] if isinstance(v, list) else
                _value.OrtValue(v._native) for v in values]

    def io_binding(self):
        """An ``IOBinding`` for this session (onnxruntime's API)."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the inputs and outputs bound in `iobinding`; read the results with
        ``iobinding.get_outputs()`` or ``copy_outputs_to_cpu()``."""
        if not isinstance(iobinding, IOBinding):
            raise TypeError(f"run_with_iobinding needs an IOBinding from session.io_binding(), "
                            f"not {type(iobinding).__name__}")
        if iobinding._session is not self:
            raise ValueError("the IOBinding belongs to another session")
        iobinding._run(run_options)

    def end_profiling(self):
        """Writes the per-node timings of every run so far as a Chrome trace JSON file
        (``profile_file_prefix`` + date) and returns its path; "" when profiling is off."""
        if not self._profiling:
            return ""
        path = f"{self._sess_options.profile_file_prefix}{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with open(path, "w") as f:
            f.write(self._sess.take_profile())
        self._profiling = False
        return path


def load(path, *, device=None, providers=None, sess_options=None):
    """Loads an ONNX model and returns a callable ``InferenceSession``.

    ``path`` is a file path (str or os.PathLike) or the serialized model as bytes.
    ``device`` picks where to compute: "cpu" (the default), "cuda" or "cuda:N"; a device
    that is not available raises ValueError instead of falling back to the CPU. An
    explicit ``providers`` list (as for ``InferenceSession``) wins over ``device``.
    ``sess_options`` is an optional ``SessionOptions``.

    Example::

        sess = nxrt.load("model.onnx")
        y = sess(x)                      # one output: the array itself
        out = sess(input_ids=ids)        # several outputs: out.logits, out[0], ...
    """
    if device is not None:
        # Validated even when providers wins, so a typo such as 'gpu' does not go unseen.
        device_providers = _providers.providers_for_device(device) if providers is None else None
        if device_providers is None:
            if not isinstance(device, str) and not hasattr(device, "type"):
                raise TypeError(f"device must be a str such as 'cpu', 'cuda' or 'cuda:0', "
                                f"not {type(device).__name__}")
            if not _providers.DEVICE_PATTERN.match(str(device).strip().lower()):
                raise ValueError(f"unknown device {device!r}; use 'cpu', 'cuda' or 'cuda:N' "
                                 f"(N = GPU index)")
        else:
            providers = device_providers
    if not isinstance(path, (str, bytes, bytearray, memoryview, os.PathLike)):
        raise TypeError(f"nxrt.load takes a file path (str or os.PathLike) or the serialized "
                        f"model as bytes, not {type(path).__name__}")
    return InferenceSession(path, sess_options=sess_options, providers=providers)
