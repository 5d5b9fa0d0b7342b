"""onnxruntime classes for features nxrt does not have: LoRA adapters, model compilation
and model packages, EPContext data, sync streams, sparse tensors and the record of which
provider runs which node. Each exists, so code that names it imports and type-checks;
making one (or calling its factories) raises onnxruntime's NotImplemented naming the
feature and the reason, rather than failing later with an AttributeError."""

import enum

from ._errors import unsupported

# The enums of those features, with onnxruntime's names and values: they are plain values,
# so code that only names them works.


class OrtCompileApiFlags(enum.IntEnum):
    NONE = 0
    ERROR_IF_NO_NODES_COMPILED = 1
    ERROR_IF_OUTPUT_FILE_EXISTS = 2


class ModelPackageWriteMode(enum.IntEnum):
    PRESERVE = 0
    DENSE = 1


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


class _Unsupported:
    _feature = ""  # what the class is for, as the error names it
    _reason = ""

    def __init__(self, *args, **kwargs):
        raise unsupported(self._feature, self._reason)

    @classmethod
    def _refuse(cls):
        raise unsupported(cls._feature, cls._reason)


_NO_LORA = "nxrt runs a model's own weights and cannot activate adapters at run time"
_NO_COMPILE = ("nxrt has no compiling execution providers (no EPContext nodes): it runs the "
               "ONNX model itself, so there is nothing to compile or package")


class LoraAdapter(_Unsupported):
    _feature, _reason = "LoRA adapters (LoraAdapter)", _NO_LORA


class AdapterFormat(_Unsupported):
    _feature, _reason = "LoRA adapter files (AdapterFormat)", _NO_LORA

    @staticmethod
    def read_adapter(file_path):
        AdapterFormat._refuse()


class ModelCompiler(_Unsupported):
    _feature, _reason = "model compilation (ModelCompiler)", _NO_COMPILE


class ModelPackage(_Unsupported):
    _feature, _reason = "model packages (ModelPackage)", _NO_COMPILE

    @staticmethod
    def open(package_root, allow_external_paths=False, follow_symlinks=True,
             strict_unknown_fields=True):
        ModelPackage._refuse()

    @staticmethod
    def compute_directory_hash(source_dir):
        ModelPackage._refuse()


class ModelPackageContext(_Unsupported):
    _feature, _reason = "model packages (ModelPackageContext)", _NO_COMPILE


class ModelPackageComponentContext(_Unsupported):
    _feature, _reason = "model packages (ModelPackageComponentContext)", _NO_COMPILE


class ModelPackageOptions(_Unsupported):
    _feature, _reason = "model packages (ModelPackageOptions)", _NO_COMPILE


class OrtEpContextData(_Unsupported):
    _feature, _reason = "EPContext data (OrtEpContextData)", _NO_COMPILE


class OrtEpContextDataBuffer(_Unsupported):
    _feature, _reason = "EPContext data (OrtEpContextDataBuffer)", _NO_COMPILE


class OrtSyncStream(_Unsupported):
    _feature = "sync streams (OrtSyncStream)"
    _reason = ("CPUExecutionProvider, nxrt's only provider, computes synchronously and has no "
               "streams")


_NO_ASSIGNMENT = ("nxrt does not record the provider of each node of its optimized graph "
                  "(every node runs on CPUExecutionProvider, its only provider)")


class OrtEpAssignedSubgraph(_Unsupported):
    _feature, _reason = "graph assignment info (OrtEpAssignedSubgraph)", _NO_ASSIGNMENT


class OrtEpAssignedNode(_Unsupported):
    _feature, _reason = "graph assignment info (OrtEpAssignedNode)", _NO_ASSIGNMENT


_NO_SPARSE = "nxrt's tensors are dense: feed a dense array (e.g. scipy's .toarray())"


class SparseTensor(_Unsupported):
    _feature, _reason = "sparse tensors (SparseTensor)", _NO_SPARSE

    @classmethod
    def sparse_coo_from_numpy(cls, dense_shape, values, coo_indices, ort_device):
        cls._refuse()

    @classmethod
    def sparse_csr_from_numpy(cls, dense_shape, values, inner_indices, outer_indices, ort_device):
        cls._refuse()


class OrtExternalInitializerInfo:
    """Where an initializer's data is in an external file: ``filepath``, ``file_offset``,
    ``byte_size``. A plain record: what takes it (ModelCompiler) is not supported by nxrt."""

    def __init__(self, filepath, file_offset, byte_size):
        self._info = (str(filepath), int(file_offset), int(byte_size))

    @property
    def filepath(self):
        return self._info[0]

    @property
    def file_offset(self):
        return self._info[1]

    @property
    def byte_size(self):
        return self._info[2]

    def __repr__(self):
        return (f"OrtExternalInitializerInfo(filepath={self.filepath!r}, "
                f"file_offset={self.file_offset}, byte_size={self.byte_size})")
