"""nxrt.genai: local text generation on nxrt's own runtime.

- ``convert_gguf(gguf_path, out_dir, weights="fp32"|"int4")`` turns a llama-architecture
  GGUF file into an ONNX model folder in onnxruntime-genai's layout (model.onnx with
  past_key_values.N.key/value inputs and present.N.key/value outputs, genai_config.json,
  tokenizer.json, tokenizer_config.json).
- ``Engine.from_dir(path)`` (or ``Engine.from_gguf(path)``) loads such a folder;
  ``generate``, ``stream``, ``tokenize``/``detokenize``.
"""

from .gguf import GGUFError, GGUFFile  # noqa: F401
