"""Structure-aware input generation (pure): edges, sizes, fresh values; every proposal inside P."""

from __future__ import annotations

import random
from typing import Any

import pytest

from vouch.audit.function import _generate
from vouch.audit.function._inputs import key
from vouch.audit.function._offline import differences, fill_pool, plan_pool
from vouch.audit.function._preconditions import infer, is_balanced

WORDS = [["hello world"], ["abc"], ["Hi there you"], ["x"]]
NUMBERS = [[[1, 4, 3, 34, 653, 2, 5], [5, 7, 1, 5, 9, 653, 121]], [[5, 3, 2, 8], [3, 2]], [[4, 3, 2, 8], []]]
GROUPS = [["(()()) ((())) () ((())()())"], ["() (()) ((())) (((())))"], ["(()(())((())))"]]
ALGEBRA = [[["**", "*", "+"], [2, 3, 4, 5]], [["+", "*", "-"], [2, 3, 4, 5]], [["//", "*"], [7, 3, 4]]]
SEEDS = [WORDS, NUMBERS, GROUPS, ALGEBRA]


@pytest.mark.parametrize("seeds", SEEDS, ids=["words", "two lists", "groups", "operators and operands"])
def test_every_generator_proposes_only_admitted_new_inputs(seeds: list[list[Any]]) -> None:
    names = [f"a{i}" for i in range(len(seeds[0]))]
    rules = infer("def f(): ... groups of nested parentheses", names, seeds)
    rng = random.Random(3)
    batches = {
        "edges": _generate.edges(seeds, rules, 300),
        "sizes": _generate.sizes(seeds, rules, rng, 300),
        "fresh": _generate.fresh(seeds, rules, rng, 300),
    }
    assert sum(map(len, batches.values())) >= 30, {name: len(b) for name, b in batches.items()}
    for name, batch in batches.items():
        keys = [repr(a) for a in batch]
        assert len(set(keys)) == len(keys), f"{name} proposed duplicates"
        for args in batch:
            assert args not in seeds
            assert rules.admits(args) is None, (name, args, rules.admits(args))


def test_edges_reach_empty_single_repeated_and_reversed_values() -> None:
    seeds: list[list[Any]] = [[[3, 1, 2]], [[5, 9, 7, 7]], [[1]]]
    rules = infer("def f(): ...", ["xs"], seeds)
    found = {repr(a[0]) for a in _generate.edges(seeds, rules, 500)}
    for value in ([3], [3, 3], [2, 1, 3], [1, 2, 3], [3, 1, 2, 3, 1, 2]):
        assert repr(value) in found, value


def test_sizes_reach_every_small_length_and_a_long_one() -> None:
    seeds = [["Hello"], ["abcdcba"], ["orange"]]
    rules = infer("def prime_length(string): ...", ["string"], seeds)
    lengths = {len(a[0]) for a in _generate.sizes(seeds, rules, random.Random(0), 500)}
    assert set(range(1, 25)) <= lengths  # every seed is non-empty, so the empty string is out
    assert max(lengths) >= 101  # a table of the primes below 100 is wrong from length 101 on


def test_a_length_p_states_bounds_every_size() -> None:
    seeds = [[[1, 2, 3]], [[4, 5, 6, 7]]]
    rules = infer("def f(arr):\n    1 <= len(arr) <= 10\n", ["arr"], seeds)
    proposed = _generate.sizes(seeds, rules, random.Random(0), 500) + _generate.fresh(
        seeds, rules, random.Random(0), 500
    )
    assert proposed and all(1 <= len(a[0]) <= 10 for a in proposed)


def test_fresh_bracket_strings_stay_balanced_single_groups() -> None:
    rules = infer("def f(s): ... groups of nested parentheses", ["s"], GROUPS)
    made = _generate.fresh(GROUPS, rules, random.Random(1), 200)
    assert len(made) >= 50
    assert all(is_balanced(a[0]) for a in made)
    assert any(a[0].count(" ") >= 2 for a in made)


def test_fresh_relates_arguments_one_derived_from_another() -> None:
    seeds = [["abcd", "abd"], ["hello", "ell"], ["whassup", "psus"], ["abab", "baa"]]
    rules = infer("def cycpattern_check(a, b): ...", ["a", "b"], seeds)
    made = _generate.fresh(seeds, rules, random.Random(2), 400)
    assert sum(b in a and b != a for a, b in made) >= 10


def test_lengths_offset_between_arguments_bind() -> None:  # HumanEval/160
    rules = infer("def do_algebra(operator, operand): ...", ["operator", "operand"], ALGEBRA)
    assert ("len_diff:-1", 0, 1) in rules.relations
    assert rules.admits([["+", "*"], [1, 2]]) is not None
    assert rules.admits([["+"], [3, 4]]) is None


def test_the_pool_is_reproducible_and_capped() -> None:
    def plan(seed: int) -> list[tuple[int, list[Any]]]:
        return plan_pool("def f(): ...", ["a0"], WORDS, [], random.Random(seed), per_seed=20, limit=400)[1]

    assert plan(5) == plan(5) != plan(6)
    assert len(plan(5)) <= 400 and {level for level, _ in plan(5)} == {1, 2, 3}


def test_a_cut_pool_keeps_every_kind_of_answer_g_gives() -> None:
    """One fraction product in a hundred is whole: a pool cut in plan order keeps a handful of
    those, a balanced cut keeps each kind of G's answer in turn (and P's examples always)."""
    rules = infer("def simplify(x, n): ...", ["x", "n"], [["1/5", "5/1"], ["1/6", "2/1"]])
    planned = [(1, [f"{a}/7", "1/3"]) for a in range(1, 301)]
    rows = [{"ok": True, "value": a % 100 == 0} for a in range(1, 301)]
    pool = fill_pool(rules, planned, rows)
    pool.explicit.add(key(["150/7", "1/3"]))
    pool.balance(20)
    values = [expected for _, _, expected in pool.inputs]
    assert len(values) == 20 and values.count(True) == 3, values
    assert ["150/7", "1/3"] in [a for _, a, _ in pool.inputs], "P's example stays"
    assert [a for _, a, _ in pool.inputs] == sorted((a for _, a, _ in pool.inputs), key=lambda a: int(a[0][:-2]))


def test_many_distinct_answers_are_spread_by_type_and_size() -> None:
    rules = infer("def f(n): ...", ["n"], [[3], [12]])
    planned = [(1, [n]) for n in range(1, 2001)]
    rows = [{"ok": True, "value": n if n < 1900 else n * 10**40} for n in range(1, 2001)]
    pool = fill_pool(rules, planned, rows)
    pool.balance(60)
    assert len(pool.inputs) == 60
    assert any(expected > 10**40 for _, _, expected in pool.inputs), "the rare size of answer is kept"


def test_seeds_of_several_elements_leave_one_element_and_none_open() -> None:
    rules = infer("def mad(numbers): ...", ["numbers"], [[[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0, 4.0]]])
    assert rules.admits([[2.0]]) is None
    assert rules.admits([[]]) is None, "the empty list is the natural edge, in unless P says non-empty"


def test_a_list_that_repeats_an_element_lets_its_kind_repeat_in_every_argument() -> None:  # HumanEval/58
    seeds = [[[1, 4, 3, 34, 653, 2, 5], [5, 7, 1, 5, 9, 653, 121]], [[5, 3, 2, 8], [3, 2]], [[4, 3, 2, 8], []]]
    rules = infer("def common(l1: list, l2: list): ...", ["l1", "l2"], seeds)
    assert rules.admits([[1, 1, 2], [1]]) is None
    alone = infer("def f(l1: list): ...", ["l1"], [[s[0]] for s in seeds])
    assert alone.admits([[1, 1, 2]]) is not None, "no seed repeats: distinct stays"


def test_seeds_above_zero_open_downwards_and_p_s_positive_binds() -> None:  # HumanEval/2, 60
    floats = infer("def truncate_number(number: float) -> float: ...", ["number"], [[3.5], [1.33], [123.456]])
    assert floats.admits([0.25]) is None and floats.admits([-0.5]) is not None
    positive = infer("def f(number): Given a positive floating point number", ["number"], [[3.5], [1.33]])
    assert positive.admits([0.25]) is None and positive.admits([0.0]) is not None
    ints = infer("def f(n): Given a positive integer n", ["n"], [[3], [12]])
    assert ints.admits([1]) is None and ints.admits([0]) is not None
    counts = infer("def sum_to_n(n: int): sums numbers from 1 to n", ["n"], [[1], [5], [30]])
    assert counts.admits([0]) is not None, "0 only when a seed is 0"


def test_running_out_of_memory_where_g_answers_is_a_difference_after_the_plainer_ones() -> None:
    rules = infer("def fib4(n: int): ...", ["n"], [[5], [8], [100]])
    pool = fill_pool(rules, [(1, [132]), (1, [1000]), (1, [3])], [{"ok": True, "value": v} for v in (7, 9, 4)])
    rows = [
        {"ok": False, "error": "MemoryError: "},
        {"ok": False, "error": "RecursionError: maximum recursion depth exceeded"},
        {"ok": False, "error": "SystemError: error return without exception set"},
    ]
    assert [d.args for d in differences(pool, rows)] == [[1000], [3], [132]]
