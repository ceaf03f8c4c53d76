"""Structure-aware input generation (pure): edges, sizes, fresh values; every proposal inside P."""

from __future__ import annotations

import random
from typing import Any

import pytest

from vouch.audit import _generate
from vouch.audit._offline import plan_pool
from vouch.audit._preconditions import infer, is_balanced

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
