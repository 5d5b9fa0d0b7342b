"""scripts/test.sh sets NXRT_REQUIRE_TEST_DEPS=1: a test skipped there because a dependency
is missing fails instead (conftest.py), so a broken set-up cannot pass CI by skipping."""

import os
import subprocess
import sys

import conftest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_which_skip_reasons_mean_a_missing_dependency(monkeypatch):
    monkeypatch.setattr(conftest, "OPTIONAL_DEPENDENCIES", ("torch",))
    missing = conftest.missing_dependency
    assert missing("could not import 'onnxruntime': No module named 'onnxruntime'")
    assert missing("espeak-ng is not installed (scripts/setup.sh installs it)")
    assert missing("build/tools/nxrt is not built (scripts/build.sh builds it)")
    assert missing("magika could not be fetched: no network")
    assert missing("could not import 'torch': No module named 'torch'") is None  # optional
    assert missing("onnxruntime's CPU MatMulInteger has no int8 x int8 kernel") is None


def _run(tmp_path, source, require):
    # The project's conftest under another name, so its hooks apply to the case below.
    (tmp_path / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('nxrt_conftest', {HERE!r} + '/conftest.py')\n"
        "policy = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(policy)\n"
        "pytest_runtest_makereport = policy.pytest_runtest_makereport\n"
        "pytest_make_collect_report = policy.pytest_make_collect_report\n")
    (tmp_path / "test_case.py").write_text(source)
    env = dict(os.environ, NXRT_REQUIRE_TEST_DEPS="1" if require else "0")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path)


MISSING_IN_TEST = "import pytest\ndef test_a():\n    pytest.importorskip('no_such_module_xyz')\n"
MISSING_AT_IMPORT = "import pytest\npytest.importorskip('no_such_module_xyz')\ndef test_a(): pass\n"


def test_a_missing_dependency_fails_when_required(tmp_path):
    for source in (MISSING_IN_TEST, MISSING_AT_IMPORT):
        result = _run(tmp_path, source, require=True)
        assert result.returncode != 0, result.stdout
        assert "a required test dependency is missing" in result.stdout


def test_a_missing_dependency_skips_otherwise(tmp_path):
    result = _run(tmp_path, MISSING_IN_TEST, require=False)
    assert result.returncode == 0 and "1 skipped" in result.stdout, result.stdout
