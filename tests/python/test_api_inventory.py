"""Every public module-level name of the installed onnxruntime exists in nxrt, or is listed
below with the reason it does not yet: a name a new onnxruntime adds fails this test."""

import importlib.util

import pytest

import nxrt

ort = pytest.importorskip("onnxruntime")

# Names nxrt does not provide yet (issue 13), by group. Each is a gap, not a choice. Names nxrt
# has but cannot support raise onnxruntime's NotImplemented when used (see the tests below).
NOT_YET = set()


def _public(module):
    return {n for n in dir(module) if not n.startswith("_")}


def test_every_onnxruntime_name_exists_or_is_listed():
    missing = _public(ort) - _public(nxrt) - NOT_YET
    assert not missing, f"onnxruntime names nxrt lacks (add them, or list them in NOT_YET): {sorted(missing)}"


def test_the_list_holds_no_name_nxrt_now_has():
    assert not (NOT_YET & _public(nxrt)), sorted(NOT_YET & _public(nxrt))


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="needs onnxruntime")
def test_capi_state_module_names():
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

    from nxrt.capi import onnxruntime_pybind11_state as nx_state

    exceptions = {n for n in _public(ort_state) if isinstance(getattr(ort_state, n), type)
                  and issubclass(getattr(ort_state, n), Exception)}
    assert not (exceptions - _public(nx_state)), sorted(exceptions - _public(nx_state))


# Methods and attributes of onnxruntime's objects that nxrt's lack, by class (issue 13).
NOT_YET_MEMBERS = {
    "InferenceSession": set(), "SessionOptions": set(), "RunOptions": set(), "OrtValue": set(),
    "NodeArg": set(), "ModelMetadata": set(), "IOBinding": set(),
}


def _instances(module):
    import numpy as np
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess = module.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return {"InferenceSession": sess, "SessionOptions": module.SessionOptions(),
            "RunOptions": module.RunOptions(), "NodeArg": sess.get_inputs()[0],
            "ModelMetadata": sess.get_modelmeta(), "IOBinding": sess.io_binding(),
            "OrtValue": module.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32))}


def test_every_member_of_onnxruntime_objects_exists_or_is_listed():
    theirs, ours = _instances(ort), _instances(nxrt)
    problems = {}
    for cls, obj in theirs.items():
        missing = _public(obj) - _public(ours[cls]) - NOT_YET_MEMBERS[cls]
        stale = NOT_YET_MEMBERS[cls] & _public(ours[cls])
        if missing or stale:
            problems[cls] = {"missing": sorted(missing), "listed but present": sorted(stale)}
    assert not problems, problems


# ------------------------------------------------ what the names do, compared with onnxruntime

NotImplementedOrt = nxrt.capi.onnxruntime_pybind11_state.NotImplemented

ENUMS = ["ExecutionOrder", "OrtMemType", "OrtAllocatorType", "OrtSparseFormat",
         "OrtMemoryInfoDeviceType", "OrtDeviceMemoryType", "OrtHardwareDeviceType",
         "OrtExecutionProviderDevicePolicy", "OrtCompileApiFlags", "ModelPackageWriteMode",
         "OrtDeviceVendorId"]


@pytest.mark.parametrize("name", ENUMS)
def test_enums_have_onnxruntime_names_and_values(name):
    theirs = {k: int(v) for k, v in getattr(ort, name).__members__.items()}
    assert {k: int(v) for k, v in getattr(nxrt, name).__members__.items()} == theirs


def _model(batch="batch", init_as_input=False):
    """y = x * w, x of shape [batch, 3] (batch a named dimension), w an initializer (also a
    graph input, so overridable, when init_as_input)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])]
    if init_as_input:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]))
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"], name="mul")], "g", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
        [numpy_helper.from_array(np.full(3, 2, np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _session(module, so=None, model=None, **kwargs):
    return module.InferenceSession(model or _model(), so, providers=["CPUExecutionProvider"],
                                   **kwargs)


def _both(fn):
    """fn(module) for onnxruntime and nxrt."""
    return fn(ort), fn(nxrt)


@pytest.mark.parametrize("name", ["cpu", "cuda", "gpu", "npu", "dml", "webgpu", "cann"])
def test_ort_device_make_describes_devices_as_onnxruntime(name):
    def describe(module):
        d = module.OrtDevice.make(name, 1)
        return d.device_type(), d.device_vendor_id(), d.device_id(), d.device_mem_type()

    theirs, ours = _both(describe)
    assert ours == theirs
    v = nxrt.OrtDevice.make("gpu", 0, nxrt.OrtDeviceVendorId.NVIDIA)
    assert v.device_vendor_id() == ort.OrtDevice.make("gpu", 0, ort.OrtDeviceVendorId.NVIDIA).device_vendor_id()
    with pytest.raises(ValueError):
        nxrt.OrtDevice.make("fpga", 0)
    with pytest.raises(ValueError):
        nxrt.OrtDevice(1)


def _memory_info(m):
    return (m.name, m.device_id, m.mem_type.name, m.allocator_type.name, m.device_mem_type.name,
            m.device_vendor_id)


@pytest.mark.parametrize("name,mem", [("Cpu", "DEFAULT"), ("Cpu", "CPU_INPUT"), ("Cuda", "DEFAULT"),
                                      ("CudaPinned", "CPU_OUTPUT"), ("DML", "DEFAULT")])
def test_ort_memory_info_as_onnxruntime(name, mem):
    theirs, ours = _both(lambda m: _memory_info(m.OrtMemoryInfo(
        name, m.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, getattr(m.OrtMemType, mem))))
    assert ours == theirs
    theirs, ours = _both(lambda m: _memory_info(m.OrtMemoryInfo.create_v2(
        "x", m.OrtMemoryInfoDeviceType.GPU, 0x10DE, 1, m.OrtDeviceMemoryType.HOST_ACCESSIBLE, 0,
        m.OrtAllocatorType.ORT_DEVICE_ALLOCATOR)))
    assert ours == theirs
    with pytest.raises(nxrt.InvalidArgument):
        nxrt.OrtMemoryInfo("Nope", nxrt.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, nxrt.OrtMemType.DEFAULT)


def test_arena_cfg_and_external_initializer_info_hold_their_values():
    fields = ("max_mem", "arena_extend_strategy", "initial_chunk_size_bytes",
              "max_dead_bytes_per_chunk", "initial_growth_chunk_size_bytes",
              "max_power_of_two_extend_bytes")
    for args in [(5, 1, -1, 7), ({"max_mem": 5, "initial_growth_chunk_size_bytes": 9},)]:
        theirs, ours = _both(lambda m: [getattr(m.OrtArenaCfg(*args), f) for f in fields])
        assert ours == theirs
    with pytest.raises(nxrt.InvalidArgument):
        nxrt.OrtArenaCfg({"nope": 1})
    theirs, ours = _both(lambda m: (lambda i: (i.filepath, i.file_offset, i.byte_size))(
        m.OrtExternalInitializerInfo("w.bin", 16, 64)))
    assert ours == theirs


def test_ep_devices_are_the_cpu():
    (device,) = nxrt.get_ep_devices()
    cpu = [d for d in ort.get_ep_devices() if d.ep_name == "CPUExecutionProvider"][0]
    assert device.ep_name == cpu.ep_name == "CPUExecutionProvider"
    assert device.device.type.name == cpu.device.type.name == "CPU"
    assert device.device.device_id == cpu.device.device_id
    assert device.ep_options == {} and "version" in device.ep_metadata
    assert device.memory_info(nxrt.OrtDeviceMemoryType.DEFAULT) is None
    assert cpu.memory_info(ort.OrtDeviceMemoryType.DEFAULT) is None
    with pytest.raises(TypeError):
        nxrt.OrtEpDevice()


def test_session_memory_infos_ep_devices_and_profiling_start(tmp_path):
    import time

    for arena in (True, False):
        def infos(m):
            so = m.SessionOptions()
            so.enable_cpu_mem_arena = arena
            s = _session(m, so)
            return ([_memory_info(i) for i in s.get_input_memory_infos()],
                    [_memory_info(i) for i in s.get_output_memory_infos()])

        theirs, ours = _both(infos)
        assert ours == theirs
    s = _session(nxrt)
    assert [d.ep_name for d in s.get_input_epdevices()] == ["CPUExecutionProvider"]
    assert s.get_profiling_start_time_ns() == _session(ort).get_profiling_start_time_ns() == 0
    so = nxrt.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "profile_")
    before = time.time_ns()
    s = _session(nxrt, so)
    assert before <= s.get_profiling_start_time_ns() <= time.time_ns()  # wall clock, as onnxruntime's
    s.end_profiling()
    theirs = _session(ort, ort.SessionOptions()).get_profiling_start_time_ns()
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "ort_profile_")
    s = _session(ort, so)
    assert abs(s.get_profiling_start_time_ns() - time.time_ns()) < 60e9 and theirs == 0
    s.end_profiling()


def test_session_no_op_methods_as_onnxruntime():
    for module in (ort, nxrt):
        s = _session(module)
        assert s.enable_fallback() is None and s.disable_fallback() is None
        assert s.get_tuning_results() == []
        assert s.set_tuning_results([]) is None
        assert s.release_captured_graph() is None
        with pytest.raises(RuntimeError):
            s.set_ep_dynamic_options({})  # "no options were provided"


def test_graph_assignment_info_needs_the_config_entry_then_is_not_supported():
    from onnxruntime.capi.onnxruntime_pybind11_state import Fail as OrtFail

    with pytest.raises(OrtFail):
        _session(ort).get_provider_graph_assignment_info()
    with pytest.raises(nxrt.Fail, match=r"^\[ONNXRuntimeError\] : 1 : FAIL : "):
        _session(nxrt).get_provider_graph_assignment_info()
    so = nxrt.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    with pytest.raises(NotImplementedOrt, match="get_provider_graph_assignment_info"):
        _session(nxrt, so).get_provider_graph_assignment_info()


def test_create_ortvalue_from_shape_and_type():
    import numpy as np

    theirs, ours = _both(lambda m: _session(m).create_ortvalue_from_shape_and_type(
        [2, 3], np.float32, "cpu"))
    assert ours.shape() == theirs.shape() and ours.data_type() == theirs.data_type()
    assert not ours.numpy().any()
    info = nxrt.OrtMemoryInfo("Cpu", nxrt.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, nxrt.OrtMemType.DEFAULT)
    assert nxrt.OrtValue.ortvalue_from_shape_and_type([2], np.int64, memory_info=info).shape() == [2]
    cuda = nxrt.OrtMemoryInfo("Cuda", nxrt.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, nxrt.OrtMemType.DEFAULT)
    with pytest.raises(nxrt.EPFail):
        nxrt.OrtValue.ortvalue_from_shape_and_type([2], np.int64, memory_info=cuda)


def test_execution_order_is_kept():
    for module in (ort, nxrt):
        so = module.SessionOptions()
        assert so.execution_order == module.ExecutionOrder.DEFAULT
        so.execution_order = module.ExecutionOrder.PRIORITY_BASED
        assert so.execution_order == module.ExecutionOrder.PRIORITY_BASED
        _session(module, so)  # and a session runs with it


def test_add_provider_policy_and_devices_choose_the_cpu():
    import warnings

    def providers(m, configure):
        so = m.SessionOptions()
        assert not so.has_providers()
        configure(m, so)
        assert so.has_providers()
        return m.InferenceSession(_model(), so).get_providers()

    for configure in (
            lambda m, so: so.add_provider("CPUExecutionProvider", {}),
            lambda m, so: so.set_provider_selection_policy(
                m.OrtExecutionProviderDevicePolicy.PREFER_GPU),
            lambda m, so: so.add_provider_for_devices(
                [d for d in m.get_ep_devices() if d.ep_name == "CPUExecutionProvider"], {}),
            lambda m, so: so.set_provider_selection_policy_delegate(lambda d, *_: list(d)[:1])):
        theirs, ours = _both(lambda m: providers(m, configure))
        assert ours == theirs == ["CPUExecutionProvider"]
    so = nxrt.SessionOptions()
    so.add_provider("CPUExecutionProvider", {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _session(nxrt, so)
    assert any("providers list" in str(w.message) for w in caught)
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument):
            ort.SessionOptions().add_provider("CUDAExecutionProvider", {})
    with pytest.raises(nxrt.InvalidArgument):
        nxrt.SessionOptions().add_provider("CUDAExecutionProvider", {})


@pytest.mark.parametrize("delegate", [lambda *a: [], lambda *a: 1 / 0])
def test_a_failing_selection_delegate_fails_the_session(delegate):
    from onnxruntime.capi.onnxruntime_pybind11_state import Fail as OrtFail

    for module, error in ((ort, OrtFail), (nxrt, nxrt.Fail)):
        so = module.SessionOptions()
        so.set_provider_selection_policy_delegate(delegate)
        with pytest.raises(error):
            module.InferenceSession(_model(), so)


def test_free_dimension_override_by_name_fixes_and_checks_the_dimension():
    import numpy as np

    def run(m):
        so = m.SessionOptions()
        so.add_free_dimension_override_by_name("batch", 2)
        s = _session(m, so)
        with pytest.raises(m.capi.onnxruntime_pybind11_state.InvalidArgument):
            s.run(None, {"x": np.ones((4, 3), np.float32)})
        return (s.get_inputs()[0].shape, s.get_outputs()[0].shape,
                s.run(None, {"x": np.ones((2, 3), np.float32)})[0])

    theirs, ours = _both(run)
    assert ours[:2] == theirs[:2] == ([2, 3], [2, 3])
    np.testing.assert_array_equal(ours[2], theirs[2])
    so = nxrt.SessionOptions()
    so.add_free_dimension_override_by_name("batch", 2)
    s = _session(nxrt, so)
    with pytest.raises(nxrt.InvalidArgument,
                       match=r"index: 0 Got: 3 Expected: 2 \(dimension 'batch', fixed by a "
                             r"free dimension override\)"):
        s(np.ones((3, 3), np.float32))  # the call API checks too
    binding = s.io_binding()
    binding.bind_cpu_input("x", np.ones((5, 3), np.float32))
    binding.bind_output("y")
    with pytest.raises(nxrt.InvalidArgument):
        s.run_with_iobinding(binding)


def test_add_initializer_replaces_an_overridable_initializer():
    import numpy as np

    x = np.ones((2, 3), np.float32)
    w = np.full(3, 5, np.float32)
    keep = []  # onnxruntime reads the OrtValue's memory later without holding it

    def run(m):
        so = m.SessionOptions()
        keep.append(m.OrtValue.ortvalue_from_numpy(w))
        so.add_initializer("w", keep[-1])
        s = _session(m, so, _model(init_as_input=True))
        return s.run(None, {"x": x})[0], s.run(None, {"x": x, "w": np.ones(3, np.float32)})[0]

    theirs, ours = _both(run)
    np.testing.assert_array_equal(ours[0], theirs[0])  # 5s: the added initializer
    np.testing.assert_array_equal(ours[1], theirs[1])  # a feed still wins
    so = nxrt.SessionOptions()
    so.add_initializer("w", nxrt.OrtValue.ortvalue_from_numpy(np.full(3, 5, np.float32)))
    with pytest.raises(NotImplementedOrt, match="add_initializer"):
        _session(nxrt, so)  # w is a constant initializer there: nxrt cannot replace it
    with pytest.raises(TypeError):
        so.add_initializer("w", np.ones(3, np.float32))


def test_load_cancellation_flag():
    from onnxruntime.capi.onnxruntime_pybind11_state import ModelLoadCanceled

    for module, error in ((ort, ModelLoadCanceled), (nxrt, nxrt.capi.onnxruntime_pybind11_state.ModelLoadCanceled)):
        so = module.SessionOptions()
        so.set_load_cancellation_flag(True)
        with pytest.raises(error):
            _session(module, so)
        so.set_load_cancellation_flag(False)
        _session(module, so)


def test_run_with_ortvaluevector_fills_the_fetches():
    import numpy as np

    s = _session(nxrt)
    x = nxrt.OrtValue.ortvalue_from_numpy(np.ones((2, 3), np.float32))
    fetches = []
    assert s.run_with_ortvaluevector(nxrt.RunOptions(), ["x"], [x], ["y"], fetches, [None]) is None
    np.testing.assert_array_equal(fetches[0].numpy(), np.full((2, 3), 2, np.float32))
    out = nxrt.OrtValue.ortvalue_from_numpy(np.zeros((2, 3), np.float32))
    fetches = [out]
    s.run_with_ortvaluevector(None, ["x"], [x], ["y"], fetches, [nxrt.OrtDevice.make("cpu", 0)])
    assert fetches[0] is out and out.numpy()[0, 0] == 2  # written in place
    with pytest.raises(nxrt.EPFail):
        s.run_with_ortvaluevector(None, ["x"], [x], ["y"], [], [nxrt.OrtDevice.make("cuda", 0)])


def test_copy_tensors_copies_host_values():
    import numpy as np

    src = [nxrt.OrtValue.ortvalue_from_numpy(np.arange(3, dtype=np.float32))]
    dst = [nxrt.OrtValue.ortvalue_from_numpy(np.zeros(3, np.float32))]
    nxrt.copy_tensors(src, dst)
    np.testing.assert_array_equal(dst[0].numpy(), [0, 1, 2])
    with pytest.raises(ValueError):
        nxrt.copy_tensors(src, [nxrt.OrtValue.ortvalue_from_numpy(np.zeros(4, np.float32))])
    with pytest.raises(NotImplementedOrt, match="sync streams"):
        nxrt.copy_tensors(src, dst, stream=object())


def test_global_thread_pool_sizes_apply_to_sessions_without_their_own():
    import numpy as np

    nxrt.set_global_thread_pool_sizes(2, 1)
    try:
        so = nxrt.SessionOptions()
        so.use_per_session_threads = False
        so.intra_op_num_threads = 7
        assert (so._native()["intra_op_num_threads"], so._native()["inter_op_num_threads"]) == (2, 1)
        _session(nxrt, so).run(None, {"x": np.ones((1, 3), np.float32)})
    finally:
        nxrt.set_global_thread_pool_sizes()
    with pytest.raises(nxrt.InvalidArgument):
        nxrt.set_global_thread_pool_sizes(-1)


def test_logger_callback_is_checked():
    nxrt.set_default_logger_callback(lambda *args: None, 3)
    nxrt.set_default_logger_callback(None)
    with pytest.raises(TypeError):
        nxrt.set_default_logger_callback(5)
    with pytest.raises(RuntimeError):
        nxrt.set_default_logger_callback(None, 9)


def test_validation_module_and_accidental_names():
    v = nxrt.onnxruntime_validation
    assert v.get_package_name_and_version_info() == ("nxrt", nxrt.__version__, "")
    assert v.check_training_module() is False and v.check_distro_info() is None
    assert nxrt.contextlib is __import__("contextlib") and nxrt.import_capi_exception is None


def _sess_options_call(method, *args):
    return lambda: getattr(nxrt.SessionOptions(), method)(*args)


UNSUPPORTED = {
    "LoraAdapter": nxrt.LoraAdapter,
    "AdapterFormat": nxrt.AdapterFormat,
    "AdapterFormat.read_adapter": lambda: nxrt.AdapterFormat.read_adapter("a.onnx_adapter"),
    "ModelCompiler": lambda: nxrt.ModelCompiler(nxrt.SessionOptions(), b""),
    "ModelPackage": nxrt.ModelPackage,
    "ModelPackage.open": lambda: nxrt.ModelPackage.open("pkg"),
    "ModelPackage.compute_directory_hash": lambda: nxrt.ModelPackage.compute_directory_hash("d"),
    "ModelPackageContext": lambda: nxrt.ModelPackageContext("pkg"),
    "ModelPackageComponentContext": nxrt.ModelPackageComponentContext,
    "ModelPackageOptions": lambda: nxrt.ModelPackageOptions(nxrt.SessionOptions()),
    "OrtEpContextData": nxrt.OrtEpContextData,
    "OrtEpContextDataBuffer": nxrt.OrtEpContextDataBuffer,
    "OrtSyncStream": nxrt.OrtSyncStream,
    "OrtEpAssignedSubgraph": nxrt.OrtEpAssignedSubgraph,
    "OrtEpAssignedNode": nxrt.OrtEpAssignedNode,
    "SparseTensor": nxrt.SparseTensor,
    "SparseTensor.sparse_coo_from_numpy": lambda: nxrt.SparseTensor.sparse_coo_from_numpy(
        [3], [1.0], [0], nxrt.OrtDevice.make("cpu", 0)),
    "SparseTensor.sparse_csr_from_numpy": lambda: nxrt.SparseTensor.sparse_csr_from_numpy(
        [1, 3], [1.0], [0], [0, 1], nxrt.OrtDevice.make("cpu", 0)),
    "OrtValue.as_sparse_tensor": lambda: nxrt.OrtValue.ortvalue_from_numpy(
        __import__("numpy").zeros(1)).as_sparse_tensor(),
    "OrtValue.ort_value_from_sparse_tensor": lambda: nxrt.OrtValue.ort_value_from_sparse_tensor(None),
    "RunOptions.add_active_adapter": lambda: nxrt.RunOptions().add_active_adapter(None),
    "add_external_initializers": _sess_options_call("add_external_initializers", ["w"], []),
    "add_external_initializers_from_files_in_memory": _sess_options_call(
        "add_external_initializers_from_files_in_memory", ["w.bin"], [b""], [0]),
    "add_free_dimension_override_by_denotation": _sess_options_call(
        "add_free_dimension_override_by_denotation", "DATA_BATCH", 2),
    "set_ep_context_data_read_func": _sess_options_call(
        "set_ep_context_data_read_func", lambda *a: None, 1),
    "create_and_register_allocator": lambda: nxrt.create_and_register_allocator(None, None),
    "create_and_register_allocator_v2": lambda: nxrt.create_and_register_allocator_v2(
        "CPUExecutionProvider", None, {}, None),
    "OrtEpDevice.create_sync_stream": lambda: nxrt.get_ep_devices()[0].create_sync_stream(),
    "set_tuning_results": lambda: _session(nxrt).set_tuning_results([{"ep": "x"}]),
    "set_ep_dynamic_options": lambda: _session(nxrt).set_ep_dynamic_options({"ep.dynamic.x": "1"}),
}


@pytest.mark.parametrize("what", sorted(UNSUPPORTED))
def test_unsupported_features_raise_onnxruntime_not_implemented(what):
    with pytest.raises(NotImplementedOrt) as caught:
        UNSUPPORTED[what]()
    message = str(caught.value)
    assert message.startswith("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : nxrt does not support ")
    assert what.split(".")[-1] in message or what.split(".")[0] in message  # names the feature
    assert isinstance(caught.value, RuntimeError)  # as onnxruntime's errors, catchable so
