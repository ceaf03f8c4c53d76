"""Mutants of embedded check code and of answer-key data."""

from __future__ import annotations

import json

import pytest

from vouch.errors import UsageError
from vouch.mutation import DATA_OPERATORS, mutate_data, mutate_embedded

EMBEDDED = '''"""A verifier whose checks are a benchmark's test, kept as text."""

TEST = "def check(candidate):\\n    assert candidate(2) == 4\\n    assert candidate(3) == 9\\n"


def verify(candidate, env):
    namespace = {}
    exec(TEST, namespace)
    namespace["check"](candidate)
    return True
'''

DATA = """import json as _json

GROUND_TRUTH = _json.loads('[{"get_weather": {"city": ["Paris", "paris, fr"], "unit": ["", "celsius"]}}]')
LITERAL = {"allow": ["a", "b"], "limit": 3}


def verify(candidate, env):
    return True
"""


def _value(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "<mutant>", "exec"), namespace)
    return namespace[name]


def test_embedded_mutants_edit_the_text_and_show_its_diff():
    mutants = mutate_embedded(EMBEDDED, "TEST", function="check", operators=["remove_check", "compare_swap"])
    assert {m.operator for m in mutants} == {"remove_check", "compare_swap"}
    assert len(mutants) == 4  # two asserts, each removed or with == swapped
    for mutant in mutants:
        assert mutant.id.startswith("TEST/")
        text = _value(mutant.source, "TEST")
        assert text != _value(EMBEDDED, "TEST")
        compile(text, "<embedded>", "exec")  # still a program
        assert "def check" in mutant.diff and "TEST = " not in mutant.diff  # the text's diff, not the literal's
    removed = [m for m in mutants if m.operator == "remove_check"]
    assert any("candidate(2)" not in _value(m.source, "TEST") for m in removed)


def test_data_mutants_drop_change_and_drop_keys():
    mutants = mutate_data(DATA, "GROUND_TRUTH")
    values = [_value(m.source, "GROUND_TRUTH") for m in mutants]
    assert [{"get_weather": {"city": ["paris, fr"], "unit": ["", "celsius"]}}] in values  # dropped an allowed value
    assert [{"get_weather": {"city": ["Paris", "paris, fr"], "unit": ["celsius"]}}] in values  # "" dropped: required
    assert [{"get_weather": {"city": ["Paris", "paris, fr"]}}] in values  # a parameter's entry dropped
    assert [{"get_weather": {"city": ["Paris_mutated", "paris, fr"], "unit": ["", "celsius"]}}] in values
    assert len({json.dumps(v, sort_keys=True) for v in values}) == len(values)  # no twins
    assert {m.operator for m in mutants} <= set(DATA_OPERATORS)
    assert all(m.diff.startswith("--- original") for m in mutants)


def test_data_mutants_of_a_literal_stay_literals():
    mutants = mutate_data(DATA, "LITERAL", operators=["change_value"])
    assert {json.dumps(_value(m.source, "LITERAL"), sort_keys=True) for m in mutants} == {
        json.dumps({"allow": ["a_mutated", "b"], "limit": 3}, sort_keys=True),
        json.dumps({"allow": ["a", "b_mutated"], "limit": 3}, sort_keys=True),
        json.dumps({"allow": ["a", "b"], "limit": 4}, sort_keys=True),
    }
    assert all("LITERAL = {" in m.source for m in mutants)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: mutate_data(DATA, "MISSING"), "no top-level constant 'MISSING'"),
        (lambda: mutate_data(DATA, "GROUND_TRUTH", operators=["nope"]), "unknown data operator"),
        (lambda: mutate_embedded(DATA, "LITERAL"), "not code"),
        (lambda: mutate_embedded(EMBEDDED, "TEST", function="nope"), "nope"),
    ],
)
def test_bad_targets_are_usage_errors(call, message):
    with pytest.raises(UsageError, match=message):
        call()
