"""Byte-level BPE tokenizer (GPT-2 family) for local LLMs, from GGUF metadata or from a
Hugging Face tokenizer.json.

Encoding: added tokens (GGUF control and user-defined types) are found first, leftmost and
longest first, and become their ids; the text between them is split into pieces by the
model's pre-tokenizer, each piece's UTF-8 bytes are written with GPT-2's byte-to-character
table, and the pieces are merged pair by pair in merge-rank order. The pre-tokenizers are
the Hugging Face / llama.cpp regular expressions, implemented as hand-written scanners over
Unicode categories (\\p{L} = L*, \\p{N} = N*, \\s = the White_Space property) that follow
the backtracking regex's first-alternative-wins rules.

``write_tokenizer_files`` writes the same tokenizer as tokenizer.json and
tokenizer_config.json, the files Hugging Face ``tokenizers`` and onnxruntime-genai read.
"""

import codecs
import heapq
import json
import os
import re  # only to find added tokens (literal strings); the pre-tokenizers are scanners
import unicodedata
from functools import partial

__all__ = ["Tokenizer", "StreamDecoder", "write_tokenizer_files", "PRE_TOKENIZERS"]

# GGUF token types (llama.cpp's llama_token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = \
    1, 2, 3, 4, 5, 6

GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
                r"|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                  r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")

_WORD_CACHE_LIMIT = 1 << 17  # pieces remembered per tokenizer before the cache starts over


# ---------------------------------------------------------------------------------------
# GPT-2's byte-level alphabet: every byte is a printable character, so that BPE works on
# strings without spaces or control characters. Printable Latin-1 bytes stand for
# themselves; the other 68 take the characters from U+0100 on, in byte order.

def _bytes_to_unicode():
    kept = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    table, extra = {}, 0
    for b in range(256):
        if b in kept:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_TO_CHAR = _bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}
# For str.translate on text decoded as Latin-1 (one character per byte).
_LATIN1_TO_BYTE_CHAR = {b: c for b, c in _BYTE_TO_CHAR.items()}


def _byte_level(piece):
    """The piece's UTF-8 bytes written in the byte-level alphabet."""
    return piece.encode("utf-8").decode("latin-1").translate(_LATIN1_TO_BYTE_CHAR)


# ---------------------------------------------------------------------------------------
# Character classes for the scanners: 'L' letter, 'N' number, 'S' white space, 'O' the
# rest. A text is classified once with str.translate, so the scanners compare ASCII
# letters instead of calling unicodedata per step.

# The Unicode White_Space property: what Oniguruma's (so Hugging Face's) \s matches. Not
# str.isspace(), which also accepts U+001C..U+001F.
_WHITE_SPACE = frozenset([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028,
                          0x2029, 0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B)))


class _ClassTable(dict):
    """Code point -> class letter, filled on first use (a str.translate table)."""

    def __missing__(self, code):
        if code in _WHITE_SPACE:
            cls = "S"
        else:
            cat = unicodedata.category(chr(code))[0]
            cls = cat if cat in "LN" else "O"
        self[code] = cls
        return cls


_CLASSES = _ClassTable()


def _classify(text):
    return text.translate(_CLASSES)


def _run_end(cls, i, end, kind):
    """The end of the run of class `kind` that starts at i."""
    while i < end and cls[i] == kind:
        i += 1
    return i


def _contraction(text, i, end, ignore_case):
    """Length of the contraction ('s 't 're 've 'm 'll 'd) at i, 0 if none."""
    if text[i] != "'" or i + 1 == end:
        return 0
    two = text[i + 1:min(i + 3, end)]
    if ignore_case:
        # (?i) in Oniguruma folds case per Unicode: U+017F (long s) folds to 's'.
        two = two.replace("\u017f", "s").lower()
    if two in ("re", "ve", "ll"):
        return 3
    return 2 if two[0] in "stmd" else 0


def _whitespace_end(cls, i, end):
    r"""`\s+(?!\S)|\s+` at i: a run of white space that leaves its last character to the
    word after it, unless the run is that one character or ends the piece."""
    j = _run_end(cls, i, end, "S")
    return j - 1 if j < end and j - i > 1 else j


def _match_gpt2(text, cls, i, end):
    r"""End of the GPT-2 pattern's match at i:
    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    n = _contraction(text, i, end, False)
    if n:
        return i + n
    kind = cls[i]
    if kind != "S":
        return _run_end(cls, i, end, kind)
    # ` ?X+`: one plain space joins the letter, number or symbol run after it.
    if text[i] == " " and i + 1 < end and cls[i + 1] != "S":
        return _run_end(cls, i + 1, end, cls[i + 1])
    return _whitespace_end(cls, i, end)


def _match_llama3(text, cls, i, end, max_digits):
    r"""End of the Llama 3 pattern's match at i (Qwen2's when max_digits is 1):
    (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
    | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
    n = _contraction(text, i, end, True)
    if n:
        return i + n
    kind, c = cls[i], text[i]
    if kind == "L":
        return _run_end(cls, i, end, "L")
    # One character that is neither a digit nor a line break joins the letters after it.
    if kind != "N" and c not in "\r\n" and i + 1 < end and cls[i + 1] == "L":
        return _run_end(cls, i + 1, end, "L")
    if kind == "N":
        return _run_end(cls, i, min(end, i + max_digits), "N")
    if kind == "O" or (c == " " and i + 1 < end and cls[i + 1] == "O"):
        j = _run_end(cls, i + (kind != "O"), end, "O")
        while j < end and text[j] in "\r\n":
            j += 1
        return j
    # `\s*[\r\n]+`: backtracking ends the match right after the run's last line break.
    j = _run_end(cls, i, end, "S")
    last_break = max(text.rfind("\n", i, j), text.rfind("\r", i, j))
    if last_break >= 0:
        return last_break + 1
    return _whitespace_end(cls, i, end)


def _scan(match, text, cls, begin, end, out):
    i = begin
    while i < end:
        j = match(text, cls, i, end)
        out.append(text[i:j])
        i = j


class _PreTokenizer:
    """Splits text into pieces: `match` gives the end of the pattern's match at a position;
    with `isolate_digits` every number character is first made a piece of its own and the
    pattern runs on the text between them (Hugging Face's Digits(individual_digits) ahead
    of ByteLevel, where each piece is matched on its own)."""

    def __init__(self, name, match, isolate_digits):
        self.name, self.match, self.isolate_digits = name, match, isolate_digits

    def split(self, text):
        cls = _classify(text)
        out = []
        if not self.isolate_digits:
            _scan(self.match, text, cls, 0, len(text), out)
            return out
        i = 0
        while i < len(text):
            k = cls.find("N", i)
            if k < 0:
                k = len(text)
            _scan(self.match, text, cls, i, k, out)
            if k < len(text):
                out.append(text[k])
            i = k + 1
        return out


_GPT2 = _PreTokenizer("gpt2", _match_gpt2, False)
_LLAMA3 = _PreTokenizer("llama-bpe", partial(_match_llama3, max_digits=3), False)
PRE_TOKENIZERS = {
    "smollm": _PreTokenizer("smollm", _match_gpt2, True),
    "gpt2": _GPT2,
    "default": _GPT2,
    "llama-bpe": _LLAMA3,
    "llama3": _LLAMA3,
    "llama-v3": _LLAMA3,
    "qwen2": _PreTokenizer("qwen2", partial(_match_llama3, max_digits=1), False),
}


def _pre_tokenizer(name):
    if name not in PRE_TOKENIZERS:
        raise ValueError(f"pre-tokenizer '{name}' is not supported (supported: "
                         f"{', '.join(sorted(PRE_TOKENIZERS))})")
    return PRE_TOKENIZERS[name]


# ---------------------------------------------------------------------------------------

class Tokenizer:
    """A byte-level BPE tokenizer. Build it with ``from_gguf_metadata`` or ``from_file``.

    tokens: the vocabulary by id (None for ids a tokenizer.json leaves unused); merges:
    (left, right) pairs, rank = position; added: {token text: id} matched before
    pre-tokenization; special_ids: the added tokens that decode(skip_special_tokens=True)
    drops; prefix_ids / suffix_ids: what add_special_tokens puts around the ids."""

    def __init__(self, tokens, merges, pre_tokenizer, added=None, special_ids=(), *,
                 bos_token_id=None, eos_token_id=None, unk_token_id=None, prefix_ids=(),
                 suffix_ids=(), ignore_merges=False, nfc=False):
        self._tokens = list(tokens)
        self._vocab = {}
        for i, t in enumerate(self._tokens):
            if t is not None:
                self._vocab.setdefault(t, i)  # a repeated token keeps its first id
        self._ranks = {}
        for rank, (left, right) in enumerate(merges):
            # A merge whose result has no id could never be emitted; the first rank wins.
            if left + right in self._vocab:
                self._ranks.setdefault((left, right), rank)
        self._pre = _pre_tokenizer(pre_tokenizer)
        self._added = dict(added or {})
        self._added_ids = set(self._added.values())
        self._special_ids = set(special_ids)
        self._added_re = _literal_alternation(self._added)
        self._bos, self._eos, self._unk = bos_token_id, eos_token_id, unk_token_id
        self._prefix, self._suffix = list(prefix_ids), list(suffix_ids)
        self._ignore_merges = ignore_merges
        self._nfc = nfc
        self._word_ids = {}
        self._bytes = {}

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_gguf_metadata(cls, metadata):
        """From a GGUF file's metadata (``GGUFFile(path).metadata``)."""
        _check_gguf_model(metadata)
        tokens = metadata["tokenizer.ggml.tokens"]
        types = metadata.get("tokenizer.ggml.token_type") or [TOKEN_NORMAL] * len(tokens)
        added, special = {}, []
        for i, (tok, ttype) in enumerate(zip(tokens, types)):
            if ttype in (TOKEN_CONTROL, TOKEN_USER_DEFINED) and tok:
                added.setdefault(tok, i)
                if ttype == TOKEN_CONTROL:
                    special.append(i)
        pre = metadata.get("tokenizer.ggml.pre", "default")
        # Llama 3 emits a piece that is a whole vocabulary entry as is (llama.cpp and the
        # Hugging Face tokenizer.json of those models both skip its merges).
        ignore_merges = _pre_tokenizer(pre) is _LLAMA3
        bos = metadata.get("tokenizer.ggml.bos_token_id")
        eos = metadata.get("tokenizer.ggml.eos_token_id")
        prefix = [bos] if bos is not None and metadata.get("tokenizer.ggml.add_bos_token") \
            else []
        suffix = [eos] if eos is not None and metadata.get("tokenizer.ggml.add_eos_token") \
            else []
        return cls(tokens, _parse_merges(metadata.get("tokenizer.ggml.merges", [])), pre,
                   added, special, bos_token_id=bos, eos_token_id=eos,
                   unk_token_id=metadata.get("tokenizer.ggml.unknown_token_id"),
                   prefix_ids=prefix, suffix_ids=suffix,
                   ignore_merges=ignore_merges)

    @classmethod
    def from_file(cls, path):
        """From a Hugging Face tokenizer.json (a tokenizer_config.json next to it supplies
        bos/eos and add_bos_token/add_eos_token)."""
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
        if _sentencepiece_style(spec):
            return NativeTokenizer(path)
        config_path = os.path.join(os.path.dirname(os.path.abspath(path)),
                                   "tokenizer_config.json")
        config = {}
        if os.path.exists(config_path):
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        return cls._from_json(spec, config)

    @classmethod
    def _from_json(cls, spec, config):
        model = spec.get("model") or {}
        _check_json_model(model)
        nfc = _json_normalizer(spec.get("normalizer"))
        pre = _json_pre_tokenizer(spec.get("pre_tokenizer"))
        _json_decoder(spec.get("decoder"))
        vocab = model.get("vocab") or {}
        added_list = spec.get("added_tokens") or []
        size = 1 + max(list(vocab.values()) + [t["id"] for t in added_list], default=-1)
        tokens = [None] * size
        for tok, i in vocab.items():
            tokens[i] = tok
        added, special = {}, []
        for t in added_list:
            for flag in ("lstrip", "rstrip", "single_word"):
                if t.get(flag):
                    raise ValueError(f"tokenizer.json added token '{t['content']}': {flag} is "
                                     "not supported")
            tokens[t["id"]] = t["content"]
            added.setdefault(t["content"], t["id"])
            if t.get("special"):
                special.append(t["id"])
        ids = {tok: i for i, tok in reversed(list(enumerate(tokens))) if tok is not None}
        bos, eos = ids.get(_config_token(config, "bos_token")), \
            ids.get(_config_token(config, "eos_token"))
        template = _json_post_processor(spec.get("post_processor"))
        if template is not None:
            prefix, suffix = template
        else:
            prefix = [bos] if bos is not None and config.get("add_bos_token") else []
            suffix = [eos] if eos is not None and config.get("add_eos_token") else []
        unk = model.get("unk_token")
        return cls(tokens, _parse_merges(model.get("merges") or []), pre, added, special,
                   bos_token_id=bos, eos_token_id=eos, unk_token_id=ids.get(unk),
                   prefix_ids=prefix, suffix_ids=suffix,
                   ignore_merges=bool(model.get("ignore_merges")), nfc=nfc)

    # -- vocabulary -----------------------------------------------------------------------

    @property
    def vocab_size(self):
        return len(self._tokens)

    @property
    def bos_token_id(self):
        return self._bos

    @property
    def eos_token_id(self):
        return self._eos

    def id_to_token(self, token_id):
        """The vocabulary's string for the id (byte-level form, 'Ġthe'), None if unknown."""
        if 0 <= token_id < len(self._tokens):
            return self._tokens[token_id]
        return None

    def token_to_id(self, token):
        """The id of a vocabulary string (byte-level form), None if it has none."""
        return self._vocab.get(token)

    # -- encoding -------------------------------------------------------------------------

    def encode(self, text, add_special_tokens=False):
        """Token ids of `text`; with add_special_tokens, the model's BOS (and EOS) around
        them when the model asks for them."""
        ids = list(self._prefix) if add_special_tokens else []
        pos = 0
        if self._added_re is not None:
            for m in self._added_re.finditer(text):
                self._encode_plain(text[pos:m.start()], ids)
                ids.append(self._added[m.group()])
                pos = m.end()
        self._encode_plain(text[pos:], ids)
        if add_special_tokens:
            ids.extend(self._suffix)
        return ids

    def _encode_plain(self, text, ids):
        if not text:
            return
        if self._nfc:
            text = unicodedata.normalize("NFC", text)
        cache = self._word_ids
        for piece in self._pre.split(text):
            word = cache.get(piece)
            if word is None:
                if len(cache) >= _WORD_CACHE_LIMIT:
                    cache.clear()
                word = cache[piece] = self._bpe(_byte_level(piece))
            ids.extend(word)

    def _bpe(self, word):
        """Ids of one byte-level piece: the lowest-ranked adjacent pair is merged first,
        the leftmost one among equals (a heap of candidate pairs over a linked list, so
        long pieces such as a CJK sentence stay O(n log n))."""
        vocab = self._vocab
        if len(word) == 1 or (self._ignore_merges and word in vocab):
            return self._ids_of([word])
        ranks = self._ranks
        syms = list(word)
        nxt = list(range(1, len(syms))) + [-1]
        prv = list(range(-1, len(syms) - 1))
        heap = []
        for i in range(len(syms) - 1):
            r = ranks.get((syms[i], syms[i + 1]))
            if r is not None:
                heap.append((r, i))
        heapq.heapify(heap)
        while heap:
            r, i = heapq.heappop(heap)
            j = nxt[i]
            # Stale entries: i was merged away, or its pair changed (a rank names one pair).
            if syms[i] is None or j < 0 or ranks.get((syms[i], syms[j])) != r:
                continue
            syms[i] += syms[j]
            syms[j] = None
            nxt[i] = nxt[j]
            if nxt[i] >= 0:
                prv[nxt[i]] = i
            for a in (prv[i], i):
                b = nxt[a] if a >= 0 else -1
                if b >= 0:
                    r2 = ranks.get((syms[a], syms[b]))
                    if r2 is not None:
                        heapq.heappush(heap, (r2, a))
        return self._ids_of([s for s in syms if s is not None])

    def _ids_of(self, symbols):
        out = []
        for s in symbols:
            i = self._vocab.get(s, self._unk)
            if i is not None:  # no id and no unknown token: dropped, as Hugging Face does
                out.append(i)
        return tuple(out)

    # -- decoding -------------------------------------------------------------------------

    def decode(self, ids, skip_special_tokens=False):
        """The text of the ids; bytes that are not valid UTF-8 become U+FFFD."""
        data = b"".join(self.token_bytes(i, skip_special_tokens) for i in ids)
        return data.decode("utf-8", errors="replace")

    def token_bytes(self, token_id, skip_special_tokens=False):
        """The bytes one id stands for (b'' for a special token when skipping them)."""
        token_id = int(token_id)
        if skip_special_tokens and token_id in self._special_ids:
            return b""
        data = self._bytes.get(token_id)
        if data is None:
            tok = self.id_to_token(token_id)
            if tok is None:
                raise ValueError(f"token id {token_id} is out of range (vocabulary of "
                                 f"{len(self._tokens)})")
            data = self._bytes[token_id] = _token_bytes(tok, token_id in self._added_ids)
        return data

    def stream_decoder(self, skip_special_tokens=False):
        return StreamDecoder(self, skip_special_tokens)


def _sentencepiece_style(spec):
    """True for SentencePiece-style BPE files (Llama 2, Mistral, TinyLlama): no ByteLevel
    decoder, and no pre-tokenizer or a Metaspace one (the C++ port's rule)."""
    decoder = spec.get("decoder") or {}
    pre = spec.get("pre_tokenizer")
    return decoder.get("type") != "ByteLevel" and (pre is None or pre.get("type") == "Metaspace")


class NativeTokenizer:
    """The C++ tokenizer (src/genai/tokenizer.h) behind Tokenizer's interface, for the
    SentencePiece-style files only it reads. Errors are ValueError, as Tokenizer's."""

    def __init__(self, path=None, *, impl=None):
        """Reads tokenizer.json at PATH, or wraps IMPL, a _nxrt.CppTokenizer already
        loaded (a C++ engine's own)."""
        from nxrt import _nxrt

        if impl is not None:
            self._impl = impl
            return
        if not hasattr(_nxrt, "CppTokenizer"):
            raise ValueError(f"{path}: SentencePiece-style tokenizers need nxrt's C++ "
                             "text-generation library, which this build lacks (it is built "
                             "when nlohmann-json is installed)")
        self._impl = _nxrt.CppTokenizer.from_file(os.fspath(path))

    @property
    def vocab_size(self):
        return self._impl.vocab_size

    @property
    def bos_token_id(self):
        return self._impl.bos_token_id

    @property
    def eos_token_id(self):
        return self._impl.eos_token_id

    def id_to_token(self, token_id):
        return self._impl.id_to_token(int(token_id))

    def token_to_id(self, token):
        return self._impl.token_to_id(token)

    def encode(self, text, add_special_tokens=False):
        return self._impl.encode(text, add_special_tokens)

    def decode(self, ids, skip_special_tokens=False):
        return self._impl.decode([int(i) for i in ids], skip_special_tokens)

    def token_bytes(self, token_id, skip_special_tokens=False):
        return self._impl.token_bytes(int(token_id), skip_special_tokens)

    def stream_decoder(self, skip_special_tokens=False):
        return self._impl.stream_decoder(skip_special_tokens)


def _token_bytes(tok, is_added):
    # Added tokens are literal text; vocabulary tokens are byte-level strings. A token with
    # a character outside the byte-level alphabet is taken as text too (Hugging Face's
    # ByteLevel decoder does the same).
    if not is_added:
        try:
            return bytes([_CHAR_TO_BYTE[c] for c in tok])
        except KeyError:
            pass
    return tok.encode("utf-8")


class StreamDecoder:
    """Decodes ids one at a time: ``add(id)`` returns the text completed by that id and
    holds back the bytes of a character split across tokens; ``flush()`` returns what is
    left (an incomplete character there becomes U+FFFD)."""

    def __init__(self, tokenizer, skip_special_tokens=False):
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, token_id):
        return self._utf8.decode(self._tokenizer.token_bytes(token_id, self._skip))

    def flush(self):
        text = self._utf8.decode(b"", final=True)
        self._utf8.reset()
        return text


def _literal_alternation(strings):
    """A regex matching any of the strings, leftmost first and the longest at a position
    (alternatives are tried in order, so longer strings go first)."""
    if not strings:
        return None
    ordered = sorted(strings, key=lambda s: (-len(s), s))
    return re.compile("|".join(re.escape(s) for s in ordered))


def _parse_merges(merges):
    """Merges as (left, right): tokenizer.json has ['a', 'b'] pairs or 'a b' strings."""
    out = []
    for m in merges:
        if isinstance(m, str):
            parts = m.split(" ", 1)
            if len(parts) != 2:
                raise ValueError(f"merge '{m}' is not two tokens separated by a space")
            out.append((parts[0], parts[1]))
        else:
            out.append((m[0], m[1]))
    return out


# ---------------------------------------------------------------------------------------
# Checks of what a GGUF file or tokenizer.json asks for: anything else is a ValueError that
# names it, rather than ids that quietly differ from the model's.

def _check_gguf_model(metadata):
    model = metadata.get("tokenizer.ggml.model")
    if model != "gpt2":
        raise ValueError(f"GGUF tokenizer model '{model}' is not supported (only 'gpt2', "
                         "byte-level BPE, here; 'llama' SentencePiece vocabularies are written "
                         "as tokenizer.json for the C++ tokenizer)")
    if "tokenizer.ggml.tokens" not in metadata:
        raise ValueError("GGUF metadata has no 'tokenizer.ggml.tokens'")


def _check_json_model(model):
    kind = model.get("type", "BPE" if "merges" in model else None)
    if kind != "BPE":
        raise ValueError(f"tokenizer.json model type '{kind}' is not supported (only BPE)")
    if model.get("dropout"):
        raise ValueError("tokenizer.json BPE dropout is not supported")
    if model.get("byte_fallback"):
        raise ValueError("tokenizer.json BPE byte_fallback is not supported")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise ValueError(f"tokenizer.json BPE {key} '{model[key]}' is not supported")


def _json_normalizer(normalizer):
    """True for NFC, False for none."""
    if normalizer is None:
        return False
    kind = normalizer.get("type")
    if kind == "NFC":
        return True
    if kind == "Sequence" and not normalizer.get("normalizers"):
        return False
    raise ValueError(f"tokenizer.json normalizer '{kind}' is not supported (none or NFC)")


def _json_pre_tokenizer(pre):
    """The PRE_TOKENIZERS name of a tokenizer.json pre_tokenizer."""
    steps = pre.get("pretokenizers", []) if pre and pre.get("type") == "Sequence" else [pre]
    kinds = [s.get("type") if s else None for s in steps]
    byte_level = steps[-1] if kinds and kinds[-1] == "ByteLevel" else None
    if byte_level is not None and byte_level.get("add_prefix_space"):
        raise ValueError("tokenizer.json pre-tokenizer ByteLevel with add_prefix_space is not "
                         "supported")
    if kinds == ["ByteLevel"] and byte_level.get("use_regex", True):
        return "gpt2"
    if kinds == ["Digits", "ByteLevel"] and steps[0].get("individual_digits") \
            and byte_level.get("use_regex", True):
        return "smollm"
    if kinds == ["Split", "ByteLevel"] and not byte_level.get("use_regex", True):
        split = steps[0]
        pattern = (split.get("pattern") or {}).get("Regex")
        names = {LLAMA3_PATTERN: "llama-bpe", QWEN2_PATTERN: "qwen2"}
        if pattern in names and split.get("behavior") == "Isolated" \
                and not split.get("invert"):
            return names[pattern]
        raise ValueError(f"tokenizer.json pre-tokenizer Split with pattern {pattern!r} "
                         f"(behavior {split.get('behavior')}) is not supported")
    raise ValueError(f"tokenizer.json pre-tokenizer {_describe(pre)} is not supported")


def _describe(step):
    if not step:
        return "null"
    if step.get("type") == "Sequence":
        return "Sequence[" + ", ".join(_describe(s) for s in step.get("pretokenizers", [])) \
            + "]"
    return str(step.get("type"))


def _json_decoder(decoder):
    if decoder is not None and decoder.get("type") != "ByteLevel":
        raise ValueError(f"tokenizer.json decoder '{decoder.get('type')}' is not supported "
                         "(only ByteLevel)")


def _json_post_processor(post):
    """(prefix ids, suffix ids) of a TemplateProcessing for single sequences, None when the
    post-processor adds nothing (null or ByteLevel)."""
    if post is None:
        return None
    steps = post.get("processors", []) if post.get("type") == "Sequence" else [post]
    template = None
    for step in steps:
        kind = step.get("type")
        if kind == "TemplateProcessing":
            template = _template_ids(step)
        elif kind != "ByteLevel":
            raise ValueError(f"tokenizer.json post-processor '{kind}' is not supported")
    return template


def _template_ids(step):
    specials = step.get("special_tokens") or {}
    prefix, suffix, seen_sequence = [], [], False
    for item in step.get("single") or []:
        if "Sequence" in item:
            if item["Sequence"].get("id") != "A" or seen_sequence:
                raise ValueError("tokenizer.json TemplateProcessing: only one sequence, $A, "
                                 "is supported for single inputs")
            seen_sequence = True
            continue
        name = item["SpecialToken"]["id"]
        if name not in specials:
            raise ValueError(f"tokenizer.json TemplateProcessing: special token '{name}' is "
                             "not defined")
        (suffix if seen_sequence else prefix).extend(specials[name]["ids"])
    return prefix, suffix


def _config_token(config, key):
    value = config.get(key)
    return value.get("content") if isinstance(value, dict) else value


# ---------------------------------------------------------------------------------------
# Writing tokenizer.json and tokenizer_config.json.

def _json_pre_tokenizer_spec(name):
    pre = _pre_tokenizer(name)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    if pre.name == "gpt2":
        return byte_level
    if pre.name == "smollm":
        return {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]}
    pattern = LLAMA3_PATTERN if pre.name == "llama-bpe" else QWEN2_PATTERN
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
         "invert": False},
        dict(byte_level, use_regex=False)]}


def _json_post_processor_spec(tokens, prefix, suffix):
    byte_level = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                  "use_regex": True}
    if not prefix and not suffix:
        return byte_level

    def special(i, type_id):
        return {"SpecialToken": {"id": tokens[i], "type_id": type_id}}

    def sequence(name, type_id):
        return [special(i, type_id) for i in prefix] + \
            [{"Sequence": {"id": name, "type_id": type_id}}] + \
            [special(i, type_id) for i in suffix]

    template = {"type": "TemplateProcessing", "single": sequence("A", 0),
                "pair": sequence("A", 0) + sequence("B", 1),
                "special_tokens": {tokens[i]: {"id": tokens[i], "ids": [i],
                                               "tokens": [tokens[i]]}
                                   for i in prefix + suffix}}
    return {"type": "Sequence", "processors": [dict(byte_level, add_prefix_space=False),
                                               template]}


def _sentencepiece_merges(tokens, scores):
    """BPE merges equivalent to a SentencePiece vocabulary's scores, as Hugging Face
    derives them: every split of a piece into two pieces, pieces with higher scores first
    (pairs of one piece ordered by the ids of their halves)."""
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    merges = []
    for piece, i in vocab.items():
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece))
                 if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend((left, right, scores[i]) for left, right in local)
    merges.sort(key=lambda m: m[2], reverse=True)  # stable: ties keep the order above
    return [[left, right] for left, right, _ in merges]


def _sentencepiece_files(metadata):
    """tokenizer.json for a GGUF "llama" (SentencePiece) vocabulary: BPE over characters
    with byte fallback and the merges its scores imply, spaces as "▁" with one prepended
    (add_space_prefix), in the form Hugging Face writes for Llama 2."""
    tokens = metadata.get("tokenizer.ggml.tokens")
    scores = metadata.get("tokenizer.ggml.scores")
    if not tokens or scores is None or len(scores) != len(tokens):
        raise ValueError("GGUF SentencePiece vocabulary needs 'tokenizer.ggml.tokens' and as "
                         "many 'tokenizer.ggml.scores'")
    types = metadata.get("tokenizer.ggml.token_type") or [TOKEN_NORMAL] * len(tokens)
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": ty == TOKEN_CONTROL}
             for i, (t, ty) in enumerate(zip(tokens, types))
             if ty in (TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNKNOWN) and t
             and vocab.get(t) == i]
    unk = metadata.get("tokenizer.ggml.unknown_token_id")
    bos = metadata.get("tokenizer.ggml.bos_token_id")
    eos = metadata.get("tokenizer.ggml.eos_token_id")
    prefix = [bos] if bos is not None and metadata.get("tokenizer.ggml.add_bos_token", True) \
        else []
    suffix = [eos] if eos is not None and metadata.get("tokenizer.ggml.add_eos_token", False) \
        else []
    space_prefix = bool(metadata.get("tokenizer.ggml.add_space_prefix", True))
    meta = "\u2581"
    replace_space = {"type": "Replace", "pattern": {"String": " "}, "content": meta}
    decoder = [{"type": "Replace", "pattern": {"String": meta}, "content": " "},
               {"type": "ByteFallback"}, {"type": "Fuse"}]
    if space_prefix:
        decoder.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    post = _json_post_processor_spec(tokens, prefix, suffix)
    if post.get("type") == "Sequence":  # the template alone: no ByteLevel step here
        post = post["processors"][-1]
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers":
                       ([{"type": "Prepend", "prepend": meta}] if space_prefix else [])
                       + [replace_space]},
        "pre_tokenizer": None,
        "post_processor": None if post.get("type") == "ByteLevel" else post,
        "decoder": {"type": "Sequence", "decoders": decoder},
        "model": {"type": "BPE", "dropout": None,
                  "unk_token": tokens[unk] if unk is not None and 0 <= unk < len(tokens)
                  else None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": _sentencepiece_merges(tokens, scores)},
    }
    config = _tokenizer_config(metadata, tokens, added)
    config["tokenizer_class"] = "LlamaTokenizerFast"
    return spec, config


def write_tokenizer_files(metadata, directory):
    """Writes tokenizer.json and tokenizer_config.json for a GGUF file's tokenizer into
    `directory` (created if missing); returns their paths."""
    if metadata.get("tokenizer.ggml.model") == "llama":
        spec, config = _sentencepiece_files(metadata)
        return _write_json_files(directory, spec, config)
    tok = Tokenizer.from_gguf_metadata(metadata)  # validates what the files will describe
    tokens = metadata["tokenizer.ggml.tokens"]
    types = metadata.get("tokenizer.ggml.token_type") or [TOKEN_NORMAL] * len(tokens)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": ty == TOKEN_CONTROL}
             for i, (t, ty) in enumerate(zip(tokens, types))
             if ty in (TOKEN_CONTROL, TOKEN_USER_DEFINED) and t and tok._added.get(t) == i]
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    merges = [list(m) for m in _parse_merges(metadata.get("tokenizer.ggml.merges", []))]
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": _json_pre_tokenizer_spec(metadata.get("tokenizer.ggml.pre",
                                                               "default")),
        "post_processor": _json_post_processor_spec(tokens, tok._prefix, tok._suffix),
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": tok._ignore_merges, "vocab": vocab, "merges": merges},
    }
    config = _tokenizer_config(metadata, tokens, added)
    return _write_json_files(directory, spec, config)


def _write_json_files(directory, spec, config):
    os.makedirs(directory, exist_ok=True)
    paths = (os.path.join(directory, "tokenizer.json"),
             os.path.join(directory, "tokenizer_config.json"))
    for path, content, indent in zip(paths, (spec, config), (None, 2)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(content, f, ensure_ascii=False, indent=indent)
            f.write("\n")
    return paths


def _tokenizer_config(metadata, tokens, added):
    def token(key):
        i = metadata.get(f"tokenizer.ggml.{key}_token_id")
        return tokens[i] if i is not None and 0 <= i < len(tokens) else None

    config = {
        "add_bos_token": bool(metadata.get("tokenizer.ggml.add_bos_token", False)),
        "add_eos_token": bool(metadata.get("tokenizer.ggml.add_eos_token", False)),
        "add_prefix_space": False,
        "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                 for t in added},
        "bos_token": token("bos"),
        "eos_token": token("eos"),
        "unk_token": token("unknown"),
        "pad_token": token("padding"),
        "clean_up_tokenization_spaces": False,
        "tokenizer_class": "GPT2Tokenizer",
    }
    if metadata.get("tokenizer.chat_template") is not None:
        config["chat_template"] = metadata["tokenizer.chat_template"]
    arch = metadata.get("general.architecture")
    context = metadata.get(f"{arch}.context_length") if arch else None
    if context:
        config["model_max_length"] = int(context)
    return config
