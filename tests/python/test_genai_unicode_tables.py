"""The Unicode tables of the C++ tokenizer (src/genai/unicode_classes.inc, unicode_nfc.inc)
are what tools/gen_unicode_classes.py writes from this Python's unicodedata, the source the
Python tokenizer (nxrt.genai.tokenizer) classifies characters with: a stale table would let
the two ports split text differently."""

import importlib.util
import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_unicode_classes", os.path.join(ROOT, "tools", "gen_unicode_classes.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_are_current():
    for path, expected in _generator().generate().items():
        with open(path, encoding="utf-8") as f:
            actual = f.read()
        assert actual == expected, (f"{os.path.relpath(path, ROOT)} is stale: rerun "
                                    "tools/gen_unicode_classes.py (and rebuild)")
