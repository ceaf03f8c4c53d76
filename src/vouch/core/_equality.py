"""The one equality rule for a test's comparison of an answer with the expected one.

T0's own comparisons are the benchmark's (``==`` in HumanEval's and MBPP's asserts); this rule is
what vouch compares with when it writes or reads a comparison of its own: the audit's search
(an answer that differs from G's), the witnesses it writes, the tests it exports, EvalPlus's
inputs made into T0, and the task builder. It is ``==`` with floats compared up to a relative
and absolute 1e-6 (or a larger absolute tolerance a task states, EvalPlus's ``atol``), a NaN
equal to a NaN, and a tuple never equal to a list (``(1, 2) == [1, 2]`` is False in Python too).

The rule is kept as source text (``EQUALITY_SOURCE``): the same text runs in vouch's process
(``equal``) and is written into every test file vouch makes, so a witness and its export judge
exactly as the audit did, and the files run where vouch is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

EQUALITY_NAME = "_vouch_equal"
EQUALITY_SOURCE = '''
def _vouch_equal(actual, expected, atol=0.0):
    """Equality as vouch's tests use it: ==, with floats compared up to 1e-6 (or atol)."""
    import math

    if isinstance(expected, float) or isinstance(actual, float):
        numbers = (int, float)
        if isinstance(actual, numbers) and isinstance(expected, numbers):
            if actual != actual and expected != expected:
                return True
            return math.isclose(actual, expected, rel_tol=1e-6, abs_tol=max(1e-6, atol))
        return False
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return (
            type(actual) is type(expected)
            and len(actual) == len(expected)
            and all(_vouch_equal(a, e, atol) for a, e in zip(actual, expected))
        )
    if isinstance(expected, dict) and isinstance(actual, dict):
        return actual.keys() == expected.keys() and all(
            _vouch_equal(actual[k], expected[k], atol) for k in expected
        )
    try:
        return bool(actual == expected)
    except Exception:
        return False
'''


def _compiled() -> Callable[..., bool]:
    namespace: dict[str, Any] = {}
    exec(compile(EQUALITY_SOURCE, "<vouch equality rule>", "exec"), namespace)  # noqa: S102 - vouch's own text
    rule: Callable[..., bool] = namespace[EQUALITY_NAME]
    return rule


equal: Callable[..., bool] = _compiled()
"""``equal(actual, expected, atol=0.0) -> bool``: the rule, in vouch's own process."""
