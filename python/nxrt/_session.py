"""onnxruntime-compatible session API on top of the native core."""

import enum
import os
import time
import warnings

import numpy as np

from . import _dtypes
from ._errors import ALL as _ERROR_CLASSES, ort_error, unsupported
from . import _nxrt
from . import _devices
from . import _module_api
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


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


_NO_EP_CONTEXT = ("nxrt runs ONNX models only, not models compiled for an execution provider "
                  "(EPContext nodes)")


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
        # False: the session's pools take the sizes of set_global_thread_pool_sizes().
        self.use_per_session_threads = True
        self._config_entries = {}
        self._execution_order = ExecutionOrder.DEFAULT
        self._free_dimensions = {}  # dimension name -> size
        self._initializers = {}  # initializer name -> OrtValue
        self._providers = []  # (name, options) from add_provider / add_provider_for_devices
        self._selection_policy = None
        self._selection_delegate = None
        self._load_canceled = False

    @property
    def execution_order(self):
        """The order nodes run in (an ExecutionOrder). Kept for compatibility only: nxrt
        runs nodes in the topological order its planner chooses whatever this says, so
        PRIORITY_BASED and MEMORY_EFFICIENT change nothing (results are the same)."""
        return self._execution_order

    @execution_order.setter
    def execution_order(self, value):
        self._execution_order = ExecutionOrder(value)

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        """Fixes the size of the named (symbolic) dimension `dim_name` of the model's
        inputs: sessions show it in get_inputs()/get_outputs() shapes, a run whose input
        has another size there fails with InvalidArgument, and the graph passes take the
        size as fixed (shape computations that depend only on fixed sizes fold into
        constants, as onnxruntime's FreeDimensionOverrideTransformer allows)."""
        if isinstance(dim_value, bool) or not isinstance(dim_value, int):
            raise TypeError(f"dim_value must be an int, not {type(dim_value).__name__}")
        if dim_value < 0:
            raise ort_error("InvalidArgument", f"free dimension '{dim_name}' cannot be fixed "
                                               f"to a negative size ({dim_value})")
        self._free_dimensions[str(dim_name)] = dim_value

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        raise unsupported("free dimension overrides by denotation "
                          "(add_free_dimension_override_by_denotation)",
                          f"nxrt does not read dimension denotations ('{dim_denotation}'); fix "
                          f"the dimension by its name with add_free_dimension_override_by_name")

    def add_initializer(self, name, val):
        """Replaces initializer `name` by the OrtValue `val` in sessions made with these
        options (kept alive by these options). nxrt can replace only the initializers a run
        may feed (get_overridable_initializers()): it feeds `val` on every run that does
        not; a session for a model whose `name` is another initializer raises
        NotImplemented."""
        if not isinstance(val, _value.OrtValue) or not val.has_value():
            raise TypeError(f"add_initializer needs an OrtValue holding a tensor, not "
                            f"{type(val).__name__}")
        self._initializers[str(name)] = val

    def add_external_initializers(self, names, ort_values):
        raise unsupported("add_external_initializers",
                          "nxrt reads the data of external initializers from the files the "
                          "model names, when it loads the model; it cannot take it from memory")

    def add_external_initializers_from_files_in_memory(self, names, buffers, lengths):
        raise unsupported("add_external_initializers_from_files_in_memory",
                          "nxrt reads external data files from disk, next to the model, "
                          "when it loads the model")

    def add_provider(self, provider_name, provider_options):
        """Adds an execution provider to use when InferenceSession gets no providers list
        (nxrt has one: CPUExecutionProvider)."""
        try:
            names, options = _providers.parse_providers(
                [(provider_name, dict(provider_options))], None)
        except ValueError as e:
            raise ort_error("InvalidArgument", str(e)) from None
        self._providers.append((names[0], options[0]))

    def add_provider_for_devices(self, ep_devices, provider_options):
        """Adds the provider of `ep_devices` (OrtEpDevices from get_ep_devices(); nxrt's
        is CPUExecutionProvider on the CPU)."""
        devices = list(ep_devices)
        if not devices or not all(isinstance(d, _devices.OrtEpDevice) for d in devices):
            raise ort_error("InvalidArgument", "add_provider_for_devices needs a non-empty "
                                               "list of OrtEpDevice from get_ep_devices()")
        self.add_provider(devices[0].ep_name, provider_options)

    def set_provider_selection_policy(self, policy):
        """Lets the session choose its providers by `policy` (an
        OrtExecutionProviderDevicePolicy) when it gets no providers list. Every policy
        chooses CPUExecutionProvider, the only device nxrt has."""
        self._selection_policy = _devices.OrtExecutionProviderDevicePolicy(policy)

    def set_provider_selection_policy_delegate(self, delegate):
        """Lets the session choose its providers with ``delegate(ep_devices,
        model_metadata, runtime_metadata, max_selections)``, which returns the chosen
        OrtEpDevices. nxrt calls it with get_ep_devices() (the CPU), the model's metadata
        as strings, {} and 1."""
        if not callable(delegate):
            raise TypeError("the provider selection delegate must be callable")
        self._selection_delegate = delegate

    def has_providers(self):
        """Whether providers were added or a selection policy or delegate was set."""
        return bool(self._providers or self._selection_policy is not None
                    or self._selection_delegate is not None)

    def set_load_cancellation_flag(self, value):
        """True makes sessions created with these options raise ModelLoadCanceled. nxrt
        cannot stop a load half-way: a flag set while a session loads is seen when the load
        ends, and the loaded session is then dropped."""
        self._load_canceled = bool(value)

    def set_ep_context_data_read_func(self, read_func, max_data_size):
        raise unsupported("EPContext data callbacks (set_ep_context_data_read_func)",
                          _NO_EP_CONTEXT)

    def clear_ep_context_data_read_func(self):
        """Nothing to clear: nxrt never sets an EPContext data callback."""

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
        threads = (self.intra_op_num_threads, self.inter_op_num_threads)
        if not self.use_per_session_threads:
            # nxrt has no pools shared between sessions: one that opts out of its own pools
            # gets pools of the sizes chosen for onnxruntime's global ones.
            threads = _module_api.global_thread_pool_sizes()
        native = {
            "intra_op_num_threads": int(threads[0]),
            "inter_op_num_threads": int(threads[1]),
            "graph_optimization_level": int(self.graph_optimization_level),
            "enable_profiling": bool(self.enable_profiling),
            "config_entries": dict(self._config_entries),
            "free_dimension_overrides": dict(self._free_dimensions),
        }
        if self.optimized_model_filepath:
            native["optimized_model_filepath"] = os.fspath(self.optimized_model_filepath)
        return native


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

    def add_active_adapter(self, adapter):
        raise unsupported("LoRA adapters (RunOptions.add_active_adapter)",
                          "nxrt runs a model's own weights and cannot activate adapters at run "
                          "time")

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
        so = self._sess_options
        if providers is None and so._providers:
            providers = [name for name, _ in so._providers]
            provider_options = [opts for _, opts in so._providers]
        elif providers is not None and so.has_providers():
            warnings.warn("InferenceSession got a providers list and SessionOptions that "
                          "already choose providers; it uses the providers list", UserWarning,
                          stacklevel=2)
        self._providers, self._provider_options = _providers.parse_providers(providers, provider_options)
        options = so._native()
        disabled = kwargs.pop("disabled_optimizers", None)
        if disabled:
            options["disabled_optimizers"] = set(map(str, disabled))
        self._check_load_canceled()
        # Wall-clock, as onnxruntime reports it; 0 when profiling is off.
        self._profiling_start_ns = time.time_ns() if so.enable_profiling else 0
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
        self._check_load_canceled()  # set by another thread while the model loaded
        private_ops = self._sess.optimized_model_nxrt_ops()
        if private_ops:
            # As onnxruntime warns when its file holds NCHWc ops: the file is for nxrt only.
            warnings.warn(
                f"the optimized model written to "
                f"{so.optimized_model_filepath!r} holds nxrt's own ops "
                f"({', '.join(private_ops)}), which only nxrt runs; for a file other runtimes "
                f"load, use graph_optimization_level ORT_ENABLE_BASIC (or disable those "
                f"passes)", RuntimeWarning, stacklevel=2)
        if providers is None and so._selection_delegate is not None:
            self._run_selection_delegate(so._selection_delegate)
        self._inputs = [NodeArg(n, *t) for n, t in self._sess.inputs()]
        self._outputs = [NodeArg(n, *t) for n, t in self._sess.outputs()]
        self._overridable = [NodeArg(n, *t) for n, t in self._sess.overridable_initializers()]
        self._input_names = [i.name for i in self._inputs]
        self._sequence_inputs = frozenset(
            i.name for i in self._inputs if i.type.startswith(("seq(", "optional(seq(")))
        self._required_inputs = [i.name for i in self._inputs if not i.type.startswith("optional")]
        self._feedable = set(self._input_names) | {i.name for i in self._overridable}
        self._required_set = frozenset(self._required_inputs)
        self._map_inputs = {i.name: types for i in self._inputs
                            if (types := _convert.map_types(i.type))}
        self._output_names = [o.name for o in self._outputs]
        self._profiling = bool(so.enable_profiling)
        self._added_initializers = self._check_added_initializers(so._initializers)
        # run() hands a dict of plain numpy arrays straight to native code when nothing
        # needs converting (no sequence inputs, no added initializers).
        self._plain_run = (not self._sequence_inputs and not self._added_initializers
                           and not self._map_inputs)

    def _check_load_canceled(self):
        if self._sess_options._load_canceled:
            raise ort_error("ModelLoadCanceled", "the model load was canceled with "
                                                 "SessionOptions.set_load_cancellation_flag(True)")

    def _run_selection_delegate(self, delegate):
        """Calls the provider selection delegate as onnxruntime does; what it chooses can
        only be the CPU, so the providers stay CPUExecutionProvider."""
        meta = self._sess.metadata()
        model_metadata = {"doc_string": meta["description"], "domain": meta["domain"],
                          "graph_description": "", "graph_name": meta["graph_name"],
                          "model_version": str(meta["version"]),
                          "producer_name": meta["producer_name"],
                          **meta["custom_metadata_map"]}
        devices = _devices.get_ep_devices()
        try:
            chosen = list(delegate(list(devices), model_metadata, {}, len(devices)))
        except Exception as e:
            raise ort_error("Fail", f"the provider selection delegate failed: "
                                    f"{type(e).__name__}: {e}") from e
        if not chosen:
            raise ort_error("Fail", "the provider selection delegate chose no device")
        if any(d not in devices for d in chosen):
            raise ort_error("Fail", "the provider selection delegate must return OrtEpDevices "
                                    "from the list it was given")

    def _check_added_initializers(self, added):
        """The initializers of SessionOptions.add_initializer, checked against the model;
        they are fed to every run that does not feed them itself."""
        overridable = {i.name: i for i in self._overridable}
        for name, value in added.items():
            if name not in overridable:
                raise unsupported(
                    "add_initializer for this model",
                    f"'{name}' is not one of the initializers a run may feed "
                    f"({sorted(overridable)}); nxrt takes the model's other initializers as "
                    f"constants and can replace only those")
            declared = overridable[name].type
            if value.data_type() != declared:
                raise ort_error("InvalidArgument", f"add_initializer: '{name}' is a "
                                                   f"{declared}, not a {value.data_type()}")
        return dict(added)

    def _feeds(self, input_feed):
        """The native run's feed tuples: maps from dicts, sequences from lists."""
        return [_convert.to_map_feed(n, v, self._map_inputs[n]) if n in self._map_inputs
                else _convert.to_feed(n, v, n in self._sequence_inputs)
                for n, v in input_feed.items()]

    def _run_native(self, names, feeds, flag, bound=None, as_values=False):
        """The native run of every run method: adds the initializers of add_initializer.
        (Dimensions fixed by add_free_dimension_override_by_name are declared sizes in the
        native session, which checks feeds against them.)"""
        if self._added_initializers:
            fed = {f[0] for f in feeds}
            feeds = list(feeds) + [(n, v.element_type(), v._native_tensor(), None, None)
                                   for n, v in self._added_initializers.items() if n not in fed]
        return self._sess.run(names, feeds, flag, bound, as_values)

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
        if (self._plain_run and run_options is None and input_feed.__class__ is dict
                and input_feed.keys() >= self._required_set
                and self._feedable.issuperset(input_feed)):
            results = self._sess.run_plain(output_names, input_feed)
            if results.__class__ is list:
                return results
            if results is not None:
                return [_convert.from_result(code, value) for code, value in results]
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
        feeds = self._feeds(input_feed)
        names = list(output_names) if output_names else []
        flag = run_options._flag if run_options is not None else None
        results = self._run_native(names, feeds, flag)
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
        feeds = self._feeds(input_feed)
        flag = run_options._flag if run_options is not None else None
        results = self._run_native(list(output_names or []), feeds, flag, None, True)
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

    def get_profiling_start_time_ns(self):
        """When profiling started (the session's creation), in nanoseconds of the wall
        clock (time.time_ns()); 0 when the session does not profile."""
        return self._profiling_start_ns

    def get_input_memory_infos(self):
        """Where each input is read from: host memory, for every input."""
        return [_devices.cpu_memory_info(self._sess_options.enable_cpu_mem_arena)
                for _ in self._inputs]

    def get_output_memory_infos(self):
        """Where each output is written: host memory, for every output."""
        return [_devices.cpu_memory_info(self._sess_options.enable_cpu_mem_arena)
                for _ in self._outputs]

    def get_input_epdevices(self):
        """The execution-provider device of each input: the CPU's, for every input."""
        return [_devices.get_ep_devices()[0] for _ in self._inputs]

    def get_provider_graph_assignment_info(self):
        if self._sess_options._config_entries.get("session.record_ep_graph_assignment_info") != "1":
            raise ort_error("Fail", "set the session config entry "
                                    "'session.record_ep_graph_assignment_info' to \"1\" to get "
                                    "the graph assignment information")
        raise unsupported("get_provider_graph_assignment_info",
                          "nxrt does not record the provider of each node of its optimized graph "
                          "(every node runs on CPUExecutionProvider, its only provider)")

    def enable_fallback(self):
        """Does nothing: onnxruntime falls back to the CPU provider after a run fails in
        another provider, and nxrt's sessions run on the CPU provider already."""

    def disable_fallback(self):
        """Does nothing: nxrt's sessions run on the CPU provider and never fall back."""

    def create_ortvalue_from_shape_and_type(self, shape, element_type, device_type, device_id=0,
                                            vendor_id=-1):
        """A zero-filled OrtValue of `shape` and `element_type` in the memory this session
        uses (the CPU's), as OrtValue.ortvalue_from_shape_and_type."""
        return _value.OrtValue.ortvalue_from_shape_and_type(shape, element_type, device_type,
                                                           device_id, vendor_id)

    def run_with_ortvaluevector(self, run_options, feed_names, feeds, fetch_names, fetches,
                                fetch_devices):
        """Runs on the OrtValues `feeds` (named by `feed_names`) and puts the outputs
        `fetch_names` in the list `fetches`, as OrtValues. Where `fetches` already holds one
        OrtValue per output, the outputs are written into them. `fetch_devices` may only
        name the CPU."""
        feed_names, feeds = list(feed_names), list(feeds)
        if len(feed_names) != len(feeds):
            raise ort_error("InvalidArgument", f"{len(feed_names)} feed names for "
                                               f"{len(feeds)} feeds")
        for name in feed_names:
            if name not in self._feedable:
                raise ort_error("InvalidArgument", f"Invalid input name: '{name}'; the "
                                                   f"model's inputs are {self._input_names}")
        names = list(fetch_names)
        for name in names:
            if name not in self._output_names:
                raise ort_error("InvalidArgument", f"Invalid output name: '{name}'; the "
                                                   f"model's outputs are {self._output_names}")
        for device in fetch_devices or ():
            if not _devices.is_cpu(device):
                raise ort_error("EPFail", f"cannot put an output on {device}: nxrt computes "
                                          f"on the CPU only")
        if not isinstance(fetches, list):
            raise TypeError("fetches must be a list, which the run fills with the outputs")
        preset = list(fetches)
        if preset and len(preset) != len(names):
            raise ort_error("InvalidArgument", f"fetches holds {len(preset)} OrtValues for "
                                               f"{len(names)} outputs; pass [] or one per output")
        if not all(isinstance(v, _value.OrtValue) for v in preset):
            raise TypeError("fetches may only hold OrtValues")
        bound = None
        if preset:
            bound = [None] * len(self._output_names)
            for name, value in zip(names, preset):
                bound[self._output_names.index(name)] = value._native_tensor()
        encoded = [_convert.to_feed(n, v) for n, v in zip(feed_names, feeds)]
        flag = run_options._flag if run_options is not None else None
        results = self._run_native(names, encoded, flag, bound, True)
        fetches[:] = [preset[i] if preset else _value.wrap_result(code, value, _value.OrtValue)
                      for i, (code, value) in enumerate(results)]

    def get_tuning_results(self):
        """[]: nxrt has no tunable ops (onnxruntime's are in its GPU providers)."""
        return []

    def set_tuning_results(self, results, *, error_on_invalid=False):
        """Accepts no results (what get_tuning_results gives); others raise NotImplemented."""
        if list(results):
            raise unsupported("tuning results (set_tuning_results)",
                              "nxrt has no tunable ops to apply them to")

    def release_captured_graph(self, graph_annotation_id=0):
        """Does nothing, as onnxruntime for providers that capture no graphs: nxrt never
        captures one (no CUDA graphs), so there is none to release."""

    def set_ep_dynamic_options(self, options):
        """Raises: Fail for no options (as onnxruntime), NotImplemented for any (nxrt's
        provider has none to change)."""
        if not dict(options):
            raise ort_error("Fail", "set_ep_dynamic_options: no options were given")
        raise unsupported("dynamic provider options (set_ep_dynamic_options)",
                          f"nxrt's CPUExecutionProvider has no options to change while it "
                          f"runs (got {sorted(options)})")


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
