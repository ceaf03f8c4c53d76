"""Inputs past the seeds' scale: generated where P states no bound, held to every other rule,
and said to be so in the witness.

A wrong trial is often right up to the sizes its author tried; the seeds (P's examples and T0's
inputs) show the same sizes. ``_generate.scaled`` takes them ten to a thousand times further,
``Preconditions.past_scale`` is what such an input must still keep, and the pool remembers which
of its inputs are past the scale so that a witness on one is judged by those rules.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from vouch.audit import PRELOAD, Verdict, audit_humaneval
from vouch.audit.function._generate import edges, scaled
from vouch.audit.function._inputs import key
from vouch.audit.function._offline import differences, fill_pool
from vouch.audit.function._preconditions import infer
from vouch.audit.function._runs import AuditConfig
from vouch.exec import LocalExecutor

SEEDS = [[3], [7], [10], [100], [49]]


def test_numbers_go_past_the_seeds_scale_and_the_rules_without_it_admit_them() -> None:
    rules = infer("def f(n: int) -> int:\n    '''The largest divisor of n.'''\n", ["n"], SEEDS)
    far = scaled(SEEDS, rules, random.Random(0), 40)
    beyond = [args for args in far if rules.admits(args) is not None]
    assert beyond and max(args[0] for args in beyond) > 10_000
    assert all(rules.past_scale().admits(args) is None for args in far)
    # The seeds' side of zero still binds: all seeds are positive, so is every scaled number.
    assert all(args[0] > 0 for args in far)


def test_a_bound_p_states_binds_past_the_seeds_scale() -> None:
    rules = infer("def f(n: int) -> int:\n    '''1 <= n <= 500'''\n", ["n"], SEEDS)
    far = scaled(SEEDS, rules, random.Random(0), 40)
    assert far and all(args[0] <= 500 for args in far)
    assert rules.past_scale().admits([501]) is not None


def test_digit_runs_of_a_format_widen_past_the_scale_and_keep_their_place() -> None:
    seeds = [["03-11-2000"], ["15-01-2012"], ["04-31-3000"]]
    rules = infer("def valid_date(date: str) -> bool: ...", ["date"], seeds)
    far = scaled(seeds, rules, random.Random(0), 20)
    assert far and all(args[0].count("-") == 2 for args in far)
    assert any(rules.admits(args) is not None for args in far)
    assert rules.past_scale().admits(["3-11-2000x"]) is not None  # another format is still out


def test_a_number_written_in_a_format_moves_to_its_edges_and_to_another_seeds_number() -> None:
    seeds = [["03-11-2000"], ["15-01-2012"], ["04-31-3000"]]
    rules = infer("def valid_date(date: str) -> bool: ...", ["date"], seeds)
    found = {args[0] for args in edges(seeds, rules, 400)}
    # The month of one date with the day of another, a zero year, the widths kept.
    assert {"03-31-2000", "03-11-0000", "00-11-2000"} <= found


def test_running_out_of_resources_only_past_the_scale_is_a_question_of_scale_not_a_defect() -> None:
    rules = infer("def f(n: int) -> int: ...", ["n"], SEEDS)
    pool = fill_pool(rules, [(1, [50]), (1, [40_000])], [{"ok": True, "value": 25}] * 2, past_scale={key([40_000])})
    assert "past the scale" in (pool.only_past_scale([40_000], "raised RecursionError: depth") or "")
    assert "gives no answer in time only" in (pool.only_past_scale([40_000], "raised timeout") or "")
    assert pool.only_past_scale([40_000], 7) is None  # a wrong value is a defect at any scale
    assert pool.only_past_scale([40_000], "raised ValueError: x") is None
    assert pool.only_past_scale([50], "raised timeout") is None  # inside the seeds' scale


def test_a_list_ten_times_the_seeds_longest_is_past_their_scale() -> None:
    """Length is scale too: a trial that only runs out of time on a list far longer than any of
    P's examples and T0's inputs is flagged, not refuted; a wrong value there still refutes."""
    seeds = [[[1, 3, -2]], [[0, 4, 5, -9, 2]], [[7]]]
    rules = infer("def f(l: list) -> bool: ...", ["l"], seeds)
    long, mid, short = [list(range(120))], [list(range(24))], [[1, 2, 3, 4, 5, 6]]
    planned = [(1, long), (1, mid), (1, short)]
    pool = fill_pool(rules, planned, [{"ok": True, "value": False}] * 3, seeds, [False] * 3)
    assert pool.past_scale == {key(long)}  # 120 > 10 x 5; 24 is among the small sizes tried anyway
    assert "gives no answer in time only" in (pool.only_past_scale(long, "raised timeout") or "")
    assert pool.only_past_scale(long, True) is None
    assert pool.only_past_scale(mid, "raised timeout") is None


def test_a_difference_past_the_scale_comes_after_every_difference_inside_it() -> None:
    rules = infer("def f(n: int) -> int: ...", ["n"], SEEDS)
    planned = [(3, [40_000]), (2, [50]), (1, [60])]
    pool = fill_pool(rules, planned, [{"ok": True, "value": 1}] * 3, past_scale={key([40_000])})
    rows = [{"ok": True, "value": 2}, {"ok": False, "error": "timeout"}, {"ok": True, "value": 1}]
    assert [d.args for d in differences(pool, rows)] == [[50], [40_000]]


def test_the_pool_holds_a_past_scale_input_to_the_rules_without_the_scale() -> None:
    rules = infer("def f(n: int) -> int: ...", ["n"], SEEDS)
    pool = fill_pool(rules, [(1, [50]), (1, [40_000])], [{"ok": True, "value": 25}, {"ok": True, "value": 20_000}])
    assert pool.past_scale == {key([40_000])}
    assert rules.admits([40_000]) is not None and pool.admits([40_000]) is None
    assert pool.admits([-5]) is not None  # the sign still binds
    assert "past the scale" in pool.why_valid([40_000]) and "1 <= numbers)" in pool.why_valid([40_000])
    assert "past the scale" not in pool.why_valid([50]) and "1 <= numbers <= 1100" in pool.why_valid([50])


# largest_divisor, right up to four digits: every input up to ten times T0's largest agrees with G.
RIGHT_UP_TO_FOUR_DIGITS = (
    "    if len(str(n)) > 4:\n        return 1\n"
    "    for i in range(n // 2, 0, -1):\n        if n % i == 0:\n            return i\n    return 1\n"
)
RIGHT = "    for i in range(n // 2, 0, -1):\n        if n % i == 0:\n            return i\n    return 1\n"
# Right at every size, but recursing once per candidate divisor: past Python's recursion limit on
# a prime of a few thousand, which only inputs past the seeds' scale reach.
RECURSIVE = (
    "    def down(i):\n        return i if i <= 1 or n % i == 0 else down(i - 1)\n"
    "    return down(n // 2) if n > 3 else 1\n"
)


@pytest.mark.slow
def test_a_trial_right_only_up_to_the_seeds_scale_is_refuted_and_the_witness_says_why_its_input_is_valid(
    tmp_path: Path,
) -> None:
    path = tmp_path / "samples.jsonl"
    rows = [("HumanEval/24", RIGHT_UP_TO_FOUR_DIGITS), ("HumanEval/24", RIGHT), ("HumanEval/24", RECURSIVE)]
    path.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    with LocalExecutor(workers=2, preload=PRELOAD) as executor:
        out = audit_humaneval(path, executor=executor, witness_dir=tmp_path / "w", config=AuditConfig(ghost_rounds=0))
    wrong, right, recursive = out.trials
    assert right.verdict is Verdict.SOUND
    # Running out of recursion depth only past the seeds' scale flags the trial, never refutes it.
    assert recursive.verdict is Verdict.FLAGGED, recursive.reason
    assert "past the scale" in (recursive.evidence.disputed[0].disputed or "")
    assert wrong.verdict is Verdict.REFUTED, wrong.reason
    witness = wrong.witnesses[0]
    assert witness.input[0] >= 10_000 and witness.actual == 1
    assert witness.why_valid is not None and "past the scale" in witness.why_valid
