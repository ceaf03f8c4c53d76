"""Preconditions and input generation (pure): what P allows, and proposals that stay inside it."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vouch.audit.function import _preconditions
from vouch.audit.function._inputs import boundary_inputs, neighbours, shrink_candidates
from vouch.audit.function._preconditions import infer, shape

DATES = [["03-11-2000"], ["04-0-2040"], ["15-01-2012"], ["06-04-2020"], [""]]
MAXK = [[[-3, -4, 5], 3], [[4, -4, 4], 2], [[-3, 2, 1, 2, -1, -2, 1], 1], [[1, 2, 3], 0]]
XOR = [["010", "110"], ["111000", "101010"], ["1", "1"], ["0101", "0000"]]
GRID = [[[[0, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1]], 1], [[[0, 0, 0], [0, 0, 0]], 5], [[[1, 1, 1, 1]], 2]]
SORTED = [[[1, 2, 3, 4]], [[-5, 0, 2, 9]], [[0, 1, 1, 2, 7]], [[3, 8, 10]]]
BRACKETS = [["(()())"], ["((()))"], ["()"], ["(()(())((())))"]]

OUTSIDE: list[tuple[str, list[list[Any]], list[str], list[Any], str]] = [
    ("date in another shape", DATES, ["date"], ["5-1-12"], "shape"),
    ("k above len(arr)", MAXK, ["arr", "k"], [[0, 5], 3], "le_len"),
    ("strings of unequal length", XOR, ["a", "b"], ["11", "1"], "same_len"),
    ("a character no seed uses", XOR, ["a", "b"], ["012", "110"], "alphabet"),
    ("a grid cell outside 0/1", GRID, ["grid", "capacity"], [[[0, 2], [1, 1]], 1], "not one of"),
    ("a list that is not sorted", SORTED, ["xs"], [[3, 1, 2]], "not sorted"),
    ("unbalanced brackets", BRACKETS, ["s"], ["(()"], "balanced"),
    ("a wrong type", SORTED, ["xs"], [["a", "b"]], "type"),
    ("wrong number of arguments", SORTED, ["xs"], [[1], 2], "arguments"),
]


@pytest.mark.parametrize(("what", "seeds", "names", "args", "why"), OUTSIDE, ids=[o[0] for o in OUTSIDE])
def test_inputs_outside_preconditions_are_rejected(
    what: str, seeds: list[list[Any]], names: list[str], args: list[Any], why: str
) -> None:
    prompt = (
        "def f(): ...\n    balanced brackets, sorted list\n" if what in ("unbalanced brackets",) else "def f(): ..."
    )
    rules = infer(prompt, names, seeds)
    problem = rules.admits(args)
    assert problem is not None, f"{what}: {args!r} was admitted"
    assert why.split()[0] in problem or why in str(rules.relations), problem
    for seed in seeds:
        assert rules.admits(seed) is None, f"seed {seed!r} rejected: {rules.admits(seed)}"


@pytest.mark.parametrize("seeds", [DATES, MAXK, XOR, GRID, SORTED, BRACKETS])
def test_generated_inputs_hold_every_precondition(seeds: list[list[Any]]) -> None:
    names = [f"a{i}" for i in range(len(seeds[0]))]
    rules = infer("def f(): ... balanced", names, seeds)
    rng = random.Random(7)
    proposed = neighbours(seeds, rules, rng, per_seed=30, limit=500) + boundary_inputs(seeds, rules)
    assert proposed, "no input was proposed"
    for args in proposed:
        assert rules.admits(args) is None, args
        for smaller in shrink_candidates(args, rules):
            assert rules.admits(smaller) is None, smaller


def test_text_ranges_bound_arguments() -> None:
    rules = infer("def f(n):\n    Note: 1 <= n <= 10\n", ["n"], [[3], [4], [5]])
    assert rules.admits([11]) is not None
    assert rules.admits([0]) is not None
    assert rules.admits([10]) is None


def test_shape_keeps_digits_and_collapses_words() -> None:
    assert shape("03-11-2000") == "dd-dd-dddd"
    assert shape("5 apples and 6 oranges") == "d a a d a"


def test_generation_is_reproducible_from_the_seed() -> None:
    rules = infer("def f(): ...", ["xs"], SORTED)
    a = neighbours(SORTED, rules, random.Random(3), per_seed=10, limit=50)
    b = neighbours(SORTED, rules, random.Random(3), per_seed=10, limit=50)
    assert a == b


# False refutations found on the full 16,400-sample run, each from an input P excludes.


def _prompt(name: str) -> str:
    from vouch.sources.trials import load_problems

    return load_problems()[name].prompt


def test_a_one_sided_bound_in_words() -> None:  # HumanEval/44: "base numbers are less than 10."
    rules = infer(_prompt("HumanEval/44"), ["x", "base"], [[8, 3], [8, 2], [7, 2], [234, 2], [16, 2], [7, 7]])
    assert rules.admits([20, 9]) is None  # the seeds alone would allow bases up to 14
    assert "above 9" in (rules.admits([20, 10]) or "")


def test_a_number_p_says_is_not_a_prime() -> None:  # HumanEval/59: "Assume n > 1 and is not a prime."
    rules = infer(_prompt("HumanEval/59"), ["n"], [[13195], [2048], [15], [27], [63], [330]])
    assert rules.admits([28]) is None
    assert "prime" in (rules.admits([29]) or "")


def test_the_natural_edges_are_in_unless_p_rules_them_out() -> None:
    words = [["hello", "ell"], ["abab", "baa"], ["himenss", "simen"]]
    assert infer("def f(a, b): ...", ["a", "b"], words).admits(["abc", ""]) is None
    said = infer('def f(a, b):\n    """Given two non-empty words."""\n', ["a", "b"], words)
    assert "empty" in (said.admits(["abc", ""]) or "")
    counts = [[1], [5], [7], [10]]
    assert "below 1" in (infer("def f(n): ...", ["n"], counts).admits([0]) or "")  # zero is a measured choice
    assert infer("def f(n): ...", ["n"], [[0], *counts]).admits([0]) is None
    assert infer("def f(xs): ...", ["xs"], SORTED).admits([[]]) is None


def test_each_widening_is_a_setting_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    words = [[["name", "of", "string"], "ab"], [["name", "enam"], "cde"], [["aaaaaaa", "bb", "cc", "d"], "f"]]
    rules = infer("def f(words, s): ...", ["words", "s"], words)
    assert rules.admits([[""], "ab"]) is None and rules.admits([["ab"], ""]) is None
    monkeypatch.setattr(_preconditions, "WIDENING", replace(_preconditions.WIDENING, empty_items=False))
    rules = infer("def f(words, s): ...", ["words", "s"], words)
    assert "empty" in (rules.admits([[""], "ab"]) or "") and rules.admits([["ab"], ""]) is None
    monkeypatch.setattr(_preconditions, "WIDENING", replace(_preconditions.WIDENING, zero=True))
    assert infer("def f(n): ...", ["n"], [[1], [5], [7]]).admits([0]) is None


def test_a_list_keeps_the_kind_of_element_p_presupposes() -> None:
    seeds = [[[0, 3, 2, 1, 3, 5, 7]], [[1, 0, 1, 8, 2, 4597, 2]], [[1, 3, 1, 32, 5107]], [[0, 81, 12, 3, 1, 21]]]
    rules = infer('def f(lst):\n    """Return the largest prime of the list."""\n', ["lst"], seeds)
    assert rules.admits([[4, 3, 8]]) is None
    assert "no prime" in (rules.admits([[0, 4]]) or "")
    assert infer("def f(lst): ...", ["lst"], seeds).admits([[0, 4]]) is None  # P names no kind


def test_letters_keep_the_one_case_many_seeds_show() -> None:
    lower = [["hi"], ["asdfghjkl"], ["gf"], ["et"]]
    letters = 'def f(s):\n    """Rotate each letter of s."""\n'
    assert "alphabet" in (infer(letters, ["s"], lower).admits(["A"]) or "")
    assert infer(letters, ["s"], lower).admits(["zq"]) is None  # the class is open whole
    assert infer("def f(s): ...", ["s"], lower).admits(["A"]) is None  # P speaks of text, not letters
    few = [["hi"], ["ab"]]
    assert infer(letters, ["s"], few).admits(["HI"]) is None  # too few letters to prove a case
    mixed = [["Hello"], ["wOrld"], ["abcdefgh"]]
    assert infer(letters, ["s"], mixed).admits(["XYZ"]) is None


def test_tokens_keep_the_one_length_every_seed_s_tokens_have() -> None:
    letters = [["a b c"], ["a b b a"], ["a b c a b"], ["b b b b a"]]
    rules = infer("def f(test): ...", ["test"], letters)
    assert rules.admits(["c a"]) is None
    assert "character" in (rules.admits(["aa b"]) or "")
    assert infer("def f(s): ...", ["s"], [["ab cd e"], ["hello world"], ["x yy zzz w"]]).admits(["abcdef"]) is None


def test_words_every_formatted_seed_writes_alike_stay() -> None:
    fruit = [["5 apples and 6 oranges", 19], ["0 apples and 1 oranges", 3], ["100 apples and 1 oranges", 120]]
    rules = infer("def f(s, n): ...", ["s", "n"], fruit)
    assert rules.admits(["7 apples and 8 oranges", 20]) is None
    assert "words" in (rules.admits(["7 pears and 8 oranges", 20]) or "")
    dates = infer("def f(d): ...", ["d"], [["Jan 03 2000"], ["Feb 11 2012"], ["Mar 01 2020"]])
    assert dates.admits(["Dec 31 1999"]) is None  # a word the seeds vary is free


def test_a_bound_in_words_with_then_for_than() -> None:
    prompt = 'def f(a):\n    """Knowing that (a) is less then 100."""\n'
    rules = infer(prompt, ["a"], [[30], [8], [10]])
    assert rules.admits([99]) is None
    assert "above 99" in (rules.admits([100]) or "")


def test_a_bound_p_states_holds_though_t0_goes_past_it() -> None:
    prompt = 'def f(a):\n    """Knowing that (a) is less than 100.\n    f(30) == True\n    """\n'
    seeds = [[30], [5], [125], [729]]
    assert "above 99" in (infer(prompt, ["a"], seeds, examples=[[30]]).admits([125]) or "")
    assert infer(prompt, ["a"], seeds, examples=[[30], [300]]).admits([125]) is None  # P's example breaks it


def test_numbers_with_leading_zeros_are_not_fractions_p_shows() -> None:  # HumanEval/144
    seeds = [["1/5", "5/1"], ["1/6", "2/1"], ["7/10", "10/2"], ["2/10", "50/10"], ["11/6", "6/1"]]
    rules = infer(_prompt("HumanEval/144"), ["x", "n"], seeds)
    assert rules.admits(["2/1", "10/2"]) is None
    assert "leading zero" in (rules.admits(["2/1", "05/01"]) or "")


def test_groups_of_nested_parentheses_stay_groups() -> None:  # HumanEval/6 (no word "balanced")
    seeds = [["(()()) ((())) () ((())()())"], ["() (()) ((())) (((())))"], ["(()(())((())))"]]
    rules = infer(_prompt("HumanEval/6"), ["paren_string"], seeds)
    assert rules.admits(["(()) ((()))"]) is None
    assert "not balanced" in (rules.admits(["))(())(()("]) or "")
    assert "together" in (rules.admits(["(())((()))"]) or "")


def test_a_bound_a_seed_breaks_is_a_misreading_and_dropped() -> None:
    prompt = 'def f(n):\n    """n is less than 10, says the text; T0 disagrees."""\n'
    rules = infer(prompt, ["n"], [[3], [12], [5]])
    assert rules.admits([11]) is None


def test_a_program_s_own_constants_are_put_into_the_seeds() -> None:
    from vouch.audit.function._inputs import with_constants

    seeds = [[[1.0, 2.0, 3.0], 0.5], [[4.0, 5.0], 0.3]]
    rules = infer("def f(): ...", ["numbers", "threshold"], seeds)
    out = with_constants(seeds, [0.0, 5], rules, random.Random(3), limit=200)
    assert out and all(rules.admits(a) is None for a in out)
    assert [[1.0, 2.0, 3.0, 0.0], 0.5] in out, "a constant of the element type appended to a list"
    assert [[1.0, 2.0, 3.0], 0.0] in out, "a number argument set to the constant"
    assert [[1.0, 2.0, 3.0, 1.0, 2.0], 0.5] in out, "a list grown to a whole constant's length"
    assert [[4.0, 5.0], 6.0] in out, "one past the constant"
    assert not any(a in seeds for a in out)
    strings = with_constants([["abc"]], ["xy"], infer("def f(): ...", ["s"], [["abc"]]), random.Random(0), limit=9)
    assert {"xy", "xyabc", "abcxy"} >= {a[0] for a in strings}


def test_branch_constants_are_read_from_the_branches_asked_for() -> None:
    from vouch.audit.function._trial import branch_constants

    program = (
        "def f(xs, t):\n"
        "    if 0.0 in xs and len(xs) > 4:\n"  # line 2
        "        return False\n"
        "    while t < -50:\n"  # line 4
        "        t += 1\n"
        "    return 'done' if t == 7 else True\n"  # line 6
    )
    assert branch_constants(program, {2}) == [0.0, 4]
    assert branch_constants(program, {4, 6}) == [-50, 7]
    assert branch_constants(program, {3}) == []
    assert branch_constants("def f(:\n", {1}) == []


def test_a_pool_of_answers_too_large_for_text_or_floats_balances() -> None:
    # G may answer with an int past Python's text conversion limit (a factorial on a large input).
    from vouch.audit.function._offline import _output_kind

    assert _output_kind(10**5000, coarse=True) == "int+5001"
    assert _output_kind(-(10**20000), coarse=True) == "int-20001"
    assert _output_kind(123, coarse=True) == "int+3" and _output_kind(float("nan"), coarse=True) == "nan"


def test_an_answer_past_pythons_text_limit_is_opaque_and_the_other_answers_cross(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from vouch.audit.function import _inrun

    (tmp_path / "solution.py").write_text("def f(n):\n    return 10 ** n\n")
    monkeypatch.chdir(tmp_path)
    out = _inrun.outputs("f", [[3], [5000], [2]])
    rows = out["results"]
    assert rows[0] == {"ok": True, "value": 1000} and rows[2] == {"ok": True, "value": 100}
    assert rows[1]["value"] is None and "cannot be shown" in rows[1]["opaque"]
    json.dumps(out)  # the run's frame can carry it
