"""Refactor variants of a gold patch: other texts of the same behaviour, or none where the
behaviour could change."""

from __future__ import annotations

import random

import pytest

from vouch.sources.swebench._cases import Texts, apply_to_texts, build_candidates, make_diff
from vouch.sources.swebench._refactor import refactors

FIXED = """\
import os


def clamp(y, low=0):
    total = y + low
    if total < 0:
        result = 0
    else:
        result = total
    return result


def untouched(x):
    if x:
        return 1
    else:
        return 2
"""
CHANGED = set(range(4, 11))


def _run(source: str, name: str, *args: object) -> object:
    namespace: dict[str, object] = {}
    exec(compile(source, "<case>", "exec"), namespace)  # test data written above, not judged code
    function = namespace[name]
    assert callable(function)
    return function(*args)


def test_each_refactor_keeps_the_behaviour_and_changes_the_text() -> None:
    made = {r.construction: r for r in refactors(FIXED, CHANGED)}
    assert set(made) == {"invert_if", "rename_local"}
    assert "if not (total < 0):" in made["invert_if"].source
    assert "result_value = total" in made["rename_local"].source and "result =" not in made["rename_local"].source
    for refactor in made.values():
        assert refactor.source != FIXED
        assert "def untouched(x):\n    if x:\n        return 1" in refactor.source  # outside the lines: as it was
        for value in (-5, -1, 0, 3):
            assert _run(refactor.source, "clamp", value) == _run(FIXED, "clamp", value)


def test_nothing_outside_the_changed_lines() -> None:
    assert refactors(FIXED, {1, 2}) == []
    assert refactors("def broken(:\n", {1}) == []


@pytest.mark.parametrize(
    "body",
    [
        "def f(a):\n    a = a + 1\n    return a\n",  # a parameter: a keyword call would break
        "def f(a):\n    b = a\n    return [b for _ in range(2)]\n",  # a comprehension's scope reads it
        "def f(a):\n    b = a\n    return locals()['b']\n",  # reads names as text
        "def f(a):\n    global b\n    b = a\n    return b\n",
        "def f(a):\n    b = a\n    return lambda: b\n",  # a closure
    ],
)
def test_no_rename_where_the_behaviour_could_change(body: str) -> None:
    lines = set(range(1, body.count("\n") + 1))
    assert [r for r in refactors(body, lines) if r.construction == "rename_local"] == []


def test_elif_chains_are_not_inverted() -> None:
    source = "def f(a):\n    if a > 1:\n        return 1\n    elif a < 0:\n        return 2\n    return 3\n"
    assert [r for r in refactors(source, {2, 3, 4, 5}) if r.construction == "invert_if"] == []


def test_the_build_offers_refactors_as_variants() -> None:
    base = {"pkg/mod.py": "import os\n\n\ndef clamp(y, low=0):\n    return y + low\n", "conftest.py": None}
    texts = Texts(base=base, gold={"pkg/mod.py": FIXED}, tested={})
    built = {
        b.case_id: b
        for b in build_candidates(texts, test_patch="", fail_to_pass=[], instance_id="o__r-2", rng=random.Random(0))
    }
    for case_id in ("variant-refactor-invert-if", "variant-refactor-rename-local"):
        case = built[case_id]
        assert (case.category, case.subcategory) == ("variant", "alternative")
        assert case.construction.startswith("refactor:")
        after = apply_to_texts(base, case.patch, case_id)["pkg/mod.py"]
        assert isinstance(after, str) and after != FIXED
        assert _run(after, "clamp", -3) == 0 and _run(after, "clamp", 4) == 4
    assert make_diff(base, {"pkg/mod.py": FIXED}) == built["gold"].patch
