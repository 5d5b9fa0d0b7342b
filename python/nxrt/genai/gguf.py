"""A reader for GGUF files (llama.cpp's model format): metadata, tensor directory, and the
tensors themselves dequantized to float32 with numpy.

The file is memory-mapped; nothing is read twice. Every malformed or truncated part raises
GGUFError naming the part (header, metadata key, tensor) and the byte offset.
"""

import mmap
import struct

import numpy as np

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

# ggml tensor types this reader dequantizes: name, elements per block, bytes per block.
F32, F16, Q4_0, Q4_1, Q8_0, BF16 = 0, 1, 2, 3, 8, 30
TYPES = {F32: ("F32", 1, 4), F16: ("F16", 1, 2), Q4_0: ("Q4_0", 32, 18),
         Q4_1: ("Q4_1", 32, 20), Q8_0: ("Q8_0", 32, 34), BF16: ("BF16", 1, 2)}
# Known but not dequantized here (the K-quants and others): a clear error names them.
OTHER_TYPES = {6: "Q5_0", 7: "Q5_1", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K",
               13: "Q5_K", 14: "Q6_K", 15: "Q8_K"}

# Far above any real file; a count past these is a corrupt header, not a model.
_MAX_COUNT = 1 << 24
_MAX_STRING = 1 << 26


class GGUFError(ValueError):
    """The GGUF file is malformed, truncated or uses something this reader does not."""


class Tensor:
    """One entry of the tensor directory. `shape` is numpy order (outermost first): GGUF
    lists dimensions innermost first, so a [out, in] matrix is stored with ne = (in, out)."""

    def __init__(self, name, shape, ggml_type, offset):
        self.name, self.shape, self.ggml_type, self.offset = name, shape, ggml_type, offset

    @property
    def type_name(self):
        if self.ggml_type in TYPES:
            return TYPES[self.ggml_type][0]
        return OTHER_TYPES.get(self.ggml_type, f"type {self.ggml_type}")

    @property
    def elements(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def nbytes(self):
        if self.ggml_type not in TYPES:
            raise GGUFError(f"tensor '{self.name}': {self.type_name} is not supported "
                            f"(supported: {', '.join(t[0] for t in TYPES.values())})")
        _, block, size = TYPES[self.ggml_type]
        if self.elements % block:
            raise GGUFError(f"tensor '{self.name}': {self.elements} elements is not a whole "
                            f"number of {self.type_name} blocks of {block}")
        return self.elements // block * size


class _Cursor:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, n, what):
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError(f"truncated file: {what} needs {n} bytes at offset {self.pos}, "
                            f"the file has {len(self.buf)}")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what):
        n = self.unpack("<Q", what)
        if n > _MAX_STRING:
            raise GGUFError(f"{what}: string length {n} at offset {self.pos - 8} is absurd")
        raw = self.take(n, what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise GGUFError(f"{what}: string at offset {self.pos - n} is not UTF-8 ({e})")

    def value(self, vtype, what):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype], what)
        if vtype == _STRING:
            return self.string(what)
        if vtype == _ARRAY:
            etype = self.unpack("<I", what)
            count = self.unpack("<Q", what)
            if count > _MAX_COUNT:
                raise GGUFError(f"{what}: array of {count} values is absurd")
            if etype in _SCALARS and etype != 7:
                fmt = _SCALARS[etype]
                raw = self.take(count * struct.calcsize(fmt), what)
                return np.frombuffer(raw, dtype=np.dtype(fmt)).tolist()
            return [self.value(etype, what) for _ in range(count)]
        raise GGUFError(f"{what}: unknown metadata value type {vtype} at offset {self.pos - 4}")


class GGUFFile:
    """GGUFFile(path): .version, .metadata (dict), .tensors (dict name -> Tensor, file order),
    .array(name) -> float32 numpy array, .raw(name) -> the stored bytes."""

    def __init__(self, path):
        self.path = str(path)
        with open(self.path, "rb") as f:
            try:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                raise GGUFError(f"{self.path}: empty file, not GGUF") from None
        buf = memoryview(self._map)
        c = _Cursor(buf)
        if bytes(c.take(4, "the magic number")) != MAGIC:
            raise GGUFError(f"{self.path}: not a GGUF file (no 'GGUF' magic number)")
        self.version = c.unpack("<I", "the header's version")
        if self.version not in (2, 3):
            raise GGUFError(f"{self.path}: GGUF version {self.version} is not supported (2, 3)")
        n_tensors = c.unpack("<Q", "the header's tensor count")
        n_kv = c.unpack("<Q", "the header's metadata count")
        if n_tensors > _MAX_COUNT or n_kv > _MAX_COUNT:
            raise GGUFError(f"{self.path}: header counts {n_tensors} tensors, {n_kv} metadata "
                            "keys: absurd, the header is corrupt")
        self.metadata = {}
        for i in range(n_kv):
            key = c.string(f"metadata key {i}")
            vtype = c.unpack("<I", f"the type of metadata '{key}'")
            self.metadata[key] = c.value(vtype, f"metadata '{key}'")
        self.tensors = {}
        for i in range(n_tensors):
            name = c.string(f"tensor name {i}")
            n_dims = c.unpack("<I", f"tensor '{name}' rank")
            if n_dims > 8:
                raise GGUFError(f"tensor '{name}': rank {n_dims} is absurd")
            dims = [c.unpack("<Q", f"tensor '{name}' dimensions") for _ in range(n_dims)]
            ggml_type = c.unpack("<I", f"tensor '{name}' type")
            offset = c.unpack("<Q", f"tensor '{name}' offset")
            self.tensors[name] = Tensor(name, tuple(reversed(dims)), ggml_type, offset)
        align = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        if align <= 0 or align & (align - 1):
            raise GGUFError(f"metadata 'general.alignment' = {align} is not a power of two")
        self.data_offset = (c.pos + align - 1) // align * align
        for t in self.tensors.values():
            if t.ggml_type not in TYPES:
                continue  # refused when read
            end = self.data_offset + t.offset + t.nbytes()
            if end > len(buf):
                raise GGUFError(f"truncated file: tensor '{t.name}' ({t.type_name}, shape "
                                f"{list(t.shape)}) ends at byte {end}, the file has {len(buf)}")

    def raw(self, name):
        t = self._tensor(name)
        start = self.data_offset + t.offset
        return np.frombuffer(self._map, dtype=np.uint8, count=t.nbytes(), offset=start)

    def array(self, name):
        """The tensor dequantized to float32, in numpy order (t.shape)."""
        t = self._tensor(name)
        raw = self.raw(name)
        if t.ggml_type == F32:
            out = raw.view(np.float32).copy()  # not a view: the map can then be closed
        elif t.ggml_type == F16:
            out = raw.view(np.float16).astype(np.float32)
        elif t.ggml_type == BF16:
            out = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            out = dequantize_blocks(raw, t.ggml_type)
        return out.reshape(t.shape)

    def _tensor(self, name):
        if name not in self.tensors:
            raise GGUFError(f"{self.path}: no tensor named '{name}'")
        return self.tensors[name]

    def close(self):
        try:
            self._map.close()
        except BufferError:  # arrays still view it: the map closes when they are gone
            pass


def quant_blocks(raw, ggml_type):
    """The 4-bit or 8-bit blocks of a Q4_0 / Q4_1 / Q8_0 tensor as numpy arrays: (scales,
    minimums or None, codes [blocks, 32] uint8 for 4-bit, int8 for Q8_0). A 4-bit code q
    means (q - 8) * scale for Q4_0 and q * scale + minimum for Q4_1."""
    _, block, size = TYPES[ggml_type]
    blocks = raw.reshape(-1, size)
    scale = blocks[:, 0:2].copy().view(np.float16).astype(np.float32).reshape(-1)
    if ggml_type == Q8_0:
        return scale, None, blocks[:, 2:].copy().view(np.int8)
    head = 4 if ggml_type == Q4_1 else 2
    minimum = (blocks[:, 2:4].copy().view(np.float16).astype(np.float32).reshape(-1)
               if ggml_type == Q4_1 else None)
    packed = blocks[:, head:]
    # Byte j holds element j in its low nibble and element j + 16 in its high one.
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=1)
    return scale, minimum, codes


def dequantize_blocks(raw, ggml_type):
    scale, minimum, codes = quant_blocks(raw, ggml_type)
    if ggml_type == Q8_0:
        return (codes.astype(np.float32) * scale[:, None]).reshape(-1)
    if ggml_type == Q4_0:
        return ((codes.astype(np.float32) - 8.0) * scale[:, None]).reshape(-1)
    return (codes.astype(np.float32) * scale[:, None] + minimum[:, None]).reshape(-1)
