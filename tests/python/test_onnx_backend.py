"""The official ONNX backend test cases, run through nxrt.

A case listed in known_failures.txt must fail (strict xfail); any other case must pass.
Regenerate the list with `python tests/python/update_known_failures.py` after adding ops.
"""

import pytest

import backend_cases

CASES = backend_cases.discover()
KNOWN = backend_cases.load_known_failures()
RESULTS = {"passed": 0, "failed": 0, "total": 0}


def _params():
    for suite, name, path in CASES:
        case_id = f"{suite}/{name}"
        marks = []
        if case_id in KNOWN:
            # A random op without a seed can match its expected data by chance: not strict.
            strict = not KNOWN[case_id].startswith("why: nondeterministic")
            marks.append(pytest.mark.xfail(reason=KNOWN[case_id], strict=strict))
        yield pytest.param(suite, name, path, id=case_id, marks=marks)


@pytest.mark.parametrize("suite,name,path", list(_params()))
def test_backend_case(suite, name, path):
    RESULTS["total"] += 1
    try:
        backend_cases.run_case(suite, name, path)
    except BaseException:
        RESULTS["failed"] += 1
        raise
    RESULTS["passed"] += 1


def test_known_failures_name_real_cases():
    ids = {f"{s}/{n}" for s, n, _ in CASES}
    stale = sorted(set(KNOWN) - ids)
    assert not stale, f"known_failures.txt names cases that do not exist: {stale[:10]}"
