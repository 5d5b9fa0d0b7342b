"""onnxruntime's IoBinding: inputs and outputs bound ahead of a run. Inputs are read in
place; outputs bound to preallocated buffers are written in place, so a warm run allocates
nothing for them; outputs bound by device are allocated by the run and kept as OrtValues."""

import numpy as np

from . import _value
from ._errors import ALL as _ERRORS
from ._value import OrtValue


class IOBinding:
    """Binds inputs and outputs of one InferenceSession (``session.io_binding()``)."""

    def __init__(self, session):
        # Checked by what it offers rather than by class: _session imports this module,
        # never the other way round.
        if not callable(getattr(session, "run_with_iobinding", None)) or not hasattr(
                session, "_feedable"):
            raise TypeError(f"IOBinding needs an nxrt InferenceSession, not "
                            f"{type(session).__name__}")
        self._session = session
        self._inputs = {}  # name -> native value
        self._keep = {}  # name -> the Python object whose memory an input reads
        self._outputs = {}  # name -> OrtValue over caller memory, or None (allocated per run)
        self._results = []

    def _check_input(self, name):
        if name not in self._session._feedable:
            raise _ERRORS["InvalidArgument"](
                f"Invalid input name: '{name}'; the model's inputs are {self._session._input_names}")

    def _check_output(self, name):
        if name not in self._session._output_names:
            raise _ERRORS["InvalidArgument"](
                f"Invalid output name: '{name}'; the model's outputs are "
                f"{self._session._output_names}")

    def bind_cpu_input(self, name, arr_on_cpu):
        """Binds an input to an array in CPU memory (read in place when contiguous)."""
        self._check_input(name)
        native = _value.as_native_feed(arr_on_cpu, name)
        if native is None:
            arr = arr_on_cpu if isinstance(arr_on_cpu, np.ndarray) else np.asarray(arr_on_cpu)
            native = _value.native_from_numpy(arr)
        self._inputs[name] = native
        self._keep[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """Binds an input to memory at `buffer_ptr` (the caller keeps it alive and unchanged
        until the run)."""
        self._check_input(name)
        _value.check_device(device_type, device_id)
        code = _value.element_code(element_type)
        self._inputs[name] = _value._nxrt.Value.from_pointer(code, [int(d) for d in shape],
                                                             int(buffer_ptr))
        self._keep.pop(name, None)

    def bind_ortvalue_input(self, name, ortvalue):
        """Binds an input to an OrtValue (read in place)."""
        self._check_input(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_input needs an OrtValue, not {type(ortvalue).__name__}")
        self._inputs[name] = ortvalue._native_tensor()
        self._keep[name] = ortvalue

    def synchronize_inputs(self):
        """No-op: CPU inputs need no device synchronization."""

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None,
                    buffer_ptr=None):
        """Binds an output to a preallocated buffer (`element_type`, `shape`, `buffer_ptr`),
        written in place by each run, or, without a buffer, to a device where each run
        allocates it."""
        self._check_output(name)
        _value.check_device(device_type, device_id)
        if buffer_ptr is None:
            self._outputs[name] = None
            return
        if element_type is None or shape is None:
            raise ValueError("`element_type` and `shape` are to be provided if pre-allocated "
                             "memory is provided")
        code = _value.element_code(element_type)
        native = _value._nxrt.Value.from_pointer(code, [int(d) for d in shape], int(buffer_ptr))
        self._outputs[name] = OrtValue(native)

    def bind_ortvalue_output(self, name, ortvalue):
        """Binds an output to an OrtValue's memory, written in place by each run."""
        self._check_output(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_output needs an OrtValue, not {type(ortvalue).__name__}")
        if ortvalue._native_tensor().read_only:
            raise ValueError(f"output '{name}' cannot be bound to a read-only OrtValue")
        self._outputs[name] = ortvalue

    def synchronize_outputs(self):
        """No-op: CPU outputs are complete when the run returns."""

    def get_outputs(self):
        """The output OrtValues of the last run, in binding order."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self):
        return list(self._results)

    def copy_outputs_to_cpu(self):
        """Copies of the last run's outputs as numpy arrays, in binding order."""
        return [v.numpy().copy() if v.has_value() else None for v in self._results]

    def clear_binding_inputs(self):
        self._inputs.clear()
        self._keep.clear()

    def clear_binding_outputs(self):
        self._outputs.clear()
        self._results = []

    def _run(self, run_options):
        if not self._outputs:
            raise _ERRORS["InvalidArgument"]("At least one output should be requested.")
        sess = self._session
        feeds = [(name, native.code, native, None, None) for name, native in self._inputs.items()]
        missing = [n for n in sess._required_inputs if n not in self._inputs]
        if missing:
            raise _ERRORS["InvalidArgument"](
                f"Required inputs ({missing}) are missing from the binding ({list(self._inputs)}).")
        names = list(self._outputs)
        bound = [None] * len(sess._output_names)
        for name, ortvalue in self._outputs.items():
            if ortvalue is not None:
                bound[sess._output_names.index(name)] = ortvalue._native_tensor()
        flag = run_options._flag if run_options is not None else None
        results = sess._run_native(names, feeds, flag, bound, True)
        self._results = [
            self._outputs[name] if self._outputs[name] is not None
            else _value.wrap_result(code, value, OrtValue)
            for name, (code, value) in zip(names, results)]


SessionIOBinding = IOBinding
