"""The C++ generation engine (src/genai/engine.cc, run through `nxrt generate`) on
SmolLM2-135M-Instruct converted from the zoo's GGUF file: the same greedy tokens as the
Python engine (which test_genai.py checks against onnxruntime and onnxruntime-genai),
the cache in place for GroupQueryAttention folders and grown for standard-ops ones,
stop strings, max tokens, the context limit, seeded sampling, streaming, and the errors
of bad folders, files and options."""

import json
import os
import re
import shutil
import subprocess

import pytest
import smollm2_gguf

from nxrt.genai.convert import convert_gguf

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
NXRT = os.path.join(os.environ.get("NXRT_BUILD_DIR", os.path.join(ROOT, "build")), "tools",
                    "nxrt")
QUESTION = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
STORY = ("<|im_start|>user\nWrite a short story about a robot who learns to paint."
         "<|im_end|>\n<|im_start|>assistant\n")


@pytest.fixture(scope="module")
def gguf_path():
    return smollm2_gguf.path()


@pytest.fixture(scope="module", autouse=True)
def built_tool():
    if not os.path.exists(NXRT):
        pytest.skip(f"{NXRT} is not built (scripts/build.sh builds it)")


@pytest.fixture(scope="module")
def folders(gguf_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("smollm2")
    return {w: convert_gguf(gguf_path, str(out / w), weights=w) for w in ("fp32", "int4")}


def generate(folder, *args, prompt=QUESTION, check=True):
    proc = subprocess.run([NXRT, "generate", str(folder), "--prompt", prompt, *map(str, args)],
                          capture_output=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"nxrt generate failed ({proc.returncode}): "
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


def text_and_ids(proc):
    """stdout with --print-ids: the text, a newline, then the ids on the last line."""
    out = proc.stdout.decode()
    text, ids = out[:-1].rsplit("\n", 1)
    return text[:-1] if text.endswith("\n") else text, [int(t) for t in ids.split()]


def stats(proc):
    return proc.stderr.decode()


@pytest.mark.parametrize("weights", ["fp32", "int4"])
def test_greedy_ids_equal_the_python_engine(folders, weights):
    from nxrt.genai.engine import Engine

    want = Engine.from_dir(folders[weights], backend="python").generate(STORY, max_tokens=48,
                                                                     ignore_eos=True)
    proc = generate(folders[weights], "--max-tokens", 48, "--ignore-eos", "--print-ids",
                    prompt=STORY)
    text, ids = text_and_ids(proc)
    assert ids == want.token_ids
    assert text == want.text
    assert "cache in place" in stats(proc)
    assert "finish: length" in stats(proc)


def test_answers_the_question(folders):
    proc = generate(folders["int4"], "--print-ids")
    text, ids = text_and_ids(proc)
    assert text == "The capital of France is Paris."
    assert ids[-1] == 2  # EOS ends it, its text not printed
    assert re.search(r"prompt 16 tokens \(0 cached\), time to first token [\d.]+ ms; 8 tokens, "
                     r"[\d.]+ tokens/s; finish: stop", stats(proc)), stats(proc)


def test_a_grown_cache_decodes_the_same(gguf_path, folders, tmp_path):
    ops = convert_gguf(gguf_path, str(tmp_path / "ops"), weights="fp32", attention="ops")
    args = ("--max-tokens", 24, "--ignore-eos", "--print-ids")
    proc = generate(ops, *args, prompt=STORY)
    assert "cache grown per step" in stats(proc)
    assert text_and_ids(proc) == text_and_ids(generate(folders["fp32"], *args, prompt=STORY))


def test_stream_prints_the_same_text(folders):
    args = ("--max-tokens", 32, "--ignore-eos")
    streamed = generate(folders["int4"], *args, "--stream", prompt=STORY).stdout
    assert streamed == generate(folders["int4"], *args, prompt=STORY).stdout


def test_stop_string_ends_the_text_before_it(folders):
    proc = generate(folders["int4"], "--stop", " Paris", "--stop", "never appears")
    assert proc.stdout.decode() == "The capital of France is\n"
    assert "finish: stop" in stats(proc)


def test_max_tokens(folders):
    _, ids = text_and_ids(generate(folders["int4"], "--max-tokens", 5, "--ignore-eos",
                                   "--print-ids", prompt=STORY))
    assert len(ids) == 5


def test_seeded_sampling_is_reproducible(folders):
    args = ("--temperature", 1.2, "--top-p", 0.95, "--max-tokens", 32, "--ignore-eos",
            "--print-ids")
    first = text_and_ids(generate(folders["int4"], *args, "--seed", 3, prompt=STORY))
    assert first == text_and_ids(generate(folders["int4"], *args, "--seed", 3, prompt=STORY))
    other = text_and_ids(generate(folders["int4"], *args, "--seed", 4, prompt=STORY))
    greedy = text_and_ids(generate(folders["int4"], "--max-tokens", 32, "--ignore-eos",
                                   "--print-ids", prompt=STORY))
    assert first[1] != other[1]
    assert first[1] != greedy[1]


def _folder_with(folders, tmp_path, edit):
    """A copy of the int4 folder with genai_config.json edited. The files are hard links
    (nxrt refuses external data that a symlink resolves outside the model's folder)."""
    src = folders["int4"]
    dst = tmp_path / "edited"
    dst.mkdir()
    for name in os.listdir(src):
        if name != "genai_config.json":
            try:
                os.link(os.path.join(src, name), dst / name)
            except OSError:  # another file system
                shutil.copy(os.path.join(src, name), dst / name)
    cfg = json.load(open(os.path.join(src, "genai_config.json")))
    edit(cfg)
    (dst / "genai_config.json").write_text(json.dumps(cfg))
    return dst


def test_the_context_length_ends_generation(folders, tmp_path):
    small = _folder_with(folders, tmp_path,
                         lambda c: c["model"].__setitem__("context_length", 24))
    proc = generate(small, "--max-tokens", 100, "--ignore-eos", "--print-ids")
    _, ids = text_and_ids(proc)
    assert len(ids) == 24 - 16  # the 16-token prompt fills the rest of the context
    assert "finish: length" in stats(proc)


def test_a_prompt_beyond_the_context_is_an_error(folders, tmp_path):
    small = _folder_with(folders, tmp_path, lambda c: c["model"].__setitem__("context_length", 8))
    proc = generate(small, check=False)
    assert proc.returncode == 1
    assert "the prompt has 16 tokens; the model's context is 8" in stats(proc)


def test_a_bad_config_names_the_entry(folders, tmp_path):
    bad = _folder_with(folders, tmp_path,
                       lambda c: c["model"]["decoder"].__setitem__("num_hidden_layers", "30"))
    proc = generate(bad, check=False)
    assert proc.returncode == 1
    assert "model.decoder.num_hidden_layers" in stats(proc)


def test_a_config_naming_a_file_outside_the_folder_is_refused(folders, tmp_path):
    bad = _folder_with(folders, tmp_path,
                       lambda c: c["model"]["decoder"].__setitem__("filename", "../model.onnx"))
    proc = generate(bad, check=False)
    assert "must name a file in the folder" in stats(proc)


def test_a_gguf_file_gets_the_conversion_command(gguf_path):
    proc = generate(gguf_path, check=False)
    assert proc.returncode == 1
    assert "python -m nxrt.genai convert" in stats(proc)


def test_a_missing_folder_and_bad_options(tmp_path, folders):
    proc = generate(tmp_path / "absent", check=False)
    assert proc.returncode == 2 and "does not exist" in stats(proc)
    proc = generate(folders["int4"], "--temperature", -1, check=False)
    assert proc.returncode == 1 and "temperature must be" in stats(proc)
    proc = generate(folders["int4"], "--top-p", 0, check=False)
    assert "top_p must be in (0, 1]" in stats(proc)
    proc = generate(folders["int4"], "--top-k", 3, prompt="", check=False)
    assert "the prompt is empty" in stats(proc)


def test_chat_turns_match_the_python_engine(folders):
    """`nxrt chat`: each stdin line a user turn through SmolLM2's own template, the
    conversation carried; the replies are the Python engine's chat() replies."""
    from nxrt.genai.engine import Engine

    questions = ["What is the capital of France?", "And of Germany?"]
    proc = subprocess.run([NXRT, "chat", folders["int4"], "--max-tokens", "40"],
                          input="\n".join(questions).encode() + b"\n", capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    engine = Engine.from_dir(folders["int4"], backend="python")
    messages, want = [], []
    for q in questions:
        messages.append({"role": "user", "content": q})
        reply = engine.chat(messages, max_tokens=40, temperature=0).text
        messages.append({"role": "assistant", "content": reply})
        want.append(reply)
    assert proc.stdout.decode().splitlines() == want
    assert stats(proc).count("finish: stop") == 2


def test_chat_without_a_template_says_so(folders, tmp_path):
    src = folders["int4"]
    dst = tmp_path / "no_template"
    dst.mkdir()
    for name in os.listdir(src):
        if name != "tokenizer_config.json":
            os.link(os.path.join(src, name), dst / name)
    proc = subprocess.run([NXRT, "chat", str(dst)], input=b"hi\n", capture_output=True,
                          timeout=120)
    assert proc.returncode == 1
    assert "has no chat template" in proc.stderr.decode()
