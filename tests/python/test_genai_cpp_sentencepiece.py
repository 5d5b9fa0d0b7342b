"""SentencePiece-style BPE tokenizers (Llama 2, Mistral, TinyLlama) in the C++ tokenizer
(`nxrt tokenize`), against Hugging Face `tokenizers` on the same tokenizer.json.

No such model ships in the zoo, so the tokenizer is trained here with `tokenizers` itself,
in the two forms real files take: the Llama 2 form (normalizer Prepend("▁") +
Replace(" ", "▁"), no pre-tokenizer, decoder Replace/ByteFallback/Fuse/Strip) and the newer
Metaspace form (pre-tokenizer and decoder Metaspace, prepend_scheme "first"). The vocabulary
gets the 256 "<0xAB>" byte tokens, and the alphabet is kept small so that most Chinese,
Japanese, Korean, Hindi and emoji characters are not in it: they take the byte fallback.
Text: test_genai_tokenizer.py's 100,000 multilingual characters with special tokens.

A GGUF file's SentencePiece vocabulary (tokenizer.ggml.model "llama": pieces and scores, no
merges) is written as such a tokenizer.json by nxrt.genai's converter; that file must give
the ids of the `sentencepiece` library itself, on a model it trains with Llama 2's
settings."""

import json
import os
import subprocess

import pytest

tokenizers = pytest.importorskip("tokenizers")

from test_genai_tokenizer import TEXT  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
NXRT = os.path.join(os.environ.get("NXRT_BUILD_DIR", os.path.join(ROOT, "build")), "tools",
                    "nxrt")
if not os.path.exists(NXRT):
    pytest.skip(f"{NXRT} is not built (scripts/build.sh builds it)", allow_module_level=True)

SPECIALS = ["<unk>", "<s>", "</s>"]
META = "\u2581"


def _train(form):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if form == "llama2":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend(META),
                                               normalizers.Replace(" ", META)])
        tok.decoder = decoders.Sequence([decoders.Replace(META, " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="first",
                                                     split=form == "metaspace_split")
        tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="first")
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=SPECIALS, limit_alphabet=150)
    tok.train_from_iterator([TEXT[i:i + 2000] for i in range(0, len(TEXT), 2000)], trainer)
    spec = json.loads(tok.to_str())
    # The byte tokens, as Llama's vocabulary has them (after the specials).
    vocab = spec["model"]["vocab"]
    shifted = {t: i + 256 if i >= len(SPECIALS) else i for t, i in vocab.items()}
    for b in range(256):
        shifted[f"<0x{b:02X}>"] = len(SPECIALS) + b
    spec["model"]["vocab"] = shifted
    for added in spec["added_tokens"]:
        added["id"] = shifted[added["content"]]
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [shifted["<s>"]], "tokens": ["<s>"]}}}
    return json.dumps(spec, ensure_ascii=False)


@pytest.fixture(scope="module", params=["llama2", "metaspace", "metaspace_split"])
def spm(request, tmp_path_factory):
    text = _train(request.param)
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    return path, tokenizers.Tokenizer.from_str(text)


def _nxrt(path, *args):
    proc = subprocess.run([NXRT, "tokenize", str(path), *map(str, args)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode("utf-8")


def _encode(path, text, tmp_path, special=False):
    f = tmp_path / "in.txt"
    f.write_bytes(text.encode("utf-8"))
    return [int(i) for i in _nxrt(path, "--file", f, *(["--add-special-tokens"] if special
                                                          else [])).split()]


def _decode(path, ids, tmp_path, skip=False):
    f = tmp_path / "ids.txt"
    f.write_text(" ".join(map(str, ids)))
    return _nxrt(path, "--decode", "--file", f, *(["--skip-special-tokens"] if skip else []))


def _assert_same_ids(ours, theirs, decode):
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                 min(len(ours), len(theirs)))
    assert ours == theirs, (f"first difference at token {first}: ours {ours[first:first + 8]}, "
                            f"theirs {theirs[first:first + 8]} "
                            f"({decode(theirs[max(0, first - 4):first + 4])!r})")


def test_large_multilingual_text_gets_the_reference_ids(spm, tmp_path):
    path, ref = spm
    theirs = ref.encode(TEXT, add_special_tokens=False).ids
    ours = _encode(path, TEXT, tmp_path)
    _assert_same_ids(ours, theirs, ref.decode)
    byte_ids = set(range(len(SPECIALS), len(SPECIALS) + 256))
    assert sum(i in byte_ids for i in theirs) > 1000, "the byte fallback is not exercised"
    assert _decode(path, ours, tmp_path) == ref.decode(theirs, skip_special_tokens=False)


@pytest.mark.parametrize("text", ["Hello world", " leading space", "two  spaces", "",
                                  "<s>after a special</s> and <unk> too", "emoji 🦙 and 日本語",
                                  "\n\ttabs\nand lines\n", "▁already▁marked"])
def test_short_texts_and_special_tokens(spm, tmp_path, text):
    path, ref = spm
    for special in (False, True):
        theirs = ref.encode(text, add_special_tokens=special).ids
        assert _encode(path, text, tmp_path, special) == theirs, (text, special)
        for skip in (False, True):
            assert _decode(path, theirs, tmp_path, skip) == ref.decode(
                theirs, skip_special_tokens=skip), (text, special, skip)


def test_python_tokenizer_uses_the_cpp_one_for_these_files(spm):
    # nxrt.genai (the Python engine) reads these files through the C++ tokenizer.
    from nxrt.genai.tokenizer import NativeTokenizer, Tokenizer
    path, ref = spm
    tok = Tokenizer.from_file(path)
    assert isinstance(tok, NativeTokenizer)
    text = TEXT[:5000]
    ids = tok.encode(text, add_special_tokens=True)
    assert ids == ref.encode(text, add_special_tokens=True).ids
    assert tok.decode(ids) == ref.decode(ids, skip_special_tokens=False)
    assert tok.vocab_size == ref.get_vocab_size()
    assert tok.token_to_id("<s>") == ref.token_to_id("<s>") and tok.id_to_token(3) == "<0x00>"
    # Streaming one id at a time gives decode's text, never a broken character.
    stream = tok.stream_decoder(skip_special_tokens=True)
    pieces = [stream.add(i) for i in ids] + [stream.flush()]
    assert "".join(pieces) == ref.decode(ids, skip_special_tokens=True)
    assert all("\ufffd" not in p for p in pieces)


# ---- a GGUF file's SentencePiece vocabulary ("llama": pieces, scores, token types) ------

@pytest.fixture(scope="module")
def sentencepiece_model(tmp_path_factory):
    """A SentencePiece BPE model trained on the text with Llama 2's settings (identity
    normalization, a dummy prefix, white space kept, byte fallback), and the metadata a
    GGUF file holds for it."""
    spm_lib = pytest.importorskip("sentencepiece")
    folder = tmp_path_factory.mktemp("spm")
    corpus = folder / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    spm_lib.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "m"), model_type="bpe", vocab_size=1500, hard_vocab_limit=False,
        byte_fallback=True, character_coverage=0.98, normalization_rule_name="identity",
        add_dummy_prefix=True, remove_extra_whitespaces=False, split_digits=True,
        allow_whitespace_only_pieces=True, max_sentence_length=1 << 16, minloglevel=2,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    sp = spm_lib.SentencePieceProcessor(model_file=str(folder / "m.model"))
    n = sp.get_piece_size()
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i)
             else 5 if sp.is_unused(i) else 1 for i in range(n)]
    metadata = {"tokenizer.ggml.model": "llama",
                "tokenizer.ggml.tokens": [sp.id_to_piece(i) for i in range(n)],
                "tokenizer.ggml.scores": [sp.get_score(i) for i in range(n)],
                "tokenizer.ggml.token_type": types,
                "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.bos_token_id": 1,
                "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.add_bos_token": True}
    return sp, metadata


def test_gguf_sentencepiece_vocabulary_tokenizes_as_sentencepiece(sentencepiece_model,
                                                                  tmp_path):
    from nxrt.genai.tokenizer import Tokenizer, write_tokenizer_files
    sp, metadata = sentencepiece_model
    json_path, _ = write_tokenizer_files(metadata, tmp_path / "folder")
    # The whole text but its blank lines (newlines are characters like any other here).
    text = "\n".join(line for line in TEXT.split("\n") if line.strip())
    theirs = sp.encode(text)
    ours = _encode(json_path, text, tmp_path)
    _assert_same_ids(ours, theirs, sp.decode)
    assert sum(sp.is_byte(i) for i in theirs) > 100, "the byte fallback is not exercised"
    assert _decode(json_path, ours, tmp_path) == sp.decode(theirs)
    # BOS first with add_special_tokens; the Python tokenizer reads the file through C++.
    tok = Tokenizer.from_file(json_path)
    assert tok.encode("Hello world", add_special_tokens=True) == [1] + sp.encode("Hello world")
    assert tok.bos_token_id == 1 and tok.eos_token_id == 2
