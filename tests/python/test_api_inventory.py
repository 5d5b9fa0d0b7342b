"""Every public module-level name of the installed onnxruntime exists in nxrt, or is listed
below with the reason it does not yet: a name a new onnxruntime adds fails this test."""

import importlib.util

import pytest

import nxrt

ort = pytest.importorskip("onnxruntime")

# Names nxrt does not provide yet (issue 13), by group. Each is a gap, not a choice.
NOT_YET = {
    # Model compilation, packages and LoRA adapters (onnxruntime 1.2x APIs).
    "AdapterFormat", "LoraAdapter", "ModelCompiler", "ModelPackage",
    "ModelPackageComponentContext", "ModelPackageContext", "ModelPackageOptions",
    "ModelPackageWriteMode", "OrtCompileApiFlags", "OrtEpContextData", "OrtEpContextDataBuffer",
    # Devices, allocators and memory descriptions of the plug-in EP API.
    "OrtAllocatorType", "OrtArenaCfg", "OrtDevice", "OrtDeviceMemoryType", "OrtDeviceVendorId",
    "OrtEpAssignedNode", "OrtEpAssignedSubgraph", "OrtEpDevice",
    "OrtExecutionProviderDevicePolicy", "OrtExternalInitializerInfo", "OrtHardwareDevice",
    "OrtHardwareDeviceType", "OrtMemType", "OrtMemoryInfo", "OrtMemoryInfoDeviceType",
    "OrtSyncStream", "copy_tensors", "create_and_register_allocator",
    "create_and_register_allocator_v2", "get_ep_devices",
    # Sparse tensors, session-level enums and hooks.
    "OrtSparseFormat", "SparseTensor", "ExecutionOrder", "set_default_logger_callback",
    "set_global_thread_pool_sizes",
    # onnxruntime's own helper modules and re-exports.
    "contextlib", "import_capi_exception", "onnxruntime_validation",
}


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
    "InferenceSession": {
        "create_ortvalue_from_shape_and_type", "disable_fallback", "enable_fallback",
        "get_input_epdevices", "get_input_memory_infos", "get_output_memory_infos",
        "get_profiling_start_time_ns", "get_provider_graph_assignment_info", "get_tuning_results",
        "release_captured_graph", "run_with_ortvaluevector", "set_ep_dynamic_options",
        "set_tuning_results"},
    "SessionOptions": {
        "add_external_initializers", "add_external_initializers_from_files_in_memory",
        "add_free_dimension_override_by_denotation", "add_free_dimension_override_by_name",
        "add_initializer", "add_provider", "add_provider_for_devices",
        "clear_ep_context_data_read_func", "execution_order", "has_providers",
        "set_ep_context_data_read_func", "set_load_cancellation_flag",
        "set_provider_selection_policy", "set_provider_selection_policy_delegate"},
    "RunOptions": {"add_active_adapter"},
    "OrtValue": {"as_sparse_tensor", "ort_value_from_sparse_tensor"},
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
