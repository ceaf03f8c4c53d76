"""The mutation engine: each operator on a small verifier, restrictions, formatting, dedup, bad input."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vouch.errors import UsageError
from vouch.mutation import OPERATORS, Location, Mutant, mutate


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def descriptions(source: str, operator: str, **kw: object) -> list[str]:
    mutants = mutate(source, operators=[operator], **kw)  # type: ignore[arg-type]
    for m in mutants:
        assert m.operator == operator
        assert m.source != source
        compile(m.source, m.id, "exec")
    return [m.description for m in mutants]


# One verifier-like function per operator, and exactly what that operator must produce.
CASES = [
    (
        "compare_swap",
        """
        def verify(n, role, x):
            return n < 3 and role in ROLES and x is not None
        """,
        ["< -> <=", "< -> >=", "in -> not in", "is not -> is"],
    ),
    (
        "boolean_swap",
        """
        def verify(a, b, c):
            return a and b or c
        """,
        ["and -> or", "or -> and"],
    ),
    (
        "negate_condition",
        """
        def verify(ok, n):
            if ok:
                return True
            elif(n):
                return n
            while n > 0:
                n -= 1
            return 1 if ok else 0
        """,
        ["`ok` -> `not (ok)`", "`(n)` -> `not (n)`", "`n > 0` -> `not (n > 0)`", "`ok` -> `not (ok)`"],
    ),
    (
        "boundary_shift",
        """
        def verify(xs):
            return len(xs) >= 2 and xs[0:-1] and range(3)
        """,
        ["2 -> 3", "2 -> 1", "0 -> 1", "0 -> -1", "1 -> 2", "1 -> 0", "3 -> 4", "3 -> 2"],
    ),
    (
        "remove_check",
        """
        def verify(ok, x):
            if not ok:
                return False
            if x is None:
                raise ValueError(x)
            if x:
                return x
            assert x > 0
            return True
        """,
        ["removed `if not ok: return False`", "removed `if x is None: raise ValueError(x)`", "removed `assert x > 0`"],
    ),
    (
        "early_return_true",
        """
        def verify(x):
            '''Doc.'''
            return x == 1
        class V:
            def check(self): return False
        """,
        ["inserted `return True` at the start of `verify`", "inserted `return True` at the start of `check`"],
    ),
    (
        "constant_change",
        """
        def verify(x, limit=10):
            '''Doc.'''
            strict = True
            return x == "ok" and limit > 5 and x != ""
        """,
        ["10 -> 11", "10 -> 9", "True -> False", '"ok" -> ""'],
    ),
    (
        "drop_list_element",
        """
        ALLOW = ["admin", "owner"]
        DENY = {"root"}
        def verify(user):
            a, b = user
            return user in ALLOW and user not in ("x", "y")
        """,
        [
            '"admin" dropped from list `ALLOW`',
            '"owner" dropped from list `ALLOW`',
            '"x" dropped from tuple literal',
            '"y" dropped from tuple literal',
        ],
    ),
    (
        "arithmetic_swap",
        """
        def verify(a, b):
            a += 1
            return a + b - a * b // 2 % 3 / 4
        """,
        ["+= -> -=", "+ -> -", "- -> +", "* -> //", "// -> *", "% -> //"],
    ),
]


@pytest.mark.parametrize(("operator", "source", "expected"), CASES, ids=[c[0] for c in CASES])
def test_operator_produces_exactly_the_expected_mutants(operator: str, source: str, expected: list[str]) -> None:
    assert descriptions(src(source), operator) == expected


def test_every_registered_operator_has_a_case() -> None:
    assert {c[0] for c in CASES} == set(OPERATORS)


def test_drop_from_a_pair_keeps_a_tuple() -> None:
    mutants = mutate("T = (1, 2)\n", operators=["drop_list_element"])
    assert [m.source for m in mutants] == ["T = (2,)\n", "T = (1,)\n"]


def test_mutant_fields_and_diff() -> None:
    source = src(
        """
        def verify(n):
            return n < 3
        """
    )
    [first, *_] = mutate(source, operators=["compare_swap"])
    assert first == Mutant(
        id="compare_swap:2:13:0",
        operator="compare_swap",
        location=Location(2, 13, 2, 14),
        description="< -> <=",
        source="def verify(n):\n    return n <= 3\n",
        diff=first.diff,
    )
    assert first.diff.splitlines() == [
        "--- original",
        "+++ compare_swap:2:13:0",
        "@@ -1,2 +1,2 @@",
        " def verify(n):",
        "-    return n < 3",
        "+    return n <= 3",
    ]


VERIFIER = src(
    """
    LIMIT = 3

    def helper(x):
        return x > LIMIT

    class Checker:
        def verify(self, x):
            return x < 5

    def verify(x):
        return x == 1
    """
)


def test_restrict_to_a_function_by_name_covers_top_level_and_methods() -> None:
    found = mutate(VERIFIER, operators=["compare_swap"], function="verify")
    assert [m.location.line for m in found] == [8, 8, 11]
    only_method = mutate(VERIFIER, operators=["compare_swap"], function="Checker.verify")
    assert {m.location.line for m in only_method} == {8}
    assert {m.location.line for m in mutate(VERIFIER, function="helper")} == {3, 4}


def test_restrict_to_lines() -> None:
    found = mutate(VERIFIER, lines={4, 11})
    assert {m.location.line for m in found} == {4, 11}
    assert mutate(VERIFIER, lines=[]) == []


def test_unknown_function_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match=r"function='nope'.*helper, Checker\.verify, verify"):
        mutate(VERIFIER, function="nope")


def test_formatting_and_comments_are_preserved() -> None:
    source = src(
        """
        # header comment
        def verify( x ,y ):   # odd spacing
            # the guard
            if not x:
                return False
            return x<y  # tight
        """
    )
    by_desc = {m.description: m.source for m in mutate(source)}
    assert by_desc["< -> <="] == source.replace("x<y", "x<=y")
    removed = by_desc["removed `if not x: return False`"]
    assert removed == source.replace("    if not x:\n        return False\n", "")
    assert "# the guard" in removed


def test_mutants_are_in_source_order_and_deduplicated() -> None:
    # Dropping either `a` gives the same source; it must appear once.
    source = "def f(a):\n    return [a, a]\n"
    mutants = mutate(source, operators=["drop_list_element"])
    assert [m.source for m in mutants] == ["def f(a):\n    return [a]\n"]
    many = mutate(VERIFIER)
    keys = [(m.location.line, m.location.column) for m in many]
    assert keys == sorted(keys)
    assert len({m.source for m in many}) == len(many)
    assert len({m.id for m in many}) == len(many)


def test_ids_are_stable_across_selections() -> None:
    all_ids = {m.id for m in mutate(VERIFIER)}
    assert {m.id for m in mutate(VERIFIER, operators=["boundary_shift"])} <= all_ids
    assert [m.id for m in mutate(VERIFIER)] == [m.id for m in mutate(VERIFIER)]


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"operators": ["compare_swap", "bogus"]}, r"'bogus'.*valid operators: compare_swap, boolean_swap"),
        ({"operators": ["Compare_Swap"]}, r"'Compare_Swap'.*arithmetic_swap"),
        ({"function": "missing"}, r"function='missing'"),
    ],
)
def test_bad_usage_raises(kwargs: dict[str, object], pattern: str) -> None:
    with pytest.raises(UsageError, match=pattern):
        mutate(VERIFIER, **kwargs)  # type: ignore[arg-type]


def test_unparsable_source_names_the_line() -> None:
    with pytest.raises(UsageError, match="line 2"):
        mutate("x = 1\ndef f(:\n    pass\n")


def test_source_without_sites_has_no_mutants() -> None:
    assert mutate("") == []
    assert mutate("import os\n") == []


# A generated small verifier: a guard, a comparison chain, a list and arithmetic, in varied shapes.
_names = st.sampled_from(["a", "b", "n"])
_cmp = st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not"])
_ints = st.integers(min_value=-3, max_value=300)
_atoms = st.one_of(_names, _ints.map(str), st.sampled_from(["True", "False", "'s'", "''", "[1, 2]", "(a,)", "{1, 2}"]))


@st.composite
def _functions(draw: st.DrawFn) -> str:
    def expr() -> str:
        left, right = draw(_atoms), draw(_atoms)
        shape = draw(st.sampled_from(["{l} {c} {r}", "({l} + {r}) {c} {r}", "{l}[1:{r}] {c} {l}", "not {l}"]))
        return shape.format(l=left, r=right, c=draw(_cmp))

    lines = ["def f(a, b, n=2):"]
    if draw(st.booleans()):
        lines.append("    '''Doc.'''")
    lines.append(f"    if {expr()}:\n        return False")
    if draw(st.booleans()):
        lines.append(f"    assert {expr()}")
    if draw(st.booleans()):
        lines.append(f"    while {expr()}:\n        n -= 1")
    lines.append(f"    x = {draw(_atoms)} if {expr()} else [{draw(_atoms)}, {draw(_atoms)}]")
    lines.append(f"    return {expr()} {draw(st.sampled_from(['and', 'or']))} {expr()}")
    return "\n".join(lines) + "\n"


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # `x is 1` compiles, with a warning
@settings(max_examples=60, deadline=None)
@given(_functions())
def test_every_mutant_of_a_generated_function_compiles(source: str) -> None:
    compile(source, "<original>", "exec")
    mutants = mutate(source)
    assert mutants
    for m in mutants:
        compile(m.source, m.id, "exec")
        assert m.source != source
