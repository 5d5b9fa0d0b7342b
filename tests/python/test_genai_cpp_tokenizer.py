"""The C++ tokenizer (src/genai, run through `nxrt tokenize`) against the Python one
(nxrt.genai.tokenizer) and Hugging Face `tokenizers`, on SmolLM2-135M-Instruct's vocabulary
written as tokenizer.json (as tests/python/test_genai_tokenizer.py does) under each
pre-tokenizer family, and on variants only the C++ port reads (add_prefix_space, merges as
strings, other Sequences); plus the errors of bad files and arguments.

The text is test_genai_tokenizer.py's: 100,000 characters of English, German, French,
Spanish, Russian, Greek, Chinese, Japanese, Korean, Arabic, Hindi, emoji, code, numbers,
white space runs and special tokens. Skipped when the GGUF file cannot be fetched or the tool is not built."""

import json
import os
import re
import subprocess

import pytest
import smollm2_gguf

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("NXRT_BUILD_DIR", os.path.join(ROOT, "build"))
NXRT = os.path.join(BUILD, "tools", "nxrt")
GGUF_PATH = smollm2_gguf.path(module_level=True)
if not os.path.exists(NXRT):
    pytest.skip(f"{NXRT} is not built (scripts/build.sh builds it)", allow_module_level=True)

from nxrt.genai.gguf import GGUFFile  # noqa: E402
from nxrt.genai.tokenizer import Tokenizer, write_tokenizer_files  # noqa: E402
from test_genai_tokenizer import CHAT_PROMPT, TEXT  # noqa: E402

tokenizers = pytest.importorskip("tokenizers")


def nxrt_tokenize(tokenizer_json, *args, check=True):
    proc = subprocess.run([NXRT, "tokenize", str(tokenizer_json), *map(str, args)],
                          capture_output=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"nxrt tokenize {args} failed ({proc.returncode}): "
                             f"{proc.stderr.decode(errors='replace')}")
    return proc


def cpp_encode(tokenizer_json, text, tmp_path, add_special_tokens=False):
    path = tmp_path / "input.txt"
    path.write_bytes(text.encode("utf-8"))  # bytes: no newline translation
    args = ["--file", path] + (["--add-special-tokens"] if add_special_tokens else [])
    out = nxrt_tokenize(tokenizer_json, *args).stdout.decode()
    assert out.endswith("\n") and out.count("\n") == 1, "the ids are one line"
    return [int(i) for i in out.split()]


def cpp_decode(tokenizer_json, ids, tmp_path, skip_special_tokens=False):
    path = tmp_path / "ids.txt"
    path.write_text(" ".join(map(str, ids)))
    args = ["--decode", "--file", path] + (["--skip-special-tokens"] if skip_special_tokens
                                           else [])
    return nxrt_tokenize(tokenizer_json, *args).stdout.decode("utf-8")


def first_difference(text, ours, theirs, tokenizer):
    """Where two id lists part, as the text around it (for a readable failure)."""
    k = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
             min(len(ours), len(theirs)))
    before = tokenizer.decode(theirs[max(0, k - 5):k])
    return (f"ids differ at {k} (of {len(ours)} / {len(theirs)}), after {before!r}: "
            f"C++ {ours[k:k + 8]}, reference {theirs[k:k + 8]}")


def assert_same_ids(ours, theirs, text, tokenizer):
    assert ours == theirs, first_difference(text, ours, theirs, tokenizer)


@pytest.fixture(scope="module")
def metadata():
    g = GGUFFile(GGUF_PATH)
    meta = g.metadata
    g.close()
    return meta


def write_family(metadata, directory, pre=None, **overrides):
    meta = dict(metadata, **overrides)
    if pre is not None:
        meta["tokenizer.ggml.pre"] = pre
    write_tokenizer_files(meta, str(directory))
    return directory / "tokenizer.json"


@pytest.fixture(scope="module")
def smollm2(metadata, tmp_path_factory):
    return write_family(metadata, tmp_path_factory.mktemp("smollm2"))


def check_family(tokenizer_json, tmp_path, python=True, text=TEXT):
    """C++ ids equal the reference's (and the Python port's) on the text, and decode back."""
    reference = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    expected = reference.encode(text, add_special_tokens=False).ids
    ours = cpp_encode(tokenizer_json, text, tmp_path)
    assert_same_ids(ours, expected, text, reference)
    if python:
        assert Tokenizer.from_file(str(tokenizer_json)).encode(text) == expected
    assert cpp_decode(tokenizer_json, ours, tmp_path) == reference.decode(
        ours, skip_special_tokens=False)
    return ours


# ---- SmolLM2 (Digits + ByteLevel) ----------------------------------------------------

def test_smollm2_matches_python_and_reference(smollm2, tmp_path):
    assert len(TEXT) >= 100_000
    ids = check_family(smollm2, tmp_path)
    assert cpp_decode(smollm2, ids, tmp_path) == TEXT  # byte-exact round trip


def test_smollm2_chat_prompt_and_special_tokens(smollm2, tmp_path):
    reference = tokenizers.Tokenizer.from_file(str(smollm2))
    ids = cpp_encode(smollm2, CHAT_PROMPT, tmp_path)
    assert ids == reference.encode(CHAT_PROMPT, add_special_tokens=False).ids
    assert ids[0] == 1  # <|im_start|>, matched before pre-tokenization
    assert cpp_decode(smollm2, ids, tmp_path) == CHAT_PROMPT
    assert cpp_decode(smollm2, ids, tmp_path, skip_special_tokens=True) == \
        reference.decode(ids, skip_special_tokens=True)


def test_short_texts(smollm2, tmp_path):
    reference = tokenizers.Tokenizer.from_file(str(smollm2))
    for text in ["", " ", "\n\n", "a", "<|im_end|>", "<|im_end|><|im_end|>", "<|im_end",
                 "   leading", "trailing   ", "😀", "123", "I'M", "don't", "\r\n\t x"]:
        assert cpp_encode(smollm2, text, tmp_path) == \
            reference.encode(text, add_special_tokens=False).ids, repr(text)
    assert nxrt_tokenize(smollm2, "--text", "").stdout == b"\n"
    assert nxrt_tokenize(smollm2, "--text", "Hello world").stdout.decode().split() == \
        [str(i) for i in reference.encode("Hello world").ids]
    assert nxrt_tokenize(smollm2, "--decode", "--text", "19556, 905").stdout == b"Hello world"


# ---- other byte-level BPE families ---------------------------------------------------

@pytest.mark.parametrize("pre", ["gpt2", "llama-bpe", "qwen2"])
def test_other_families(metadata, tmp_path, pre):
    """GPT-2 (ByteLevel's regex), Llama 3 (Split + ByteLevel, ignore_merges) and Qwen2
    (single digits) on SmolLM2's vocabulary."""
    check_family(write_family(metadata, tmp_path / "tok", pre), tmp_path)


def edit_json(path, directory, edit):
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    edit(spec)
    os.makedirs(directory, exist_ok=True)
    out = directory / "tokenizer.json"
    out.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return out


def test_qwen2_with_nfc(metadata, tmp_path):
    """Qwen2's tokenizer.json normalizes to NFC (the text has decomposed accents)."""
    source = write_family(metadata, tmp_path / "qwen2", "qwen2")
    tok = edit_json(source, tmp_path / "nfc", lambda s: s.update(normalizer={"type": "NFC"}))
    assert "e\u0301" in TEXT
    check_family(tok, tmp_path)


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
              "use_regex": True}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


def split(pattern):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
            "invert": False}


def llama3_pattern(metadata, tmp_path):
    with open(write_family(metadata, tmp_path / "llama", "llama-bpe"), encoding="utf-8") as f:
        return json.load(f)["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]


GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
                r"|\s+")


@pytest.mark.parametrize("variant", [
    "add_prefix_space", "digits_add_prefix_space", "digit_runs", "gpt2_split",
    "llama3_split_then_regex", "string_merges"])
def test_variants_only_cpp_reads(metadata, smollm2, tmp_path, variant):
    """tokenizer.json forms the Python port refuses or never writes, against the reference."""
    edits = {
        "add_prefix_space": lambda s: s.update(pre_tokenizer=dict(BYTE_LEVEL,
                                                                  add_prefix_space=True)),
        "digits_add_prefix_space": lambda s: s.update(pre_tokenizer=sequence(
            {"type": "Digits", "individual_digits": True},
            dict(BYTE_LEVEL, add_prefix_space=True))),
        "digit_runs": lambda s: s.update(pre_tokenizer=sequence(
            {"type": "Digits", "individual_digits": False}, BYTE_LEVEL)),
        "gpt2_split": lambda s: s.update(pre_tokenizer=sequence(
            split(GPT2_PATTERN), dict(BYTE_LEVEL, use_regex=False))),
        "llama3_split_then_regex": lambda s: s.update(pre_tokenizer=sequence(
            split(llama3_pattern(metadata, tmp_path)), BYTE_LEVEL)),
        "string_merges": lambda s: s["model"].update(
            merges=[" ".join(m) for m in s["model"]["merges"]]),
    }
    tok = edit_json(smollm2, tmp_path / variant, edits[variant])
    check_family(tok, tmp_path, python=variant == "string_merges")


# ---- special tokens around the ids ---------------------------------------------------

def test_bos_from_template(metadata, tmp_path):
    tok = write_family(metadata, tmp_path / "bos", **{"tokenizer.ggml.add_bos_token": True})
    reference = tokenizers.Tokenizer.from_file(str(tok))
    ids = cpp_encode(tok, "Hello", tmp_path, add_special_tokens=True)
    assert ids == reference.encode("Hello", add_special_tokens=True).ids
    assert ids[0] == 1 and ids[1:] == cpp_encode(tok, "Hello", tmp_path)


def test_bos_from_tokenizer_config(smollm2, tmp_path):
    """Without a template, tokenizer_config.json's add_bos_token puts bos_token first (the
    config beside tokenizer.json is read, as by the Python port)."""
    directory = tmp_path / "config"
    tok = edit_json(smollm2, directory, lambda s: s.update(post_processor=None))
    with open(smollm2.parent / "tokenizer_config.json", encoding="utf-8") as f:
        config = json.load(f)
    config["add_bos_token"] = True
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    ids = cpp_encode(tok, "Hello", tmp_path, add_special_tokens=True)
    assert ids == Tokenizer.from_file(str(tok)).encode("Hello", add_special_tokens=True)
    assert ids[0] == 1


# ---- errors --------------------------------------------------------------------------

def fails(tokenizer_json, *args, match, code=1):
    proc = nxrt_tokenize(tokenizer_json, *args, check=False)
    stderr = proc.stderr.decode(errors="replace")
    assert proc.returncode == code, (proc.returncode, stderr)
    assert re.search(match, stderr), stderr
    assert stderr.startswith("nxrt: error: ") or code != 1
    return stderr


def test_bad_tokenizer_files(smollm2, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"type": "BPE", "vocab": {"a": 0}', encoding="utf-8")
    fails(bad, "--text", "a", match=r"bad\.json': not valid JSON: .*line 1")
    bad.write_text("", encoding="utf-8")
    fails(bad, "--text", "a", match=r"not valid JSON")
    cases = {
        "unigram": (lambda s: s.update(model={"type": "Unigram", "vocab": [["a", 0.0]]}),
                    r"unsupported model type 'Unigram'"),
        "wordpiece": (lambda s: s.update(model={"type": "WordPiece", "vocab": {"a": 0}}),
                      r"unsupported model type 'WordPiece'"),
        "no_vocab": (lambda s: s["model"].pop("vocab"), r"'model\.vocab' is missing"),
        "vocab_type": (lambda s: s["model"].update(vocab=["a"]), r"'model\.vocab' must be"),
        "bad_id": (lambda s: s["model"]["vocab"].update(a="x"), r"model\.vocab\['a'\]"),
        "bad_merge": (lambda s: s["model"]["merges"].insert(3, 7), r"'model\.merges\[3\]'"),
        "metaspace": (lambda s: s.update(pre_tokenizer={"type": "Metaspace"}),
                      r"unsupported pre-tokenizer Metaspace"),
        "split": (lambda s: s.update(pre_tokenizer=sequence(split(r"\w+"), BYTE_LEVEL)),
                  r"unsupported pre-tokenizer Split with pattern"),
        "lowercase": (lambda s: s.update(normalizer={"type": "Lowercase"}),
                      r"unsupported normalizer"),
        "lstrip": (lambda s: s["added_tokens"][1].update(lstrip=True),
                   r"added token '<\|im_start\|>' \('added_tokens\[1\]'\): lstrip"),
        "added_type": (lambda s: s["added_tokens"][0].update(content=5),
                       r"'added_tokens\[0\]\.content' must be a string"),
        "no_model": (lambda s: s.pop("model"), r"'model' is missing"),
        "decoder": (lambda s: s.update(decoder={"type": "Metaspace"}),
                    r"unsupported decoder 'Metaspace'"),
    }
    for name, (edit, match) in cases.items():
        tok = edit_json(smollm2, tmp_path / name, edit)
        stderr = fails(tok, "--text", "a", match=match)
        assert str(tok) in stderr, stderr  # the file is named


def test_bad_arguments(smollm2, tmp_path):
    fails(tmp_path / "missing.json", "--text", "a", match=r"'.*missing\.json' does not exist",
          code=2)
    fails(smollm2, "--file", tmp_path / "missing.txt", match=r"input file .* does not exist",
          code=2)
    fails(smollm2, match=r"exactly one of --text and --file")
    fails(smollm2, "--decode", "--text", "1 two 3", match=r"'two' is not a token id")
    fails(smollm2, "--decode", "--text", "1 49152", match=r"token id 49152 is out of range")
    proc = nxrt_tokenize(smollm2, "--text", "a", "--file", "x", check=False)
    assert proc.returncode != 0 and b"excludes" in proc.stderr
