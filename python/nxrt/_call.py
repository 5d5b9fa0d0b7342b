"""The ergonomic layer over ``InferenceSession``: calling a session like a function, the
``Outputs`` container and ``bind_outputs`` (``nxrt.load`` is in ``_session``).

Everything here is plain Python over ``InferenceSession.run``; it only turns call
arguments into a feed dict and the result list into something pleasant. It never imports
``_session`` (which imports it): a session arrives as an argument.
"""

import difflib
import re
from collections.abc import Mapping

import numpy as np

from . import _dtypes
from ._errors import InvalidArgument


class InvalidFeed(InvalidArgument, TypeError):
    """A session was called with arguments that do not match its inputs: an unknown
    input name, an input given twice, a missing input or too many positional values.

    It is both an ``nxrt.InvalidArgument`` (what ``run()`` raises for the same faults) and
    a ``TypeError`` (what Python raises for the same faults in a function call), so either
    ``except`` clause catches it."""


# ONNX element type name ("float", "int64") -> code, to read NodeArg.type strings.
_CODE_OF_NAME = {name: code for code, name in _dtypes.TYPE_NAMES.items()}
_TENSOR_TYPE = re.compile(r"^(?:optional\()?tensor\((\w+)\)\)?$")


class _CallPlan:
    """What a call needs to know about a session's inputs, computed once per session.

    Sessions are immutable after creation, so the plan never goes stale; two threads
    racing to build it build equal plans and either one may win."""

    __slots__ = ("inputs", "positional", "feedable", "required", "sequences", "declared",
                 "overridable", "output_index")

    def __init__(self, session):
        args = session.get_inputs()
        self.inputs = [a.name for a in args]
        # Positional values fill the inputs onnxruntime lists in get_inputs(), in graph
        # order. Inputs backed by an initializer (overridable) have a default and are only
        # fed by name: their position among the graph inputs is an artefact of the
        # exporter, and counting them would shift every positional argument after them.
        self.positional = tuple(self.inputs)
        self.overridable = [a.name for a in session.get_overridable_initializers()]
        self.feedable = frozenset(self.inputs) | frozenset(self.overridable)
        # optional(...) inputs may be left out, like initializer-backed ones.
        self.required = [a.name for a in args if not a.type.startswith("optional")]
        self.sequences = frozenset(
            a.name for a in args if a.type.startswith(("seq(", "optional(seq(")))
        # name -> position maps of the output lists calls return, shared by every
        # Outputs of that list (building one per call costs as much as a small run).
        self.output_index = {}
        self.declared = {}
        for a in list(args) + list(session.get_overridable_initializers()):
            m = _TENSOR_TYPE.match(a.type or "")
            code = _CODE_OF_NAME.get(m.group(1)) if m else None
            if code is not None:
                self.declared[a.name] = code


def _plan(session):
    plan = session.__dict__.get("_nxrt_call_plan")
    if plan is None:
        plan = _CallPlan(session)
        session.__dict__["_nxrt_call_plan"] = plan
    return plan


def _names(names):
    return "[" + ", ".join(repr(n) for n in names) + "]"


def _unknown_input(plan, name):
    msg = f"unknown input {name!r}; the model's inputs are {_names(plan.inputs)}"
    if plan.overridable:
        msg += f" (and initializers that may be overridden: {_names(plan.overridable)})"
    close = _suggest(str(name), sorted(plan.feedable))
    if close:
        msg += f"; did you mean {close!r}?"
    return InvalidFeed(msg)


def _suggest(name, candidates):
    """The candidate a misspelt name most likely meant, or None. A case-only difference
    wins first: difflib scores 's' against 'S' as no match at all."""
    folded = [c for c in candidates if c.lower() == name.lower()]
    if folded:
        return folded[0]
    close = difflib.get_close_matches(name, candidates, n=1)
    return close[0] if close else None


def _check_dlpack_device(name, value):
    """Refuses a DLPack producer that lives off the CPU, with what to do instead.

    run() could ask the producer to copy to the host, but a call on a CPU session with a
    GPU tensor is almost always a mistake whose silent device-to-host copy would hide
    the cost; the caller decides where the copy happens."""
    if not hasattr(value, "__dlpack_device__"):
        return
    device_type, device_id = (int(v) for v in value.__dlpack_device__())
    # 1 is kDLCPU; 3 (kDLCUDAHost) is pinned host memory the CPU reads in place.
    if device_type in (1, 3):
        return
    where = {2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm",
             13: "cuda (managed)", 14: "oneapi"}.get(device_type,
                                                     f"DLPack device type {device_type}")
    raise ValueError(
        f"input {name!r} is a {type(value).__name__} on {where}:{device_id}, but this "
        f"session computes on the CPU and nxrt does not copy between devices implicitly; "
        f"move it to host memory first (e.g. x.cpu() for torch, np.asarray(x.get()) for "
        f"cupy, jax.device_get(x) for jax)")


def _to_array(plan, name, value):
    """A feed value for ``run``: arrays pass through, everything else becomes one.

    Python scalars and lists take the input's declared element type when that is a
    lossless-in-kind conversion (1.5 for a float input, [1, 2] for an int64 or float
    input), because np.asarray alone would make float64/int64 and the run would fail
    on the dtype for the most common case, feeding literals to a float32 model."""
    if isinstance(value, np.ndarray) or value is None or name in plan.sequences:
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if hasattr(value, "__dlpack__"):
        # run() imports DLPack producers (torch, jax, NxrtValue, OrtValue) itself, in place
        # when it can, including dtypes numpy lacks (bfloat16); only the device is ours.
        _check_dlpack_device(name, value)
        return value
    if hasattr(value, "__array__"):
        return np.asarray(value)
    natural = np.asarray(value)
    code = plan.declared.get(name)
    if code is None or code == _dtypes.STRING or natural.dtype.kind in "OUS":
        return natural
    target = _dtypes.numpy_dtype(code)
    if target is None or natural.dtype == target:
        return natural
    if natural.dtype.kind in "biuf" and np.can_cast(natural.dtype, target, casting="same_kind"):
        try:
            # From the Python objects, not from `natural`: numpy then refuses
            # out-of-range integers instead of wrapping them.
            return np.asarray(value, dtype=target)
        except (OverflowError, ValueError):
            return natural
    return natural


def build_feed(session, args, kwargs):
    """The ``run`` feed dict for ``session(*args, **kwargs)``.

    Accepted forms: positional values in input order, keyword values by name, a single
    dict (or other mapping) as the only positional argument, and mixes of positional or
    dict values with keywords."""
    plan = _plan(session)
    feed = {}
    # isinstance(x, Mapping) is an ABC check, slow next to a small run: arrays skip it.
    from_dict = (len(args) == 1 and type(args[0]) is not np.ndarray
                 and isinstance(args[0], Mapping))
    if from_dict:
        for name, value in args[0].items():
            if not isinstance(name, str):
                raise InvalidFeed(f"feed dict keys must be input names (str), got "
                                  f"{type(name).__name__} {name!r}")
            feed[name] = value
    else:
        if len(args) > len(plan.positional):
            msg = (f"the model takes {len(plan.positional)} positional input"
                   f"{'' if len(plan.positional) == 1 else 's'} {_names(plan.positional)} but "
                   f"{len(args)} were given")
            if plan.overridable:
                msg += (f"; initializers with defaults {_names(plan.overridable)} can only "
                        f"be fed by name")
            if any(isinstance(a, Mapping) for a in args):
                msg += "; a dict of feeds must be the only positional argument"
            raise InvalidFeed(msg)
        for i, value in enumerate(args):
            if type(value) is not np.ndarray and isinstance(value, Mapping):
                raise InvalidFeed(
                    f"positional argument {i} is a dict; a dict of feeds must be the only "
                    f"positional argument (pass the other inputs by keyword)")
            feed[plan.positional[i]] = value
    for name, value in kwargs.items():
        if name in feed:
            origin = ("in the feed dict" if from_dict else
                      f"positionally (argument {plan.positional.index(name)})")
            raise InvalidFeed(f"input {name!r} was given twice: {origin} and by keyword")
        feed[name] = value
    for name in feed:
        if name not in plan.feedable:
            raise _unknown_input(plan, name)
    missing = [n for n in plan.required if n not in feed]
    if missing:
        raise InvalidFeed(
            f"missing required input{'' if len(missing) == 1 else 's'} "
            f"{', '.join(repr(n) for n in missing)}; the model's inputs are "
            f"{_names(plan.inputs)}")
    return {name: value if type(value) is np.ndarray else _to_array(plan, name, value)
            for name, value in feed.items()}


class Outputs:
    """The results of a call with several outputs, in the model's output order.

    It behaves like a tuple for position and unpacking, and like a read-only mapping for
    names::

        out = session(x)
        out[0], out["logits"], out.logits     # the same array
        logits, probs = out                   # unpacking, in output order
        len(out), list(out.keys()), dict(out.items())

    Iterating yields the values (as a tuple does); ``name in out`` tests output names.
    Attribute access covers every output whose name is a Python identifier and does not
    collide with a method of this class; ``out["keys"]`` always works."""

    __slots__ = ("_names", "_values", "_index")

    def __init__(self, names, values):
        """Pairs output ``names`` with their ``values`` (same length, same order)."""
        names = list(names)
        values = list(values)
        if len(names) != len(values):
            raise ValueError(f"Outputs needs one value per name: {len(names)} names, "
                             f"{len(values)} values")
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    @classmethod
    def _make(cls, names, values, index):
        # The call path's constructor: trusts its arguments and shares `index`.
        self = object.__new__(cls)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_index", index)
        return self

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return iter(self._values)

    def __contains__(self, name):
        return name in self._index

    def __getitem__(self, key):
        if isinstance(key, str):
            i = self._index.get(key)
            if i is None:
                raise KeyError(f"no output named {key!r}; the outputs are {_names(self._names)}")
            return self._values[i]
        if isinstance(key, slice):
            return tuple(self._values[key])
        try:
            i = key.__index__()
        except AttributeError:
            raise TypeError(f"outputs are indexed by position (int) or name (str), not "
                            f"{type(key).__name__}") from None
        if not -len(self._values) <= i < len(self._values):
            raise IndexError(f"output index {i} is out of range: there are "
                             f"{len(self._values)} outputs {_names(self._names)}")
        return self._values[i]

    def __getattr__(self, name):
        # Only reached when normal lookup fails, so methods and slots always win.
        index = object.__getattribute__(self, "_index")
        if name in index:
            return object.__getattribute__(self, "_values")[index[name]]
        raise AttributeError(f"no output named {name!r}; the outputs are "
                             f"{_names(object.__getattribute__(self, '_names'))}")

    def __setattr__(self, name, value):
        raise AttributeError("Outputs is read-only")

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | {n for n in self._names if n.isidentifier()})

    def keys(self):
        """The output names, in output order."""
        return list(self._names)

    def values(self):
        """The output values, in output order."""
        return list(self._values)

    def items(self):
        """(name, value) pairs, in output order."""
        return list(zip(self._names, self._values))

    def to_dict(self):
        """A new dict from output name to value."""
        return dict(zip(self._names, self._values))

    def __repr__(self):
        parts = []
        for name, value in zip(self._names, self._values):
            if isinstance(value, np.ndarray):
                parts.append(f"{name}=<{value.dtype} array {tuple(value.shape)}>")
            else:
                parts.append(f"{name}={type(value).__name__}")
        return f"Outputs({', '.join(parts)})"


def call(session, output_names, args, kwargs):
    """Runs ``session`` on call-style arguments; returns the value itself for one output
    and an ``Outputs`` for several. ``output_names`` None means every output."""
    feed = build_feed(session, args, kwargs)
    names = session._output_names if output_names is None else output_names
    # Passing the names down makes the native run copy out only these outputs.
    values = session.run(names, feed)
    if len(values) == 1:
        return values[0]
    plan = _plan(session)
    index = plan.output_index.get(tuple(names))
    if index is None:
        index = {n: i for i, n in enumerate(names)}
        plan.output_index[tuple(names)] = index
    return Outputs._make(list(names), values, index)


def check_output_names(session, names):
    """The validated tuple of output names for ``bind_outputs``."""
    if len(names) == 1 and isinstance(names[0], (list, tuple)):
        names = tuple(names[0])  # bind_outputs(["a", "b"]) as well as bind_outputs("a", "b")
    if not names:
        raise ValueError("bind_outputs needs at least one output name; the outputs are "
                         f"{_names(session._output_names)}")
    seen = set()
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"output names must be str, got {type(name).__name__} {name!r}")
        if name not in session._output_names:
            msg = (f"unknown output {name!r}; the model's outputs are "
                   f"{_names(session._output_names)}")
            close = _suggest(name, session._output_names)
            if close:
                msg += f"; did you mean {close!r}?"
            raise InvalidArgument(msg)
        if name in seen:
            raise ValueError(f"output {name!r} is listed twice in bind_outputs")
        seen.add(name)
    return tuple(names)


class BoundOutputs:
    """A session restricted to some of its outputs, made by ``session.bind_outputs(...)``.

    Calling it takes the same arguments as calling the session and computes and returns
    only the bound outputs (the value itself when one name is bound, an ``Outputs``
    otherwise); the other outputs are never copied out of the runtime.

    It is also a context manager; leaving the ``with`` block closes it, and calling a
    closed proxy raises ``RuntimeError``::

        with session.bind_outputs("logits") as logits_of:
            y = logits_of(x)
    """

    __slots__ = ("_session", "_output_names")

    def __init__(self, session, output_names):
        """Binds ``output_names`` (already validated) of ``session``."""
        self._session = session
        self._output_names = tuple(output_names)

    @property
    def session(self):
        """The session this proxy runs."""
        self._check_open()
        return self._session

    @property
    def output_names(self):
        """The bound output names, in the order results are returned."""
        return list(self._output_names)

    @property
    def input_names(self):
        """The session's input names (what calls accept), in graph order."""
        return self.session.input_names

    @property
    def closed(self):
        """True once the ``with`` block ended or ``close()`` was called."""
        return self._session is None

    def close(self):
        """Releases the session; later calls raise RuntimeError."""
        self._session = None

    def _check_open(self):
        if self._session is None:
            raise RuntimeError(
                f"this bind_outputs({', '.join(repr(n) for n in self._output_names)}) proxy "
                f"is closed (its with-block ended); call session.bind_outputs(...) again")

    def __call__(self, /, *args, **kwargs):
        """Runs the session on ``args``/``kwargs`` (as a session call) and returns the bound
        outputs only."""
        self._check_open()
        return call(self._session, self._output_names, args, kwargs)

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def __repr__(self):
        state = " (closed)" if self._session is None else ""
        return f"BoundOutputs({', '.join(repr(n) for n in self._output_names)}){state}"
