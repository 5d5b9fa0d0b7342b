"""GGUF (llama architecture) to an ONNX model folder in onnxruntime-genai's layout.

The folder holds:
- model.onnx (+ model.onnx.data, the weights as external data): a decoder with inputs
  input_ids [batch, seq], attention_mask [batch, past + seq], (without GroupQueryAttention)
  position_ids [batch, seq], and
  past_key_values.N.key/value [batch, kv_heads, past, head_size]; outputs logits
  [batch, seq, vocab] and present.N.key/value [batch, kv_heads, past + seq, head_size].
- genai_config.json, tokenizer.json, tokenizer_config.json (chat template included).

Weights are float32 (``weights="fp32"``) or, for the quantized matrices of the file,
com.microsoft MatMulNBits blocks that keep the GGUF's codes and scales as they are
(``weights="int4"``): Q4_0 / Q4_1 / Q8_0 in blocks of 32 (4 bits, 8 for Q8_0; Q4_1's
per-block minimum becomes a float zero point), and the K-quants, Q5_0 and Q5_1 in their
sub-blocks of 16 or 32 (4 bits for Q2_K / Q3_K / Q4_K, 8 for the wider codes; see
_matmul_subblocks). Everything else (the embedding table that Gather reads, norms) is
dequantized to float32.

The graph uses standard ONNX ops (opset 17) plus com.microsoft MatMulNBits and (by
default) GroupQueryAttention, as onnxruntime-genai's model builder writes them, so
onnxruntime and onnxruntime-genai run it too.
"""

import json
import os

import numpy as np

from .gguf import AFFINE, Q4_0, Q4_1, Q8_0, GGUFFile, quant_blocks, subblocks

OPSET = 17
SUPPORTED_ARCHITECTURES = ("llama",)


def _pack_nibbles(codes):
    """4-bit codes as MatMulNBits stores them: element 2i in the low nibble of byte i,
    2i + 1 in the high one."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


class ConvertError(ValueError):
    """The GGUF file cannot be converted (architecture, missing tensor, shape)."""


def _onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - onnx is in requirements-dev
        raise ConvertError("converting a GGUF file needs the 'onnx' Python package "
                           "(pip install onnx)") from e
    return onnx


class LlamaConfig:
    """The hyper-parameters a llama GGUF states in its metadata."""

    def __init__(self, metadata, tensors):
        arch = metadata.get("general.architecture")
        if arch not in SUPPORTED_ARCHITECTURES:
            raise ConvertError(f"architecture '{arch}' is not supported (supported: "
                               f"{', '.join(SUPPORTED_ARCHITECTURES)})")

        def need(key, cast=int):
            full = f"{arch}.{key}"
            if full not in metadata:
                raise ConvertError(f"metadata '{full}' is missing")
            return cast(metadata[full])

        self.layers = need("block_count")
        self.hidden = need("embedding_length")
        self.ffn = need("feed_forward_length")
        self.heads = need("attention.head_count")
        self.kv_heads = int(metadata.get(f"{arch}.attention.head_count_kv", self.heads))
        self.eps = need("attention.layer_norm_rms_epsilon", float)
        self.rope_base = float(metadata.get(f"{arch}.rope.freq_base", 10000.0))
        self.context = need("context_length")
        self.head_size = self.hidden // self.heads
        self.rope_dims = int(metadata.get(f"{arch}.rope.dimension_count", self.head_size))
        if self.heads * self.head_size != self.hidden or self.heads % self.kv_heads:
            raise ConvertError(f"{self.heads} heads of {self.hidden} channels with "
                               f"{self.kv_heads} KV heads do not divide evenly")
        if self.rope_dims != self.head_size:
            raise ConvertError(f"partial rotary embedding ({self.rope_dims} of "
                               f"{self.head_size} dimensions) is not supported")
        scaling = metadata.get(f"{arch}.rope.scaling.type", "none")
        if scaling not in ("none", "linear"):
            raise ConvertError(f"rope scaling '{scaling}' is not supported")
        self.rope_scale = (float(metadata.get(f"{arch}.rope.scaling.factor", 1.0))
                           if scaling == "linear" else 1.0)
        if "token_embd.weight" not in tensors:
            raise ConvertError("tensor 'token_embd.weight' is missing")
        self.vocab = tensors["token_embd.weight"].shape[0]


def _unpermute_rows(w, heads):
    """llama.cpp's converter reorders the rows of Q and K per head so that its rotary
    embedding turns adjacent pairs; this undoes it, giving the Hugging Face order in which
    the first and second halves of a head are turned together (rotate_half)."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


class _Graph:
    """A small builder: nodes, initializers and unique names."""

    def __init__(self, onnx):
        self.onnx, self.h, self.nh = onnx, onnx.helper, onnx.numpy_helper
        self.nodes, self.inits, self._n = [], [], 0

    def name(self, base):
        self._n += 1
        return f"{base}_{self._n}"

    def const(self, array, name=None):
        name = name or self.name("const")
        self.inits.append(self.nh.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type, inputs, outputs=1, name=None, domain=None, **attrs):
        name = name or self.name(op_type)
        outs = [f"{name}/out{i}" for i in range(outputs)] if isinstance(outputs, int) else outputs
        self.nodes.append(self.h.make_node(op_type, inputs, outs, name=name, domain=domain,
                                           **attrs))
        return outs[0] if len(outs) == 1 else outs


class _LlamaBuilder:
    def __init__(self, gguf, cfg, weights, attention="gqa"):
        self.g, self.cfg, self.weights, self.attention = gguf, cfg, weights, attention
        self.onnx = _onnx()
        self.b = _Graph(self.onnx)
        self.i64 = lambda v: self.b.const(np.array(v, dtype=np.int64))
        self.f32 = lambda v: self.b.const(np.array(v, dtype=np.float32))

    def info(self, name):
        """The directory entry of tensor `name`; ConvertError when the file lacks it."""
        if name not in self.g.tensors:
            raise ConvertError(f"tensor '{name}' is missing")
        return self.g.tensors[name]

    def tensor(self, name):
        return self.g.array(self.info(name).name)

    def linear(self, x, name, out_features, in_features, unpermute_heads=0):
        """x [.., in] times the GGUF matrix `name` (stored [out, in]) transposed."""
        t = self.info(name)
        if t.shape != (out_features, in_features):
            raise ConvertError(f"tensor '{name}' has shape {list(t.shape)}, expected "
                               f"{[out_features, in_features]}")
        if self.weights == "int4-u8":
            w = self.g.array(name)
            if unpermute_heads:
                w = _unpermute_rows(w, unpermute_heads)
            return self._matmul_u8_zero_points(x, name, w)
        if self.weights == "int4" and t.ggml_type in (Q4_0, Q4_1, Q8_0):
            return self._matmul_nbits(x, t, unpermute_heads)
        if self.weights == "int4" and t.ggml_type in AFFINE:
            return self._matmul_subblocks(x, t, unpermute_heads)
        w = self.g.array(name)
        if unpermute_heads:
            w = _unpermute_rows(w, unpermute_heads)
        return self.b.op("MatMul", [x, self.b.const(w.T.astype(np.float32), name)])

    def _matmul_subblocks(self, x, t, unpermute_heads):
        """The K-quants, Q5_0 and Q5_1 as MatMulNBits over their sub-blocks of 16 or 32:
        scale * code + minimum = (code - zp) * scale. Codes of up to 4 bits (Q2_K, Q3_K,
        Q4_K) are stored as 4 bits with float zero points; wider ones as 8 bits, with the
        exact uint8 zero point of Q5_0 (16) and Q6_K (32), float ones for Q5_1 and Q5_K
        (which onnxruntime's CPU MatMulNBits refuses at 8 bits; nxrt runs them). A
        sub-block whose scale is 0 but minimum is not (all its values equal the minimum)
        gets a scale of |minimum| / 2^20, off by at most 2^-16 of it."""
        n, k = t.shape
        length, bits, integer_zp = AFFINE[t.ggml_type]
        scale, minimum, codes = subblocks(self.g.raw(t.name), t.ggml_type)
        blocks = k // length
        codes = codes.reshape(n, blocks, length)
        flat = np.where((scale == 0) & (minimum != 0), np.abs(minimum) * 2.0**-20, scale)
        scale = flat.reshape(n, blocks).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            zp = np.where(scale != 0, -minimum.reshape(n, blocks) / scale, 0.0).astype(np.float32)
        stored = 4 if bits <= 4 else 8
        if stored == 8 and integer_zp is not None:
            zp = np.full((n, blocks), integer_zp, dtype=np.uint8)
        if unpermute_heads:
            codes = _unpermute_rows(codes, unpermute_heads)
            scale = _unpermute_rows(scale, unpermute_heads)
            zp = _unpermute_rows(zp, unpermute_heads)
        packed = _pack_nibbles(codes) if stored == 4 else codes.astype(np.uint8)
        b = self.b
        return b.op("MatMulNBits", [x, b.const(packed, f"{t.name}.q{stored}"),
                                    b.const(scale, t.name + ".scales"),
                                    b.const(zp, t.name + ".zero_points")],
                    domain="com.microsoft", K=k, N=n, bits=stored, block_size=length)

    def _matmul_u8_zero_points(self, x, name, w):
        """x times w [out, in] re-quantized as onnxruntime's MatMulNBits quantizer does for
        CPU models: blocks of 32 along `in`, each (code - zero_point) * scale with
        scale = (max - min) / 15 over the block (0 included) and an integer zero point in
        uint8, accuracy_level 4 (onnxruntime and nxrt then compute A in 8 bits)."""
        n, k = w.shape
        if k % 32:
            return self.b.op("MatMul", [x, self.b.const(w.T.astype(np.float32), name)])
        blocks = w.astype(np.float32).reshape(n, k // 32, 32)
        low = np.minimum(blocks.min(axis=2), 0.0)
        high = np.maximum(blocks.max(axis=2), 0.0)
        scale = ((high - low) / 15.0).astype(np.float32)
        safe = np.where(scale == 0, 1.0, scale)
        zp = np.clip(np.rint(-low / safe), 0, 15).astype(np.uint8)
        codes = np.clip(np.rint(blocks / safe[..., None]) + zp[..., None], 0, 15).astype(np.uint8)
        if zp.shape[1] % 2:  # a row's zero points fill whole bytes
            zp = np.concatenate([zp, np.zeros((n, 1), np.uint8)], axis=1)
        b = self.b
        return b.op("MatMulNBits", [x, b.const(_pack_nibbles(codes), name + ".q4"),
                                    b.const(scale.reshape(-1), name + ".scales"),
                                    b.const(_pack_nibbles(zp).reshape(-1), name + ".zero_points")],
                    domain="com.microsoft", K=k, N=n, bits=4, block_size=32, accuracy_level=4)

    def _matmul_nbits(self, x, t, unpermute_heads):
        n, k = t.shape
        scale, minimum, codes = quant_blocks(self.g.raw(t.name), t.ggml_type)
        blocks = k // 32
        codes = codes.reshape(n, blocks, 32)
        scale = scale.reshape(n, blocks)
        b = self.b
        if t.ggml_type == Q8_0:
            # int8 q * d as uint8 q + 128 with MatMulNBits' default zero point 128: exact.
            # No accuracy_level: at 4 onnxruntime would quantize A to 8 bits here (logits
            # 0.2 off on SmolLM2's head), where its 4-bit products stay in float.
            codes = (codes.astype(np.int16) + 128).astype(np.uint8)
            if unpermute_heads:
                codes = _unpermute_rows(codes, unpermute_heads)
                scale = _unpermute_rows(scale, unpermute_heads)
            return b.op("MatMulNBits", [x, b.const(codes, t.name + ".q8"),
                                        b.const(scale.astype(np.float32), t.name + ".scales")],
                        domain="com.microsoft", K=k, N=n, bits=8, block_size=32)
        if t.ggml_type == Q4_1:
            # q * d + m = (q - zp) * d with zp = -m / d (a float zero point).
            minimum = minimum.reshape(n, blocks)
            with np.errstate(divide="ignore", invalid="ignore"):
                zp = np.where(scale != 0, -minimum / scale, 0.0).astype(np.float32)
        else:
            zp = np.full((n, blocks), 8.0, dtype=np.float32)
        if unpermute_heads:
            codes = _unpermute_rows(codes, unpermute_heads)
            scale = _unpermute_rows(scale, unpermute_heads)
            zp = _unpermute_rows(zp, unpermute_heads)
        packed = _pack_nibbles(codes)
        return b.op("MatMulNBits", [x, b.const(packed, t.name + ".q4"),
                                    b.const(scale.astype(np.float32), t.name + ".scales"),
                                    b.const(zp, t.name + ".zero_points")],
                    domain="com.microsoft", K=k, N=n, bits=4, block_size=32,
                    accuracy_level=4)

    def rms_norm(self, x, weight_name):
        b, cfg = self.b, self.cfg
        sq = b.op("Mul", [x, x])
        mean = b.op("ReduceMean", [sq], axes=[-1], keepdims=1)
        inv = b.op("Reciprocal", [b.op("Sqrt", [b.op("Add", [mean, self.f32(cfg.eps)])])])
        w = b.const(self.tensor(weight_name).astype(np.float32), weight_name)
        return b.op("Mul", [b.op("Mul", [x, inv]), w])

    def rotate(self, x, cos, sin):
        """x [B, heads, S, D] turned by the position angles (rotate_half form)."""
        b, half = self.b, self.cfg.head_size // 2
        x1 = b.op("Slice", [x, self.i64([0]), self.i64([half]), self.i64([-1])])
        x2 = b.op("Slice", [x, self.i64([half]), self.i64([2 * half]), self.i64([-1])])
        rot = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
        return b.op("Add", [b.op("Mul", [x, cos]), b.op("Mul", [rot, sin])])

    def build(self):
        onnx, h, b, cfg = self.onnx, self.b.h, self.b, self.cfg
        TP = onnx.TensorProto
        gqa = self.attention == "gqa"
        inputs = [h.make_tensor_value_info("input_ids", TP.INT64, ["batch", "seq"]),
                  h.make_tensor_value_info("attention_mask", TP.INT64, ["batch", "total"])]
        if not gqa:  # GroupQueryAttention takes positions from the mask's lengths
            inputs.append(h.make_tensor_value_info("position_ids", TP.INT64, ["batch", "seq"]))
        outputs = [h.make_tensor_value_info("logits", TP.FLOAT, ["batch", "seq", cfg.vocab])]
        # With GroupQueryAttention past and present may be one max-length buffer
        # (past_present_share_buffer): both dims are then the cache's capacity.
        kv_shape = ["batch", cfg.kv_heads, "past", cfg.head_size]
        present_shape = ["batch", cfg.kv_heads, "present", cfg.head_size]
        for i in range(cfg.layers):
            for kind in ("key", "value"):
                inputs.append(h.make_tensor_value_info(f"past_key_values.{i}.{kind}", TP.FLOAT,
                                                       kv_shape))
                outputs.append(h.make_tensor_value_info(f"present.{i}.{kind}", TP.FLOAT,
                                                        present_shape))
        embed = self.tensor("token_embd.weight").astype(np.float32)
        x = b.op("Gather", [b.const(embed, "token_embd.weight"), "input_ids"], axis=0)

        if gqa:
            return self._build_gqa(inputs, outputs, x, embed)
        # Rotary angles [B, 1, S, D] from position_ids.
        inv_freq = 1.0 / (cfg.rope_base ** (np.arange(0, cfg.head_size, 2, dtype=np.float64)
                                            / cfg.head_size)) / cfg.rope_scale
        pos = b.op("Unsqueeze", [b.op("Cast", ["position_ids"], to=TP.FLOAT), self.i64([-1])])
        freqs = b.op("Mul", [pos, self.f32(inv_freq.astype(np.float32))])
        angles = b.op("Unsqueeze", [b.op("Concat", [freqs, freqs], axis=-1), self.i64([1])])
        cos, sin = b.op("Cos", [angles]), b.op("Sin", [angles])

        # Additive mask [B, 1, rep * S, T]: key j visible to query i (absolute position
        # past + i) when j <= past + i and attention_mask[j] is 1; repeated for the rep
        # query heads that share a KV head (see the attention below).
        past_len = b.op("Slice", [b.op("Shape", ["past_key_values.0.key"]), self.i64([2]),
                                  self.i64([3])])
        seq_len = b.op("Slice", [b.op("Shape", ["input_ids"]), self.i64([1]), self.i64([2])])
        total = b.op("Slice", [b.op("Shape", ["attention_mask"]), self.i64([1]), self.i64([2])])
        scalar = lambda t: b.op("Squeeze", [t, self.i64([0])])  # noqa: E731
        q_pos = b.op("Range", [scalar(past_len),
                               scalar(b.op("Add", [past_len, seq_len])), self.i64(1)])
        k_pos = b.op("Range", [self.i64(0), scalar(total), self.i64(1)])
        causal = b.op("LessOrEqual", [b.op("Unsqueeze", [k_pos, self.i64([0])]),
                                      b.op("Unsqueeze", [q_pos, self.i64([1])])])
        keep = b.op("Cast", ["attention_mask"], to=TP.BOOL)
        keep = b.op("Unsqueeze", [keep, self.i64([1, 2])])  # [B, 1, 1, T]
        allowed = b.op("And", [causal, keep])  # [B, 1, S, T]
        mask = b.op("Where", [allowed, self.f32(0.0),
                              self.f32(np.finfo(np.float32).min)])
        rep = cfg.heads // cfg.kv_heads
        mask = b.op("Tile", [mask, self.i64([1, 1, rep, 1])])
        d = cfg.head_size
        for i in range(cfg.layers):
            p = f"blk.{i}."
            hn = self.rms_norm(x, p + "attn_norm.weight")
            q = self.linear(hn, p + "attn_q.weight", cfg.hidden, cfg.hidden, cfg.heads)
            k = self.linear(hn, p + "attn_k.weight", cfg.kv_heads * d, cfg.hidden, cfg.kv_heads)
            v = self.linear(hn, p + "attn_v.weight", cfg.kv_heads * d, cfg.hidden)
            heads = lambda t, n: b.op("Transpose", [b.op("Reshape", [t, self.i64([0, 0, n, d])])],  # noqa: E731
                                      perm=[0, 2, 1, 3])
            q = self.rotate(heads(q, cfg.heads), cos, sin)
            k = self.rotate(heads(k, cfg.kv_heads), cos, sin)
            v = heads(v, cfg.kv_heads)
            k_all = b.op("Concat", [f"past_key_values.{i}.key", k], [f"present.{i}.key"], axis=2)
            v_all = b.op("Concat", [f"past_key_values.{i}.value", v], [f"present.{i}.value"],
                         axis=2)
            # The query heads sharing a KV head side by side: [B, kv, rep * S, D] against
            # the cache as it is, so the cache is never repeated.
            qg = b.op("Reshape", [b.op("Mul", [q, self.f32(1.0 / np.sqrt(d))]),
                                  self.i64([0, cfg.kv_heads, -1, d])])
            scores = b.op("MatMul", [qg, b.op("Transpose", [k_all], perm=[0, 1, 3, 2])])
            probs = b.op("Softmax", [b.op("Add", [scores, mask])], axis=-1)
            ctx = b.op("MatMul", [probs, v_all])  # [B, kv, rep * S, D]
            ctx = b.op("Reshape", [ctx, self.i64([0, cfg.heads, -1, d])])
            ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                                   self.i64([0, 0, cfg.hidden])])
            x = b.op("Add", [x, self.linear(ctx, p + "attn_output.weight", cfg.hidden,
                                            cfg.hidden)])
            x = self._mlp(x, p)
        return self._finish(inputs, outputs, x, embed)

    def _mlp(self, x, p):
        cfg, b = self.cfg, self.b
        hn = self.rms_norm(x, p + "ffn_norm.weight")
        gate = self.linear(hn, p + "ffn_gate.weight", cfg.ffn, cfg.hidden)
        up = self.linear(hn, p + "ffn_up.weight", cfg.ffn, cfg.hidden)
        act = b.op("Mul", [b.op("Mul", [gate, b.op("Sigmoid", [gate])]), up])
        return b.op("Add", [x, self.linear(act, p + "ffn_down.weight", cfg.hidden, cfg.ffn)])

    def _build_gqa(self, inputs, outputs, x, embed):
        """Attention as com.microsoft GroupQueryAttention (as onnxruntime-genai's model
        builder writes it): rotary inside the op from cos/sin tables, the positions and the
        cache fill taken from the attention mask (seqlens_k = its sum - 1), so past and
        present can share one preallocated buffer and a decode step copies no cache."""
        b, cfg, TP = self.b, self.cfg, self.onnx.TensorProto
        d = cfg.head_size
        inv_freq = 1.0 / (cfg.rope_base ** (np.arange(0, d, 2, dtype=np.float64) / d))
        angles = np.outer(np.arange(cfg.context, dtype=np.float64) / cfg.rope_scale, inv_freq)
        cos = b.const(np.cos(angles).astype(np.float32), "cos_cache")
        sin = b.const(np.sin(angles).astype(np.float32), "sin_cache")
        lengths = b.op("ReduceSum", ["attention_mask", self.i64([1])], keepdims=0)
        seqlens_k = b.op("Cast", [b.op("Sub", [lengths, self.i64(1)])], to=TP.INT32)
        total = b.op("Cast", [b.op("Gather", [b.op("Shape", ["attention_mask"]), self.i64(1)],
                                   axis=0)], to=TP.INT32)
        for i in range(cfg.layers):
            p = f"blk.{i}."
            hn = self.rms_norm(x, p + "attn_norm.weight")
            q = self.linear(hn, p + "attn_q.weight", cfg.hidden, cfg.hidden, cfg.heads)
            k = self.linear(hn, p + "attn_k.weight", cfg.kv_heads * d, cfg.hidden, cfg.kv_heads)
            v = self.linear(hn, p + "attn_v.weight", cfg.kv_heads * d, cfg.hidden)
            ctx = b.op("GroupQueryAttention",
                       [q, k, v, f"past_key_values.{i}.key", f"past_key_values.{i}.value",
                        seqlens_k, total, cos, sin],
                       [b.name("attention"), f"present.{i}.key", f"present.{i}.value"],
                       domain="com.microsoft",
                       num_heads=cfg.heads, kv_num_heads=cfg.kv_heads, do_rotary=1,
                       rotary_interleaved=0)[0]
            x = b.op("Add", [x, self.linear(ctx, p + "attn_output.weight", cfg.hidden,
                                            cfg.hidden)])
            x = self._mlp(x, p)
        return self._finish(inputs, outputs, x, embed)

    def _finish(self, inputs, outputs, x, embed):
        """The final norm, the LM head and the model."""
        b, cfg, h = self.b, self.cfg, self.b.h
        x = self.rms_norm(x, "output_norm.weight")
        # The LM head: output.weight, or the embedding matrix when they are tied.
        head = "output.weight" if "output.weight" in self.g.tensors else "token_embd.weight"
        quantized = self.weights == "int4-u8" or (
            self.weights == "int4"
            and self.g.tensors[head].ggml_type in (Q4_0, Q4_1, Q8_0, *AFFINE))
        if quantized:
            b.op("Identity", [self.linear(x, head, cfg.vocab, cfg.hidden)], ["logits"])
        else:
            w = embed if head == "token_embd.weight" else self.tensor(head)
            b.op("MatMul", [x, b.const(np.ascontiguousarray(w.T), "lm_head.weight")], ["logits"])
        graph = h.make_graph(b.nodes, "llama", inputs, outputs, b.inits)
        opsets = [h.make_opsetid("", OPSET), h.make_opsetid("com.microsoft", 1)]
        model = h.make_model(graph, opset_imports=opsets, producer_name="nxrt.genai.convert")
        model.ir_version = 8
        return model


def genai_config(cfg, metadata, attention="gqa"):
    eos = int(metadata.get("tokenizer.ggml.eos_token_id", 0))
    return {
        "model": {
            "bos_token_id": int(metadata.get("tokenizer.ggml.bos_token_id", eos)),
            "context_length": cfg.context,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx",
                "head_size": cfg.head_size,
                "hidden_size": cfg.hidden,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           **({} if attention == "gqa" else {"position_ids": "position_ids"}),
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": cfg.heads,
                "num_hidden_layers": cfg.layers,
                "num_key_value_heads": cfg.kv_heads,
            },
            "eos_token_id": eos,
            "pad_token_id": int(metadata.get("tokenizer.ggml.padding_token_id", eos)),
            "type": "llama",
            "vocab_size": cfg.vocab,
        },
        "search": {"diversity_penalty": 0.0, "do_sample": False, "early_stopping": True,
                   "length_penalty": 1.0, "max_length": cfg.context, "min_length": 0,
                   "no_repeat_ngram_size": 0, "num_beams": 1, "num_return_sequences": 1,
                   "past_present_share_buffer": attention == "gqa", "repetition_penalty": 1.0,
                   "temperature": 1.0, "top_k": 1, "top_p": 1.0},
    }


def convert_gguf(gguf_path, out_dir, weights="fp32", attention="gqa"):
    """Writes the ONNX model folder for GGUF file `gguf_path` as `out_dir`; returns out_dir.
    weights: "fp32" (every tensor dequantized), "int4" (Q4_0 / Q4_1 / Q8_0 matrices as
    MatMulNBits, the GGUF's own blocks) or "int4-u8" (every matrix, the LM head included,
    re-quantized to 4 bits with uint8 zero points and accuracy_level 4: the layout of
    onnxruntime-genai's CPU int4 models, lossy over the GGUF's blocks). attention: "gqa" (com.microsoft GroupQueryAttention, a cache that past
    and present may share) or "ops" (standard ONNX ops only, the cache grown by Concat). The folder is written beside out_dir and renamed into place when whole,
    so an interrupted conversion never leaves a folder that looks finished; an existing
    out_dir is replaced."""
    import shutil

    if weights not in ("fp32", "int4", "int4-u8"):
        raise ValueError(f"weights must be 'fp32', 'int4' or 'int4-u8', not {weights!r}")
    if attention not in ("gqa", "ops"):
        raise ValueError(f"attention must be 'gqa' or 'ops', not {attention!r}")
    out_dir = os.path.abspath(out_dir)
    partial = out_dir + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    g = GGUFFile(gguf_path)
    try:
        cfg = LlamaConfig(g.metadata, g.tensors)
        model = _LlamaBuilder(g, cfg, weights, attention).build()
        os.makedirs(partial)
        _onnx().save_model(model, os.path.join(partial, "model.onnx"),
                           save_as_external_data=True, all_tensors_to_one_file=True,
                           location="model.onnx.data", size_threshold=1024)
        with open(os.path.join(partial, "genai_config.json"), "w") as f:
            json.dump(genai_config(cfg, g.metadata, attention), f, indent=2)
        from .tokenizer import write_tokenizer_files

        write_tokenizer_files(g.metadata, partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        g.close()
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(partial, out_dir)
    return out_dir
