import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_terminal_summary(terminalreporter):
    try:
        import test_onnx_backend as backend
    except ImportError:
        return
    r = backend.RESULTS
    if r["total"]:
        node_total = sum(1 for s, _, _ in backend.CASES if s == "node")
        terminalreporter.write_line(
            f"ONNX backend cases: {r['passed']} of {r['total']} passed "
            f"({100.0 * r['passed'] / r['total']:.1f}%); node suite has {node_total} cases; "
            f"{len(backend.KNOWN)} known failures listed")


# scripts/test.sh (the CI command) installs every dependency the tests read first, so
# there a test skipped for a missing one (onnxruntime, espeak-ng, a built tool, a zoo
# model) means the set-up broke: NXRT_REQUIRE_TEST_DEPS=1 turns such skips into failures.
# Only the optional extras below may be absent. Run by hand, pytest still skips them.
OPTIONAL_DEPENDENCIES = ()  # modules scripts/setup.sh does not install
_MISSING_DEPENDENCY = re.compile(
    r"could not import '(?P<module>[\w.]+)'|is not installed|is not built|could not be fetched"
    r"|fetching the model zoo failed|could not fetch any zoo model|is not in the cache|is absent")


def missing_dependency(reason):
    """The reason of a skip that a missing required dependency caused, else None."""
    match = _MISSING_DEPENDENCY.search(reason)
    if not match or match.group("module") in OPTIONAL_DEPENDENCIES:
        return None
    return reason


def _require_dependencies():
    return os.environ.get("NXRT_REQUIRE_TEST_DEPS") == "1"


def _fail_if_missing(report):
    if not (_require_dependencies() and report.skipped and isinstance(report.longrepr, tuple)):
        return
    reason = missing_dependency(str(report.longrepr[2]))
    if reason:
        report.outcome = "failed"
        report.longrepr = f"a required test dependency is missing (NXRT_REQUIRE_TEST_DEPS=1): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_if_missing(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_if_missing(outcome.get_result())
