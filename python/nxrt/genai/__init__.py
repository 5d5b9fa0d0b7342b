"""nxrt.genai: local text generation on nxrt's own runtime.

- ``convert_gguf(gguf_path, out_dir, weights="fp32"|"int4")`` turns a llama-architecture
  GGUF file into an ONNX model folder in onnxruntime-genai's layout (model.onnx with
  past_key_values.N.key/value inputs and present.N.key/value outputs, genai_config.json,
  tokenizer.json, tokenizer_config.json).
- ``Engine.from_dir(path)`` (or ``Engine.from_gguf(path)``) loads such a folder;
  ``generate``, ``stream``, ``chat``/``apply_chat_template`` (the model's chat template),
  ``tokenize``/``detokenize``.
- ``ChatTemplate(source).render(messages=...)`` renders a Jinja2 chat template as Hugging
  Face transformers does, without jinja2.
"""

from .chat_template import ChatTemplate, TemplateError  # noqa: F401
from .gguf import GGUFError, GGUFFile  # noqa: F401


def __getattr__(name):
    # The engine and the converter load on first use (they import numpy and onnx).
    if name in ("Engine", "GenerateResult", "GenAIError"):
        from . import engine

        return getattr(engine, name)
    if name in ("convert_gguf", "ConvertError"):
        from . import convert

        return getattr(convert, name)
    raise AttributeError(f"module 'nxrt.genai' has no attribute '{name}'")
