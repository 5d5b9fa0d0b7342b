"""nxrt.genai.tokenizer on SmolLM2-135M-Instruct's vocabulary (GGUF metadata), compared with
Hugging Face `tokenizers` reading the tokenizer.json that write_tokenizer_files writes.

The GGUF file is fetched into the zoo cache on first use (smollm2_gguf.py); when it cannot
be, the whole file is skipped."""

import json
import os

import pytest
import smollm2_gguf

from nxrt.genai.gguf import GGUFFile
from nxrt.genai.tokenizer import PRE_TOKENIZERS, Tokenizer, write_tokenizer_files

GGUF_PATH = smollm2_gguf.path(module_level=True)

CHAT_PROMPT = ("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
               "<|im_start|>assistant\n")

PARAGRAPHS = [
    # English prose: punctuation, contractions (both cases), quotes, numbers.
    "It's 12345 miles, isn't it? They're sure we'll win; you've seen I'm right, and "
    "she'd agree. IT'S LOUD, WE'RE HERE -- \"quoted\" text, 'single quotes', rock 'n' roll.\n"
    "Pi is 3.14 (or 3.14159...), e = 2.718; 1,000,000 people paid $99.99 on 2024-01-31 "
    "at 12:30pm. Version v1.2.3-rc4, 0x1F, 1e-9, 50% off!!! ...and so on???\n",
    # Code: indentation with spaces and tabs, runs of spaces, blank lines, CRLF.
    "def fib(n):\n    if n < 2:\n        return n  # base case\n\n\n"
    "    return fib(n - 1) + fib(n - 2)\n"
    "\tfor (int i = 0; i < 10; ++i) {\n\t\tprintf(\"%d\\n\", i);\n\t}\n"
    "x    =   [1,2,  3]     \n   \n  trailing spaces   \r\nwindows line\r\n\n",
    # German, French, Spanish accents; precomposed and combining forms.
    "Größe, Straße, Äpfel und Öl; über Fußgänger. Où est la bibliothèque ? "
    "C'est l'été, déjà « très » naïve. ¿Qué tal? ¡Mañana! Cafe\u0301 vs Café.\n",
    # Russian, Greek.
    "Привет, мир! Как дела? Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
    "Γειά σου Κόσμε· η γρήγορη καφέ αλεπού πηδά πάνω από τον σκύλο; Ωραία!\n",
    # Chinese, Japanese (no spaces between words), Korean.
    "你好，世界！我们今天去北京大学学习人工智能和机器学习。这是一个测试句子。\n"
    "日本語のテキスト：東京は日本の首都です。カタカナとひらがな、そして漢字。\n"
    "안녕하세요, 세계! 한국어 문장입니다.\n",
    # Arabic with Arabic-Indic digits, Hindi with vowel signs and viramas (not \p{L}).
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥ و 678.\n"
    "नमस्ते दुनिया! हिन्दी में यह एक परीक्षण वाक्य है। संख्या २०२४।\n",
    # Emoji, ZWJ sequences, flags, skin tones, symbols, odd spaces and numerals.
    "Emoji: 😀😃 👍🏽 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈 🇫🇷🇩🇪 ❤️ ✨ → ← ∑ ∞ ≠ ½ ² Ⅻ.\n"
    "no\u00a0break\u2009thin\u3000ideographic \u200bzero-width\u2028sep\u0085nel end.\n",
    # Special tokens embedded in running text.
    "Before<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi there!"
    "<|im_end|><|endoftext|> after <|im_end|>tail\n",
]


def build_text(target_chars=100_000):
    """The paragraphs repeated with changing numbers and spacing up to target_chars, plus a
    long CJK run without punctuation (one pre-token of thousands of bytes, the BPE's worst
    case)."""
    parts, k = [], 0
    while sum(map(len, parts)) < target_chars:
        p = PARAGRAPHS[k % len(PARAGRAPHS)]
        p = p.replace("12345", str(12345 + 7919 * k)).replace("x    =", "x" + " " * (k % 7) + "=")
        parts.append(p)
        parts.append(f"Section {k}:{' ' * (k % 4)}{k * 31 % 1000}.{k % 10}\n")
        k += 1
    parts.append("我们今天去北京大学学习人工智能和机器学习这是一个测试句子" * 100 + "\n")
    return "".join(parts)


TEXT = build_text()


@pytest.fixture(scope="module")
def metadata():
    g = GGUFFile(GGUF_PATH)
    meta = g.metadata
    g.close()
    return meta


@pytest.fixture(scope="module")
def tok(metadata):
    return Tokenizer.from_gguf_metadata(metadata)


@pytest.fixture(scope="module")
def written(metadata, tmp_path_factory):
    directory = tmp_path_factory.mktemp("smollm2_tokenizer")
    write_tokenizer_files(metadata, str(directory))
    return directory


@pytest.fixture(scope="module")
def reference(written):
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(written / "tokenizer.json"))


def reference_ids(reference, text, add_special_tokens=False):
    return reference.encode(text, add_special_tokens=add_special_tokens).ids


def test_matches_reference_on_full_text(tok, reference):
    assert len(TEXT) >= 100_000
    assert tok.encode(TEXT) == reference_ids(reference, TEXT)


def test_matches_reference_per_line(tok, reference):
    lines = dict.fromkeys(TEXT.splitlines(keepends=True))  # unique, in order
    mismatches = [(line, tok.encode(line), reference_ids(reference, line))
                  for line in lines if tok.encode(line) != reference_ids(reference, line)]
    assert not mismatches, "first mismatching line: %r\n  nxrt %s\n  reference %s" \
        % mismatches[0]


def test_chat_prompt_matches_reference(tok, reference):
    ids = tok.encode(CHAT_PROMPT)
    assert ids == reference_ids(reference, CHAT_PROMPT)
    assert ids[0] == tok.token_to_id("<|im_start|>") == 1
    assert tok.decode(ids) == CHAT_PROMPT
    assert tok.decode(ids, skip_special_tokens=True) == \
        reference.decode(ids, skip_special_tokens=True)


def test_decode_round_trip(tok):
    assert tok.decode(tok.encode(TEXT)) == TEXT


def test_stream_decoder(tok):
    stream = tok.stream_decoder()
    pieces = [stream.add(i) for i in tok.encode(TEXT)]
    pieces.append(stream.flush())
    assert "".join(pieces) == TEXT
    assert not [p for p in pieces if "\ufffd" in p]
    assert "" in pieces  # some character's bytes were split across tokens and held back


def test_tokenizer_json_round_trip(tok, written):
    again = Tokenizer.from_file(str(written / "tokenizer.json"))
    assert again.encode(TEXT) == tok.encode(TEXT)
    assert again.encode(CHAT_PROMPT) == tok.encode(CHAT_PROMPT)
    assert (again.vocab_size, again.bos_token_id, again.eos_token_id) == \
        (tok.vocab_size, tok.bos_token_id, tok.eos_token_id) == (49152, 1, 2)
    assert again.decode(tok.encode(TEXT)) == TEXT


def test_written_files(metadata, written):
    with open(written / "tokenizer.json", encoding="utf-8") as f:
        spec = json.load(f)
    with open(written / "tokenizer_config.json", encoding="utf-8") as f:
        config = json.load(f)
    assert spec["pre_tokenizer"] == {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": True}]}
    assert spec["model"]["type"] == "BPE" and len(spec["model"]["merges"]) == 48900
    assert [t["content"] for t in spec["added_tokens"][:3]] == \
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert all(t["special"] for t in spec["added_tokens"])
    assert (config["bos_token"], config["eos_token"], config["unk_token"],
            config["pad_token"]) == ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_end|>")
    assert config["chat_template"] == metadata["tokenizer.chat_template"]
    assert config["add_bos_token"] is False and config["model_max_length"] == 8192


@pytest.mark.parametrize("pre", ["gpt2", "llama-bpe", "qwen2"])
def test_other_pre_tokenizers_match_reference(metadata, tmp_path, pre):
    """SmolLM2's vocabulary under the other pre-tokenizers (Llama 3's with ignore_merges),
    each written as tokenizer.json and compared with the reference."""
    tokenizers = pytest.importorskip("tokenizers")
    meta = dict(metadata, **{"tokenizer.ggml.pre": pre})
    write_tokenizer_files(meta, str(tmp_path))
    reference = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    tok = Tokenizer.from_gguf_metadata(meta)
    for line in dict.fromkeys(TEXT.splitlines(keepends=True)):
        assert tok.encode(line) == reference_ids(reference, line), f"line {line!r}"
    assert tok.encode(TEXT) == reference_ids(reference, TEXT)
    assert Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(TEXT) == \
        tok.encode(TEXT)


def test_add_bos(metadata, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    meta = dict(metadata, **{"tokenizer.ggml.add_bos_token": True})
    tok = Tokenizer.from_gguf_metadata(meta)
    assert tok.encode("Hello", add_special_tokens=True) == [1] + tok.encode("Hello")
    write_tokenizer_files(meta, str(tmp_path))
    reference = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert reference_ids(reference, "Hello", True) == tok.encode("Hello", True)
    again = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert again.encode("Hello", add_special_tokens=True) == tok.encode("Hello", True)


def test_vocabulary_lookups(tok):
    assert tok.id_to_token(tok.token_to_id("Ġthe")) == "Ġthe"
    assert tok.token_to_id("no such token") is None
    assert tok.id_to_token(tok.vocab_size) is None
    assert tok.encode("") == []
    with pytest.raises(ValueError, match="out of range"):
        tok.decode([tok.vocab_size])


def test_unknown_pre_tokenizer(metadata):
    meta = dict(metadata, **{"tokenizer.ggml.pre": "deepseek-coder"})
    with pytest.raises(ValueError, match="pre-tokenizer 'deepseek-coder'"):
        Tokenizer.from_gguf_metadata(meta)
    with pytest.raises(ValueError, match="deepseek-coder"):
        write_tokenizer_files(meta, "/nonexistent/should/not/be/created")


def test_unsupported_tokenizer_json(written, tmp_path):
    with open(written / "tokenizer.json", encoding="utf-8") as f:
        spec = json.load(f)
    cases = [
        (dict(spec, model={"type": "Unigram", "vocab": [["a", 0.0]]}), "Unigram"),
        (dict(spec, pre_tokenizer={"type": "Metaspace", "replacement": "▁"}), "Metaspace"),
        (dict(spec, normalizer={"type": "Lowercase"}), "Lowercase"),
    ]
    for i, (bad, name) in enumerate(cases):
        path = tmp_path / f"tokenizer_{i}.json"
        path.write_text(json.dumps(bad), encoding="utf-8")
        with pytest.raises(ValueError, match=name):
            Tokenizer.from_file(str(path))


def test_pre_tokenizer_names():
    assert {"smollm", "gpt2", "default", "llama-bpe", "qwen2"} <= set(PRE_TOKENIZERS)
