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
Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K = 6, 7, 10, 11, 12, 13, 14
TYPES = {F32: ("F32", 1, 4), F16: ("F16", 1, 2), Q4_0: ("Q4_0", 32, 18),
         Q4_1: ("Q4_1", 32, 20), Q8_0: ("Q8_0", 32, 34), BF16: ("BF16", 1, 2),
         Q5_0: ("Q5_0", 32, 22), Q5_1: ("Q5_1", 32, 24), Q2_K: ("Q2_K", 256, 84),
         Q3_K: ("Q3_K", 256, 110), Q4_K: ("Q4_K", 256, 144), Q5_K: ("Q5_K", 256, 176),
         Q6_K: ("Q6_K", 256, 210)}
# Types whose blocks are affine sub-blocks (value = scale * code + minimum, unsigned codes):
# the sub-block length, the codes' bits and, where the minimum is always -z * scale, the
# integer zero point z. subblocks() reads them.
AFFINE = {Q5_0: (32, 5, 16), Q5_1: (32, 5, None), Q2_K: (16, 2, None), Q3_K: (16, 3, 4),
          Q4_K: (32, 4, None), Q5_K: (32, 5, None), Q6_K: (16, 6, 32)}
# Known but not dequantized here (the importance-matrix quants and others): a clear error
# names them.
OTHER_TYPES = {9: "Q8_1", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
               20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 29: "IQ1_M"}

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
        # ggml quantizes rows: each row (the innermost dimension) is whole blocks.
        if self.shape and self.shape[-1] % block:
            raise GGUFError(f"tensor '{self.name}': rows of {self.shape[-1]} elements are not a "
                            f"whole number of {self.type_name} blocks of {block}")
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


def _half(blocks, start):
    """The float16 at byte `start` of each block, as float32 [blocks]."""
    return blocks[:, start:start + 2].copy().view(np.float16).astype(np.float32).reshape(-1)


def _k4_scales(packed):
    """The eight 6-bit scales and minimums of a Q4_K / Q5_K block from its 12 bytes
    (llama.cpp's get_scale_min_k4): [blocks, 8] each."""
    q = packed.astype(np.uint8)
    sc = np.empty((q.shape[0], 8), np.uint8)
    mn = np.empty((q.shape[0], 8), np.uint8)
    sc[:, :4] = q[:, 0:4] & 63
    mn[:, :4] = q[:, 4:8] & 63
    sc[:, 4:] = (q[:, 8:12] & 0x0F) | ((q[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (q[:, 8:12] >> 4) | ((q[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def _q3k_scales(packed):
    """The sixteen 6-bit scales of a Q3_K block from its 12 bytes, minus 32: [blocks, 16]."""
    aux = packed.copy().view("<u4").reshape(-1, 3).astype(np.uint32)
    tmp = aux[:, 2]
    m1, m2 = np.uint32(0x03030303), np.uint32(0x0F0F0F0F)
    words = np.stack([(aux[:, 0] & m2) | (((tmp >> 0) & m1) << 4),
                      (aux[:, 1] & m2) | (((tmp >> 2) & m1) << 4),
                      ((aux[:, 0] >> 4) & m2) | (((tmp >> 4) & m1) << 4),
                      ((aux[:, 1] >> 4) & m2) | (((tmp >> 6) & m1) << 4)], axis=1)
    return words.astype("<u4").view(np.int8).reshape(-1, 16).astype(np.float32) - 32


def _two_bit_groups(qs):
    """Codes of 2-bit planes as llama.cpp's Q2_K / Q3_K loops read them: per half of 128,
    four shifts of the 32 bytes, each giving two groups of 16 (bytes 0-15, then 16-31)."""
    groups = []
    for h in range(2):
        q = qs[:, 32 * h:32 * h + 32]
        for j in range(4):
            plane = (q >> (2 * j)) & 3
            groups += [plane[:, :16], plane[:, 16:]]
    return np.concatenate(groups, axis=1)


def subblocks(raw, ggml_type):
    """The affine sub-blocks of a Q5_0 / Q5_1 / Q2_K..Q6_K tensor, in element order:
    (scales [n], minimums [n], codes [n, length] uint8), value = scale * code + minimum."""
    _, _, size = TYPES[ggml_type]
    b = raw.reshape(-1, size)
    if ggml_type in (Q5_0, Q5_1):
        d = _half(b, 0)
        head = 4 if ggml_type == Q5_1 else 2
        qh = b[:, head:head + 4].copy().view("<u4").reshape(-1, 1)
        qs = b[:, head + 4:head + 20]
        bits = (qh >> np.arange(32, dtype=np.uint32)) & 1  # bit j: element j's fifth bit
        codes = np.concatenate([qs & 0x0F, qs >> 4], axis=1) | (bits.astype(np.uint8) << 4)
        minimum = _half(b, 2) if ggml_type == Q5_1 else -16.0 * d
        return d, minimum, codes
    if ggml_type in (Q4_K, Q5_K):
        d, dmin = _half(b, 0), _half(b, 2)
        sc, mn = _k4_scales(b[:, 4:16])
        if ggml_type == Q4_K:
            qs, qh = b[:, 16:144], None
        else:
            qh, qs = b[:, 16:48], b[:, 48:176]
        codes = []
        for c in range(4):  # 64 elements: low nibbles of 32 bytes, then their high nibbles
            q = qs[:, 32 * c:32 * c + 32]
            low, high = q & 0x0F, q >> 4
            if qh is not None:
                low = low | (((qh >> (2 * c)) & 1) << 4)
                high = high | (((qh >> (2 * c + 1)) & 1) << 4)
            codes += [low, high]
        codes = np.stack(codes, axis=1).reshape(-1, 32)
        scale = (d[:, None] * sc).reshape(-1)
        minimum = -(dmin[:, None] * mn).reshape(-1)
        return scale, minimum, codes
    if ggml_type == Q6_K:
        ql, qh = b[:, 0:128], b[:, 128:192]
        sc = b[:, 192:208].copy().view(np.int8).astype(np.float32)
        d = _half(b, 208)
        halves = []
        for h in range(2):
            lo, hi = ql[:, 64 * h:64 * h + 32], ql[:, 64 * h + 32:64 * h + 64]
            q = qh[:, 32 * h:32 * h + 32]
            halves += [(lo & 0x0F) | ((q & 3) << 4), (hi & 0x0F) | (((q >> 2) & 3) << 4),
                       (lo >> 4) | (((q >> 4) & 3) << 4), (hi >> 4) | (((q >> 6) & 3) << 4)]
        codes = np.concatenate(halves, axis=1).reshape(-1, 16)
        scale = (d[:, None] * sc).reshape(-1)
        return scale, -32.0 * scale, codes
    if ggml_type == Q3_K:
        hmask, qs = b[:, 0:32], b[:, 32:96]
        d = _half(b, 108)
        low = _two_bit_groups(qs)
        high = []
        for h in range(2):
            for j in range(4):
                bit = (hmask >> (4 * h + j)) & 1
                high += [bit[:, :16], bit[:, 16:]]
        codes = (low | (np.concatenate(high, axis=1) << 2)).reshape(-1, 16)
        scale = (d[:, None] * _q3k_scales(b[:, 96:108])).reshape(-1)
        return scale, -4.0 * scale, codes
    if ggml_type == Q2_K:
        scales, qs = b[:, 0:16], b[:, 16:80]
        d, dmin = _half(b, 80), _half(b, 82)
        codes = _two_bit_groups(qs).reshape(-1, 16)
        scale = (d[:, None] * (scales & 0x0F).astype(np.float32)).reshape(-1)
        minimum = -(dmin[:, None] * (scales >> 4).astype(np.float32)).reshape(-1)
        return scale, minimum, codes
    raise GGUFError(f"{TYPES[ggml_type][0]} has no affine sub-blocks")


def dequantize_blocks(raw, ggml_type):
    if ggml_type in AFFINE:
        scale, minimum, codes = subblocks(raw, ggml_type)
        return (codes.astype(np.float32) * scale[:, None] + minimum[:, None]).reshape(-1)
    scale, minimum, codes = quant_blocks(raw, ggml_type)
    if ggml_type == Q8_0:
        return (codes.astype(np.float32) * scale[:, None]).reshape(-1)
    if ggml_type == Q4_0:
        return ((codes.astype(np.float32) - 8.0) * scale[:, None]).reshape(-1)
    return (codes.astype(np.float32) * scale[:, None] + minimum[:, None]).reshape(-1)
