"""nxrt.genai.Engine: one run of the decoder for the prompt, then one per new token, with
sampling, stop conditions and streaming.

Two backends run it. "cpp" (the default where nxrt was built with its text-generation
library) is the C++ engine (src/genai/engine.h) through nxrt._nxrt.CppEngine: the whole
loop in C++ with the GIL released, the cache in place, a prompt's cached prefix reused
across calls. "python" is the loop below over an nxrt InferenceSession (IOBinding keeps the
cache in place); it stands in where the C++ library is missing, and tests hold each backend
to the other. Sampling follows the same rules in both, but their seeded random streams
differ: a seed reproduces runs of one backend.
"""

import dataclasses
import hashlib
import json
import os

import numpy as np

from .sampling import Sampler, SamplingParams
from .tokenizer import NativeTokenizer, Tokenizer


class GenAIError(ValueError):
    """A model folder, prompt or parameter the engine cannot use."""


@dataclasses.dataclass
class GenerateResult:
    text: str
    token_ids: list
    finish_reason: str  # "stop" (EOS, stop string or stop token) or "length"
    # prompt_tokens, completion_tokens, total_tokens; cached_prompt_tokens: leading prompt
    # tokens whose keys and values were still cached from the previous call (not run)
    usage: dict
    logprobs: list = None  # per generated token, when asked for
    timings: dict = None  # seconds: time_to_first_token, decode; tokens_per_second


@dataclasses.dataclass
class _Progress:
    """One generate/stream call's prompt size, tokens so far and timings (per call, so
    calls on one engine do not share state)."""
    prompt_tokens: int = 0
    tokens: list = dataclasses.field(default_factory=list)
    logprobs: list = dataclasses.field(default_factory=list)
    timings: dict = dataclasses.field(default_factory=dict)


def _held_back(text, stops):
    """Length of the longest tail of `text` that is the start of a stop string: it may
    become one with the next token, so it is not output yet."""
    return max((n for s in stops for n in range(1, min(len(s) - 1, len(text)) + 1)
                if s.startswith(text[-n:])), default=0)


def _native_result(r, params):
    p, n = r["prompt_tokens"], r["completion_tokens"]
    return GenerateResult(
        text=r["text"], token_ids=r["token_ids"], finish_reason=r["finish_reason"],
        usage={"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n,
               "cached_prompt_tokens": r["cached_prompt_tokens"]},
        logprobs=r["logprobs"] if params.logprobs else None, timings=_native_timings(r))


def _native_timings(result):
    return {key: result[key] for key in ("time_to_first_token", "decode", "tokens_per_second")}


def _default_cache_dir():
    base = os.environ.get("NXRT_GENAI_CACHE") or os.path.join("~", ".cache", "nxrt-genai")
    return os.path.abspath(os.path.expanduser(base))


class Engine:
    """Engine.from_dir(folder) for an onnxruntime-genai style folder (genai_config.json,
    model.onnx, tokenizer.json), or Engine.from_gguf(path) which converts first.
    `threads`: intra-op threads (default: the session options'); `session_options`: an
    nxrt.SessionOptions for the decoder's session; `backend`: "cpp" or "python" (see the
    module's docstring; default "cpp" where built)."""

    def __init__(self, folder, threads=None, session_options=None, backend=None):
        import nxrt
        from nxrt import _nxrt

        config_path = os.path.join(folder, "genai_config.json")
        if not os.path.isfile(config_path):
            raise GenAIError(f"{folder}: no genai_config.json (not a model folder)")
        with open(config_path) as f:
            self.config = json.load(f)
        try:
            model = self.config["model"]
            decoder = model["decoder"]
            self._names = decoder["inputs"], decoder["outputs"]
            self.layers = int(decoder["num_hidden_layers"])
            self.kv_heads = int(decoder["num_key_value_heads"])
            self.head_size = int(decoder["head_size"])
            self.context_length = int(model["context_length"])
            eos = model["eos_token_id"]
            model_file = decoder["filename"]
        except (KeyError, TypeError, ValueError) as e:
            raise GenAIError(f"{config_path}: missing or bad entry {e}") from None
        self.eos_token_ids = set(eos if isinstance(eos, list) else [eos])
        self.search_defaults = self.config.get("search", {})
        self.folder = folder
        self.last = None  # the _Progress of the latest stream() call (tokens, timings)
        self.cache_in_place = bool(self.search_defaults.get("past_present_share_buffer"))
        native = getattr(_nxrt, "CppEngine", None)
        if backend not in (None, "cpp", "python"):
            raise GenAIError(f"backend must be 'cpp' or 'python', not {backend!r}")
        if backend == "cpp" and native is None:
            raise GenAIError("this build of nxrt has no C++ generation engine (it is built "
                             "where nlohmann-json is installed); use backend='python'")
        self.backend = backend or ("cpp" if native is not None else "python")
        so = session_options or nxrt.SessionOptions()
        if self.backend == "cpp":
            self._native = native.load(folder, int(threads or 0), so._native())
            # The engine's own tokenizer, shared (ids identical to Tokenizer's: tested).
            self.tokenizer = NativeTokenizer(impl=self._native.tokenizer())
            return
        if threads is not None:
            so.intra_op_num_threads = int(threads)
        self.session = nxrt.InferenceSession(os.path.join(folder, model_file), so)
        self.tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        inputs, outputs = self._names
        self._past = [(inputs["past_key_names"] % i, inputs["past_value_names"] % i)
                      for i in range(self.layers)]
        self._present = [outputs["present_key_names"] % i for i in range(self.layers)]
        self._present += [outputs["present_value_names"] % i for i in range(self.layers)]
        self._output_names = [outputs["logits"]] + self._present
        position_ids = inputs.get("position_ids", "position_ids")
        self._position_ids = (position_ids if any(i.name == position_ids
                                                  for i in self.session.get_inputs()) else None)
        # GroupQueryAttention folders: past and present are one preallocated buffer per
        # layer, bound as both input and output, so a step copies no cache.
        self._shared = None  # (capacity, IOBinding) once allocated

    @classmethod
    def from_dir(cls, folder, **kwargs):
        return cls(folder, **kwargs)

    @classmethod
    def from_gguf(cls, gguf_path, weights="int4", cache_dir=None, **kwargs):
        """Converts the GGUF file (once: the folder is cached by the file's size, time and
        name) and loads the result."""
        from .convert import convert_gguf

        st = os.stat(gguf_path)
        key = hashlib.sha256(f"{os.path.abspath(gguf_path)}:{st.st_size}:{st.st_mtime_ns}"
                             .encode()).hexdigest()[:16]
        folder = os.path.join(cache_dir or _default_cache_dir(), f"{key}-{weights}")
        if not os.path.isfile(os.path.join(folder, "genai_config.json")):
            convert_gguf(gguf_path, folder, weights=weights)
        return cls(folder, **kwargs)

    # -- text <-> ids -------------------------------------------------------------------
    def tokenize(self, text, add_special_tokens=False):
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens)

    def detokenize(self, ids, skip_special_tokens=False):
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    # -- generation ---------------------------------------------------------------------
    def forget_cached_tokens(self):
        """The C++ backend skips a prompt's leading tokens that the previous generation left
        in its cache (a chat's earlier turns); after this call the next prompt runs whole,
        as for time-to-first-token benchmarks. The Python backend always runs it whole."""
        if self.backend == "cpp":
            self._native.forget_cached_tokens()

    def _params(self, max_tokens, **kw):
        d = self.search_defaults
        sample = kw.get("temperature") not in (None, 0, 0.0) or (
            kw.get("temperature") is None and d.get("do_sample", False))
        temperature = kw.get("temperature")
        if temperature is None:
            temperature = float(d.get("temperature", 1.0)) if sample else 0.0
        return SamplingParams(
            max_tokens=max_tokens, temperature=temperature,
            top_k=kw.get("top_k") or (int(d.get("top_k", 0)) if sample else 0),
            top_p=kw.get("top_p") if kw.get("top_p") is not None else float(d.get("top_p", 1.0)),
            min_p=kw.get("min_p") or 0.0,
            repetition_penalty=kw.get("repetition_penalty") or float(
                d.get("repetition_penalty", 1.0)),
            frequency_penalty=kw.get("frequency_penalty") or 0.0,
            presence_penalty=kw.get("presence_penalty") or 0.0,
            seed=kw.get("seed"), stop=kw.get("stop"), stop_token_ids=kw.get("stop_token_ids"),
            logprobs=bool(kw.get("logprobs")), ignore_eos=bool(kw.get("ignore_eos")))

    def _run(self, ids, past, position):
        inputs, _ = self._names
        n = len(ids)
        feeds = {inputs["input_ids"]: np.asarray([ids], dtype=np.int64),
                 inputs["attention_mask"]: np.ones((1, position + n), dtype=np.int64)}
        if self._position_ids:
            feeds[self._position_ids] = np.arange(
                position, position + n, dtype=np.int64)[None]
        for i, (k, v) in enumerate(self._past):
            feeds[k], feeds[v] = past[i], past[self.layers + i]
        out = self.session.run(self._output_names, feeds)
        return out[0][0, -1], out[1:]

    def _shared_cache(self, capacity):
        """A run function over the shared cache, holding at least `capacity` positions
        (kept across calls and grown only when a longer one comes)."""
        if self._shared is None or self._shared[0] < capacity:
            inputs, outputs = self._names
            shape = (1, self.kv_heads, capacity, self.head_size)
            binding = self.session.io_binding()
            buffers = []
            for i, (past, present) in enumerate(zip(
                    [n for pair in self._past for n in pair],
                    [n for i in range(self.layers) for n in (self._present[i],
                                                             self._present[self.layers + i])])):
                buf = np.zeros(shape, dtype=np.float32)
                buffers.append(buf)
                binding.bind_cpu_input(past, buf)
                binding.bind_output(present, "cpu", 0, np.float32, shape, buf.ctypes.data)
            binding.bind_output(outputs["logits"])
            self._shared = (capacity, binding, buffers)
        _, binding, _ = self._shared
        inputs, _ = self._names

        def run(ids, position):
            n = len(ids)
            binding.bind_cpu_input(inputs["input_ids"], np.asarray([ids], dtype=np.int64))
            binding.bind_cpu_input(inputs["attention_mask"],
                                   np.ones((1, position + n), dtype=np.int64))
            if self._position_ids:
                binding.bind_cpu_input(self._position_ids, np.arange(
                    position, position + n, dtype=np.int64)[None])
            self.session.run_with_iobinding(binding)
            return binding.get_outputs()[-1].numpy()[0, -1].copy()
        return run

    def _check_ids(self, prompt):
        """A prompt given as token ids: integers within the vocabulary (the embedding's
        Gather would read a negative id from the end of the table)."""
        vocab = self.tokenizer.vocab_size
        try:
            ids = [int(t) for t in prompt]
        except TypeError:
            raise GenAIError(f"the prompt must be a string or a sequence of token ids, not "
                             f"{type(prompt).__name__}") from None
        bad = next((t for t in ids if not 0 <= t < vocab), None)
        if bad is not None:
            raise GenAIError(f"token id {bad} of the prompt is outside the vocabulary "
                             f"[0, {vocab})")
        return ids

    def _tokens(self, prompt, params, progress):
        """Yields (token id, logprob or None, finish_reason or None) per generated token;
        the last one carries the finish reason."""
        import time

        ids = self.tokenize(prompt) if isinstance(prompt, str) else self._check_ids(prompt)
        if not ids:
            raise GenAIError("the prompt is empty (no tokens)")
        if len(ids) >= self.context_length:
            raise GenAIError(f"the prompt has {len(ids)} tokens; the model's context is "
                             f"{self.context_length}")
        progress.prompt_tokens = len(ids)
        sampler = Sampler(params, self.eos_token_ids)
        if self.cache_in_place:
            run = self._shared_cache(min(self.context_length, len(ids) + params.max_tokens))
        else:
            empty = np.zeros((1, self.kv_heads, 0, self.head_size), dtype=np.float32)
            past = [empty] * (2 * self.layers)

            def run(ids, position):
                nonlocal past
                logits, past = self._run(ids, past, position)
                return logits
        t0 = time.perf_counter()
        logits = run(ids, 0)
        timings = progress.timings
        timings["time_to_first_token"] = time.perf_counter() - t0
        position = len(ids)
        generated = []
        t1 = time.perf_counter()
        while True:
            token, logprob = sampler.pick(logits, ids, generated)
            generated.append(token)
            reason = None
            if token in sampler.stop_ids:
                reason = "stop"
            elif len(generated) >= params.max_tokens or position + 1 >= self.context_length:
                reason = "length"
            # Timings before each yield: the consumer may not resume the generator (the
            # last token, a stop string).
            decode = time.perf_counter() - t1
            timings["decode"] = decode
            timings["tokens_per_second"] = (len(generated) - 1) / decode if decode > 0 else 0.0
            if reason:
                yield token, logprob, reason
                return
            yield token, logprob, None
            logits = run([token], position)
            position += 1

    def stream(self, prompt, *, max_tokens=256, **kw):
        """Yields text pieces as they are decoded (never a broken UTF-8 character); stop
        strings are not yielded. Afterwards `self.last` holds the call's tokens and
        timings."""
        self.last = _Progress()
        params = self._params(max_tokens, **kw)
        if self.backend == "cpp":
            yield from self._native_stream(prompt, params, self.last)
            return
        for piece, _ in self._stream(prompt, params, self.last):
            if piece:
                yield piece

    # -- the C++ backend ------------------------------------------------------------------
    def _native_prompt(self, prompt):
        """Text as it is, ids checked (CppEngine takes both)."""
        return prompt if isinstance(prompt, str) else self._check_ids(prompt)

    def _native_params(self, params):
        """The checked parameters as CppEngine takes them. Limits the C++ types cannot hold
        mean what they mean in Python: max_tokens past the context stops at the context,
        top_k past the vocabulary keeps every token, a stop id outside it never comes."""
        params.check()
        d = dataclasses.asdict(params)
        vocab = self.tokenizer.vocab_size
        d["max_tokens"] = min(int(d["max_tokens"]), self.context_length)
        d["top_k"] = min(int(d["top_k"]), vocab)
        if d["stop_token_ids"] is not None:
            d["stop_token_ids"] = [int(t) for t in d["stop_token_ids"] if 0 <= int(t) < vocab]
        return d

    def _native_stream(self, prompt, params, progress):
        generation = self._native.start(self._native_prompt(prompt), self._native_params(params))
        done = False
        while not done:
            piece, done = generation.step()
            if piece:
                yield piece
        result = generation.result()
        progress.prompt_tokens = result["prompt_tokens"]
        progress.tokens = result["token_ids"]
        progress.logprobs = result["logprobs"] if params.logprobs else []
        progress.timings = _native_timings(result)

    def _stream(self, prompt, params, progress):
        """Yields (text piece, finish reason or None); the last piece carries the reason."""
        decoder = self.tokenizer.stream_decoder()
        stops = [s for s in (params.stop or []) if s]
        held = ""  # decoded text not yet output: it may be the start of a stop string
        for token, logprob, reason in self._tokens(prompt, params, progress):
            progress.tokens.append(token)
            progress.logprobs.append(logprob)
            if reason == "stop":  # EOS or a stop token: its own text is not output
                yield held + decoder.flush(), "stop"
                return
            held += decoder.add(token)
            at = min((i for i in (held.find(s) for s in stops) if i >= 0), default=-1)
            if at >= 0:
                yield held[:at], "stop"
                return
            if reason:
                yield held + decoder.flush(), reason
                return
            cut = len(held) - _held_back(held, stops)
            if cut:
                yield held[:cut], None
                held = held[cut:]

    def generate(self, prompt, *, max_tokens=256, **kw):
        """Generates from `prompt` (text, or a list of token ids). Keyword arguments:
        temperature (0: greedy), top_k, top_p, min_p, repetition_penalty,
        frequency_penalty, presence_penalty, seed, stop (strings), stop_token_ids,
        logprobs, ignore_eos. Returns a GenerateResult."""
        params = self._params(max_tokens, **kw)
        if self.backend == "cpp":
            return _native_result(self._native.generate(self._native_prompt(prompt),
                                                         self._native_params(params)), params)
        progress = _Progress()
        parts, reason = [], "length"
        for piece, event in self._stream(prompt, params, progress):
            parts.append(piece)
            reason = event or reason
        n, p = len(progress.tokens), progress.prompt_tokens
        return GenerateResult(
            text="".join(parts), token_ids=progress.tokens, finish_reason=reason,
            usage={"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n,
                   "cached_prompt_tokens": 0},
            logprobs=progress.logprobs if params.logprobs else None, timings=progress.timings)

    def generate_batch(self, prompts, *, max_tokens=256, **kw):
        """generate() for each of `prompts` (texts or lists of token ids), decoded together
        in one batch where the C++ engine's cache is in place (GroupQueryAttention
        folders: each step reads the weights once for every prompt), one after another
        otherwise. Returns a GenerateResult per prompt, in order. With a seed, prompt i
        samples with seed + i."""
        params = self._params(max_tokens, **kw)
        prompts = list(prompts)
        if self.backend == "cpp" and self.cache_in_place:
            native = [self._native_prompt(p) for p in prompts]
            return [_native_result(r, params) for r in
                    self._native.generate_batch(native, self._native_params(params))]
        seed = kw.pop("seed", None)
        return [self.generate(p, max_tokens=max_tokens,
                              seed=None if seed is None else seed + i, **kw)
                for i, p in enumerate(prompts)]

    # -- chat -----------------------------------------------------------------------------
    _chat = None  # (ChatTemplate, its special-token variables), read on first use

    def _chat_template(self):
        """The folder's chat template (tokenizer_config.json "chat_template", as the
        converter writes it from the GGUF file) and the bos/eos/unk/pad token strings that
        Hugging Face passes to it."""
        if self._chat is None:
            from .chat_template import ChatTemplate, TemplateError

            path = os.path.join(self.folder, "tokenizer_config.json")
            config = {}
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    config = json.load(f)
            source = config.get("chat_template")
            if isinstance(source, list):  # named templates: [{"name", "template"}, ...]
                source = next((t.get("template") for t in source
                               if isinstance(t, dict) and t.get("name") == "default"), None)
            if not isinstance(source, str) or not source:
                raise GenAIError(f"{self.folder}: the model has no chat template (no "
                                 f"'chat_template' in tokenizer_config.json); pass a prompt "
                                 f"to generate() instead")
            tokens = {}
            for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
                value = config.get(key)
                if isinstance(value, dict):  # an AddedToken: {"content": ..., ...}
                    value = value.get("content")
                if isinstance(value, str):
                    tokens[key] = value
            try:
                self._chat = ChatTemplate(source), tokens
            except TemplateError as e:
                raise GenAIError(f"{path}: the chat template does not parse: {e}") from e
        return self._chat

    def apply_chat_template(self, messages, add_generation_prompt=True, **variables):
        """The prompt text for `messages` ([{"role": ..., "content": ...}, ...]) by the
        model's chat template, rendered as Hugging Face transformers renders it. Other
        keywords (tools, documents, ...) become template variables. Raises GenAIError when
        the model has no template, TemplateError (a ValueError) when the template refuses
        the messages (its raise_exception message included)."""
        template, tokens = self._chat_template()
        return template.render(messages=list(messages),
                               add_generation_prompt=add_generation_prompt,
                               **{**tokens, **variables})

    def chat(self, messages, *, max_tokens=256, add_generation_prompt=True, **kw):
        """generate() on the chat template's rendering of `messages`; the keyword arguments
        are generate()'s. Returns a GenerateResult with the assistant's reply."""
        prompt = self.apply_chat_template(messages, add_generation_prompt=add_generation_prompt)
        return self.generate(prompt, max_tokens=max_tokens, **kw)
