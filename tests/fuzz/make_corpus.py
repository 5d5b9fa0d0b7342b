"""Writes the checked-in libFuzzer seed corpus from the ONNX backend node tests.

    python3 tests/fuzz/make_corpus.py [--data ../shared/onnx-backend-data/node]

corpus/model/   the smallest model of every op type (fuzz_model seeds)
corpus/tensor/  small TensorProto files from those models' test data (fuzz_tensor seeds)
corpus/models/  the seed models fuzz_run runs (ops whose output size is bounded by their
                inputs', so fuzzed feeds cannot legitimately ask for gigabytes)
corpus/run/     each run model's test inputs in fuzz_run's byte layout (see fuzz_run.cc)

The whole corpus stays well under 2 MiB; the script replaces the four folders.
"""

import argparse
import glob
import os
import shutil
import struct

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "onnx-backend-data", "node"))

RUN_CASES = [
    "test_add_bcast", "test_matmul_4d", "test_conv_with_strides_padding", "test_gather_1",
    "test_softmax_axis_1", "test_concat_2d_axis_0", "test_transpose_all_permutations_0",
    "test_reduce_sum_keepdims_example", "test_layer_normalization_4d_axis1", "test_where_example",
    "test_slice", "test_top_k", "test_maxpool_2d_pads", "test_cast_FLOAT_to_FLOAT16",
    "test_argmax_default_axis_example", "test_batchnorm_example", "test_gemm_all_attributes",
    "test_cumsum_1d", "test_nonzero_example", "test_scatter_elements_with_axis",
    "test_gathernd_example_int32", "test_split_variable_parts_1d_opset18", "test_clip",
    "test_pow", "test_mod_mixed_sign_int64", "test_einsum_batch_matmul", "test_averagepool_2d_pads",
    "test_instancenorm_example", "test_lstm_defaults", "test_if", "test_scan9_sum",
    "test_gru_defaults", "test_string_concat", "test_regex_full_match_basic",
    "test_sequence_insert_at_back", "test_dequantizelinear", "test_qlinearmatmul_2D_uint8_float32",
    "test_convtranspose", "test_depthtospace_example", "test_unique_sorted_with_axis",
]
MAX_MODEL_BYTES = 2048
MAX_TENSOR_BYTES = 2048


def encode_run(model, inputs, index):
    """fuzz_run's layout: model byte, then per input a flags byte, dims and raw data."""
    out = bytearray([index])
    for value in inputs:
        if isinstance(value, list):  # a sequence: its elements share the first one's dims
            first = value[0] if value else np.zeros(0, np.float32)
            if first.ndim > 6 or any(d > 255 for d in first.shape):
                return None
            out.append((first.ndim << 1) | (min(len(value), 3) << 5))
            out += bytes(first.shape)
            for v in value[:3]:
                out += v.astype(v.dtype).tobytes() if v.dtype != object else b""
            continue
        if value.ndim > 6 or any(d > 255 for d in value.shape):
            return None
        out.append(value.ndim << 1)
        out += bytes(value.shape)
        if value.dtype == object:
            for s in value.reshape(-1):
                b = s if isinstance(s, bytes) else str(s).encode()
                b = b[:15]
                out.append(len(b))
                out += b
        elif value.dtype == np.bool_:
            out += value.astype(np.uint8).tobytes()
        else:
            out += value.tobytes()
    return bytes(out)


def load_inputs(case_dir, model):
    inputs = []
    data_dir = os.path.join(case_dir, "test_data_set_0")
    initializer_names = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializer_names]
    for k, info in enumerate(graph_inputs):
        path = os.path.join(data_dir, f"input_{k}.pb")
        if not os.path.exists(path):
            return None
        raw = open(path, "rb").read()
        if info.type.HasField("sequence_type"):
            seq = onnx.SequenceProto()
            seq.ParseFromString(raw)
            inputs.append([numpy_helper.to_array(t) for t in seq.tensor_values])
        else:
            t = onnx.TensorProto()
            t.ParseFromString(raw)
            inputs.append(numpy_helper.to_array(t))
    return inputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = parser.parse_args()
    folders = {name: os.path.join(args.out, name) for name in ("model", "tensor", "models", "run")}
    for path in folders.values():
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)

    # The smallest model per op type (control flow and functions come along as op types).
    best = {}
    for case_dir in sorted(glob.glob(os.path.join(args.data, "test_*"))):
        path = os.path.join(case_dir, "model.onnx")
        if not os.path.exists(path) or os.path.getsize(path) > MAX_MODEL_BYTES:
            continue
        model = onnx.load(path, load_external_data=False)
        ops = tuple(sorted({n.op_type for n in model.graph.node}))
        size = os.path.getsize(path)
        if ops not in best or size < best[ops][0]:
            best[ops] = (size, case_dir)
    for _, case_dir in sorted(best.values(), key=lambda v: v[1]):
        name = os.path.basename(case_dir)
        shutil.copy(os.path.join(case_dir, "model.onnx"), os.path.join(folders["model"], name + ".onnx"))
        for pb in sorted(glob.glob(os.path.join(case_dir, "test_data_set_0", "*.pb"))):
            if os.path.getsize(pb) <= MAX_TENSOR_BYTES:
                t = onnx.TensorProto()
                try:
                    t.ParseFromString(open(pb, "rb").read())
                except Exception:  # noqa: BLE001
                    continue
                if t.data_type == 0:
                    continue  # a sequence or optional, not a TensorProto
                shutil.copy(pb, os.path.join(folders["tensor"], f"{name}_{os.path.basename(pb)}"))

    for index, name in enumerate(sorted(RUN_CASES)):
        case_dir = os.path.join(args.data, name)
        model = onnx.load(os.path.join(case_dir, "model.onnx"))
        shutil.copy(os.path.join(case_dir, "model.onnx"),
                    os.path.join(folders["models"], f"{index:02d}_{name}.onnx"))
        inputs = load_inputs(case_dir, model)
        seed = encode_run(model, inputs, index) if inputs is not None else None
        if seed is None:
            seed = bytes([index])
        with open(os.path.join(folders["run"], f"{index:02d}_{name}"), "wb") as f:
            f.write(seed)

    total = 0
    for name, path in folders.items():
        files = os.listdir(path)
        size = sum(os.path.getsize(os.path.join(path, f)) for f in files)
        total += size
        print(f"corpus/{name}: {len(files)} files, {size} bytes")
    print(f"total {total} bytes")


if __name__ == "__main__":
    main()
